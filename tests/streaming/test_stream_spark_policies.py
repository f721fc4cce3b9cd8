"""Sliding and policy-tumbling windows on real Spark streams (the helpers of
test_stream_spark.py: one JSON file per micro-batch, `availableNow`, the Parquet sink),
restarted from the checkpoint: sliding count-time windows after every micro-batch, the
others once (the three streams side by side). The rows written equal the
batch query's rows over the accepted events that are final at the last watermark (55 s):
firings whose time is at or below it. Every key has a tuple after the watermark (60 s),
so the batch's time firings reach past it as the stream's do (a stream goes on firing
after a key's newest tuple; a batch stops at the first firing at or after it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_stream_spark import (
    FILES,
    LATE,
    WATERMARK,
    Event,
    Query,
    Written,
    assert_same,
    batch_frame,
    keyed,
    run_streams,
    seconds,
    source,
)

import wisp as ws

pytestmark = pytest.mark.spark

# FILES's events in four micro-batches (fewer restarts), with key c's newest tuple after
# the watermark too. Watermarks: 15 s after the first, 25 s, 28 s: ("a", 25) in the last
# is at or below 28 (late), ("b", 29) above it.
POLICY_FILES: list[list[Event]] = [FILES[0] + FILES[1], FILES[2], FILES[3],
                                   FILES[4] + [("a", 60, 1.0), ("b", 60, 1.0),
                                               ("c", 60, 2.0)]]

QUERIES: dict[str, Query] = {
    "sliding-time-count": lambda ev: ev.window(ws.Sliding(ws.Time("10s"), ws.Count(2))).agg(
        ws.count(), ws.sum("v"), ws.max("v")),
    "sliding-count-time": lambda ev: ev.window(ws.Sliding(ws.Count(3), ws.Time("4s"))).agg(
        ws.count(), ws.sum("v"), ws.max("v")),
    "tumbling-time": lambda ev: ev.window(ws.Tumbling(ws.Time("7s"))).agg(
        ws.count(), ws.sum("v"), ws.max("v")),
}


def final_rows(spark: SparkSession, query: Query) -> list[dict[str, Any]]:
    accepted = [e for f in POLICY_FILES for e in f if e not in LATE]
    result: DataFrame = query(ws.events(batch_frame(spark, accepted), time="ts", key="k"))
    return [r.asDict() for r in result.collect() if seconds(r["time"]) <= WATERMARK]


@pytest.fixture(scope="module")
def restarted(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Written]:
    """The three streams side by side: sliding count-time windows restarted after every
    micro-batch, the others once (a run over the first two files, one over the rest)."""
    every = range(len(POLICY_FILES))
    return run_streams(streaming, tmp_path_factory.mktemp("restarted"),
                       {name: keyed(query) for name, query in QUERIES.items()},
                       POLICY_FILES, {name: every if name == "sliding-count-time"
                                      else [1, 3] for name in QUERIES})


@pytest.mark.parametrize("name", list(QUERIES))
def test_policy_windows_on_a_restarted_stream_equal_the_final_batch_rows(
        streaming: SparkSession, restarted: dict[str, Written], name: str) -> None:
    query = QUERIES[name]
    got, report = restarted[name]
    want = final_rows(streaming, query)
    assert want, "the batch has final rows to compare"
    assert len(got) == len(want)
    assert_same(got, want)
    assert report["late"] == len(LATE)


def test_stream_explain_says_what_a_policy_window_keeps_and_when_it_writes(
        streaming: SparkSession, tmp_path: Path) -> None:
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    text = ws.explain(QUERIES["sliding-count-time"](ev))
    assert "Strategy stream: Structured Streaming" in text
    assert "kernel of the batch strategy arrow-spl" in text
    assert "State per key: the window's contents (count eviction: the last n tuples" in text
    assert "Emitted: every time firing once the watermark passes it" in text
    text = ws.explain(ev.window(ws.Tumbling(ws.Count(3))).agg(ws.count()))
    assert "State per key: the tuples since the last firing" in text
    assert ("Emitted: a firing once the tuple that fires it has entered (the watermark "
            "passed its time); a stream has no end: no flushed tail (partial)") in text
