"""Point-in-time feature sets: label rows against events, each label's windows over its
key's events strictly before its time, against what a Spark user writes by hand.

    python -m benchmarks.point_in_time [--events 10000000] [--labels 1000000]
                                       [--runs 3] [--output out/point_in_time.md]

Data: `benchmarks.data.generate` events (`k` in 100 keys, `t` the row id, so a key's
events are ~100 ticks apart, `v`), and label rows at hash-random times over the same
span and keys (`k`, `t`, a payload `y`), both written to Parquet once. Three trailing
windows, `Range(-1 000, -1)`, `Range(-10 000, -1)` and `Range(-100 000, -1)` in ticks
(about 10, 100 and 1 000 events of a key), with `sum(v)` and `count()`: integer time, so
"before the label" is the window closed at `T - 1`, the same rows as wisp's strictly
before `T`.

- `wisp`: `ev.features({...}, sum, count, at=labels)`: labels and events unioned,
  shuffled once by key, sorted together, one kernel walk.
- `native`: the union of events and labels (a flag column), Spark's window operator
  with three `rangeBetween(-w, -1)` frames of `sum(when(event, v))` and
  `count(when(event, 1))` (one partition and order, so one sort), then the label rows
  kept by a filter: the best hand-written plan found (a range join of labels to events
  costs a row per label per event in its widest window: 1 000 at the widest here, so
  it is not run at these sizes).

Before timing, both results' row counts and column sums are compared (the first run,
also a warm-up). Each query's time is the median of `--runs` noop writes, the two
taking turns run after run, in one local[2] `wisp.session()`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import wisp as ws

from .data import generate
from .run import machine, once, session

WIDTHS = (1_000, 10_000, 100_000)


def labels_frame(spark: SparkSession, directory: str, labels: int, events: int,
                 keys: int) -> DataFrame:
    """`labels` rows at hash-random times within the events' span, keys as the
    events'; written to Parquet and read back."""
    df = spark.range(labels).select(
        F.pmod(F.xxhash64("id", F.lit(11)), F.lit(keys)).alias("k"),
        F.pmod(F.xxhash64("id", F.lit(12)), F.lit(events)).alias("t"),
        F.col("id").alias("y"))
    path = f"{directory}/labels_{labels}"
    df.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def wisp_query(events: DataFrame, labels: DataFrame) -> DataFrame:
    ev = ws.events(events, time="t", key="k")
    windows = {f"w{w}": ws.Range(-w, -1) for w in WIDTHS}
    return ev.features(windows, ws.sum("v"), ws.count(), at=labels)


def native_query(events: DataFrame, labels: DataFrame) -> DataFrame:
    union = events.select("k", "t", "v", F.lit(True).alias("e"), F.lit(None).cast(
        "long").alias("y")).unionByName(labels.select(
            "k", "t", F.lit(None).cast("double").alias("v"), F.lit(False).alias("e"), "y"))
    columns = []
    for w in WIDTHS:
        frame = Window.partitionBy("k").orderBy("t").rangeBetween(-w, -1)
        columns += [F.sum(F.when(F.col("e"), F.col("v"))).over(frame).alias(f"sum_v_w{w}"),
                    F.count(F.when(F.col("e"), 1)).over(frame).alias(f"count_w{w}")]
    return union.select("k", "t", "y", "e", *columns).where(~F.col("e")).drop("e")


def totals(df: DataFrame, names: list[str]) -> list[float]:
    row = df.agg(F.count(F.lit(1)), *[F.sum(F.coalesce(F.col(n).cast("double"), F.lit(0.0)))
                                     for n in names]).first()
    assert row is not None
    return [float(x) for x in row]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--labels", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    spark = session()
    names = [f"{a}_w{w}" for a in ("sum_v", "count") for w in WIDTHS]
    with tempfile.TemporaryDirectory(prefix="wisp-pit-") as directory:
        data = generate(spark, directory, args.events, args.keys)
        labels = labels_frame(spark, directory, args.labels, args.events, args.keys)
        mine, theirs = wisp_query(data.df, labels), native_query(data.df, labels)
        a, b = totals(mine, names), totals(theirs, names)
        agree = all(abs(x - y) <= 1e-6 * max(abs(y), 1.0) for x, y in zip(a, b, strict=True))
        times: dict[str, list[float]] = {"wisp": [], "native": []}
        for _ in range(args.runs):
            times["wisp"].append(once(mine))
            times["native"].append(once(theirs))
    wisp_s, native_s = (statistics.median(times[k]) for k in ("wisp", "native"))
    lines = [f"Point-in-time: {args.labels:,} label rows against {args.events:,} events, "
             f"{args.keys} keys, 3 windows (Range -1 000/-10 000/-100 000 .. -1) x "
             f"(sum, count); medians of {args.runs} runs taken in turn.", "",
             *machine(spark), "",
             f"Results agree (row count and column sums): {agree} ({a[0]:,.0f} rows).", "",
             "| query | seconds | ratio to native |", "|---|---|---|",
             f"| wisp `features(..., at=labels)` | {wisp_s:.2f} | {wisp_s / native_s:.2f} |",
             f"| native union + 3 rangeBetween frames | {native_s:.2f} | 1.00 |"]
    print("\n".join(lines))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
