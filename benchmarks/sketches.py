"""Approximate distinct counts and quantiles from sketches against the exact aggregations
and against Spark's own approximate aggregates, on one machine.

    python -m benchmarks.sketches [--events 1000000] [--keys 100] [--runs 3]
                                  [--widths 10,1000] [--tumbling 1000]
                                  [--output out/sketches.md]

Data: `benchmarks.data.generate` (`k`, `t`, `v`), written to Parquet once, with `u`,
an integer column of about 5,000 distinct values (`v` scaled and cut). Timed as the
median of `--runs` noop writes, the queries in turn, in one local[2] session:

- per sliding window (`Rows(-(w - 1), 0, partial=True)` per key in time order; Spark:
  the same ROWS frame), at each width: `ws.approx_count_distinct("u")` against the
  exact `ws.count_distinct("u")` and Spark's `approx_count_distinct(u)` over the frame;
  `ws.approx_quantile("v", 0.5)` against the exact `ws.median("v")` and Spark's
  `percentile_approx(v, 0.5)` over the frame. Checks: the sum of the approximate
  counts within 2% of the exact sum.
- per tumbling window of `--tumbling` ticks of `t` and key: the same two against
  Spark's `groupBy(k, window)` with `approx_count_distinct`, with `percentile_approx`,
  and with `hll_sketch_estimate(hll_sketch_agg(u))`.

Each row gives wisp's time, the other's, and their ratio (wisp / other: below 1 is
wisp ahead).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wisp as ws

from .aggregations import Row, frame, run_cases, spark_rows, timed_in_turn, total
from .data import Data


def with_integers(data: Data) -> Data:
    """The data with `u`: about 5,000 distinct integers."""
    return replace(data, df=data.df.withColumn("u", F.pmod((F.col("v") * 10).cast("long"),
                                                           F.lit(5000))))


def near(approximate: float, exact: float, tolerance: float = 0.02) -> str:
    off = abs(approximate - exact) / max(abs(exact), 1.0)
    return f"within {off:.2%} of exact" if off <= tolerance else f"OFF BY {off:.2%}"


def sliding(data: Data, w: int, *aggregations: ws.Aggregation) -> DataFrame:
    ev = ws.events(data.df, time="t", key="k")
    return ev.window(ws.Rows(-(w - 1), 0, partial=True)).agg(*aggregations)


def sliding_cases(data: Data, w: int, runs: int) -> list[Row]:
    case = f"Rows, w = {w:,}"
    approx = sliding(data, w, ws.approx_count_distinct("u").alias("d"))
    exact = sliding(data, w, ws.count_distinct("u").alias("d"))
    spark = spark_rows(data, F.approx_count_distinct("u").over(frame(w)), "d")
    check = near(total(approx, "d"), total(exact, "d"))
    found = timed_in_turn({"wisp": approx, "exact": exact, "spark": spark}, runs)
    rows = [Row(f"{case}: approx_count_distinct", "ws.count_distinct (exact)",
                found["wisp"], found["exact"], check),
            Row(f"{case}: approx_count_distinct", "Spark approx_count_distinct",
                found["wisp"], found["spark"], check)]
    approx = sliding(data, w, ws.approx_quantile("v", 0.5).alias("m"))
    exact = sliding(data, w, ws.median("v").alias("m"))
    spark = spark_rows(data, F.percentile_approx("v", 0.5).over(frame(w)), "m")
    found = timed_in_turn({"wisp": approx, "exact": exact, "spark": spark}, runs)
    return [*rows, *quantile_rows(case, found)]


def quantile_rows(case: str, found: dict[str, float]) -> list[Row]:
    """The approximate median against the exact one and Spark's (the rank error is
    checked by the tests, not here)."""
    return [Row(f"{case}: approx_quantile 0.5", "ws.median (exact)", found["wisp"],
                found["exact"], "rank error: tests"),
            Row(f"{case}: approx_quantile 0.5", "Spark percentile_approx", found["wisp"],
                found["spark"], "rank error: tests")]


def tumbling_cases(data: Data, size: int, runs: int) -> list[Row]:
    case = f"Tumbling({size:,})"
    ev = ws.events(data.df, time="t", key="k")
    window = ws.Tumbling(size)
    groups = data.df.groupBy("k", (F.floor(F.col("t") / size)).alias("w"))
    approx = ev.window(window).agg(ws.approx_count_distinct("u").alias("d"))
    exact = ev.window(window).agg(ws.count_distinct("u").alias("d"))
    spark = groups.agg(F.approx_count_distinct("u").alias("d"))
    sketch = groups.agg(F.hll_sketch_estimate(F.hll_sketch_agg("u")).alias("d"))
    check = near(total(approx, "d"), total(exact, "d"))
    found = timed_in_turn({"wisp": approx, "exact": exact, "spark": spark,
                           "sketch": sketch}, runs)
    rows = [Row(f"{case}: approx_count_distinct", "ws.count_distinct (exact)",
                found["wisp"], found["exact"], check),
            Row(f"{case}: approx_count_distinct", "Spark approx_count_distinct",
                found["wisp"], found["spark"], check),
            Row(f"{case}: approx_count_distinct", "Spark hll_sketch_agg + estimate",
                found["wisp"], found["sketch"], check)]
    approx = ev.window(window).agg(ws.approx_quantile("v", 0.5).alias("m"))
    exact = ev.window(window).agg(ws.median("v").alias("m"))
    spark = groups.agg(F.percentile_approx("v", 0.5).alias("m"))
    found = timed_in_turn({"wisp": approx, "exact": exact, "spark": spark}, runs)
    return [*rows, *quantile_rows(case, found)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--widths", default="10,1000", help="sliding window widths")
    parser.add_argument("--tumbling", type=int, default=1_000,
                        help="tumbling window size in ticks of t")
    parser.add_argument("--output", default=None, help="write the table here too")
    args = parser.parse_args()
    cases: list[Callable[[Data], list[Row]]] = [
        *[lambda d, w=int(w): sliding_cases(d, w, args.runs)
          for w in args.widths.split(",")],
        lambda d: tumbling_cases(d, args.tumbling, args.runs)]
    run_cases(cases, args.events, args.keys, args.runs, args.output, with_integers)


if __name__ == "__main__":
    main()
