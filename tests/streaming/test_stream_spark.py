"""Streams on real Spark: one JSON file per micro-batch (`maxFilesPerTrigger=1`, the
files' modification times set in order; two per batch where said), `trigger(availableNow=
True)` (which runs the final batch without data that closes what the last file's
watermark allows), the Parquet sink with a checkpoint. The rows written equal the batch
query's rows over the accepted events that are final at the last watermark; a restart
between every micro-batch (or at two points) gives the rows of one uninterrupted run;
late rows are counted; a wrong state store and a checkpoint of another query are
refused. Streams that check the same files run side by side (`run_streams`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from faults import Faults, pickled_by_value
from oracle import assert_rows_match, sort_output
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.engine import streaming as stream_engine
from wisp.engine.streaming import ROCKSDB, STATE_STORE
from wisp.events import LatePolicy
from wisp.runtime.streaming.buckets import KeyBuckets
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.pane_buckets import PaneBuckets
from wisp.windowed import progress_report

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
PANE_LATE: list[Event] = []
# Tumbling and Hopping on pane partials take a row as long as the earliest window holding
# it is open for its key: ("a", 25) lies in [20, 30) (Hopping("10s", "4s"): [16, 26)),
# still open at watermark 28, the highest before it, so it goes in and no row is late.
# The same events in four micro-batches (fewer for the streams run once): watermarks 15 s
# after the first, 25 s, 28 s; ("a", 25) in the last is at or below 25 (late), ("b", 29)
# above it, ("a", 16) and ("a", 17) above 15 as before.
FOUR_FILES: list[list[Event]] = [FILES[0] + FILES[1], FILES[2], FILES[3],
                                 FILES[4] + FILES[5]]
WATERMARK = 55  # the newest time (60) minus the lateness (5 s)
RESTARTED_TWICE = (1, 3, 5)
"""The rounds of `run_streams` at which a stream over six files (FILES, or another
module's six) starts when restarted twice: runs over files 0-1, 2-3 and 4-5."""


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


AT_ONCE = 5
"""How many streams run side by side: each start of a stream spawns a Python worker on
the driver that must connect back within Spark's timeout, which several cold starts at
once on two cores loaded by other work can miss ("Python worker failed to connect
back"); more at once saves no time on two cores."""

Query = Callable[[ws.Events], DataFrame]
Pipeline = Callable[[DataFrame], DataFrame]
"""The raw stream (or batch) of `source` to a query's result."""
Reader = Callable[[SparkSession, Path], DataFrame]
"""The raw stream of the files in a directory."""
Written = tuple[list[dict[str, Any]], dict[str, Any]]
"""The rows a stream wrote, and the report of its runs (`late`, `late_emitted` summed)."""


def keyed(query: Query, on_late: LatePolicy = "count") -> Pipeline:
    """`query` over the events keyed by `k` at `ts`, lateness 5 s."""
    return lambda df: query(ws.events(df, time="ts", key="k", lateness="5s",
                                      on_late=on_late))


def run_streams(spark: SparkSession, tmp: Path, pipelines: dict[str, Pipeline],
                files: Sequence[Sequence[Any]], starts: Mapping[str, Collection[int]] | None = None,
                write: Callable[[Path, int, Any], None] | None = None,
                read: Reader | None = None) -> dict[str, Written]:
    """Several streaming queries side by side over one input directory, each with its
    own checkpoint and output (`tmp`/name): file i is written in round i, and in round i
    each query that `starts` there (by default: the last round alone, one run) is started
    from its checkpoint; the round's queries run to their end together. A query started
    in round i reads the files up to i one per micro-batch; started in every round, it is
    restarted between every micro-batch. `write` writes file i (default `write_file`),
    `read` gives the raw stream of a directory (default `source`)."""
    incoming = tmp / "in"
    incoming.mkdir()
    last = len(files) - 1
    plan = {name: set(starts.get(name, [last]) if starts else [last]) for name in pipelines}
    assert all(last in rounds for rounds in plan.values()), "each query reads every file"
    late = dict.fromkeys(pipelines, 0)
    emitted = dict.fromkeys(pipelines, 0)
    reports: dict[str, dict[str, Any]] = {}
    for i, events in enumerate(files):
        (write or write_file)(incoming, i, events)
        running: dict[str, Any] = {}
        try:
            for name in pipelines:
                if i in plan[name]:
                    running[name] = start_query(spark, pipelines[name], incoming,
                                                tmp / name, read)
            for name in list(running):
                again = functools.partial(start_query, spark, pipelines[name], incoming,
                                          tmp / name, read)
                reports[name], running[name] = finish(running[name], again)
                late[name] += reports[name]["late"]
                emitted[name] += reports[name]["late_emitted"]
        finally:
            for query in running.values():
                if query.isActive:
                    query.stop()
    written: dict[str, Written] = {}
    for name in pipelines:
        reports[name]["late"], reports[name]["late_emitted"] = late[name], emitted[name]
        rows = [r.asDict() for r in spark.read.parquet(str(tmp / name / "out")).collect()]
        written[name] = (rows, reports[name])
    return written


CONNECT_BACK = "Python worker failed to connect back"
"""Spark's failure when a Python worker it spawned on the driver (one per stream start,
for the stateful operator's first batch) does not connect within Spark's fixed 10 s: a
cold start on two cores busy with the other test process can miss it. Not wisp's
failure, and what a user's supervisor does about it (start the query again from its
checkpoint) is what `finish` does."""
RESTARTS_AFTER_CONNECT_BACK = 2


def start_query(spark: SparkSession, pipeline: Pipeline, incoming: Path, place: Path,
                read: Reader | None) -> Any:
    """`pipeline` over the stream of `incoming` started into Parquet at `place`/"out",
    its checkpoint at `place`/"chk", reading what is there (`availableNow`)."""
    result = pipeline((read or source)(spark, incoming))
    return (result.writeStream.format("parquet")
            .option("checkpointLocation", str(place / "chk"))
            .trigger(availableNow=True).start(str(place / "out")))


def finish(query: Any, restart: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
    """The report of `query` once it has run to its end (`ws.stream_report`), and the
    query that ran to it. A query failed by CONNECT_BACK is started again from its
    checkpoint (`restart`), at most RESTARTS_AFTER_CONNECT_BACK times, with a warning;
    the report covers every attempt's micro-batches, so the rows written and counted
    must still be exactly one run's. Any other failure fails the test."""
    progress: list[Any] = []
    for _ in range(RESTARTS_AFTER_CONNECT_BACK):
        try:
            query.awaitTermination()
            break
        except Exception as failure:  # StreamingQueryException, through Py4J
            if CONNECT_BACK not in str(failure):
                raise
            warnings.warn(f"stream restarted from its checkpoint after: {CONNECT_BACK}",
                          stacklevel=2)
            progress += list(query.recentProgress)
            query = restart()
    else:  # the last attempt: whatever fails it fails the test
        query.awaitTermination()
    return progress_report(progress + list(query.recentProgress)), query


def run_stream(spark: SparkSession, tmp: Path, query: Query, files: list[list[Event]],
               restart_every_batch: bool, on_late: LatePolicy = "count") -> Written:
    """The rows `query` over `files` writes (in `tmp`/"q"), and the report of its runs
    (`late` summed)."""
    starts = range(len(files)) if restart_every_batch else [len(files) - 1]
    return run_streams(spark, tmp, {"q": keyed(query, on_late)}, files, {"q": starts})["q"]


def final_batch_rows(spark: SparkSession, query: Query, is_final: Callable[[Any], bool],
                     late: Sequence[Event] = LATE) -> list[dict[str, Any]]:
    accepted = [e for f in FILES for e in f if e not in late]
    result = query(ws.events(batch_frame(spark, accepted), time="ts", key="k"))
    return [r.asDict() for r in result.collect() if is_final(r)]


def seconds(moment: Any) -> float:
    return float(moment.timestamp())


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-12)


def range_query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Range("-10s", "2s")).agg(ws.count(), ws.sum("v"), ws.max("v"))


@pytest.mark.parametrize("run", ["one_run", "restarted"], ids=["one-run", "restarted-twice"])
def test_range_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, request: pytest.FixtureRequest, run: str) -> None:
    got, report = request.getfixturevalue(run)["range"]
    want = final_batch_rows(streaming, range_query,
                            lambda r: seconds(r["window_end"]) <= WATERMARK)
    assert len(want) == 10  # every accepted event's window but the two at 60 s
    assert len(got) == len(want)
    assert_same(got, want)
    assert report["late"] == len(LATE)
    if run == "one_run":
        assert report["rows_in"] == sum(len(f) for f in FILES)


@pytest.mark.parametrize("run", ["one_run", "restarted"],
                         ids=["one-run", "restart-every-batch"])
def test_late_rows_are_emitted_with_their_reason(
        streaming: SparkSession, request: pytest.FixtureRequest, run: str) -> None:
    """on_late="emit": the window rows are those of the default, and the late row comes
    out as a row with its key, its columns and why it is late."""
    got, report = request.getfixturevalue(run)["late"]
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
    """FOUR_FILES through `query` over `shape`(the stream) in one run: the rows written
    and the report."""
    incoming, out = tmp / "in", tmp / "out"
    incoming.mkdir()
    for i, events in enumerate(FOUR_FILES):
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


INTERVAL_BINDING = {"time": "ts", "end": "e", "key": "k"}


def interval_query(kind: str) -> Query:
    window = INTERVAL_KINDS[kind][0]
    return lambda ev: ev.window(window).agg(ws.count(), ws.sum("v"))


def interval_pipeline(kind: str) -> Pipeline:
    return lambda df: interval_query(kind)(ws.events(lifetimes(df), lateness="5s",
                                                     **INTERVAL_BINDING))


@pytest.mark.parametrize("kind", list(INTERVAL_KINDS))
def test_windows_over_interval_events_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, one_run: dict[str, Written], kind: str) -> None:
    """Interval events in windows of 10 s, snapshot windows or count windows: a window
    is written once the watermark passes its end (a count window: its last start)."""
    _, closing, count = INTERVAL_KINDS[kind]
    got, report = one_run[f"interval-{kind}"]
    want = batch_once(streaming, lifetimes, interval_query(kind), lambda r: r[closing]
                      is not None and seconds(r[closing]) <= WATERMARK, **INTERVAL_BINDING)
    assert len(want) == count if count is not None else len(want) > 8
    assert_same(got, want)
    assert report["late"] == len(LATE)


def named(df: DataFrame) -> DataFrame:
    """Key, time and value columns named `k.y`, `t s` and `` v`x ``, and an unused
    `u.z`."""
    return df.select(F.col("k").alias("k.y"), F.col("ts").alias("t s"),
                     F.col("v").alias("v`x"), F.lit(1).alias("u.z"))


def named_query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Range("-10s", "2s")).agg(ws.count(), ws.sum("v`x"))


def test_column_names_with_dots_spaces_and_backticks_run_on_a_stream(
        streaming: SparkSession, one_run: dict[str, Written]) -> None:
    """Key, time and value columns named `k.y`, `t s` and `` v`x ``, and an unused
    `u.z`: the stream's rows equal the batch's, under the same names."""
    got, _ = one_run["names"]
    want = batch_once(streaming, named, named_query,
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


def numeric(name: str) -> Shape:
    """The time as `name` (NUMERIC_TIME), in the column `x`."""
    time_type, second, offset = NUMERIC_TIME[name]

    def shape(df: DataFrame) -> DataFrame:
        seconds_in = F.unix_micros("ts").cast("decimal(20, 6)") / 1_000_000
        moment = (seconds_in * second + F.lit(offset)).cast(time_type)
        return df.select("k", moment.alias("x"), "v")

    return shape


def numeric_query(name: str) -> Query:
    second = NUMERIC_TIME[name][1]
    return lambda ev: ev.window(ws.Range(-10 * second, 2 * second)).agg(ws.count(),
                                                                         ws.sum("v"))


def numeric_pipeline(name: str) -> Pipeline:
    return lambda df: numeric_query(name)(ws.events(numeric(name)(df), time="x", key="k",
                                                    lateness=5 * NUMERIC_TIME[name][1]))


@pytest.mark.parametrize("name", list(NUMERIC_TIME))
def test_numeric_time_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, one_run: dict[str, Written], name: str) -> None:
    """Float and decimal time: the watermark reads one tick as one microsecond."""
    second = NUMERIC_TIME[name][1]
    got, report = one_run[f"numeric-{name}"]
    want = batch_once(streaming, numeric(name), numeric_query(name),
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


def check_final_rows(spark: SparkSession, written: Written, query: Query, closing: str,
                     late: Sequence[Event] = LATE) -> None:
    """The rows one run of `query` over FILES wrote are the batch query's rows over the
    events but `late` whose `closing` time is at or below the last watermark, and the
    late rows are counted."""
    got, report = written
    want = final_batch_rows(spark, query, lambda r: seconds(r[closing]) <= WATERMARK, late)
    assert want, "the batch has final rows to compare"
    assert_same(got, want)
    assert report["late"] == len(late)


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, one_run: dict[str, Written], kind: str) -> None:
    late = PANE_LATE if kind in ("tumbling", "hopping") else LATE
    check_final_rows(streaming, one_run[f"kind-{kind}"], *KINDS[kind], late)


@pytest.fixture(scope="module")
def one_run(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Written]:
    """The module's streams over FILES that run once, side by side (each query keeps
    its own checkpoint, output and report; running them together saves the waits of
    each micro-batch, not a row of what each one checks), over FOUR_FILES, AT_ONCE
    streams at a time."""
    pipelines: dict[str, Pipeline] = {
        "range": keyed(range_query), "late": keyed(range_query, "emit"),
        "names": lambda df: named_query(ws.events(named(df), time="t s", key="k.y",
                                                  lateness="5s")),
        **{f"interval-{kind}": interval_pipeline(kind) for kind in INTERVAL_KINDS},
        **{f"numeric-{name}": numeric_pipeline(name) for name in NUMERIC_TIME},
        **{f"kind-{kind}": keyed(query) for kind, (query, _) in KINDS.items()}}
    names = list(pipelines)
    written: dict[str, Written] = {}
    for first in range(0, len(names), AT_ONCE):
        group = names[first:first + AT_ONCE]
        written |= run_streams(streaming, tmp_path_factory.mktemp("one-run"),
                               {name: pipelines[name] for name in group}, FOUR_FILES)
    return written


@pytest.fixture(scope="module")
def restarted(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Written]:
    """Restarted streams over FILES, side by side: the late rows emitted, restarted
    between every micro-batch; the range windows counting them, restarted twice (runs
    over files 0-1, 2-3 and 4-5)."""
    rounds = range(len(FILES))
    return run_streams(streaming, tmp_path_factory.mktemp("restarted"),
                       {"late": keyed(range_query, "emit"), "range": keyed(range_query)},
                       FILES, {"late": rounds, "range": RESTARTED_TWICE})


def assert_checkpoint_refused(streaming: SparkSession, tmp_path: Path, query: Query,
                              other: Query) -> None:
    """`query` run over two files (in `tmp_path`/"q"), then `other` started on its
    checkpoint with a third file: refused as made for another query."""
    run_stream(streaming, tmp_path, query, FILES[:2], False)
    restarted = other(ws.events(source(streaming, tmp_path / "in"), time="ts", key="k",
                                lateness="5s"))
    write_file(tmp_path / "in", 2, FILES[2])
    running = (restarted.writeStream.format("parquet")
               .option("checkpointLocation", str(tmp_path / "q" / "chk"))
               .trigger(availableNow=True).start(str(tmp_path / "q" / "out")))
    with pytest.raises(Exception, match="`checkpointLocation` must belong to this query, "
                       "found a checkpoint made for another query"):
        running.awaitTermination()


def test_a_checkpoint_of_another_query_is_refused(streaming: SparkSession,
                                                  tmp_path: Path) -> None:
    assert_checkpoint_refused(streaming, tmp_path, range_query, lambda ev: ev.window(
        ws.Range("-20s", "2s")).agg(ws.count(), ws.sum("v"), ws.max("v")))


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
    aggregation without a partial state (collect) keeps the rows of the open windows."""
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    panes = ws.explain(ev.window(ws.Hopping("10s", "4s")).agg(
        ws.count(), ws.mean("v"), ws.max("v"), ws.variance("v")))
    assert "Strategy stream: Structured Streaming" in panes
    assert "panes of gcd(size, hop)" in panes
    assert "State per key: one row of partial aggregates per non-empty pane" in panes
    assert "each task reduces its rows to one row of partial aggregates per key and " \
        "pane" in panes
    assert "a row is late when a window holding it was already closed for its key" in panes
    rows = ws.explain(ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.collect("v")))
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

FAULTS = Faults.named("stream")


@dataclasses.dataclass(frozen=True)
class FailingStream(StreamKernel):
    """The stream logic, failing once where a marker says."""

    def on_rows(self, state: Any, rows: Any, watermark_ms: int) -> Any:
        FAULTS.fail_once("rows")
        return super().on_rows(state, rows, watermark_ms)

    def on_timer(self, state: Any, watermark_ms: int) -> Any:
        FAULTS.fail_once("timer")
        return super().on_timer(state, watermark_ms)


@dataclasses.dataclass(frozen=True)
class FailingKeyBuckets(KeyBuckets):
    """The logic of a bucket of keys (keyed kinds fed in order), its data handler
    failing once where a marker says."""

    def on_rows(self, stored: Any, table: Any, watermark_ms: int, emit_late: bool) -> Any:
        FAULTS.fail_once("rows")
        return super().on_rows(stored, table, watermark_ms, emit_late)


@dataclasses.dataclass(frozen=True)
class FailingPaneBuckets(PaneBuckets):
    """The logic of a bucket of pane partials, its timer failing once where a marker
    says."""

    def on_timer(self, stored: Any, watermark_ms: int) -> Any:
        FAULTS.fail_once("timer")
        return super().on_timer(stored, watermark_ms)


@pytest.mark.parametrize("handler", ["rows", "timer"])
def test_a_failure_in_a_handler_then_a_restart_loses_and_repeats_nothing(
        streaming: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        handler: str) -> None:
    """The first two files (one micro-batch of FOUR_FILES), then the rest in a second
    run before which a marker makes one handler fail (with state and timers already
    stored): the query stops with the error and is started again. The rows written equal
    the batch rows, each once. The timer fails in a query whose keys share stored values
    (`Tumbling` on pane partials: a bucket's keys and panes in one value), while its
    bucket is handled."""
    query, closing = (range_query, "window_end") if handler == "rows" else KINDS["tumbling"]
    got = rows_through_one_failure(streaming, tmp_path, monkeypatch, query, handler)
    want = final_batch_rows(streaming, query, lambda r: seconds(r[closing]) <= WATERMARK,
                            LATE if handler == "rows" else PANE_LATE)
    assert len(want) == (10 if handler == "rows" else 7)
    assert_same(got, want)


def rows_through_one_failure(streaming: SparkSession, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch, query: Query, handler: str
                             ) -> list[dict[str, Any]]:
    """The rows `query` writes over FOUR_FILES in two runs, the second failing once in
    `handler` (`rows` or `timer`) and then started again."""
    pickled_by_value(sys.modules[__name__])
    monkeypatch.setattr(stream_engine, "StreamKernel", FailingStream)
    monkeypatch.setattr(stream_engine, "PaneBuckets", FailingPaneBuckets)
    monkeypatch.setattr(stream_engine, "KeyBuckets", FailingKeyBuckets)
    incoming, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    incoming.mkdir()
    failed = 0
    for files in (range(1), range(1, len(FOUR_FILES))):
        for i in files:
            write_file(incoming, i, FOUR_FILES[i])
        if 0 not in files:
            FAULTS.arm(handler)
        for _attempt in range(2):
            result = query(ws.events(source(streaming, incoming), time="ts", key="k",
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
    return [r.asDict() for r in streaming.read.parquet(str(out)).collect()]
