"""`wisp_window` over Spark Connect (`SparkSession.builder.remote("local[2]")`), in a
subprocess as tests/engine/test_connect.py runs Connect: the test run's own session is
a classic one, and a process holds one kind of session at a time."""

from __future__ import annotations

import textwrap

import pytest
from spark_processes import run_local_connect

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession, functions as F
    import wisp as ws
    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    ws.register_sql(spark)
    df = spark.createDataFrame([(k % 2, k, float(k)) for k in range(8)],
                               "k long, t long, v double")
    df.createOrReplaceTempView("readings")
    query = "events: {time: t, key: k}\\nwindow: {kind: Range, start: -2, end: 0}\\n" \\
            "aggregations: [count, sum(v)]\\n"
    rows = spark.sql("SELECT k, time, count, sum_v FROM wisp_window(TABLE(readings), :q) "
                     "ORDER BY k, time", args={"q": query}).collect()
    try:
        spark.sql("SELECT * FROM wisp_window(TABLE(readings), :q)",
                  args={"q": query.replace("start", "strat")}).collect()
        error = None
    except Exception as caught:
        error = str(caught).strip().splitlines()[0]
    print("RESULT " + json.dumps({"rows": [list(r) for r in rows], "error": error}))
    spark.stop()
""")


def test_a_sql_query_over_spark_connect() -> None:
    result = run_local_connect(SCRIPT)
    # k = t % 2: each key's events are 2 ticks apart, so [t - 2, t] holds two of them
    assert result["rows"] == [[0, 0, 1, 0.0], [0, 2, 2, 2.0], [0, 4, 2, 6.0], [0, 6, 2, 10.0],
                              [1, 1, 1, 1.0], [1, 3, 2, 4.0], [1, 5, 2, 8.0], [1, 7, 2, 12.0]]
    assert "wisp.query.QueryError: `window.strat` must be a known key of Range" in \
        result["error"]
