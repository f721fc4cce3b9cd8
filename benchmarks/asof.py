"""The as-of join against Spark's own and against pandas on one machine.

    python -m benchmarks.asof [--rows 1000000] [--keys 100] [--runs 3]
                              [--output out/asof.md]

Data, generated in Spark and written to Parquet once: `rows` left rows (`k`, `t`, `id`,
`v`) and `rows` right rows (`k`, `t`, `w`) over `keys` keys (by hash). Left times are
odd (`2 id + 1`), right times even (`2 id`): no two rows of a side share a time and no
left time is a right time, so every engine has one answer (no tie to break). Each query
is the backward as-of join by `k` (each left row with the right `w` last at or before
its time), timed as the median of `--runs` runs of a noop write, the engines in turn,
in one local[2] session:

- wisp: `ws.asof_join(left, right, on="t", by="k")`;
- Spark SQL's `LEFT ASOF JOIN ... MATCH_CONDITION(l.t >= r.t) ON l.k = r.k` (behind
  `spark.sql.join.asofJoin.enabled`), where this Spark parses it (else the row says so);
- the window formulation a Spark user writes without it: the two sides unioned, and
  `last(w, ignorenulls=True)` over a window by `k` ordered by time;
- pandas' `merge_asof(by="k")` on the same rows in the driver, single-threaded, the
  sort by time it requires included (the Parquet read is not timed).

Before timing, every result is checked against wisp's: rows, matched rows, the sum of
`w` and of `w * id` (relative difference below 1e-9).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import wisp as ws

ASOF_SETTING = "spark.sql.join.asofJoin.enabled"


@dataclass(frozen=True)
class Fingerprint:
    """What the check compares: rows, matched rows, sum of `w`, sum of `w * id`."""

    rows: int
    matched: int
    total: float
    weighted: float

    def agrees(self, other: Fingerprint) -> bool:
        def close(a: float, b: float) -> bool:
            return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
        return (self.rows == other.rows and self.matched == other.matched
                and close(self.total, other.total) and close(self.weighted, other.weighted))


@dataclass
class Result:
    engine: str
    seconds: float | None
    check: str


def generate(spark: SparkSession, directory: str, rows: int, keys: int
             ) -> tuple[DataFrame, DataFrame, str, str]:
    """The two sides, written to Parquet and read back (with their paths)."""
    ids = spark.range(rows)

    def fraction(seed: int) -> Column:
        return F.pmod(F.xxhash64("id", F.lit(seed)), F.lit(1_000_000)).cast("double") / 1e6

    left = ids.select(F.pmod(F.xxhash64("id", F.lit(1)), F.lit(keys)).alias("k"),
                      (F.col("id") * 2 + 1).alias("t"), F.col("id"), fraction(3).alias("v"))
    right = ids.select(F.pmod(F.xxhash64("id", F.lit(2)), F.lit(keys)).alias("k"),
                       (F.col("id") * 2).alias("t"), fraction(4).alias("w"))
    paths = f"{directory}/left", f"{directory}/right"
    left.write.parquet(paths[0])
    right.write.parquet(paths[1])
    return spark.read.parquet(paths[0]), spark.read.parquet(paths[1]), *paths


def spark_asof(spark: SparkSession, left: DataFrame, right: DataFrame
               ) -> tuple[DataFrame | None, str]:
    """Spark SQL's own as-of join, or None with the reason this Spark has none."""
    try:
        spark.conf.set(ASOF_SETTING, "true")
        left.createOrReplaceTempView("asof_left")
        right.createOrReplaceTempView("asof_right")
        joined = spark.sql("SELECT l.k, l.t, l.id, l.v, r.w FROM asof_left l LEFT ASOF JOIN "
                           "asof_right r MATCH_CONDITION(l.t >= r.t) ON l.k = r.k")
        joined.schema  # noqa: B018 (parse and analyse now)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        return None, f"Spark {pyspark.__version__} has no SQL ASOF JOIN: {first[:160]}"
    return joined, ""


def window_asof(left: DataFrame, right: DataFrame) -> DataFrame:
    """The as-of join as a window over the union (right rows first at one time)."""
    union = left.select("k", "t", F.lit(1).alias("side"), "id", "v",
                        F.lit(None).cast("double").alias("w")).unionByName(
        right.select("k", "t", F.lit(0).alias("side"), F.lit(None).cast("long").alias("id"),
                     F.lit(None).cast("double").alias("v"), "w"))
    frame = (Window.partitionBy("k").orderBy("t", "side")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return (union.withColumn("w", F.last("w", ignorenulls=True).over(frame))
            .filter(F.col("side") == 1).drop("side"))


def fingerprint(df: DataFrame) -> Fingerprint:
    row = df.agg(F.count(F.lit(1)), F.count("w"), F.sum("w"),
                 F.sum(F.col("w") * F.col("id"))).first()
    assert row is not None
    return Fingerprint(int(row[0]), int(row[1]), float(row[2] or 0.0), float(row[3] or 0.0))


def pandas_fingerprint(merged: pd.DataFrame) -> Fingerprint:
    w = merged["w"]
    return Fingerprint(len(merged), int(w.notna().sum()), float(w.sum()),
                       float((w * merged["id"]).sum()))


def once(df: DataFrame) -> float:
    begin = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - begin


def runner(df: DataFrame) -> Callable[[], float]:
    return lambda: once(df)


def pandas_once(left: pd.DataFrame, right: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    begin = time.perf_counter()
    merged = pd.merge_asof(left.sort_values("t"), right.sort_values("t"), on="t", by="k")
    return time.perf_counter() - begin, merged


def timed_in_turn(queries: dict[str, Callable[[], float]], runs: int) -> dict[str, float]:
    """Each query's median over `runs`, the queries taken in turn run after run."""
    times: dict[str, list[float]] = {name: [] for name in queries}
    for _ in range(runs):
        for name, run in queries.items():
            times[name].append(run())
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of each side")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", default=None, help="write the table here too")
    args = parser.parse_args()
    spark = ws.session("local[2]", app_name="wisp-asof")
    spark.sparkContext.setLogLevel("ERROR")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="wisp-asof-") as directory:
        left, right, left_path, right_path = generate(spark, directory, args.rows, args.keys)
        ours = ws.asof_join(left, right, on="t", by="k")
        reference = fingerprint(ours)
        native, native_note = spark_asof(spark, left, right)
        spark_queries: dict[str, DataFrame] = {"wisp": ours}
        notes = {"wisp": f"{reference.matched:,} of {reference.rows:,} left rows matched"}
        if native is not None:
            spark_queries["Spark SQL ASOF JOIN"] = native
        else:
            results.append(Result("Spark SQL ASOF JOIN", None, native_note))
        spark_queries["Spark window (union + last ignorenulls)"] = window_asof(left, right)
        for name, df in spark_queries.items():
            if name != "wisp":
                found = fingerprint(df)
                notes[name] = "agrees" if found.agrees(reference) else f"DISAGREES: {found}"
        once(ours)  # warm up the JVM and the Python workers
        medians = timed_in_turn({name: runner(df) for name, df in spark_queries.items()},
                                args.runs)
        results += [Result(name, medians[name], notes[name]) for name in spark_queries]
        pandas_left = pq.read_table(left_path).to_pandas()
        pandas_right = pq.read_table(right_path).to_pandas()
        pandas_times = []
        merged = pd.DataFrame()
        for _ in range(args.runs):
            seconds, merged = pandas_once(pandas_left, pandas_right)
            pandas_times.append(seconds)
        found = pandas_fingerprint(merged)
        results.append(Result("pandas merge_asof (one machine, one core)",
                               statistics.median(pandas_times),
                               "agrees" if found.agrees(reference) else f"DISAGREES: {found}"))
    wisp_seconds = medians["wisp"]
    lines = [f"As-of join, backward by key: {args.rows:,} left and {args.rows:,} right rows "
             f"over {args.keys:,} keys, local[2], Spark {pyspark.__version__}, "
             f"{dt.date.today()}, load average {os.getloadavg()[0]:.1f} at the end; median "
             f"of {args.runs} runs.", "",
             "| engine | s | wisp / engine | check |", "|---|---|---|---|"]
    for r in results:
        shown = "-" if r.seconds is None else f"{r.seconds:.2f}"
        ratio = "-" if r.seconds is None else f"{wisp_seconds / r.seconds:.2f}"
        lines.append(f"| {r.engine} | {shown} | {ratio} | {r.check} |")
    print("\n".join(lines), flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
