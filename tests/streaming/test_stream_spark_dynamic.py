"""Dynamic windows on real Spark: anchors from a second stream (two file sources, one
file of each per micro-batch, each with its own lateness) and clock anchors; the
Parquet sink with a checkpoint, `trigger(availableNow=True)`. The rows written equal
the batch query's rows that are final at the last watermark, with a restart between
every micro-batch as in one run."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from oracle import assert_rows_match, sort_output
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark

Event = tuple[str, float, float | None]  # (key, seconds, value)
Anchor = tuple[str, float, float, float]  # (key, seconds, began, ended)
# One file of each per micro-batch, lateness 5 s on both. The query's watermark is the
# smaller of the two inputs' (after the files: 6, 14, 20, 28, 35, 55 s); no row is at or
# below the watermark of the batch before its own, whichever batches a restart adds.
EVENTS: list[list[Event]] = [
    [("a", 10, 1.0), ("b", 11, 2.0), ("a", 12, 0.5)],
    [("a", 20, None), ("b", 14, 3.0)],
    [("a", 16, math.nan), ("a", 17, 4.0), ("b", 30, 5.0)],
    [("a", 31, 6.0), ("c", 33, -1.0)],
    [("a", 40, 7.0), ("b", 38, 8.0)],
    [("a", 60, 1.0), ("b", 60, 1.0), ("c", 60, 0.0)],
]
ANCHORS: list[list[Anchor]] = [
    [("a", 11, 9, 11)],
    [("b", 15, 10, 15), ("a", 19, 12, 21)],
    [("a", 25, 15, 26)],
    [("c", 34, 30, 34), ("b", 32, 29, 40)],
    [("a", 41, 30, 45), ("b", 39, 31, 39)],
    [("a", 60, 50, 60), ("b", 60, 50, 60)],
]
WATERMARK = 55
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def write_file(directory: Path, index: int, rows: Sequence[dict[str, Any]]) -> None:
    path = directory / f"part-{index:03d}.json"
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    os.utime(path, (1_000_000 + index, 1_000_000 + index))


def event_rows(events: Sequence[Event]) -> list[dict[str, Any]]:
    return [{"k": k, "t": t, "v": "NaN" if v is not None and math.isnan(v) else v}
            for k, t, v in events]


def anchor_rows(anchors: Sequence[Anchor]) -> list[dict[str, Any]]:
    return [{"k": k, "at": t, "began": b, "ended": e} for k, t, b, e in anchors]


def micros(name: str) -> Any:
    return F.timestamp_micros((F.col(name) * 1e6).cast("long")).alias(name)


def event_stream(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, t double, v string")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", micros("t").alias("ts"), F.col("v").cast("double").alias("v"))


def anchor_stream(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, at double, began double, ended double")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", micros("at"), micros("began"), micros("ended"))


Query = Callable[[ws.Events, ws.Events | None], DataFrame]


def anchored(ev: ws.Events, anchors: ws.Events | None) -> DataFrame:
    assert anchors is not None
    window = ws.Dynamic(anchors, start="began", end="ended", obsolete="began")
    return ev.window(window).agg(ws.count(), ws.sum("v"), ws.max("v"))


def clocked(ev: ws.Events, anchors: ws.Events | None) -> DataFrame:
    return ev.window(ws.Dynamic(ws.clock("5s"), start="-5s", closed="right")).agg(
        ws.count(), ws.sum("v"))


def run_stream(spark: SparkSession, tmp: Path, query: Query, restart: bool,
               files: tuple[list[list[Event]], list[list[Anchor]]] = (EVENTS, ANCHORS)
               ) -> tuple[list[dict[str, Any]], int]:
    """The rows the stream writes, and the late rows its runs counted."""
    events, anchor_files = files
    events_in, anchors_in, out, checkpoint = (tmp / "events", tmp / "anchors", tmp / "out",
                                              tmp / "chk")
    events_in.mkdir()
    anchors_in.mkdir()
    late = 0
    rounds = [[i] for i in range(len(events))] if restart else [list(range(len(events)))]
    for indices in rounds:
        for i in indices:
            write_file(events_in, i, event_rows(events[i]))
            write_file(anchors_in, i, anchor_rows(anchor_files[i]))
        ev = ws.events(event_stream(spark, events_in), time="ts", key="k", lateness="5s")
        anchors = ws.events(anchor_stream(spark, anchors_in), time="at", key="k",
                            lateness="5s")
        running = (query(ev, anchors).writeStream.format("parquet")
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(availableNow=True).start(str(out)))
        running.awaitTermination()
        late += ws.stream_report(running)["late"]
    return [r.asDict() for r in spark.read.parquet(str(out)).collect()], late


def batch_rows(spark: SparkSession, query: Query, clock_end: bool = False
               ) -> list[dict[str, Any]]:
    events = [(k, int(t * 1e6), v) for f in EVENTS for k, t, v in f]
    anchors = [(k, *(int(x * 1e6) for x in (t, b, e))) for f in ANCHORS for k, t, b, e in f]
    ev_df = spark.createDataFrame(events, "k string, t long, v double").select(
        "k", F.timestamp_micros("t").alias("ts"), "v")
    an_df = spark.createDataFrame(anchors, "k string, at long, began long, ended long") \
        .select("k", *[F.timestamp_micros(c).alias(c) for c in ("at", "began", "ended")])
    ev = ws.events(ev_df, time="ts", key="k")
    if clock_end:  # the stream's ticks run to the watermark: the batch clock to it too
        end = EPOCH + dt.timedelta(seconds=WATERMARK)
        result = ev.window(ws.Dynamic(ws.clock("5s", end=end), start="-5s",
                                      closed="right")).agg(ws.count(), ws.sum("v"))
    else:
        result = query(ev, ws.events(an_df, time="at", key="k"))
    return [r.asDict() for r in result.collect()]


def final(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose anchor and window end the last watermark has reached."""
    return [r for r in rows if r["time"].timestamp() <= WATERMARK
            and r["window_end"].timestamp() <= WATERMARK]


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-12)


def test_anchors_from_a_second_stream_equal_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path) -> None:
    """A restart between every micro-batch (each run reads the next file of each)."""
    got, late = run_stream(streaming, tmp_path, anchored, True)
    want = final(batch_rows(streaming, anchored))
    assert late == 0
    assert len(want) == 8  # every anchor but the two at 60 s
    assert_same(got, want)
    by_anchor = {(r["k"], r["time"].timestamp()): r for r in got}
    # [12 s, 21 s] of key a: 0.5, 16 (NaN), 17 and 20 (null)
    assert by_anchor[("a", 19)]["count"] == 4
    assert math.isnan(by_anchor[("a", 19)]["sum_v"])
    # [29 s, 40 s] of key b: 30 and 38
    assert (by_anchor[("b", 32)]["count"], by_anchor[("b", 32)]["sum_v"]) == (2, 13.0)


def test_a_clock_on_a_stream_ticks_up_to_the_watermark(
        streaming: SparkSession, tmp_path: Path) -> None:
    """Every 5 s from each key's first event up to the watermark (55 s), not to the
    key's last event: the batch clock ending at the watermark. One run over all files."""
    got, late = run_stream(streaming, tmp_path, clocked, False)
    want = final(batch_rows(streaming, clocked, clock_end=True))
    assert late == 0
    assert sorted((r["k"], r["time"].timestamp()) for r in got if r["k"] == "c") == [
        ("c", 35.0), ("c", 40.0), ("c", 45.0), ("c", 50.0), ("c", 55.0)]
    assert_same(got, want)


def test_a_broken_obsolete_promise_fails_the_stream(
        streaming: SparkSession, tmp_path: Path) -> None:
    """The anchor at 12 s has obsolete 5 s (its `began`), below the 9 s of the anchor
    before it: the query fails from the worker, with the batch message."""
    files = ([[("a", 10, 1.0), ("a", 30, 2.0)]],
             [[("a", 11, 9, 11), ("a", 12, 5, 12), ("a", 30, 25, 30)]])
    with pytest.raises(Exception) as caught:
        run_stream(streaming, tmp_path, anchored, False, files)
    found = ws.wisp_error(caught.value)
    assert isinstance(found, ws.WispInputError), caught.value
    assert str(found) == (
        "`obsolete` must not decrease from one anchor to the next, found obsolete "
        "1970-01-01 00:00:05.000000 UTC at the anchor at time 1970-01-01 00:00:12.000000 "
        "UTC (key {'k': 'a'}) after obsolete 1970-01-01 00:00:09.000000 UTC of the anchor "
        "before it")


def test_an_anchor_stream_without_rows_holds_the_watermark(
        streaming: SparkSession, tmp_path: Path) -> None:
    """Spark counts an input that has seen no rows as watermark 0: while the anchors
    have sent nothing, the watermark stays at the epoch (the events up to 15 s would
    move it to 10 s), so the anchor at 2.5 s that comes later is not late; once both
    inputs have rows, the smaller watermark (the anchors', 20 s - 5 s) emits its window
    [0 s, 2.5 s] over the events at 1 s and 2 s."""
    files: tuple[list[list[Event]], list[list[Anchor]]] = (
        [[("a", 1, 1.0), ("a", 2, 1.0), ("a", 15, 1.0)], [], [("a", 16, 1.0)],
         [("a", 30, 1.0)]],
        [[], [], [("a", 2.5, 0, 2.5)], [("a", 20, 15, 20)]])
    got, late = run_stream(streaming, tmp_path, anchored, False, files)  # one run
    assert late == 0
    assert [(r["time"].timestamp(), r["count"], r["sum_v"]) for r in got] == [
        (2.5, 2, 2.0)]
