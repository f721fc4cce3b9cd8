"""Policy windows over every kind of time column (integer, decimal, date, float) and
over several keys, with expected outputs worked out by hand."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

import wisp as ws

pytestmark = pytest.mark.spark


def test_integer_time_with_time_eviction_and_time_trigger(spark: SparkSession) -> None:
    # eviction time(3), firings at 1 + 2k: 1, 3, 5, 7 (7: the first at or after 7)
    df = spark.createDataFrame([(1,), (2,), (4,), (7,)], "t long")
    window = ws.Sliding(ws.Time(3), ws.Time(2, align=1))
    rows = ws.events(df, time="t").window(window).agg(ws.collect("t")).orderBy("time")
    assert [(r["time"], r["window_start"], r["window_end"], r["collect_t"])
            for r in rows.collect()] == [(1, 1, 1, [1]), (3, 1, 2, [1, 2]),
                                         (5, 2, 4, [2, 4]), (7, 4, 7, [4, 7])]


def test_decimal_time_with_a_time_sized_tumbling_window(spark: SparkSession) -> None:
    # windows (.., 1], (1, 2], (2, 3]; time = the firing, as decimal(38, 2)
    df = spark.createDataFrame([(Decimal("1.00"),), (Decimal("1.50"),), (Decimal("2.25"),),
                                (Decimal("3.00"),)], "t decimal(10,2)")
    result = ws.events(df, time="t").window(ws.Tumbling(ws.Time(1))).agg(ws.collect("t"))
    assert result.schema["time"].dataType.simpleString() == "decimal(38,2)"
    assert [(r["time"], r["collect_t"]) for r in result.orderBy("time").collect()] == [
        (Decimal("1.00"), [Decimal("1.00")]), (Decimal("2.00"), [Decimal("1.50")]),
        (Decimal("3.00"), [Decimal("2.25"), Decimal("3.00")])]


def test_date_time_with_a_two_day_trigger(spark: SparkSession) -> None:
    # 2024-01-01 is day 19723 after the epoch: firings every 2 days from the epoch fall
    # on 01-02, 01-04 and 01-06 (the first at or after 01-05)
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 5)]
    df = spark.createDataFrame([(d,) for d in days], "d date")
    window = ws.Sliding(ws.Count(2), ws.Time("2d"))
    result = ws.events(df, time="d").window(window).agg(ws.collect("d"))
    assert [(r["time"], r["collect_d"]) for r in result.orderBy("time").collect()] == [
        (dt.date(2024, 1, 2), days[:2]), (dt.date(2024, 1, 4), days[:2]),
        (dt.date(2024, 1, 6), days[1:])]


def test_float_time_with_delta_eviction_on_the_time_column(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0.5,), (1.0,), (2.5,)], "t double")
    window = ws.Sliding(ws.Delta("t", 1.0), partial=True)
    result = ws.events(df, time="t").window(window).agg(ws.collect("t"))
    assert [(r["time"], r["collect_t"]) for r in result.orderBy("time").collect()] == [
        (0.5, [0.5]), (1.0, [0.5, 1.0]), (2.5, [2.5])]


def test_partitioned_windows_are_independent(spark: SparkSession) -> None:
    # two keys interleaved in time (and a null key): each keeps its own last two
    df = spark.createDataFrame([("a", 1, 1), ("b", 2, 10), ("a", 3, 2), (None, 4, 7),
                                ("b", 5, 20), ("a", 6, 3), (None, 8, 8)],
                               "k string, t long, v long")
    result = ws.events(df, time="t", key="k").window(ws.Sliding(ws.Count(2))).agg(
        ws.collect("v"), ws.sum("v"))
    got = sorted((r["k"] or "", r["time"], r["collect_v"], r["sum_v"])
                 for r in result.collect())
    assert got == [("", 8, [7, 8], 15), ("a", 3, [1, 2], 3), ("a", 6, [2, 3], 5),
                   ("b", 5, [10, 20], 30)]
