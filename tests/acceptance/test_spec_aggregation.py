"""The aggregation-and-windowing examples (cumulative sum, sliding(2) over an always-true
tick, since(yearly()), and a repeated aggregation), with expected outputs written by
hand from the document's tables; then calendar periods across DST changes, a leap day,
a +05:45 zone and events exactly on ticks, worked out by hand."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark
UTC = dt.UTC


def day(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def purchases(spark: SparkSession) -> ws.Events:
    rows = [("2012-02-23", 5), ("2012-05-10", 2), ("2018-11-03", 13), ("2019-10-26", 4)]
    df = spark.createDataFrame(rows, "d string, amount long").select(
        F.to_timestamp("d").alias("ts"), "amount", F.lit(True).alias("is_valid"))
    return ws.events(df, time="ts")


def table(result: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """(time as a UTC datetime, *columns) per row, in time order."""
    ordered = result.orderBy("time", "window_start").collect()
    return [(r["time"].astimezone(UTC), *(r[c] for c in columns)) for r in ordered]


def test_cumulative_sum(purchases: ws.Events) -> None:
    assert table(purchases.agg(ws.sum("amount")), "sum_amount") == [
        (day("2012-02-23"), 5), (day("2012-05-10"), 7), (day("2018-11-03"), 20),
        (day("2019-10-26"), 24)]


@pytest.mark.parametrize("as_column", [False, True], ids=["name", "column"])
def test_sliding_two_valid_purchases(purchases: ws.Events, as_column: bool) -> None:
    tick = F.col("is_valid") if as_column else "is_valid"
    result = purchases.window(ws.Trailing(2, tick)).agg(ws.sum("amount"))
    assert table(result, "sum_amount") == [
        (day("2012-02-23"), None), (day("2012-05-10"), 7), (day("2018-11-03"), 15),
        (day("2019-10-26"), 17)]


def test_since_yearly_emits_at_every_year_start(purchases: ws.Events) -> None:
    result = purchases.window(ws.Since(ws.yearly())).agg(ws.sum("amount"))
    assert table(result, "sum_amount") == [
        (day("2013-01-01"), 7), (day("2014-01-01"), 0), (day("2015-01-01"), 0),
        (day("2016-01-01"), 0), (day("2017-01-01"), 0), (day("2018-01-01"), 0),
        (day("2019-01-01"), 13), (day("2020-01-01"), 4)]


def test_since_yearly_window_bounds_are_the_year(purchases: ws.Events) -> None:
    result = purchases.window(ws.Since(ws.yearly())).agg(ws.count())
    first = result.orderBy("time").first()
    assert first is not None
    assert (first["window_start"].astimezone(UTC), first["window_end"].astimezone(UTC)) == \
        (day("2012-01-01"), day("2013-01-01"))


def test_sum_then_mean_is_two_calls(purchases: ws.Events) -> None:
    sums = purchases.agg(ws.sum("amount"))
    means = ws.events(sums, time="time").agg(ws.mean("sum_amount"))
    got = table(means, "mean_sum_amount")
    assert [t for t, _ in got] == [day("2012-02-23"), day("2012-05-10"), day("2018-11-03"),
                                   day("2019-10-26")]
    assert [v for _, v in got] == pytest.approx([5.0, 6.0, 32 / 3, 14.0], rel=1e-12)


def test_since_yearly_emit_both_and_events(purchases: ws.Events) -> None:
    both = purchases.window(ws.Since(ws.yearly(), emit="both")).agg(ws.sum("amount"))
    assert table(both, "sum_amount") == [
        (day("2012-02-23"), 5), (day("2012-05-10"), 7), (day("2013-01-01"), 7),
        (day("2014-01-01"), 0), (day("2015-01-01"), 0), (day("2016-01-01"), 0),
        (day("2017-01-01"), 0), (day("2018-01-01"), 0), (day("2018-11-03"), 13),
        (day("2019-01-01"), 13), (day("2019-10-26"), 4), (day("2020-01-01"), 4)]
    events = purchases.window(ws.Since(ws.yearly(), emit="events")).agg(ws.sum("amount"))
    assert table(events, "sum_amount") == [
        (day("2012-02-23"), 5), (day("2012-05-10"), 7), (day("2018-11-03"), 13),
        (day("2019-10-26"), 4)]


# ------------------------------------------------------------- time zones, by hand


def instants(spark: SparkSession, rows: list[tuple[str, str, int]]) -> ws.Events:
    """(key, UTC instant, value) rows."""
    df = spark.createDataFrame(rows, "k string, at string, v long").select(
        "k", F.to_timestamp("at").alias("ts"), "v")
    return ws.events(df, time="ts", key="k")


def test_new_york_daily_periods_across_spring_forward(spark: SparkSession) -> None:
    # NY midnights: 2024-03-09 05:00Z, 03-10 05:00Z, 03-11 04:00Z (a 23-hour day).
    # 03-11 03:30Z is 23:30 EDT on 03-10, inside the short day; 04:00Z is exactly
    # the 03-11 tick and belongs to the period it closes.
    ev = instants(spark, [("a", "2024-03-09 06:00:00", 1), ("a", "2024-03-11 03:30:00", 2),
                          ("a", "2024-03-11 04:00:00", 4), ("a", "2024-03-11 04:00:01", 8)])
    result = ev.window(ws.Since(ws.daily("America/New_York"))).agg(ws.sum("v"))
    rows = result.orderBy("time").collect()
    assert [(r["window_start"].astimezone(UTC), r["time"].astimezone(UTC), r["sum_v"])
            for r in rows] == [
        (day("2024-03-09 05:00"), day("2024-03-10 05:00"), 1),
        (day("2024-03-10 05:00"), day("2024-03-11 04:00"), 6),
        (day("2024-03-11 04:00"), day("2024-03-12 04:00"), 8)]


def test_new_york_daily_trailing_across_fall_back(spark: SparkSession) -> None:
    # NY midnights: 11-03 04:00Z, 11-04 05:00Z (a 25-hour day). Trailing(2, daily):
    # the row's day and the day before.
    ev = instants(spark, [("a", "2024-11-02 12:00:00", 1), ("a", "2024-11-03 04:30:00", 2),
                          ("a", "2024-11-04 04:30:00", 4), ("a", "2024-11-04 05:00:00", 8),
                          ("a", "2024-11-04 05:00:01", 16)])
    result = ev.window(ws.Trailing(2, ws.daily("America/New_York"))).agg(ws.sum("v"))
    assert table(result, "sum_v") == [
        (day("2024-11-02 12:00"), None),  # no tick of the key before it yet
        (day("2024-11-03 04:30"), 3),     # days 11-02 and 11-03 (local)
        (day("2024-11-04 04:30"), 7),     # 23:30 EST on 11-03: still the 25-hour day
        (day("2024-11-04 05:00"), 15),    # exactly on the 11-04 tick: closes 11-03
        (day("2024-11-04 05:00:01"), 30)]  # local 11-04: days 11-03 and 11-04


def test_berlin_monthly_and_leap_day(spark: SparkSession) -> None:
    # Berlin month starts: 02-01 = 01-31 23:00Z, 03-01 = 02-29 23:00Z, 04-01 =
    # 03-31 22:00Z (after the spring change). 2024-02-29 22:59Z is still February.
    ev = instants(spark, [("b", "2024-02-29 22:59:59", 1), ("b", "2024-02-29 23:00:00", 2),
                          ("b", "2024-03-31 22:30:00", 4)])
    result = ev.window(ws.Since(ws.monthly("Europe/Berlin"))).agg(ws.sum("v"), ws.count())
    assert table(result, "sum_v", "count") == [
        (day("2024-02-29 23:00"), 3, 2), (day("2024-03-31 22:00"), 0, 0),
        (day("2024-04-30 22:00"), 4, 1)]


def test_kathmandu_hourly_ticks_at_quarter_past(spark: SparkSession) -> None:
    ev = instants(spark, [("k", "2024-06-01 00:10:00", 1), ("k", "2024-06-01 00:15:00", 2),
                          ("k", "2024-06-01 01:20:00", 4)])
    result = ev.window(ws.Since(ws.hourly("Asia/Kathmandu"))).agg(ws.sum("v"))
    assert table(result, "sum_v") == [
        (day("2024-06-01 00:15"), 3), (day("2024-06-01 01:15"), 0),
        (day("2024-06-01 02:15"), 4)]


def test_keys_get_ticks_from_their_first_event(spark: SparkSession) -> None:
    # The newest event of the whole input (key y, 2021-06-01) bounds every key's ticks;
    # key x starts in 2019, key y in 2021.
    ev = instants(spark, [("x", "2019-03-01 00:00:00", 1), ("y", "2021-06-01 00:00:00", 2),
                          ("y", "2021-01-01 00:00:00", 4)])
    result = ev.window(ws.Since(ws.yearly())).agg(ws.sum("v"))
    rows = result.orderBy("k", "time").collect()
    assert [(r["k"], r["time"].astimezone(UTC), r["sum_v"]) for r in rows] == [
        ("x", day("2020-01-01"), 1), ("x", day("2021-01-01"), 0), ("x", day("2022-01-01"), 0),
        ("y", day("2021-01-01"), 4), ("y", day("2022-01-01"), 2)]


def test_cron_ticks_in_new_york(spark: SparkSession) -> None:
    # "every day at 02:30": on 2024-03-10 02:30 does not exist in New York, the tick is
    # at the jump (03:00 EDT = 07:00Z).
    ev = instants(spark, [("c", "2024-03-09 08:00:00", 1), ("c", "2024-03-10 06:59:59", 2),
                          ("c", "2024-03-10 07:00:01", 4)])
    tick = ws.cron("30 2 * * *", tz="America/New_York")
    result = ev.window(ws.Since(tick)).agg(ws.sum("v"))
    assert table(result, "sum_v") == [(day("2024-03-10 07:00"), 3),
                                      (day("2024-03-11 06:30"), 4)]


def test_since_predicate_with_null_does_not_reset(spark: SparkSession) -> None:
    rows = [(1, 1, None), (2, 2, True), (3, 4, None), (4, 8, False), (5, 16, True),
            (6, 32, None)]
    df = spark.createDataFrame(rows, "t long, v long, reset boolean")
    ev = ws.events(df, time="t")
    result = ev.window(ws.Since("reset")).agg(ws.sum("v"))
    assert [(r["time"], r["sum_v"]) for r in result.orderBy("time").collect()] == [
        (1, 1), (2, 3), (3, 4), (4, 12), (5, 28), (6, 32)]
    ticks = ev.window(ws.Since(F.col("reset"), emit="ticks")).agg(ws.sum("v"))
    assert [(r["window_start"], r["time"], r["sum_v"])
            for r in ticks.orderBy("time").collect()] == [(1, 2, 3), (3, 5, 28)]


def test_date_time_column_is_midnight_and_closes_the_previous_month(
        spark: SparkSession) -> None:
    # A date is its midnight: 2024-02-01 lies exactly on the February tick, so it closes
    # January's period (events exactly on a tick belong to the period it closes).
    rows = [(dt.date(2024, 1, 31), 1), (dt.date(2024, 2, 1), 2), (dt.date(2024, 2, 29), 4),
            (dt.date(2024, 3, 2), 8)]
    ev = ws.events(spark.createDataFrame(rows, "d date, v long"), time="d")
    result = ev.window(ws.Since(ws.monthly())).agg(ws.sum("v"))
    assert [(r["window_start"], r["time"], r["sum_v"])
            for r in result.orderBy("time").collect()] == [
        (dt.date(2024, 1, 1), dt.date(2024, 2, 1), 3),
        (dt.date(2024, 2, 1), dt.date(2024, 3, 1), 4),
        (dt.date(2024, 3, 1), dt.date(2024, 4, 1), 8)]
