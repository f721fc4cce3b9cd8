"""The new aggregations against what a Spark user has without them, on one machine.

    python -m benchmarks.aggregations [--events 1000000] [--keys 100] [--runs 3]
                                      [--widths 10,1000] [--output out/aggregations.md]

Data: `benchmarks.data.generate` (`k`, `t`, `v`), written to Parquet once. Every query
is a `Rows(-(w - 1), 0, partial=True)` window per key `k` in time order (Spark: ROWS
BETWEEN w - 1 PRECEDING AND CURRENT ROW over `k` ordered by `t`, the same frames), timed
as the median of `--runs` noop writes, the engines in turn, in one local[2] session:

- rolling median at each width: `ws.median("v")` against Spark's `percentile_approx(v,
  0.5)` over the frame (approximate: its rows are not compared) and Spark's exact
  `percentile(v, 0.5)` (compared: the sum of the medians agrees to 1e-9);
- rolling median also against polars' `rolling_median` over each key (one process on
  the driver, the data collected to it first; compared: the sums agree), where polars
  is installed (`make bench` installs it; nothing else uses it);
- distinct count at w = 1,000: `ws.count_distinct("v")` against the same count as a
  `ws.udaf` (numpy's unique per window: the path before this aggregation existed) and
  Spark's `size(collect_set(v))` over the frame (both compared: equal sums).

Each row gives wisp's time, the other's, and their ratio (wisp / other: below 1 is
wisp ahead).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import wisp as ws

from .data import Data, generate


@dataclass
class Row:
    case: str
    other: str
    wisp_seconds: float
    other_seconds: float | None
    check: str

    @property
    def ratio(self) -> str:
        if self.other_seconds is None or self.other_seconds == 0:
            return "-"
        return f"{self.wisp_seconds / self.other_seconds:.2f}"


def session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("wisp-bench-aggregations")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def once(df: DataFrame) -> float:
    started = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def timed_in_turn(queries: dict[str, DataFrame], runs: int) -> dict[str, float]:
    """The median of `runs` runs of each query, the queries taking turns."""
    times: dict[str, list[float]] = {name: [] for name in queries}
    for _ in range(runs):
        for name, df in queries.items():
            times[name].append(once(df))
    return {name: statistics.median(found) for name, found in times.items()}


def frame(w: int) -> Any:
    return Window.partitionBy("k").orderBy("t").rowsBetween(-(w - 1), 0)


def total(df: DataFrame, column: str) -> float:
    found = df.agg(F.sum(column)).first()
    return float(found[0]) if found is not None and found[0] is not None else 0.0


def agree(a: float, b: float) -> str:
    ok = abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
    return "agree" if ok else f"DIFFER ({a!r} vs {b!r})"


def wisp_rows(data: Data, w: int, *aggregations: Any) -> DataFrame:
    ev = ws.events(data.df, time="t", key="k")
    return ev.window(ws.Rows(-(w - 1), 0, partial=True)).agg(*aggregations)


def spark_rows(data: Data, column: Column, name: str) -> DataFrame:
    return data.df.select("k", "t", column.alias(name))


def distinct_count(values: Any, times: Any) -> int:
    return len(np.unique(values))


def median_cases(data: Data, w: int, runs: int) -> list[Row]:
    ours = wisp_rows(data, w, ws.median("v").alias("m"))
    approx = spark_rows(data, F.percentile_approx("v", 0.5).over(frame(w)), "m")
    exact = spark_rows(data, F.percentile("v", F.lit(0.5)).over(frame(w)), "m")
    mine = total(ours, "m")
    check = agree(mine, total(exact, "m"))
    found = timed_in_turn({"wisp": ours, "approx": approx, "exact": exact}, runs)
    rows = [Row(f"rolling median, w = {w:,}", "Spark percentile_approx", found["wisp"],
                found["approx"], "approximate: not compared"),
            Row(f"rolling median, w = {w:,}", "Spark percentile (exact)", found["wisp"],
                found["exact"], check)]
    polars = polars_median(data, w, runs)
    if polars is not None:
        seconds, sum_of_medians = polars
        rows.append(Row(f"rolling median, w = {w:,}", "polars rolling_median (one "
                        "process, data in memory)", found["wisp"], seconds,
                        agree(mine, sum_of_medians)))
    return rows


def polars_median(data: Data, w: int, runs: int) -> tuple[float, float] | None:
    """polars' `rolling_median` over the same frames (the table collected to the driver
    first, not timed), the median of `runs` runs, and the sum of its medians; None
    where polars is not installed (`pip install polars`: only this comparison uses it)."""
    try:
        import polars as pl  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    table = pl.from_arrow(data.df.select("k", "t", "v").toArrow())
    assert isinstance(table, pl.DataFrame)
    times, result = [], table
    for _ in range(runs):
        start = time.perf_counter()
        result = table.sort("k", "t").with_columns(
            pl.col("v").rolling_median(window_size=w, min_samples=1).over("k").alias("m"))
        times.append(time.perf_counter() - start)
    return statistics.median(times), float(result["m"].sum())


def distinct_cases(data: Data, w: int, runs: int) -> list[Row]:
    ours = wisp_rows(data, w, ws.count_distinct("v").alias("d"))
    udaf = wisp_rows(data, w, ws.udaf(distinct_count, "v", returns="long").alias("d"))
    sets = spark_rows(data, F.size(F.collect_set("v").over(frame(w))), "d")
    mine = total(ours, "d")
    checks = {"udaf": agree(mine, total(udaf, "d")), "sets": agree(mine, total(sets, "d"))}
    found = timed_in_turn({"wisp": ours, "udaf": udaf, "sets": sets}, runs)
    return [Row(f"count_distinct, w = {w:,}", "ws.udaf (np.unique per window)",
                found["wisp"], found["udaf"], checks["udaf"]),
            Row(f"count_distinct, w = {w:,}", "Spark size(collect_set)", found["wisp"],
                found["sets"], checks["sets"])]


def table(rows: list[Row], data: Data, runs: int) -> list[str]:
    lines = [f"{data.events:,} events over {data.keys:,} keys, median of {runs} runs "
             "(noop write), local[2].", "",
             "| case | against | wisp (s) | other (s) | wisp / other | check |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        other = "-" if r.other_seconds is None else f"{r.other_seconds:.2f}"
        lines.append(f"| {r.case} | {r.other} | {r.wisp_seconds:.2f} | {other} | "
                     f"{r.ratio} | {r.check} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--widths", default="10,1000", help="rolling median widths")
    parser.add_argument("--distinct-width", type=int, default=1_000)
    parser.add_argument("--output", default=None, help="write the table here too")
    args = parser.parse_args()
    cases: list[Callable[[Data], list[Row]]] = [
        *[lambda d, w=int(w): median_cases(d, w, args.runs) for w in args.widths.split(",")],
        lambda d: distinct_cases(d, args.distinct_width, args.runs)]
    run_cases(cases, args.events, args.keys, args.runs, args.output)


def run_cases(cases: list[Callable[[Data], list[Row]]], events: int, keys: int, runs: int,
              output: str | None, prepare: Callable[[Data], Data] = lambda data: data
              ) -> None:
    """`cases` over `generate`'s data (`prepare`d) in one session: their table printed,
    and written to `output` when given."""
    spark = session()
    with tempfile.TemporaryDirectory() as directory:
        data = prepare(generate(spark, directory, events, keys))
        rows = [row for case in cases for row in case(data)]
        lines = table(rows, data, runs)
    print("\n".join(lines))
    if output:
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
        with open(output, "w") as out:
            out.write("\n".join(lines) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
