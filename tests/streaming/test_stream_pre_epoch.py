"""Keys whose rows all lie before 1970 on a stream. Spark's watermark starts at the
epoch and never goes below it: where Spark's late filter is on, such rows are counted
late; where wisp's operator decides (pane partials), they wait until a later row moves
the watermark past the epoch, and the key's timer (at a time before the epoch, which
would never fire: `processor.EARLIEST_TIMER_MS`) then writes their windows, as in
batch. Either way nothing is lost silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("old", "1969-12-31 23:59:50", 1.0), ("old", "1969-12-31 23:59:58", 2.0),
          ("older", "1900-01-01 00:00:00", 4.0)],
         [("new", "2024-01-01 00:00:00", 8.0)],
         [("new", "2024-01-01 00:10:00", 16.0)]]
"""One file a micro-batch: the first has only times before 1970."""


def run(streaming: SparkSession, tmp_path: Path, window: ws.Window
        ) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], int]:
    """The rows the stream wrote (restarted after every file), the batch's rows over
    every file, and the late rows counted."""
    late = 0
    (tmp_path / "in").mkdir()
    for i, rows in enumerate(FILES):
        with (tmp_path / "in" / f"part-{i}.json").open("w") as out:
            out.writelines(json.dumps({"k": k, "s": s, "v": v}) + "\n" for k, s, v in rows)
        stream = (streaming.readStream.schema("k string, s string, v double")
                  .option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
                  .select("k", F.col("s").cast("timestamp").alias("ts"), "v"))
        query = (ws.events(stream, time="ts", key="k", lateness="1s").window(window)
                 .agg(ws.count(), ws.sum("v"))
                 .writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "chk"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        late += ws.stream_report(query)["late"]
    found = sorted(tuple(r) for r in streaming.read.parquet(str(tmp_path / "out")).collect())
    every = [row for rows in FILES for row in rows]
    batch = (streaming.createDataFrame(every, "k string, s string, v double")
             .select("k", F.col("s").cast("timestamp").alias("ts"), "v"))
    expected = sorted(tuple(r) for r in ws.events(batch, time="ts", key="k").window(window)
                      .agg(ws.count(), ws.sum("v")).collect())
    return found, expected, late


def test_on_pane_partials_they_are_written_once_the_watermark_passes(
        streaming: SparkSession, tmp_path: Path) -> None:
    found, expected, late = run(streaming, tmp_path, ws.Tumbling("10s"))
    # the newest key's last window waits for the watermark; every row before 1970 is in
    # its window
    assert late == 0
    assert [r for r in found if r[0] != "new"] == [r for r in expected if r[0] != "new"]
    assert {r[0] for r in found} == {"old", "older", "new"}


@pytest.mark.parametrize("window", [ws.Range.past("5s"), ws.Session("3s")],
                         ids=["range", "session"])
def test_under_sparks_late_filter_they_are_counted_late(
        streaming: SparkSession, tmp_path: Path, window: ws.Window) -> None:
    found, expected, late = run(streaming, tmp_path, window)
    assert late == 3
    assert {r[0] for r in found} == {"new"}
    assert found == [r for r in expected if r[0] == "new"][:len(found)]
