"""A seed example over Spark Connect (`SparkSession.builder.remote("local[2]")`).

It runs in a subprocess: the test run's own session is a classic one, and a process
holds one kind of session at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession, functions as F
    import wisp as ws
    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    df = spark.createDataFrame([(k, float(k + 1)) for k in range(8)], "t long, v double")
    ev = ws.events(df.withColumn("ts", F.timestamp_micros(F.col("t") * 1000000)), time="ts")
    out = ev.window(ws.Rows(-2, 0)).agg(ws.collect("v"))
    rows = out.select((F.unix_micros("time") / 1000000).alias("s"), "collect_v")
    running = ev.agg(ws.max("v")).select((F.unix_micros("time") / 1000000).alias("s"),
                                         "max_v")
    # interval events [t, t + 1) and [3, open) in Hopping(4, 2): the newest start and
    # end (the horizon) come from a scalar subquery
    spans = df.select("t", F.when(F.col("t") == 3, None).otherwise(F.col("t") + 1).alias("e"),
                      "v")
    hopping = ws.events(spans, time="t", end="e").window(ws.Hopping(4, 2)).agg(
        ws.count(), ws.sum("v"))
    print("RESULT " + json.dumps({
        "rows": [list(r) for r in rows.orderBy("s").collect()],
        "running": [list(r) for r in running.orderBy("s").collect()],
        "hopping": [list(r) for r in hopping.orderBy("window_start").collect()],
        "report": ws.report(out)}))
    spark.stop()
""")


def test_seed_window_over_spark_connect() -> None:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=240, env=env, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    result = json.loads(lines[0].removeprefix("RESULT "))
    assert result["rows"] == [
        [2.0, [1.0, 2.0, 3.0]], [3.0, [2.0, 3.0, 4.0]], [4.0, [3.0, 4.0, 5.0]],
        [5.0, [4.0, 5.0, 6.0]], [6.0, [5.0, 6.0, 7.0]], [7.0, [6.0, 7.0, 8.0]]]
    assert result["running"] == [[float(k), float(k + 1)] for k in range(8)]
    # windows [2n, 2n + 4) up to the horizon 8 (one tick after the newest start, 7), then
    # one row for [8, ...) and later, which hold [3, open) alone; v = t + 1
    assert result["hopping"] == [
        [-2, 2, 2, 2, 3.0], [0, 4, 4, 4, 10.0], [2, 6, 6, 4, 18.0], [4, 8, 8, 5, 30.0],
        [6, 10, 10, 3, 19.0], [8, None, 12, 1, 4.0]]
    assert result["report"] == {"rows_in": 8, "rejected_null_time": 0}
