"""The sketch aggregations on Spark, read by Spark's own sketch functions: wisp's HLL
bytes estimate as `approx_count_distinct`, union with Spark's sketches of the same rows
to the same estimate, and merge over a key's windows to the sketch of all its rows
(canonical); theta and KLL bytes read by `theta_sketch_estimate`, `theta_union_agg` and
`kll_sketch_get_quantile_double`. Then the bad-input texts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispError

pytestmark = pytest.mark.spark

ROWS = 6000
WINDOWS = {
    "tumbling": lambda ev: ev.window(ws.Tumbling("600s")),
    "rows": lambda ev: ev.window(ws.Rows(-499, 0)),
    "range": lambda ev: ev.window(ws.Range("-300s", "0s")),
    "session": lambda ev: ev.window(ws.Session("5s")),
    "cumulative": lambda ev: ev,
}


@pytest.fixture(scope="module")
def frame(spark: SparkSession) -> DataFrame:
    """Two keys; each second an int (few distinct per window and many over the run), a
    string of it, a double; nulls every 13th row; a gap of a minute every 1000 rows
    (sessions)."""
    df = spark.range(ROWS).select(
        F.when(F.col("id") % 2 == 0, "a").otherwise("b").alias("k"),
        (F.col("id") + F.floor(F.col("id") / 1000) * 60).cast("long").alias("t"),
        F.when(F.col("id") % 13 == 5, None).otherwise(
            (F.col("id") * 7919) % 2311).cast("long").alias("v"),
        F.col("id").cast("double").alias("x"))
    df = df.withColumn("s", F.concat(F.lit("s"), F.col("v").cast("string")))
    return df.withColumn("ts", F.timestamp_seconds("t")).cache()


def events(frame: DataFrame) -> ws.Events:
    return ws.events(frame, time="ts", key="k")


@pytest.mark.parametrize("kind", sorted(WINDOWS))
def test_hll_sketch_reads_as_its_estimate_in_spark(frame: DataFrame, kind: str) -> None:
    out = WINDOWS[kind](events(frame)).agg(ws.hll_sketch("v"), ws.approx_count_distinct("v"))
    rows = out.select(F.hll_sketch_estimate("hll_sketch_v").alias("spark"),
                      "approx_count_distinct_v").collect()
    assert rows
    assert all(r["spark"] == r["approx_count_distinct_v"] for r in rows)


def exact_check(frame: DataFrame, out: DataFrame, column: str) -> None:
    """Tumbling windows' estimates within 5% of the exact distinct counts."""
    exact = {(r["k"], r["start"]): r["n"] for r in frame.groupBy(
        "k", F.window("ts", "600 seconds").start.alias("start")).agg(
        F.count_distinct("v").alias("n")).collect()}
    for r in out.collect():
        n = exact[(r["k"], r["window_start"])]
        assert abs(r[column] - n) <= 0.05 * n, (r, n)


def test_tumbling_estimates_are_near_the_exact_counts(frame: DataFrame) -> None:
    out = events(frame).window(ws.Tumbling("600s")).agg(
        ws.approx_count_distinct("v"), ws.theta_sketch("v"))
    exact_check(frame, out, "approx_count_distinct_v")
    theta = out.withColumn("theta", F.theta_sketch_estimate("theta_sketch_v"))
    exact_check(frame, theta, "theta")


def test_a_union_of_windows_is_the_sketch_of_all_rows(frame: DataFrame) -> None:
    """Canonical sketches: Spark's union over a key's tumbling windows estimates as
    wisp's sketch over all the key's rows (a window covering them) where the windows'
    sketches hold registers (lg_k 6 here); where they hold coupons (lg_k 12), Spark's
    union adds them one by one and estimates by their order (HIP): within 2%. Theta
    within 5% of the exact count."""
    ev = events(frame)
    exact = {r["k"]: r["n"] for r in frame.groupBy("k").agg(
        F.count_distinct("v").alias("n")).collect()}
    for lg_k in (6, 12):
        windows = ev.window(ws.Tumbling("600s")).agg(ws.hll_sketch("v", lg_k),
                                                     ws.theta_sketch("v"))
        merged = {r["k"]: (r["h"], r["t"]) for r in windows.groupBy("k").agg(
            F.hll_sketch_estimate(F.hll_union_agg("hll_sketch_v")).alias("h"),
            F.theta_sketch_estimate(F.theta_union_agg("theta_sketch_v")).alias("t")
        ).collect()}
        whole = {r["k"]: r["approx_count_distinct_v"] for r in ev.window(
            ws.Tumbling("100000s")).agg(ws.approx_count_distinct("v", lg_k)).collect()}
        for key, (hll, theta) in merged.items():
            if lg_k == 6:
                assert hll == whole[key]
            else:
                assert abs(hll - whole[key]) <= 0.02 * whole[key]
            assert abs(theta - exact[key]) <= 0.05 * exact[key]


@pytest.mark.parametrize("column", ["v", "s"])
def test_wisp_and_spark_hash_alike(spark: SparkSession, frame: DataFrame,
                                   column: str) -> None:
    """Small windows: the same estimate as Spark's `hll_sketch_agg` of the same rows;
    any window: a union with Spark's sketch estimates as wisp's (same registers)."""
    for span in ("20s", "600s"):
        wisp = events(frame).window(ws.Tumbling(span)).agg(
            ws.hll_sketch(column).alias("w"), ws.approx_count_distinct(column).alias("n"))
        theirs = frame.groupBy("k", F.window("ts", span.replace("s", " seconds")).start
                               .alias("window_start")).agg(
            F.hll_sketch_agg(column).alias("sp"))
        joined = wisp.join(theirs, ["k", "window_start"]).select(
            "n", F.hll_sketch_estimate("sp").alias("spark"),
            F.hll_sketch_estimate(F.hll_union("sp", "w")).alias("both")).collect()
        assert joined
        assert all(r["both"] == r["n"] for r in joined)
        if span == "20s":
            assert all(r["spark"] == r["n"] for r in joined)


@pytest.mark.parametrize("span", [300, 1200])
def test_kll_reads_as_approx_quantile_in_spark(frame: DataFrame, span: int) -> None:
    """Windows of 150 values a key (exact: Spark reads wisp's quantiles, by the same
    inclusive search) and of 600 (within the rank error)."""
    out = events(frame).window(ws.Tumbling(f"{span}s")).agg(
        ws.kll_sketch("x"), ws.approx_quantile("x", 0.5),
        ws.approx_quantile("x", [0.1, 0.9]))
    rows = out.select(
        "k", "window_start", "approx_q50_x", "approx_quantiles_x",
        F.kll_sketch_get_quantile_double("kll_sketch_x", F.lit(0.5)).alias("spark"),
        F.kll_sketch_get_quantile_double("kll_sketch_x", F.array(
            F.lit(0.1), F.lit(0.9))).alias("spark_qs")).collect()
    exact = {(r["k"], r["s"]): sorted(r["xs"]) for r in frame.groupBy(
        "k", F.window("ts", f"{span} seconds").start.alias("s")).agg(
        F.collect_list("x").alias("xs")).collect()}
    for r in rows:
        xs = exact[(r["k"], r["window_start"])]
        rank = sum(1 for x in xs if x <= r["approx_q50_x"]) / len(xs)
        assert abs(rank - 0.5) <= 0.04
        if len(xs) <= 200:  # exact: the same sketch's quantile as Spark's reading
            assert r["spark"] == r["approx_q50_x"] == xs[(len(xs) + 1) // 2 - 1]
            assert r["spark_qs"] == r["approx_quantiles_x"]


def test_empty_windows_are_empty_sketches_as_in_spark(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 0, None), ("a", 1, None)], "k string, t long, v long")
    df = df.withColumn("ts", F.timestamp_seconds("t"))
    out = ws.events(df, time="ts", key="k").window(ws.Tumbling("10s")).agg(
        ws.hll_sketch("v"), ws.approx_count_distinct("v"), ws.theta_sketch("v"),
        ws.kll_sketch("v"), ws.approx_quantile("v", 0.5)).collect()
    spark_sketches: Any = df.groupBy("k").agg(
        F.hll_sketch_agg("v").alias("h"), F.theta_sketch_agg("v").alias("t")).collect()
    (row,) = out
    assert row["approx_count_distinct_v"] == 0
    assert row["approx_q50_v"] is None
    check = spark.createDataFrame([(row["hll_sketch_v"], row["theta_sketch_v"],
                                    spark_sketches[0]["h"], spark_sketches[0]["t"])],
                                  "h binary, t binary, sh binary, st binary")
    (read,) = check.select(F.hll_sketch_estimate("h"), F.theta_sketch_estimate("t"),
                           F.hll_sketch_estimate("sh"), F.theta_sketch_estimate("st")
                           ).collect()
    assert list(read) == [0, 0, 0, 0]


def test_bad_sketch_arguments_are_named(frame: DataFrame) -> None:
    for call, text in (
            (lambda: ws.hll_sketch("v", lg_k=3), "`lg_k` must be a whole number between 4 "
             "and 21 (log2 of the HLL buckets), found 3"),
            (lambda: ws.approx_count_distinct("v", lg_k=22), "`lg_k` must be a whole "
             "number between 4 and 21"),
            (lambda: ws.theta_sketch("v", lg_k=4), "`lg_k` must be a whole number between "
             "5 and 26"),
            (lambda: ws.kll_sketch("x", k=0), "`k` must be a whole number between 8 and "
             "65535 (the KLL sketch's accuracy), found 0"),
            (lambda: ws.approx_quantile("x", 0.5, k=7), "`k` must be a whole number "
             "between 8 and 65535")):
        with pytest.raises(WispError, match=re.escape(text)):
            call()
    with pytest.raises(WispError, match=re.escape(
            "`col` must be a numeric column for kll_sketch(), found \"string column 's'\"")):
        events(frame).agg(ws.kll_sketch("s"))


def test_explain_names_each_sketch_and_its_error(frame: DataFrame) -> None:
    out = events(frame).window(ws.Rows(-9, 0)).agg(
        ws.approx_count_distinct("v", lg_k=14), ws.theta_sketch("s"),
        ws.approx_quantile("x", [0.5, 0.9], k=400), ws.count())
    text = ws.explain(out)
    assert ("Sketches: approx_count_distinct_v from an HLL sketch of 2^14 buckets "
            "(relative standard error 0.81%); theta_sketch_s from a theta sketch of 2^12 "
            "nominal entries (relative standard error 1.6%); approx_quantiles_x from a KLL "
            "sketch with k = 400 (normalized rank error 0.68%; exact up to 400 values).") \
        in text
    assert "Sketches:" not in ws.explain(events(frame).window(ws.Rows(-9, 0)).agg(
        ws.count_distinct("v")))
