"""The example of docs/streaming.md runs as written and says what the page says."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

import wisp as ws

pytestmark = pytest.mark.spark

PAGE = Path(__file__).resolve().parents[2] / "docs" / "streaming.md"


def blocks() -> list[str]:
    return [b.split("```")[0] for b in PAGE.read_text().split("```python\n")[1:4]]


@pytest.fixture(scope="module")
def first_block(spark: SparkSession) -> tuple[dict[str, Any], str]:
    """The page's first block, run once: its names and what it printed."""
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(blocks()[0], str(PAGE), "exec"), namespace)
    return namespace, printed.getvalue()


def test_the_streaming_page_example(first_block: tuple[dict[str, Any], str]) -> None:
    text = first_block[1]
    assert ("{'rows_in': 6, 'late': 1, 'rejected_null_time': 0, 'rejected_future': 0, "
            "'watermark': '1970-01-01T00:00:25.000Z'") in text
    table = [line.split("|")[1:-1] for line in text.splitlines()
             if line.startswith("|") and "window_start" not in line]
    assert [(k.strip(), t.strip()[-8:], c.strip(), s.strip())
            for k, _, _, t, c, s in table] == [
        ("a", "00:00:10", "1", "1.0"), ("a", "00:00:16", "2", "5.0"),
        ("a", "00:00:20", "3", "8.0"), ("b", "00:00:11", "1", "2.0")]


def test_the_streaming_page_late_rows_example(first_block: tuple[dict[str, Any], str]
                                              ) -> None:
    """The page's second block continues its first: the late row comes out."""
    namespace = dict(first_block[0])
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(blocks()[1], str(PAGE), "exec"), namespace)
    late = namespace["late"].collect()  # type: ignore[attr-defined]
    assert [(r["k"], r["ts"].strftime("%H:%M:%S"), r["v"]) for r in late] == [
        ("a", "00:00:12", 5.0)]
    assert late[0]["late_reason"] == ("at or below the watermark 1970-01-01 00:00:15, up "
                                      "to which the key's rows were already in windows")
    windows = namespace["windows"].collect()  # type: ignore[attr-defined]
    assert sorted((r["k"], r["time"].second) for r in windows) == [
        ("a", 10), ("a", 16), ("a", 20), ("b", 11)]


def test_the_streaming_page_tumbling_late_rule(first_block: tuple[dict[str, Any], str]
                                               ) -> None:
    """The page's `Tumbling` variant of its example: ("a", 12) goes into [10 s, 20 s)
    (written in the fourth batch with 10, 16 and 12 s); ("a", 14) in a fifth batch is
    late, counted."""
    namespace = first_block[0]
    spark, base = namespace["spark"], namespace["base"]

    def run() -> dict[str, Any]:
        stream = namespace["stream"]
        out = ws.events(stream, time="ts", key="k", lateness="5s").window(
            ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"))
        query = (out.writeStream.format("parquet")
                 .option("checkpointLocation", f"{base}/checkpoint-tumbling")
                 .trigger(availableNow=True).start(f"{base}/out-tumbling"))
        query.awaitTermination()
        return ws.stream_report(query)

    first = run()
    path = f"{base}/in/4.json"
    with open(path, "w") as f:
        f.write(json.dumps({"k": "a", "t": 14, "v": 9.0}) + "\n")
    os.utime(path, (1004, 1004))
    second = run()
    rows = spark.read.parquet(f"{base}/out-tumbling").collect()
    assert sorted((r["k"], r["window_start"].second, r["count"], r["sum_v"])
                  for r in rows) == [("a", 10, 3, 10.0), ("b", 10, 1, 2.0)]
    assert (first["late"], second["late"]) == (0, 1)


def test_the_streaming_page_revisions_example(spark: SparkSession) -> None:
    """The page's third block after its first (run again here: another test adds a
    fifth file to the first's input): the same stream with `on_late="update"` and
    `emit="changes"`; key a's [10 s, 20 s) written early twice, then final with the row
    at 12 s, which comes in the batch whose watermark (25 s) closes it."""
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(blocks()[0], str(PAGE), "exec"), namespace)
        exec(compile(blocks()[2], str(PAGE), "exec"), namespace)
    written = namespace["written"].collect()  # type: ignore[attr-defined]
    window = sorted((r["revision"], r["final"], r["count"], r["sum_v"]) for r in written
                    if r["k"] == "a" and r["window_start"].second == 10)
    assert window == [(0, False, 1, 1.0), (1, False, 2, 5.0), (2, True, 3, 10.0)]
    latest = namespace["ws"].latest(namespace["written"]).collect()
    assert sorted((r["k"], r["window_start"].second, r["revision"], r["final"])
                  for r in latest) == [("a", 10, 2, True), ("a", 20, 0, False),
                                       ("b", 10, 1, True), ("b", 30, 0, False)]
