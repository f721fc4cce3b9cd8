"""Streams on real Spark: one JSON file per micro-batch (`maxFilesPerTrigger=1`, the
files' modification times set in order), `trigger(availableNow=True)` (which runs the
final batch without data that closes what the last file's watermark allows), the Parquet
sink with a checkpoint. The rows written equal the batch query's rows over the accepted
events that are final at the last watermark; a restart between every micro-batch gives
the rows of one uninterrupted run; late rows are counted; a wrong state store and a
checkpoint of another query are refused."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
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


@pytest.fixture(scope="module")
def streaming(spark: SparkSession) -> Iterator[SparkSession]:
    """The test session with the RocksDB state store and two shuffle partitions (each
    micro-batch runs a task per partition of the stateful operator)."""
    previous = {name: spark.conf.get(name, None)
                for name in (STATE_STORE, "spark.sql.shuffle.partitions")}
    spark.conf.set(STATE_STORE, ROCKSDB)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    yield spark
    for name, value in previous.items():
        if value is None:
            spark.conf.unset(name)
        else:
            spark.conf.set(name, value)


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
               restart_every_batch: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows the stream writes, and the report of its (last) run."""
    incoming, out, checkpoint = tmp / "in", tmp / "out", tmp / "chk"
    incoming.mkdir()
    report: dict[str, Any] = {}
    late = 0
    rounds = [[i] for i in range(len(files))] if restart_every_batch else \
        [list(range(len(files)))]
    for indices in rounds:
        for i in indices:
            write_file(incoming, i, files[i])
        result = query(ws.events(source(spark, incoming), time="ts", key="k",
                                 lateness="5s"))
        running = (result.writeStream.format("parquet")
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(availableNow=True).start(str(out)))
        running.awaitTermination()
        report = ws.stream_report(running)
        late += report["late"]
    report["late"] = late
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


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, kind: str) -> None:
    query, closing = KINDS[kind]
    got, report = run_stream(streaming, tmp_path, query, FILES, False)
    want = final_batch_rows(streaming, query, lambda r: seconds(r[closing]) <= WATERMARK)
    assert want, "the batch has final rows to compare"
    assert_same(got, want)
    assert report["late"] == len(LATE)


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
