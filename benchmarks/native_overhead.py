"""wisp's native strategies against the query a user would write, side by side.

    python -m benchmarks.native_overhead --events 4000000 --kinds timestamp_ntz
    python -m benchmarks.native_overhead --events 1000000,10000000
    python -m benchmarks.native_overhead --zone America/New_York --runs 5
    python -m benchmarks.native_overhead --output out/native_overhead.md
    python -m benchmarks.native_overhead --explain --events 100000

Events from `benchmarks.data.generate` (100 keys, `t` the row id), read back from
Parquet with the time as each kind: `timestamp` (`t` milliseconds after the epoch),
`timestamp_ntz` (the same wall-clock times, as Spark reads what pandas or pyarrow wrote),
`date` (`t // 1000` days after the epoch: about ten events of a key a day, so ties in
time, where the tie-break column orders wisp's running aggregates and Spark's are in
no set order) and `integer` (`t`). Two cases on each:

- `cumulative`: wisp's running `sum` and `max` of `v` per key (no window), against
  `sum` and `max` over `Window.partitionBy("k").orderBy(time)
  .rowsBetween(unboundedPreceding, 0)`, wisp's columns (k, window_start, window_end,
  time, sum_v, max_v) against (k, time, sum_v, max_v).
- `tumbling`: wisp's `Tumbling("10s")` (10 days on dates, 10,000 ticks on integers:
  about 100 events of a key a window) with `sum` and `max`, against
  `groupBy("k", F.window(time, "10 seconds"))` (on dates and integers: `groupBy("k",
  bucket)`, the floor of the days or ticks divided by the size).

Each pair runs in turn (wisp, native, wisp, ...) in one `local[2]` session as
`wisp.session()` starts one, the time zone `--zone`; each run is one noop write of the
whole query, timed on the wall clock and in CPU seconds of Spark's JVM (read from
/proc: on a machine shared with other work, the CPU seconds a query takes move less
than its wall time); the ratios are of the medians. `--explain` prints both physical
plans (`explain("formatted")`) instead of timing them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import wisp as ws

from .data import Data, generate

KINDS = ("timestamp", "timestamp_ntz", "date", "integer")
CASES = ("cumulative", "tumbling")
SIZE = 10
"""The tumbling window's size: 10 seconds or days (10,000 ticks on integers)."""
TICKS = 10_000


def jvm_cpu(spark: SparkSession) -> Callable[[], float]:
    """A clock of the CPU seconds Spark's JVM has used (user and system, all threads),
    or of none (always 0) where /proc cannot tell."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    stat = Path(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/stat")
    ticks = os.sysconf("SC_CLK_TCK")

    def used() -> float:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

    return used


def timed(df: DataFrame, cpu: Callable[[], float]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of the whole query (a noop write)."""
    begin, used = time.perf_counter(), cpu()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - begin, cpu() - used


def with_time(data: Data, kind: str, directory: str) -> DataFrame:
    """The events with their time `ts` as `kind`, written to Parquet and read back (a
    timestamp_ntz comes back as Spark reads such files)."""
    t = F.col("t")
    values: dict[str, Column] = {
        "timestamp": F.timestamp_millis(t),
        "timestamp_ntz": F.timestamp_millis(t).cast("timestamp_ntz"),
        "date": F.date_from_unix_date((t / 1000).cast("int")),
        "integer": t,
    }
    path = f"{directory}/{data.name}_{kind}"
    data.df.select("k", values[kind].alias("ts"), "v").write.mode("overwrite").parquet(path)
    spark = data.df.sparkSession
    return spark.read.parquet(path)


def wisp_query(df: DataFrame, case: str, kind: str) -> DataFrame:
    events = ws.events(df, time="ts", key="k")
    if case == "cumulative":
        return events.agg(ws.sum("v"), ws.max("v"))
    size: object = "10s" if kind.startswith("timestamp") else TICKS
    if kind == "date":
        size = "10d"
    return events.window(ws.Tumbling(size)).agg(ws.sum("v"), ws.max("v"))  # type: ignore[arg-type]


def native_query(df: DataFrame, case: str, kind: str) -> DataFrame:
    v = F.col("v")
    if case == "cumulative":
        frame = (Window.partitionBy("k").orderBy("ts")
                 .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        return df.select("k", "ts", F.sum(v).over(frame).alias("sum_v"),
                         F.max(v).over(frame).alias("max_v"))
    if kind.startswith("timestamp"):
        bucket = F.window("ts", f"{SIZE} seconds")
    elif kind == "date":
        bucket = F.floor(F.unix_date("ts") / SIZE)
    else:
        bucket = F.floor(F.col("ts") / TICKS)
    return df.groupBy("k", bucket.alias("w")).agg(F.sum(v).alias("sum_v"),
                                                  F.max(v).alias("max_v"))


Medians = tuple[float, float, float, float]
"""wisp's and native's wall seconds, then their CPU seconds."""


def pair(ours: DataFrame, theirs: DataFrame, runs: int, cpu: Callable[[], float]) -> Medians:
    """Medians of `runs` runs of each, in turn, after one untimed run of each."""
    timed(ours, cpu)
    timed(theirs, cpu)
    mine: list[tuple[float, float]] = []
    others: list[tuple[float, float]] = []
    for _ in range(runs):
        mine.append(timed(ours, cpu))
        others.append(timed(theirs, cpu))
    return (statistics.median(m[0] for m in mine), statistics.median(o[0] for o in others),
            statistics.median(m[1] for m in mine), statistics.median(o[1] for o in others))


def session(zone: str) -> SparkSession:
    spark = ws.session("local[2]", app_name="wisp-native-overhead")
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.session.timeZone", zone)
    return spark


def strategy(df: DataFrame) -> str:
    for line in ws.explain(df).splitlines():
        if line.startswith("Strategy "):
            return line.removeprefix("Strategy ").split(":")[0]
    return "?"


def sizes(text: str) -> list[int]:
    """`--events`: one number of events, or several separated by commas."""
    return [int(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=sizes, default=[1_000_000],
                        help="events, or sizes separated by commas: a table each")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zone", default="UTC", help="the session time zone")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--output", help="also write the table to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = session(args.zone)
    directory = tempfile.mkdtemp(prefix="wisp-native-overhead-")
    lines: list[str] = []

    def show(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        cpu = jvm_cpu(spark)
        for events in args.events:
            if lines:
                show("")
            data = generate(spark, directory, events)
            show(f"{events:,} events, 100 keys, session time zone {args.zone}, "
                 f"medians of {args.runs}")
            show("| time | case | strategy | wisp s | native s | wisp/native | wisp CPU s "
                 "| native CPU s | CPU wisp/native |")
            show("|---|---|---|---:|---:|---:|---:|---:|---:|")
            for kind in args.kinds.split(","):
                df = with_time(data, kind, directory)
                for case in args.cases.split(","):
                    ours, theirs = wisp_query(df, case, kind), native_query(df, case, kind)
                    if args.explain:
                        show(f"== {kind} {case}: wisp ({strategy(ours)}) ==")
                        ours.explain("formatted")
                        show(f"== {kind} {case}: native ==")
                        theirs.explain("formatted")
                        continue
                    mine, other, mine_cpu, other_cpu = pair(ours, theirs, args.runs, cpu)
                    cpu_ratio = f"{mine_cpu / other_cpu:.2f}" if other_cpu else "-"
                    show(f"| {kind} | {case} | {strategy(ours)} | {mine:.2f} "
                         f"| {other:.2f} | {mine / other:.2f} | {mine_cpu:.1f} "
                         f"| {other_cpu:.1f} | {cpu_ratio} |")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        spark.stop()
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
