"""A hot key under a memory cap: every window kind over one key of many events, with
the Python workers capped (`spark.executor.pyspark.memory`), their peak memory measured.

    python -m benchmarks.hotkey [--events 16000000] [--cap 1g] [--only rows,range]
                                [--native] [--output /tmp/hotkey.md]

Each case runs once (`write.format("noop")`: every row computed, none kept). Peak
memory is read, not estimated: a thread polls `/proc` every 50 ms for the Python
workers Spark forks (processes running `pyspark.daemon` or `pyspark.worker`) and keeps
the largest `VmHWM` (a process's peak resident memory) it sees. Workers are not reused
between tasks (`spark.python.worker.reuse=false`), so each case's peak is its own. A
case that fails is reported with its error (the line naming wisp's error, else the
first), never dropped. A case whose state grows with the key's history
(`cumulative_udaf`: a udaf reads every earlier value) is expected to fail at the cap
with a `WispMemoryError` naming it; `session_endless`, `since_endless` and
`tumbling_delta_endless` (one session, one yearly period, one delta window that never
fires, of every event) failed so before their open window was carried as accumulators,
and `dynamic_endless` (an anchor every million events whose window reaches past the
last) before waiting anchors' windows were carried as partial states.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

import wisp as ws

Query = Callable[[DataFrame], DataFrame]


def worker_peak_kib() -> int:
    """The largest VmHWM (KiB) among the live Python worker processes."""
    peak = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"pyspark.daemon" not in cmdline and b"pyspark.worker" not in cmdline:
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            continue  # the process ended while being read
    return peak


class PeakWatcher:
    """Polls `worker_peak_kib` in a thread while a case runs."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, worker_peak_kib())
            self._stop.wait(0.05)

    def __enter__(self) -> PeakWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, worker_peak_kib())


@dataclass(frozen=True)
class Case:
    name: str
    wisp: Query
    native: Query | None = None


def _aggs() -> list[ws.spec.aggregates.Aggregation]:
    return [ws.sum("v"), ws.max("v")]


def _ev(df: DataFrame, **roles: object) -> ws.Events:
    return ws.events(df, time="t", key="k", **roles)  # type: ignore[arg-type]


def _stamped(df: DataFrame) -> DataFrame:
    return df.select("k", F.timestamp_seconds("t").alias("ts"), "v")


def _native_frame(df: DataFrame, frame: Callable[[WindowSpec], WindowSpec]) -> DataFrame:
    spec = frame(Window.partitionBy("k").orderBy("t"))
    return df.select("k", "t", F.sum("v").over(spec), F.max("v").over(spec))


CASES = [
    Case("rows", lambda df: _ev(df).window(ws.Rows(-999, 0)).agg(*_aggs()),
         lambda df: _native_frame(df, lambda w: w.rowsBetween(-999, 0))),
    Case("range", lambda df: _ev(df).window(ws.Range(-999, 0)).agg(*_aggs()),
         lambda df: _native_frame(df, lambda w: w.rangeBetween(-999, 0))),
    Case("cumulative_udaf", lambda df: _ev(df).agg(
        ws.udaf(lambda v, t: float(v.sum()), "v", returns="double").alias("u"))),
    Case("tumbling", lambda df: _ev(df).window(ws.Tumbling(1_000)).agg(ws.collect("v"))),
    Case("hopping", lambda df: _ev(df).window(ws.Hopping(1_000, 100)).agg(
        ws.sum("v"), ws.collect("v"))),
    Case("snapshot", lambda df: _ev(df.withColumn("e", F.col("t") + 10), end="e").window(
        ws.Snapshot()).agg(*_aggs())),
    Case("count_by_start_time", lambda df: _ev(df).window(ws.CountByStartTime(100)).agg(
        *_aggs())),
    Case("sliding_time", lambda df: _ev(df).window(ws.Sliding(ws.Time(1_000))).agg(
        *_aggs())),
    Case("sliding_count", lambda df: _ev(df).window(
        ws.Sliding(ws.Count(1_000), ws.Count(10))).agg(*_aggs())),
    Case("tumbling_delta_endless", lambda df: _ev(df).window(
        ws.Tumbling(ws.Delta("t", 10 ** 12))).agg(*_aggs())),
    Case("since", lambda df: ws.events(_stamped(df), time="ts", key="k").window(
        ws.Since(ws.hourly(), emit="both")).agg(*_aggs())),
    Case("since_endless", lambda df: ws.events(_stamped(df), time="ts", key="k").window(
        ws.Since(ws.yearly(), emit="both")).agg(*_aggs())),
    Case("trailing", lambda df: ws.events(_stamped(df), time="ts", key="k").window(
        ws.Trailing(24, ws.hourly())).agg(*_aggs())),
    Case("session", lambda df: _ev(df).window(ws.Session(100, max_duration=10_000)).agg(
        *_aggs())),
    Case("session_endless", lambda df: _ev(df).window(ws.Session(100)).agg(*_aggs())),
    Case("session_one_tick", lambda df: _ev(df).window(ws.Session(1)).agg(ws.sum("v"))),
    Case("dynamic_clock", lambda df: _ev(df).window(
        ws.Dynamic(ws.clock(100), start=-1_000)).agg(*_aggs())),
    Case("dynamic_endless", lambda df: _ev(df).window(ws.Dynamic(
        _ev(df.where(F.col("t") % 1_000_000 == 0).select("k", "t")),
        start=-1_000, end=10 ** 12)).agg(*_aggs())),
]


def session(cap: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (SparkSession.builder.master("local[2]").appName("wisp-hotkey")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.executor.pyspark.memory", cap)
            # a fresh worker per task: each case's peak is its own (VmHWM never falls)
            .config("spark.python.worker.reuse", "false")
            .config("spark.sql.execution.arrow.maxBytesPerBatch", str(2**31 - 1))
            .getOrCreate())


def timed(df: DataFrame) -> tuple[float, str]:
    """Seconds to compute every row of `df`, and "ok" or the error's first line."""
    started = time.perf_counter()
    try:
        df.write.format("noop").mode("overwrite").save()
    except Exception as error:  # reported, not hidden: the row says what failed
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        said = next((line for line in reversed(lines) if "Error: `" in line),
                    lines[0] if lines else "")
        return time.perf_counter() - started, said[:240]
    return time.perf_counter() - started, "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=16_000_000)
    parser.add_argument("--cap", default="1g")
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--native", action="store_true",
                        help="also time Spark's own frames where they exist (O(n*w): "
                             "minutes per case at 16M events)")
    parser.add_argument("--output", default=None, help="write the table here too")
    args = parser.parse_args()
    spark = session(args.cap)
    spark.sparkContext.setLogLevel("ERROR")
    lines = [f"One key of {args.events:,} events (`t` = 0, 1, 2, ...; `v` random), "
             f"Python workers capped at `spark.executor.pyspark.memory={args.cap}`, "
             f"local[2], {dt.date.today()}.", "",
             "| case | wisp s | wisp | worker peak MiB | native s | native |",
             "|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="wisp-hotkey-") as directory:
        path = f"{directory}/hot"
        spark.range(args.events).select(
            F.lit("hot").alias("k"), F.col("id").alias("t"),
            (F.rand(7) * 2000 - 1000).alias("v")).write.parquet(path)
        df = spark.read.parquet(path)
        for case in CASES:
            if args.only and case.name not in args.only.split(","):
                continue
            with PeakWatcher() as watcher:
                seconds, outcome = timed(case.wisp(df))
            native = ("-", "no native equivalent" if case.native is None
                      else "not run (--native)")
            if case.native is not None and args.native:
                native_seconds, native_outcome = timed(case.native(df))
                native = (f"{native_seconds:.1f}", native_outcome)
            line = (f"| {case.name} | {seconds:.1f} | {outcome} | {watcher.peak / 1024:.0f} | "
                    f"{native[0]} | {native[1]} |")
            lines.append(line)
            print(line, flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
