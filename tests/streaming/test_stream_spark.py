"""Streams on real Spark: one JSON file per micro-batch (`maxFilesPerTrigger=1`, the
files' modification times set in order), `trigger(availableNow=True)` (which runs the
final batch without data that closes what the last file's watermark allows), the Parquet
sink with a checkpoint. The rows written equal the batch query's rows over the accepted
events that are final at the last watermark; a restart between every micro-batch gives
the rows of one uninterrupted run; late rows are counted; a wrong state store and a
checkpoint of another query are refused."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from oracle import assert_rows_match, sort_output
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.engine import streaming as stream_engine
from wisp.engine.streaming import ROCKSDB, STATE_STORE
from wisp.events import LatePolicy
from wisp.runtime.streaming import StreamKernel

pytestmark = pytest.mark.spark

Event = tuple[str, float, float | None]
# (key, seconds, value), lateness 5 s. A row is late when its time is at or below the
# watermark of the batch before its own, so whether a row is late depends on where the
# batches fall (a restart adds a batch without data, which moves the watermark on): the
# rows out of order here are late, or not, whatever the batches: ("a", 16) and ("a", 17)
# after ("a", 20) stay above 15, ("b", 29) above 28, and ("a", 25) after ("a", 31) is at
# or below 25.
FILES: list[list[Event]] = [
    [("a", 10, 1.0), ("b", 11, 2.0), ("a", 10, 0.5)],
    [("a", 20, None)],
    [("a", 16, math.nan), ("a", 17, 4.0), ("b", 30, 5.0)],
    [("a", 31, 6.0), ("c", 33, -1.0)],
    [("a", 25, 7.0), ("b", 29, 8.0)],
    [("a", 60, 1.0), ("b", 60, 1.0)],
]
LATE = [("a", 25, 7.0)]
WATERMARK = 55  # the newest time (60) minus the lateness (5 s)


def write_file(directory: Path, index: int, events: Sequence[Event]) -> None:
    path = directory / f"part-{index:03d}.json"
    with path.open("w") as out:
        for key, seconds, value in events:
            shown = "NaN" if value is not None and math.isnan(value) else value
            out.write(json.dumps({"k": key, "t": seconds, "v": shown}) + "\n")
    os.utime(path, (1_000_000 + index, 1_000_000 + index))


def source(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, t double, v string")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"),
                      F.col("v").cast("double").alias("v"))



def batch_frame(spark: SparkSession, events: Sequence[Event]) -> DataFrame:
    rows = [(k, int(t * 1e6), v) for k, t, v in events]
    return spark.createDataFrame(rows, "k string, t long, v double").select(
        "k", F.timestamp_micros("t").alias("ts"), "v")


Query = Callable[[ws.Events], DataFrame]


def run_stream(spark: SparkSession, tmp: Path, query: Query, files: list[list[Event]],
               restart_every_batch: bool, on_late: LatePolicy = "count"
               ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows the stream writes, and the report of its runs (`late` summed)."""
    incoming, out, checkpoint = tmp / "in", tmp / "out", tmp / "chk"
    incoming.mkdir()
    report: dict[str, Any] = {}
    late = emitted = 0
    rounds = [[i] for i in range(len(files))] if restart_every_batch else \
        [list(range(len(files)))]
    for indices in rounds:
        for i in indices:
            write_file(incoming, i, files[i])
        result = query(ws.events(source(spark, incoming), time="ts", key="k",
                                 lateness="5s", on_late=on_late))
        running = (result.writeStream.format("parquet")
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(availableNow=True).start(str(out)))
        running.awaitTermination()
        report = ws.stream_report(running)
        late += report["late"]
        emitted += report["late_emitted"]
    report["late"], report["late_emitted"] = late, emitted
    rows = [r.asDict() for r in spark.read.parquet(str(out)).collect()]
    return rows, report


def final_batch_rows(spark: SparkSession, query: Query, is_final: Callable[[Any], bool]
                     ) -> list[dict[str, Any]]:
    accepted = [e for f in FILES for e in f if e not in LATE]
    result = query(ws.events(batch_frame(spark, accepted), time="ts", key="k"))
    return [r.asDict() for r in result.collect() if is_final(r)]


def seconds(moment: Any) -> float:
    return float(moment.timestamp())


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-12)


def range_query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Range("-10s", "2s")).agg(ws.count(), ws.sum("v"), ws.max("v"))


@pytest.mark.parametrize("restart", [False, True], ids=["one-run", "restart-every-batch"])
def test_range_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, restart: bool) -> None:
    got, report = run_stream(streaming, tmp_path, range_query, FILES, restart)
    want = final_batch_rows(streaming, range_query,
                            lambda r: seconds(r["window_end"]) <= WATERMARK)
    assert len(want) == 10  # every accepted event's window but the two at 60 s
    assert len(got) == len(want)
    assert_same(got, want)
    assert report["late"] == len(LATE)
    if not restart:
        assert report["rows_in"] == sum(len(f) for f in FILES)


@pytest.mark.parametrize("restart", [False, True], ids=["one-run", "restart-every-batch"])
def test_late_rows_are_emitted_with_their_reason(
        streaming: SparkSession, tmp_path: Path, restart: bool) -> None:
    """on_late="emit": the window rows are those of the default, and the late row comes
    out as a row with its key, its columns and why it is late."""
    got, report = run_stream(streaming, tmp_path, range_query, FILES, restart, "emit")
    windows = [{k: v for k, v in r.items() if k not in ("late_reason", "late_row")}
               for r in got if r["late_reason"] is None]
    late = [r for r in got if r["late_reason"] is not None]
    want = final_batch_rows(streaming, range_query,
                            lambda r: seconds(r["window_end"]) <= WATERMARK)
    assert_same(windows, want)
    assert all(r["late_row"] is None for r in got if r["late_reason"] is None)
    assert [(r["k"], seconds(r["late_row"]["ts"]), r["late_row"]["v"]) for r in late] \
        == LATE
    assert all(r["time"] is None and r["count"] is None for r in late)
    # key a was last fed in the batch of ("a", 31), at the watermark 30 - 5 s (with a
    # restart, the batch without data after it, at 28 s, has no timer of a's to fire)
    assert late[0]["late_reason"] == (
        "at or below the watermark 1970-01-01 00:00:25, up to which the key's rows were "
        "already in windows")
    assert (report["late"], report["late_emitted"]) == (len(LATE), len(LATE))


Shape = Callable[[DataFrame], DataFrame]


def stream_once(spark: SparkSession, tmp: Path, shape: Shape, query: Query,
                **binding: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """FILES through `query` over `shape`(the stream) in one run: the rows written and
    the report."""
    incoming, out = tmp / "in", tmp / "out"
    incoming.mkdir()
    for i, events in enumerate(FILES):
        write_file(incoming, i, events)
    ev = ws.events(shape(source(spark, incoming)), **binding)
    running = (query(ev).writeStream.format("parquet")
               .option("checkpointLocation", str(tmp / "chk"))
               .trigger(availableNow=True).start(str(out)))
    running.awaitTermination()
    return ([r.asDict() for r in spark.read.parquet(str(out)).collect()],
            ws.stream_report(running))


def batch_once(spark: SparkSession, shape: Shape, query: Query, is_final: Callable[
        [Any], bool], **binding: Any) -> list[dict[str, Any]]:
    """The batch rows over `shape`(the accepted events) that are final at WATERMARK."""
    accepted = [e for f in FILES for e in f if e not in LATE]
    result = query(ws.events(shape(batch_frame(spark, accepted)), **binding))
    return [r.asDict() for r in result.collect() if is_final(r)]


def lifetimes(df: DataFrame) -> DataFrame:
    """Interval events `[ts, ts + 3 s)`, open-ended where `v` is null."""
    return df.withColumn("e", F.when(F.col("v").isNotNull(),
                                     F.col("ts") + F.expr("interval 3 seconds")))


INTERVAL_KINDS: dict[str, tuple[ws.Window, str, int | None]] = {
    # the window, the column that must be at or below the watermark, the final rows
    "tumbling": (ws.Tumbling("10s"), "window_end", 8),  # a: 10-50 s (its ("a", 20)
    # never ends), b: 10-40 s, c: 30 s
    "snapshot": (ws.Snapshot(), "window_end", None),
    "count": (ws.CountByStartTime(2), "time", 6),  # pairs of starts: a 10-16 16-17
    # 17-20 20-31, b 11-29 29-30
}


@pytest.mark.parametrize("kind", list(INTERVAL_KINDS))
def test_windows_over_interval_events_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, kind: str) -> None:
    """Interval events in windows of 10 s, snapshot windows or count windows: a window
    is written once the watermark passes its end (a count window: its last start)."""
    window, closing, count = INTERVAL_KINDS[kind]

    def query(ev: ws.Events) -> DataFrame:
        return ev.window(window).agg(ws.count(), ws.sum("v"))

    binding = {"time": "ts", "end": "e", "key": "k"}
    got, report = stream_once(streaming, tmp_path, lifetimes, query, lateness="5s",
                              **binding)
    want = batch_once(streaming, lifetimes, query, lambda r: r[closing] is not None
                      and seconds(r[closing]) <= WATERMARK, **binding)
    assert len(want) == count if count is not None else len(want) > 8
    assert_same(got, want)
    assert report["late"] == len(LATE)


def test_column_names_with_dots_spaces_and_backticks_run_on_a_stream(
        streaming: SparkSession, tmp_path: Path) -> None:
    """Key, time and value columns named `k.y`, `t s` and `` v`x ``, and an unused
    `u.z`: the stream's rows equal the batch's, under the same names."""
    def named(df: DataFrame) -> DataFrame:
        return df.select(F.col("k").alias("k.y"), F.col("ts").alias("t s"),
                         F.col("v").alias("v`x"), F.lit(1).alias("u.z"))

    def query(ev: ws.Events) -> DataFrame:
        return ev.window(ws.Range("-10s", "2s")).agg(ws.count(), ws.sum("v`x"))

    got, _ = stream_once(streaming, tmp_path, named, query, time="t s", key="k.y",
                         lateness="5s")
    want = batch_once(streaming, named, query,
                      lambda r: seconds(r["window_end"]) <= WATERMARK, time="t s",
                      key="k.y")
    assert len(want) == 10
    assert sorted(got[0]) == sorted(want[0])  # the same column names
    assert_rows_match(sort_output(got, ["k.y"]), sort_output(want, ["k.y"]), rel=1e-12)


def test_timestamp_ntz_time_runs_on_a_stream_in_any_session_time_zone(
        streaming: SparkSession, tmp_path: Path) -> None:
    """timestamp_ntz time in a session whose zone is New York: the wall-clock times
    (the events' times there, a day on) are read as they are."""
    base = dt.datetime(1970, 1, 1, 19)  # 0 s UTC on New York's wall clock, a day on

    def wall(df: DataFrame) -> DataFrame:
        return df.withColumn("ts", F.col("ts").cast("timestamp_ntz")
                             + F.expr("interval 1 day"))

    def query(ev: ws.Events) -> DataFrame:
        return ev.window(ws.Range("-10s", "2s")).agg(ws.count(), ws.sum("v"))

    zone = streaming.conf.get("spark.sql.session.timeZone")
    streaming.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        got, report = stream_once(streaming, tmp_path, wall, query, time="ts", key="k",
                                  lateness="5s")
        want = batch_once(streaming, wall, query, lambda r: r["window_end"] <= base
                          + dt.timedelta(seconds=WATERMARK), time="ts", key="k")
    finally:
        streaming.conf.set("spark.sql.session.timeZone", zone or "UTC")
    assert len(want) == 10
    assert want[0]["time"].hour == 19  # the wall clock, not shifted
    assert_same(got, want)
    assert report["late"] == len(LATE)


NUMERIC_TIME = {
    # the time type, a second in its units, and an offset within the second; one tick
    # reads as one microsecond (a unit of float time, 0.000001 of decimal(20, 6) time).
    # The watermark reads a float time's floor: 25.25 is as late as 25.
    "double": ("double", 1_000_000, 0.25),
    "decimal": ("decimal(20, 6)", 1, 0),
}


@pytest.mark.parametrize("name", list(NUMERIC_TIME))
def test_numeric_time_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, name: str) -> None:
    """Float and decimal time: the watermark reads one tick as one microsecond."""
    time_type, second, offset = NUMERIC_TIME[name]

    def numeric(df: DataFrame) -> DataFrame:
        seconds_in = F.unix_micros("ts").cast("decimal(20, 6)") / 1_000_000
        moment = (seconds_in * second + F.lit(offset)).cast(time_type)
        return df.select("k", moment.alias("x"), "v")

    def query(ev: ws.Events) -> DataFrame:
        return ev.window(ws.Range(-10 * second, 2 * second)).agg(ws.count(), ws.sum("v"))

    got, report = stream_once(streaming, tmp_path, numeric, query, time="x", key="k",
                              lateness=5 * second)
    want = batch_once(streaming, numeric, query,
                      lambda r: float(r["window_end"]) <= WATERMARK * second,
                      time="x", key="k")
    assert len(want) == 10
    assert_same(got, want)
    assert report["late"] == len(LATE)


KINDS: dict[str, tuple[Query, str]] = {
    # the query, and the column whose time must be at or below the watermark
    "rows": (lambda ev: ev.window(ws.Rows(-1, 1)).agg(ws.count(), ws.sum("v")),
             "window_end"),
    "session": (lambda ev: ev.window(ws.Session("4s")).agg(ws.count(), ws.mean("v")),
                "window_end"),
    "cumulative": (lambda ev: ev.agg(ws.count(), ws.sum("v"), ws.max("v")), "time"),
    "since": (lambda ev: ev.window(ws.Since(F.col("v") > 3)).agg(ws.count(), ws.sum("v")),
              "time"),
    "tumbling": (lambda ev: ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.max("v")),
                 "window_end"),
    "hopping": (lambda ev: ev.window(ws.Hopping("10s", "4s")).agg(ws.count(), ws.sum("v")),
                "window_end"),
}


def check_final_rows(spark: SparkSession, tmp: Path, query: Query, closing: str) -> None:
    """One run over FILES writes the batch query's rows whose `closing` time is at or
    below the last watermark, and counts the late rows."""
    got, report = run_stream(spark, tmp, query, FILES, False)
    want = final_batch_rows(spark, query, lambda r: seconds(r[closing]) <= WATERMARK)
    assert want, "the batch has final rows to compare"
    assert_same(got, want)
    assert report["late"] == len(LATE)


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, kind: str) -> None:
    check_final_rows(streaming, tmp_path, *KINDS[kind])


def test_a_checkpoint_of_another_query_is_refused(streaming: SparkSession,
                                                  tmp_path: Path) -> None:
    run_stream(streaming, tmp_path, range_query, FILES[:2], False)
    other = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k",
                      lateness="5s").window(ws.Range("-20s", "2s")).agg(
        ws.count(), ws.sum("v"), ws.max("v"))
    write_file(tmp_path / "in", 2, FILES[2])
    running = (other.writeStream.format("parquet")
               .option("checkpointLocation", str(tmp_path / "chk"))
               .trigger(availableNow=True).start(str(tmp_path / "out")))
    with pytest.raises(Exception, match="`checkpointLocation` must belong to this query, "
                       "found a checkpoint made for another query"):
        running.awaitTermination()


def test_the_state_store_must_be_rocksdb(streaming: SparkSession, tmp_path: Path) -> None:
    streaming.conf.set(STATE_STORE, "org.apache.spark.sql.execution.streaming.state."
                       "HDFSBackedStateStoreProvider")
    try:
        tmp_path.joinpath("in").mkdir()
        ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k",
                       lateness="5s")
        with pytest.raises(ws.WispInputError, match=(
                "`spark.sql.streaming.stateStore.providerClass` must be "
                f"{ROCKSDB} for a query over a stream")):
            range_query(ev)
    finally:
        streaming.conf.set(STATE_STORE, ROCKSDB)


def test_stream_explain_says_what_is_kept_and_when_rows_are_emitted(
        streaming: SparkSession, tmp_path: Path) -> None:
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    text = ws.explain(range_query(ev))
    assert "Strategy stream: Structured Streaming" in text
    assert "State per key: the rows within the window's reach" in text
    assert "Emitted: a row's window once the watermark passes its time + end" in text


def test_tumbling_windows_carry_pane_partials_where_every_aggregation_has_them(
        streaming: SparkSession, tmp_path: Path) -> None:
    """count, sum, mean, min, max, variance of a double: partials per pane; an
    aggregation without pane partials (first) keeps the rows of the open windows."""
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    panes = ws.explain(ev.window(ws.Hopping("10s", "4s")).agg(
        ws.count(), ws.mean("v"), ws.max("v"), ws.variance("v")))
    assert "Strategy stream: Structured Streaming" in panes
    assert "panes of gcd(size, hop)" in panes
    assert "State per key: one row of partial aggregates per non-empty pane" in panes
    rows = ws.explain(ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.first("v")))
    assert "State per key: the rows of the windows not yet final" in rows


def test_null_times_are_dropped_and_counted_on_a_stream(streaming: SparkSession,
                                                        tmp_path: Path) -> None:
    incoming = tmp_path / "in"
    incoming.mkdir()
    (incoming / "one.json").write_text("".join(
        json.dumps({"k": "a", "t": t, "v": 1.0}) + "\n" for t in [10, None, 20, 40]))
    ev = ws.events(source(streaming, incoming), time="ts", key="k", lateness="5s",
                   on_null_time="drop")
    running = (ev.agg(ws.count()).writeStream.format("parquet")
               .option("checkpointLocation", str(tmp_path / "chk"))
               .trigger(availableNow=True).start(str(tmp_path / "out")))
    running.awaitTermination()
    report = ws.stream_report(running)
    assert (report["rows_in"], report["rejected_null_time"], report["late"]) == (4, 1, 0)
    rows = streaming.read.parquet(str(tmp_path / "out")).orderBy("time").collect()
    assert [(seconds(r["time"]), r["count"]) for r in rows] == [(10.0, 1), (20.0, 2)]


# ------------------------------------------------------------- injected failures

FAULTS = Path(tempfile.gettempdir()) / f"wisp-stream-faults-{os.getpid()}"
"""A marker file here makes the next data handler (`rows`) or timer handler (`timer`)
of any key fail once: the worker that removes the marker raises."""


def _fault(kind: str) -> None:
    try:
        (FAULTS / kind).unlink()
    except FileNotFoundError:
        return
    raise RuntimeError(f"injected failure in the {kind} handler")


@dataclasses.dataclass(frozen=True)
class FailingStream(StreamKernel):
    """The stream logic, failing once where a marker says."""

    def on_rows(self, state: Any, rows: Any, watermark_ms: int) -> Any:
        _fault("rows")
        return super().on_rows(state, rows, watermark_ms)

    def on_timer(self, state: Any, watermark_ms: int) -> Any:
        _fault("timer")
        return super().on_timer(state, watermark_ms)


@pytest.mark.parametrize("handler", ["rows", "timer"])
def test_a_failure_in_a_handler_then_a_restart_loses_and_repeats_nothing(
        streaming: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        handler: str) -> None:
    """Two files, then the rest in a second run before which a marker makes one
    handler fail (with state and timers already stored): the query stops with the
    error and is started again. The rows written equal the batch rows, each once."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(stream_engine, "StreamKernel", FailingStream)
    FAULTS.mkdir(exist_ok=True)
    incoming, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    incoming.mkdir()
    failed = 0
    for files in (range(2), range(2, len(FILES))):
        for i in files:
            write_file(incoming, i, FILES[i])
        if 0 not in files:
            (FAULTS / handler).touch()
        for _attempt in range(2):
            result = range_query(ws.events(source(streaming, incoming), time="ts", key="k",
                                           lateness="5s"))
            running = (result.writeStream.format("parquet")
                       .option("checkpointLocation", str(checkpoint))
                       .trigger(availableNow=True).start(str(out)))
            try:
                running.awaitTermination()
                break
            except Exception as error:  # the injected failure, and only that
                assert f"injected failure in the {handler} handler" in str(error)
                failed += 1
    assert failed == 1
    got = [r.asDict() for r in streaming.read.parquet(str(out)).collect()]
    want = final_batch_rows(streaming, range_query,
                            lambda r: seconds(r["window_end"]) <= WATERMARK)
    assert_same(got, want)
