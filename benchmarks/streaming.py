"""Streams: throughput per window kind, state size over a soak, and the per-batch floor.

    python -m benchmarks.streaming [--batches 20] [--rows 100000] [--keys 100]
                                   [--rounds 1] [--only tumbling,range]
                                   [--output /tmp/streaming.md]

The source is Spark's `rate-micro-batch` (deterministic: `rows` rows a batch, event
times advancing one second a batch, spread evenly within it), keyed by `value % keys`,
value `v` from `value`. Each case runs `batches` micro-batches into the `noop` sink,
one after the other; the figures come from the query's progress reports (Spark's
`triggerExecution` time per batch), leaving out the first two batches (start-up).
A warm-up run of the native query goes first (the JVM's first queries are slower, by a
third and more in this session), then `rounds` rounds of every case in turn; the table
gives the median of each case's runs and the median of its ratios to the native run of
the same round.
`tumbling_changes` is `Tumbling("10s")` with `emit="changes"` (every open window a
batch changed is written too) and `tumbling_update` with `on_late="update",
allowed_lateness="10s"` (windows kept 10 s past their end); `native_update` is Spark's
`groupBy(window)` in Update mode (each batch writes the windows it changed).
`session_changes` and `session_update` are `session` likewise, on the operator that
carries each key's rows and recomputes its kept windows (`runtime.streaming.revised`).
`tumbling_picks` is `Tumbling("10s")` with `first`, `last`, `max_by` and an integer sum
(their pane partials keep the picked row with its time and tie-break columns, and the
exact sum). `tumbling_sketches` is `Tumbling("10s")` with `approx_count_distinct`, `hll_sketch`
and `kll_sketch` (pane partials holding a sketch each).
`clock` is `Dynamic(ws.clock("1s"), start="-2s")`; `dynamic` takes its anchors from a
second rate-micro-batch stream (`ANCHOR_ROWS` a batch, 100 keys). `Tumbling("10s")`
runs also as Spark's own streaming `groupBy(window(...))`, in the same
session, with the same watermark: the ratio is wisp's time over Spark's. The case
`operator_floor` is Spark's stateful operator for Python (`transformWithStateInPandas`,
grouped by key, event time) with a processor that reads its rows and does nothing else:
the least any query on that operator costs; `operator_floor_buckets` the same grouped by
a hash of the key into 16 buckets; `operator_floor_partials` the same after each task
reduced its rows to counts and sums per key and pane (`mapInArrow`), as pane queries
with late rows counted do. "State rows"
is the stateful operator's `numRowsTotal` after the last batch (one value per bucket of
keys, at most 16, for keyed wisp queries; one per key with revisions) and
"state MiB" its `memoryUsedBytes`; a soak is flat when these stop growing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

import wisp as ws

Query = Callable[[ws.Events], DataFrame]


@dataclass(frozen=True)
class Case:
    name: str
    query: Query
    options: dict[str, Any] = field(default_factory=dict)
    """More arguments of `ws.events` (revisions: `on_late`, `allowed_lateness`)."""


CASES = [
    Case("tumbling", lambda ev: ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.mean("v"))),
    Case("tumbling_changes", lambda ev: ev.window(ws.Tumbling("10s")).agg(
        ws.count(), ws.mean("v"), emit="changes")),
    Case("tumbling_update", lambda ev: ev.window(ws.Tumbling("10s")).agg(
        ws.count(), ws.mean("v")), {"on_late": "update", "allowed_lateness": "10s"}),
    Case("tumbling_picks", lambda ev: ev.window(ws.Tumbling("10s")).agg(
        ws.first("v"), ws.last("v"), ws.max_by("v", "ts"), ws.sum("k"))),
    Case("tumbling_sketches", lambda ev: ev.window(ws.Tumbling("10s")).agg(
        ws.approx_count_distinct("v"), ws.hll_sketch("v"), ws.kll_sketch("v"))),
    Case("hopping", lambda ev: ev.window(ws.Hopping("10s", "5s")).agg(ws.count(),
                                                                      ws.mean("v"))),
    Case("range", lambda ev: ev.window(ws.Range("-2s", "0s")).agg(ws.count(), ws.mean("v"))),
    Case("rows", lambda ev: ev.window(ws.Rows(-99, 0)).agg(ws.count(), ws.mean("v"))),
    Case("cumulative", lambda ev: ev.agg(ws.count(), ws.mean("v"))),
    Case("session", lambda ev: ev.window(ws.Session("1s", max_duration="20s")).agg(
        ws.count(), ws.mean("v"))),
    Case("session_changes", lambda ev: ev.window(ws.Session("1s", max_duration="20s")).agg(
        ws.count(), ws.mean("v"), emit="changes")),
    Case("session_update", lambda ev: ev.window(ws.Session("1s", max_duration="20s")).agg(
        ws.count(), ws.mean("v")), {"on_late": "update", "allowed_lateness": "10s"}),
    Case("sliding", lambda ev: ev.window(ws.Sliding(ws.Count(100), ws.Time("1s"))).agg(
        ws.count(), ws.mean("v"))),
    Case("spl_tumbling", lambda ev: ev.window(ws.Tumbling(ws.Count(1000))).agg(
        ws.count(), ws.mean("v"))),
    Case("since_minute", lambda ev: ev.window(ws.Since(ws.cron("* * * * *"))).agg(
        ws.count(), ws.mean("v"))),
    Case("trailing", lambda ev: ev.window(ws.Trailing(3, ws.cron("* * * * *"))).agg(
        ws.count(), ws.mean("v"))),
    Case("clock", lambda ev: ev.window(ws.Dynamic(ws.clock("1s"), start="-2s")).agg(
        ws.count(), ws.mean("v"))),
    Case("dynamic", lambda ev: ev.window(ws.Dynamic(
        anchor_events(ev), start="-2s", obsolete="-2s")).agg(ws.count(), ws.mean("v"))),
]


def session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = ws.session("local[2]", app_name="wisp-streaming-bench", log_level="ERROR")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    return spark


def rate(spark: SparkSession, rows: int, keys: int) -> DataFrame:
    source = (spark.readStream.format("rate-micro-batch")
              .option("rowsPerBatch", rows).option("numPartitions", 2)
              .option("advanceMillisPerBatch", 1000).option("startTimestamp", 0).load())
    return source.select((F.col("value") % keys).alias("k"), F.col("timestamp").alias("ts"),
                         (F.col("value") % 1000).cast("double").alias("v"))


ANCHOR_ROWS = 1_000


def anchor_events(ev: ws.Events) -> ws.Events:
    """A second rate-micro-batch stream of `ANCHOR_ROWS` anchors a batch, over the
    default 100 keys, one second of event time a batch as the events'."""
    return ws.events(rate(ev.df.sparkSession, ANCHOR_ROWS, 100), time="ts", key="k",
                     lateness="2s")


class NothingProcessor(StatefulProcessor):
    """Reads each key's rows; writes nothing, keeps nothing, sets no timer."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        for _frame in rows:
            pass
        return iter(())

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        return iter(())

    def close(self) -> None:
        pass


def operator_floor(df: DataFrame) -> DataFrame:
    return (df.withWatermark("ts", "2 seconds").groupBy("k")
            .transformWithStateInPandas(NothingProcessor(), "n long", "Append", "EventTime"))


def operator_floor_buckets(df: DataFrame) -> DataFrame:
    """The floor grouped as pane queries group their keys: by a hash of the key into
    16 buckets."""
    bucket = F.pmod(F.xxhash64("k"), F.lit(16)).alias("bucket")
    return (df.withWatermark("ts", "2 seconds").select("*", bucket).groupBy("bucket")
            .transformWithStateInPandas(NothingProcessor(), "n long", "Append", "EventTime"))


PARTIALS_TYPE = "bucket int, k long, pane long, rows long, n long, s double"


def pane_counts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each task's rows as counts and sums per (bucket, key, 10 s pane)."""
    for batch in batches:
        table = pa.Table.from_batches([batch])
        pane = pc.divide(pc.cast(pc.cast(table.column("ts"), pa.int64()), pa.int64()),
                         10_000_000)
        grouped = pa.table({"bucket": table.column("bucket"), "k": table.column("k"),
                            "pane": pane, "v": table.column("v")}).group_by(
            ["bucket", "k", "pane"], use_threads=False).aggregate(
            [("v", "count"), ("v", "count"), ("v", "sum")])
        yield from grouped.rename_columns(["bucket", "k", "pane", "rows", "n", "s"]) \
            .to_batches()


def operator_floor_partials(df: DataFrame) -> DataFrame:
    """The floor of pane queries: each task's rows reduced to counts and sums per key
    and pane (`mapInArrow`) before the operator grouped by 16 buckets, whose processor
    does nothing."""
    bucket = F.pmod(F.xxhash64("k"), F.lit(16)).cast("int").alias("bucket")
    reduced = (df.withWatermark("ts", "2 seconds").select(bucket, "k", "ts", "v")
               .mapInArrow(pane_counts, PARTIALS_TYPE))
    return reduced.groupBy("bucket").transformWithStateInPandas(
        NothingProcessor(), "n long", "Append", "EventTime")


def native_tumbling(df: DataFrame) -> DataFrame:
    return (df.withWatermark("ts", "2 seconds")
            .groupBy(F.window("ts", "10 seconds"), "k").agg(F.count("*"), F.avg("v")))


@dataclass(frozen=True)
class Measure:
    events_per_s: float
    batch_ms: float
    state_rows: int
    state_mib: float


def measured(df: DataFrame, batches: int, directory: Path, mode: str = "append"
             ) -> Measure:
    """Run `batches` micro-batches of `df` into the noop sink (in output `mode`); the
    steady figures."""
    query = (df.writeStream.format("noop").outputMode(mode)
             .option("checkpointLocation", str(directory))
             .trigger(processingTime="0 seconds").start())
    try:
        while True:
            progress = query.lastProgress
            if progress is not None and progress["batchId"] >= batches - 1:
                break
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            time.sleep(0.2)
    finally:
        query.stop()
    reports = [p for p in query.recentProgress if p["numInputRows"] > 0][2:]
    rows = sum(p["numInputRows"] for p in reports)
    millis = sum(p["durationMs"]["triggerExecution"] for p in reports)
    last = query.recentProgress[-1]
    operators: list[Any] = last["stateOperators"] or [{}]
    return Measure(rows / (millis / 1000), millis / max(1, len(reports)),
                   int(operators[0].get("numRowsTotal", 0)),
                   operators[0].get("memoryUsedBytes", 0) / (1 << 20))


Build = Callable[[SparkSession, int, int], DataFrame]


def floor_run(floor: Callable[[DataFrame], DataFrame]) -> Build:
    return lambda spark, rows, keys: floor(rate(spark, rows, keys))


def case_run(case: Case) -> Build:
    return lambda spark, rows, keys: case.query(ws.events(rate(spark, rows, keys), time="ts",
                                                          key="k", lateness="2s",
                                                          **case.options))


def runs(args: argparse.Namespace) -> list[tuple[str, str, Build]]:
    """The measured queries in order (name, label, build), native first."""
    wanted = set(args.only.split(",")) if args.only else None
    found: list[tuple[str, str, Build]] = []
    if wanted is None or "tumbling" in wanted:
        found.append(("native", "native groupBy(window) tumbling",
                      lambda spark, rows, keys: native_tumbling(rate(spark, rows, keys))))
    if wanted is None or "native_update" in wanted:
        found.append(("native_update", "native groupBy(window) tumbling, Update mode",
                      lambda spark, rows, keys: native_tumbling(rate(spark, rows, keys))))
    floors: list[tuple[str, str, Callable[[DataFrame], DataFrame]]] = [
        ("operator_floor", "operator_floor (a processor doing nothing)", operator_floor),
        ("operator_floor_buckets", "operator_floor_buckets (the same, keys in 16 buckets)",
         operator_floor_buckets),
        ("operator_floor_partials", "operator_floor_partials (rows reduced per key and "
         "pane first)", operator_floor_partials)]
    for name, label, floor in floors:
        if wanted is None or name in wanted:
            found.append((name, label, floor_run(floor)))
    for case in CASES:
        if wanted is None or case.name in wanted:
            found.append((case.name, case.name, case_run(case)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--only", default=None)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    spark = session()
    lines = [f"{args.batches} micro-batches of {args.rows:,} events over {args.keys} keys "
             f"(rate-micro-batch, one second of event time a batch), lateness 2 s, "
             f"noop sink, local[2], {dt.date.today()}; after a warm-up run of the native "
             f"query, {args.rounds} round(s) of every case in turn: the median ms / batch "
             "and the median of each round's ratio to that round's native run.", "",
             "| case | events/s | ms / batch | vs native | state rows | state MiB |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="wisp-stream-bench-"))
    queries = runs(args)
    found: dict[str, list[Measure]] = {name: [] for name, _, _ in queries}
    try:  # the JVM's first queries run slower while its code warms up
        measured(native_tumbling(rate(spark, args.rows, args.keys)), 8, scratch / "warm")
        for round_ in range(args.rounds):
            for name, _, build in queries:
                mode = "update" if name == "native_update" else "append"
                found[name].append(measured(build(spark, args.rows, args.keys),
                                            args.batches, scratch / f"{name}-{round_}", mode))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    natives = found.get("native")
    for name, label, _ in queries:
        ms = statistics.median(m.batch_ms for m in found[name])
        ratio = "-"
        if natives and (name.startswith(("native", "tumbling")) or "floor" in name):
            pairs = zip(found[name], natives, strict=True)
            ratio = f"{statistics.median(m.batch_ms / n.batch_ms for m, n in pairs):.2f}"
        last = found[name][-1]
        line = (f"| {label} | {args.rows / (ms / 1000):,.0f} | {ms:,.0f} | {ratio} | "
                f"{last.state_rows:,} | {last.state_mib:.1f} |")
        lines.append(line)
        print(line, flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
