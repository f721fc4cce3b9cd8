"""Streams: throughput per window kind, state size over a soak, and the per-batch floor.

    python -m benchmarks.streaming [--batches 20] [--rows 100000] [--keys 100]
                                   [--only tumbling,range] [--output /tmp/streaming.md]

The source is Spark's `rate-micro-batch` (deterministic: `rows` rows a batch, event
times advancing one second a batch, spread evenly within it), keyed by `value % keys`,
value `v` from `value`. Each case runs `batches` micro-batches into the `noop` sink,
one after the other; the figures come from the query's progress reports (Spark's
`triggerExecution` time per batch), leaving out the first two batches (start-up).
`clock` is `Dynamic(ws.clock("1s"), start="-2s")`; `dynamic` takes its anchors from a
second rate-micro-batch stream (`ANCHOR_ROWS` a batch, 100 keys). `Tumbling("10s")`
runs also as Spark's own streaming `groupBy(window(...))`, in the same
session, with the same watermark: the ratio is wisp's time over Spark's. The case
`operator_floor` is Spark's stateful operator for Python (`transformWithStateInPandas`,
grouped by key, event time) with a processor that reads its rows and does nothing else:
the least any query on that operator costs; `operator_floor_buckets` the same grouped by
a hash of the key into 16 buckets, as pane queries group their keys. "State rows"
is the stateful operator's `numRowsTotal` after the last batch (one value per key for
wisp; one per bucket of keys, at most 16, for `Tumbling`/`Hopping` on pane partials) and
"state MiB" its `memoryUsedBytes`; a soak is flat when these stop growing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
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


CASES = [
    Case("tumbling", lambda ev: ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.mean("v"))),
    Case("hopping", lambda ev: ev.window(ws.Hopping("10s", "5s")).agg(ws.count(),
                                                                      ws.mean("v"))),
    Case("range", lambda ev: ev.window(ws.Range("-2s", "0s")).agg(ws.count(), ws.mean("v"))),
    Case("rows", lambda ev: ev.window(ws.Rows(-99, 0)).agg(ws.count(), ws.mean("v"))),
    Case("cumulative", lambda ev: ev.agg(ws.count(), ws.mean("v"))),
    Case("session", lambda ev: ev.window(ws.Session("1s", max_duration="20s")).agg(
        ws.count(), ws.mean("v"))),
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


def native_tumbling(df: DataFrame) -> DataFrame:
    return (df.withWatermark("ts", "2 seconds")
            .groupBy(F.window("ts", "10 seconds"), "k").agg(F.count("*"), F.avg("v")))


@dataclass(frozen=True)
class Measure:
    events_per_s: float
    batch_ms: float
    state_rows: int
    state_mib: float


def measured(df: DataFrame, batches: int, directory: Path) -> Measure:
    """Run `batches` micro-batches of `df` into the noop sink; the steady figures."""
    query = (df.writeStream.format("noop").outputMode("append")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--only", default=None)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    spark = session()
    lines = [f"{args.batches} micro-batches of {args.rows:,} events over {args.keys} keys "
             f"(rate-micro-batch, one second of event time a batch), lateness 2 s, "
             f"noop sink, local[2], {dt.date.today()}.", "",
             "| case | events/s | ms / batch | vs native | state rows | state MiB |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="wisp-stream-bench-"))
    native: Measure | None = None
    try:
        if not args.only or "tumbling" in args.only.split(","):
            native = measured(native_tumbling(rate(spark, args.rows, args.keys)),
                              args.batches, scratch / "native")
            line = (f"| native groupBy(window) tumbling | {native.events_per_s:,.0f} | "
                    f"{native.batch_ms:,.0f} | 1.00 | {native.state_rows:,} | "
                    f"{native.state_mib:.1f} |")
            lines.append(line)
            print(line, flush=True)
        floors = [("operator_floor", "operator_floor (a processor doing nothing)",
                   operator_floor),
                  ("operator_floor_buckets",
                   "operator_floor_buckets (the same, keys in 16 buckets)",
                   operator_floor_buckets)]
        for name, label, build in floors:
            if args.only and name not in args.only.split(","):
                continue
            floor = measured(build(rate(spark, args.rows, args.keys)), args.batches,
                             scratch / name)
            ratio = f"{floor.batch_ms / native.batch_ms:.2f}" if native is not None else "-"
            line = (f"| {label} | {floor.events_per_s:,.0f} | {floor.batch_ms:,.0f} | "
                    f"{ratio} | {floor.state_rows:,} | {floor.state_mib:.1f} |")
            lines.append(line)
            print(line, flush=True)
        for case in CASES:
            if args.only and case.name not in args.only.split(","):
                continue
            ev = ws.events(rate(spark, args.rows, args.keys), time="ts", key="k",
                           lateness="2s")
            found = measured(case.query(ev), args.batches, scratch / case.name)
            ratio = (f"{found.batch_ms / native.batch_ms:.2f}"
                     if case.name == "tumbling" and native is not None else "-")
            line = (f"| {case.name} | {found.events_per_s:,.0f} | {found.batch_ms:,.0f} | "
                    f"{ratio} | {found.state_rows:,} | {found.state_mib:.1f} |")
            lines.append(line)
            print(line, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
