"""wisp from SQL (`wisp_window`, `ws.register_sql`) against the same query through the
Python API, in one session.

    python -m benchmarks.sql [--events 1000000] [--keys 100] [--runs 3]
                             [--output out/sql.md]

Data: `benchmarks.data.generate` (`k`, `t`, `v`), written to Parquet once, with `ts`, a
timestamp of `t` seconds (so a key's events are about `keys` seconds apart), registered
as the view `readings`. The query: `Range("-10m", "0s")` (the 10 minutes up to and including
each event) `mean(v)` per key, timed as the median of `--runs` noop writes, SQL and API
in turn. Checks: the sum of the means agrees.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wisp as ws

from .aggregations import Row, agree, run_cases, timed_in_turn, total
from .data import Data

QUERY = """
events: {time: ts, key: k}
window: {kind: Range, start: -10m, end: 0s}
aggregations: [mean(v)]
"""


def with_timestamps(data: Data) -> Data:
    """The data with `ts`: `t` seconds after the epoch, as a timestamp."""
    return replace(data, df=data.df.withColumn("ts", F.timestamp_seconds(F.col("t"))))


def range_cases(data: Data, runs: int) -> list[Row]:
    """The SQL query and the API's against each other."""
    spark = data.df.sparkSession
    ws.register_sql(spark)
    data.df.createOrReplaceTempView("readings")
    sql: DataFrame = spark.sql("SELECT * FROM wisp_window(TABLE(readings), :q)",
                               args={"q": QUERY})
    api = ws.events(data.df, time="ts", key="k").window(ws.Range("-10m", "0s")).agg(
        ws.mean("v"))
    check = agree(total(sql, "mean_v"), total(api, "mean_v"))
    found = timed_in_turn({"sql": sql, "api": api}, runs)
    return [Row("Range('-10m', '0s') mean(v): wisp_window in SQL", "the Python API",
                found["sql"], found["api"], check)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", default=None, help="write the table here too")
    args = parser.parse_args()
    run_cases([lambda d: range_cases(d, args.runs)], args.events, args.keys, args.runs,
              args.output, with_timestamps)


if __name__ == "__main__":
    main()
