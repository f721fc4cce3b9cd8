"""A job for a standalone cluster whose executors' Python has numpy, pyarrow and pandas
but not wisp. It asks an executor whether it can import wisp, ships wisp as a zip (as
docs/cluster.md describes), asks again, then runs one query of every window family,
each of which runs wisp's code in the executors' Python workers.

Run by test_standalone.py through spark-submit: `standalone_job.py WISP_ZIP`. Prints
one line, `RESULT <json>`."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark import SparkContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def where_wisp(_: object) -> list[str | None]:
    """On an executor: its Python, and the file wisp would be imported from (None when
    it cannot be)."""
    import importlib.util
    import sys

    spec = importlib.util.find_spec("wisp")
    return [sys.executable, None if spec is None else spec.origin]


def ask_an_executor(sc: SparkContext) -> list[str | None]:
    return sc.parallelize([0], 1).map(where_wisp).collect()[0]


def rows(result: DataFrame) -> list[list[Any]]:
    return [list(r) for r in result.orderBy(*result.columns[:4]).collect()]


def main(wisp_zip: str) -> None:
    import wisp as ws  # the driver has wisp; the executors get it from the zip below

    # under spark-submit, wisp's session keeps spark-submit's master and executors' Python
    spark = ws.session(app_name="wisp on a standalone cluster")
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    before = ask_an_executor(sc)
    sc.addPyFile(wisp_zip)
    after = ask_an_executor(sc)

    df = spark.createDataFrame(
        [(1, "a", 1.0), (2, "a", 2.0), (4, "a", 4.0), (7, "a", 7.0), (8, "a", 8.0),
         (3, "b", 30.0), (5, "b", 50.0)], "t long, k string, v double")
    ev = ws.events(df, time="t", key="k")
    queries = {
        "frames": ev.window(ws.Rows(-1, 0)).agg(ws.collect("v")),
        "intervals": ev.window(ws.Hopping(4, 2)).agg(ws.count(), ws.sum("v")),
        "policies": ev.window(ws.Sliding(ws.Time(3), trigger=ws.Count(2))).agg(ws.sum("v")),
        "periods": ev.window(ws.Trailing(2, F.col("v") > 3)).agg(ws.sum("v")),
        "dynamic": ev.window(ws.Dynamic(ws.clock(4), start=-4, end=0)).agg(ws.sum("v")),
        "sessions": ev.window(ws.Session(2)).agg(ws.count(), ws.sum("v")),
    }
    print("RESULT " + json.dumps({
        "master": sc.master, "driver": sys.executable, "before": before, "after": after,
        "strategies": {name: ws.explain(q).split("Strategy ")[1].split(":")[0]
                       for name, q in queries.items()},
        "rows": {name: rows(q) for name, q in queries.items()}}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
