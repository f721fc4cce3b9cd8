"""The wisp demo: a windowed pipeline over synthetic sensor readings on local Spark.

It generates `n_events` temperature readings from `n_keys` sensors inside Spark (no data
is built on the driver): timestamps spread over four hours from 2024-03-10 00:00:00 UTC,
out of order, with some exact ties, and a few null temperatures. It then computes, per
sensor, through the public API:

- `rolling`: mean, peak and count over the past 10 minutes of each reading
  (`Range.past("10m")`, closed on both sides, one row per reading);
- `last3`: mean over each reading and the two before it (`Rows(-2, 0)`);
- `running`: maximum and count of everything so far (cumulative, no window);

shows the first rows of each, explains the physical strategy chosen for `rolling`,
writes the three results as Parquet under `output_dir` and reports row counts and time.

Run it with `python -m wisp.demo [--events N] [--keys K] [--output DIR]` or `make demo`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

START_MICROS = 1_710_028_800_000_000  # 2024-03-10 00:00:00 UTC
SPAN_MILLIS = 4 * 3600 * 1000  # readings spread over four hours, millisecond resolution


def sensor_events(spark: SparkSession, n_events: int, n_keys: int, seed: int) -> DataFrame:
    """Synthetic readings `(sensor, ts, temperature)`, computed by Spark column expressions.

    Every 20th row copies the sensor and timestamp of the row before it (exact ties);
    about 1% of temperatures are null. Deterministic for given arguments.
    """
    partitions = max(1, min(64, n_events // 100_000 + 1))  # fixed, so F.rand is repeatable
    ids = spark.range(0, n_events, 1, numPartitions=partitions)
    # The row whose key and time this row takes: itself, or its predecessor for a tie.
    src = F.when((F.col("id") % 20 == 1), F.col("id") - 1).otherwise(F.col("id"))
    key_idx = F.pmod(F.xxhash64(F.lit(seed), F.lit("sensor"), src), F.lit(n_keys))
    offset_ms = F.pmod(F.xxhash64(F.lit(seed), F.lit("ts"), src), F.lit(SPAN_MILLIS))
    hours = offset_ms / F.lit(3_600_000.0)
    temperature = (
        F.lit(15.0) + key_idx * F.lit(0.5)  # each sensor has its own level
        + F.lit(3.0) * F.sin(hours * F.lit(3.14159 / 2))  # a slow drift over the hours
        + F.randn(seed)  # noise
    )
    return ids.select(
        F.format_string("sensor-%02d", key_idx).alias("sensor"),
        F.timestamp_micros(F.lit(START_MICROS) + offset_ms * F.lit(1000)).alias("ts"),
        F.when(F.rand(seed + 1) < 0.01, F.lit(None).cast("double"))
        .otherwise(F.round(temperature, 2))
        .alias("temperature"),
    )


def _show(title: str, df: DataFrame) -> None:
    print(f"\n== {title} ==")
    df.orderBy("sensor", "time").show(10, truncate=False)


def run_demo(
    spark: SparkSession | None = None,
    output_dir: str = "out/demo",
    n_events: int = 200_000,
    n_keys: int = 20,
    seed: int = 7,
) -> None:
    """Run the demo pipeline and write `rolling/`, `last3/`, `running/` under `output_dir`."""
    started = time.perf_counter()
    spark = spark or ws.session()
    df = sensor_events(spark, n_events, n_keys, seed)
    print(f"{n_events:,} readings from {n_keys} sensors, 2024-03-10 00:00-04:00 UTC")

    ev = ws.events(df, time="ts", key="sensor")
    results: dict[str, DataFrame] = {
        "rolling": ev.window(ws.Range.past("10m")).agg(
            ws.mean("temperature"), ws.max("temperature").alias("peak"), ws.count()
        ),
        "last3": ev.window(ws.Rows(-2, 0)).agg(ws.mean("temperature")),
        "running": ev.agg(ws.max("temperature"), ws.count()),
    }
    titles = {
        "rolling": "mean, peak and count over the past 10 minutes of each reading",
        "last3": "mean of each reading and the two before it",
        "running": "running maximum and count per sensor",
    }
    for name, result in results.items():
        _show(f"{name}: {titles[name]}", result)

    print("\n== how wisp runs `rolling` ==")
    ws.explain(results["rolling"])

    out = Path(output_dir)
    print(f"\n== written to {out}/ ==")
    for name, result in results.items():
        path = str(out / name)
        result.write.mode("overwrite").parquet(path)
        rows = spark.read.parquet(path).count()
        print(f"{name:<8} {rows:>10,} rows  {path}")
    print(f"\nwall time: {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m wisp.demo",
        description="A windowed pipeline over synthetic sensor readings on local Spark.",
    )
    parser.add_argument("--events", type=int, default=200_000, help="number of readings")
    parser.add_argument("--keys", type=int, default=20, help="number of sensors")
    parser.add_argument("--output", default="out/demo", help="output directory for Parquet")
    args = parser.parse_args(argv)
    if args.events < 1 or args.keys < 1:
        parser.error("--events and --keys must be >= 1")
    run_demo(output_dir=args.output, n_events=args.events, n_keys=args.keys)


if __name__ == "__main__":
    main()
