"""`Tumbling`/`Hopping` of calendar size on Spark against the brute-force oracle
(tests/oracle_calendar.py, boundaries from Python's zoneinfo alone) on random point and
interval events, on every strategy the planner may pick: events around daylight-saving
changes (Europe/Berlin, Lord Howe's half hour, Sao Paulo's and Santiago's skipped
midnights, the day Apia skipped), month ends (January 31st, February 29th), before 1970
and far in the future; then hand-written tables and bad input by its text."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_calendar import calendar_windows, first_instant
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispInputError, WispUnsupportedError
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

HOUR = 3_600_000_000
MINUTE = 60_000_000
DAY = 24 * HOUR
# (zone, local midnights near which the events lie)
PLACES: list[tuple[str, list[dt.datetime]]] = [
    ("UTC", [dt.datetime(2024, 2, 29), dt.datetime(1960, 3, 1), dt.datetime(1900, 1, 31),
             dt.datetime(9000, 12, 31), dt.datetime(2400, 2, 29)]),
    ("Europe/Berlin", [dt.datetime(2024, 3, 31), dt.datetime(2024, 10, 27),
                       dt.datetime(1960, 2, 29), dt.datetime(2024, 1, 31),
                       dt.datetime(2100, 3, 28)]),
    ("Australia/Lord_Howe", [dt.datetime(2024, 4, 7), dt.datetime(2024, 10, 6)]),
    ("America/Sao_Paulo", [dt.datetime(2018, 11, 4), dt.datetime(2018, 2, 17)]),
    ("America/Santiago", [dt.datetime(2024, 9, 8), dt.datetime(2024, 4, 7)]),
    ("Pacific/Apia", [dt.datetime(2011, 12, 30)]),
]
SCHEMA = "k string, t long, e long, v double, i long, s string"
COLUMNS = ["k", "ts", "te", "v", "i", "s"]
MONTHS = {"1mo": 1, "2mo": 2, "3mo": 3, "1y": 12}
DAYS = {"1d": 1, "2d": 2, "3d": 3}
MERGEABLE: list[Aggregation] = [ws.count(), ws.count("v"), ws.sum("i"), ws.min("i"),
                                ws.max("s"), ws.mean("v")]
ORDERED: list[Aggregation] = [*MERGEABLE, ws.first("v"), ws.last("s"), ws.collect("i")]


@st.composite
def calendar_case(draw: st.DrawFn, days: bool) -> tuple[str, list[dict[str, Any]]]:
    tz, bases = draw(st.sampled_from(PLACES))
    base = first_instant(draw(st.sampled_from(bases)), tz)
    step, reach = (30 * MINUTE, 150) if days else (12 * HOUR, 140)
    rows = []
    for _ in range(draw(st.integers(1, 10))):
        t = base + draw(st.integers(-reach, reach)) * step + draw(
            st.sampled_from([0, 0, 1, -1]))
        length = draw(st.sampled_from([0, 1, step, 3 * step, 40 * step]))
        rows.append({"k": draw(st.sampled_from(["a", "b", None])), "ts": t,
                     "te": t + length,
                     "v": float(draw(st.integers(-4, 4))) if draw(st.booleans()) else None,
                     "i": draw(st.one_of(st.none(), st.integers(-9, 9))),
                     "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", ""])))})
    return tz, rows


def to_events(spark: SparkSession, rows: list[dict[str, Any]], interval: bool) -> ws.Events:
    data = [(r["k"], r["ts"], r["te"], r["v"], r["i"], r["s"]) for r in rows]
    df = spark.createDataFrame(data, SCHEMA).select(
        "k", F.timestamp_micros("t").alias("ts"), F.timestamp_micros("e").alias("te"),
        "v", "i", "s")
    if not interval:
        df = df.drop("te")
    return ws.events(df, time="ts", end="te" if interval else None, key="k")


def collect(result: DataFrame) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], ["k"])


def expected(rows: list[dict[str, Any]], interval: bool, kind: str, tz: str, size: int,
             hop: int, align: int, aggs: list[Aggregation]) -> list[dict[str, Any]]:
    columns = COLUMNS if interval else [c for c in COLUMNS if c != "te"]
    return sort_output(calendar_windows(
        rows, time="ts", end="te" if interval else None, key=["k"], order=None,
        columns=columns, kind=kind, tz=tz, size=size, hop=hop, align=align, aggs=aggs),
        ["k"])


STRATEGIES = [None, "panes", "arrow-intervals"]


@settings(max_examples=8)
@given(case=calendar_case(days=False), size=st.sampled_from(sorted(MONTHS)),
       interval=st.booleans(), strategy=st.sampled_from(STRATEGIES),
       align=st.sampled_from([None, dt.date(1969, 11, 1)]))
def test_month_tumbling_matches_oracle(spark: SparkSession,
                                       case: tuple[str, list[dict[str, Any]]], size: str,
                                       interval: bool, strategy: str | None,
                                       align: dt.date | None) -> None:
    tz, rows = case
    aggs = ORDERED if strategy == "arrow-intervals" else MERGEABLE
    ev = to_events(spark, rows, interval)
    window = ws.Tumbling(size, align=align, tz=None if tz == "UTC" else tz)
    actual = collect(ev.window(window).agg(*aggs, strategy=strategy))
    assert_rows_match(actual, expected(rows, interval, "month", tz, MONTHS[size],
                                       MONTHS[size], 0 if align is None else -2, aggs))


@settings(max_examples=8)
@given(case=calendar_case(days=True), size=st.sampled_from(sorted(DAYS)),
       interval=st.booleans(), strategy=st.sampled_from(STRATEGIES))
def test_local_day_tumbling_matches_oracle(spark: SparkSession,
                                           case: tuple[str, list[dict[str, Any]]],
                                           size: str, interval: bool,
                                           strategy: str | None) -> None:
    tz, rows = case
    aggs = ORDERED if strategy == "arrow-intervals" else MERGEABLE
    ev = to_events(spark, rows, interval)
    actual = collect(ev.window(ws.Tumbling(size, tz=tz)).agg(*aggs, strategy=strategy))
    assert_rows_match(actual, expected(rows, interval, "day", tz, DAYS[size], DAYS[size],
                                       0, aggs))


@settings(max_examples=8)
@given(case=calendar_case(days=False), size=st.sampled_from(sorted(MONTHS)),
       hop=st.sampled_from(["1mo", "2mo", "3mo"]), interval=st.booleans(),
       strategy=st.sampled_from([None, "arrow-intervals"]))
def test_month_hopping_matches_oracle(spark: SparkSession,
                                      case: tuple[str, list[dict[str, Any]]], size: str,
                                      hop: str, interval: bool, strategy: str | None) -> None:
    tz, rows = case
    aggs = ORDERED if strategy == "arrow-intervals" else MERGEABLE
    ev = to_events(spark, rows, interval)
    actual = collect(ev.window(ws.Hopping(size, hop, tz=tz)).agg(*aggs, strategy=strategy))
    assert_rows_match(actual, expected(rows, interval, "month", tz, MONTHS[size],
                                       MONTHS[hop], 0, aggs))


@settings(max_examples=8)
@given(case=calendar_case(days=True), size=st.sampled_from(["2d", "3d"]),
       interval=st.booleans())
def test_local_day_hopping_matches_oracle(spark: SparkSession,
                                          case: tuple[str, list[dict[str, Any]]], size: str,
                                          interval: bool) -> None:
    tz, rows = case
    ev = to_events(spark, rows, interval)
    actual = collect(ev.window(ws.Hopping(size, "1d", tz=tz)).agg(*MERGEABLE))
    assert_rows_match(actual, expected(rows, interval, "day", tz, DAYS[size], 1, 0,
                                       MERGEABLE))


# ------------------------------------------------------------------ hand-written


def utc(*parts: int) -> dt.datetime:
    return dt.datetime(*parts, tzinfo=dt.UTC)  # type: ignore[misc]


def test_berlin_days_last_23_and_25_hours(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [(utc(2024, 3, 30, 23, 30), 1), (utc(2024, 3, 31, 21, 59), 2),
         (utc(2024, 3, 31, 22, 0), 3), (utc(2024, 10, 26, 22, 0), 4),
         (utc(2024, 10, 27, 22, 59), 5)], "ts timestamp, v long")
    out = ws.events(df, time="ts").window(ws.Tumbling("1d", tz="Europe/Berlin")).agg(
        ws.sum("v"))
    got = [(r.window_start, r.window_end, r.time, r.sum_v) for r in out.orderBy("time").collect()]
    naive = dt.datetime
    assert got == [
        (naive(2024, 3, 30, 23), naive(2024, 3, 31, 22), naive(2024, 3, 31, 22), 3),  # 23 h
        (naive(2024, 3, 31, 22), naive(2024, 4, 1, 22), naive(2024, 4, 1, 22), 3),
        (naive(2024, 10, 26, 22), naive(2024, 10, 27, 23), naive(2024, 10, 27, 23), 9),  # 25 h
    ]


def test_months_and_quarters_of_a_date_column(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [(dt.date(2024, 1, 31), 1), (dt.date(2024, 2, 1), 2), (dt.date(2024, 2, 29), 4),
         (dt.date(2024, 3, 1), 8), (dt.date(1969, 12, 31), 16)], "d date, v long")
    ev = ws.events(df, time="d")
    months = ev.window(ws.Tumbling("1mo")).agg(ws.sum("v")).orderBy("time").collect()
    assert [(r.window_start, r.window_end, r.sum_v) for r in months] == [
        (dt.date(1969, 12, 1), dt.date(1970, 1, 1), 16),
        (dt.date(2024, 1, 1), dt.date(2024, 2, 1), 1),
        (dt.date(2024, 2, 1), dt.date(2024, 3, 1), 6),
        (dt.date(2024, 3, 1), dt.date(2024, 4, 1), 8)]
    quarters = ev.window(ws.Hopping("3mo", "1mo", align=dt.date(2024, 2, 1))).agg(
        ws.sum("v")).orderBy("time").collect()
    assert [(r.window_start, r.sum_v) for r in quarters][-5:] == [
        (dt.date(2023, 11, 1), 1), (dt.date(2023, 12, 1), 7), (dt.date(2024, 1, 1), 15),
        (dt.date(2024, 2, 1), 14), (dt.date(2024, 3, 1), 8)]


def test_years_of_a_timestamp_ntz_column(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.datetime(2023, 12, 31, 23, 59, 59, 999_999), 1),
                                (dt.datetime(2024, 1, 1), 2)], "t timestamp_ntz, v long")
    out = ws.events(df, time="t").window(ws.Tumbling("1y")).agg(ws.sum("v"))
    assert [(r.window_start, r.window_end, r.sum_v) for r in out.orderBy("time").collect()] \
        == [(dt.datetime(2023, 1, 1), dt.datetime(2024, 1, 1), 1),
            (dt.datetime(2024, 1, 1), dt.datetime(2025, 1, 1), 2)]


def test_open_ended_event_gives_one_row_to_the_end_of_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(utc(2024, 1, 15), None, 1), (utc(2024, 2, 10),
                                                              utc(2024, 3, 5), 2)],
                               "ts timestamp, te timestamp, v long")
    out = ws.events(df, time="ts", end="te").window(ws.Tumbling("1mo")).agg(ws.sum("v"))
    got = [(r.window_start, r.window_end, r.time, r.sum_v)
           for r in out.orderBy("window_start").collect()]
    naive = dt.datetime
    assert got == [(naive(2024, 1, 1), naive(2024, 2, 1), naive(2024, 2, 1), 1),
                   (naive(2024, 2, 1), naive(2024, 3, 1), naive(2024, 3, 1), 3),
                   (naive(2024, 3, 1), naive(2024, 4, 1), naive(2024, 4, 1), 3),
                   (naive(2024, 4, 1), None, naive(2024, 5, 1), 1)]


# -------------------------------------------------------------------- bad input


def test_calendar_size_refuses_numeric_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, 1)], "t long, v long")
    with pytest.raises(WispInputError, match=r"^`size` must be a number \(calendar sizes "
                       r"need a timestamp or date time column; integer time column 't' is "
                       r"numeric\), found '1mo'$"):
        ws.events(df, time="t").window(ws.Tumbling("1mo")).agg(ws.count())


def test_zone_refused_for_a_date_column(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.date(2024, 1, 1), 1)], "d date, v long")
    with pytest.raises(WispInputError, match=r"^`tz` must be 'UTC' or None for date time "
                       r"column 'd' \(its wall-clock times carry no zone\), found "
                       r"'Europe/Berlin'$"):
        ws.events(df, time="d").window(ws.Tumbling("1mo", tz="Europe/Berlin")).agg(ws.count())


def test_calendar_size_refuses_time_reading_aggregations(spark: SparkSession) -> None:
    df = spark.createDataFrame([(utc(2024, 1, 1), 1.0)], "ts timestamp, v double")
    span = ws.udaf(lambda v, t: 0.0, "v").alias("span")
    with pytest.raises(WispUnsupportedError, match=r"^`window` must be of duration size "
                       r"for span \(it reads event times"):
        ws.events(df, time="ts").window(ws.Tumbling("1mo")).agg(span)


def test_calendar_size_refused_on_a_stream(spark: SparkSession) -> None:
    stream = spark.readStream.format("rate").load()
    ev = ws.events(stream, time="timestamp", lateness="1s")
    with pytest.raises(WispUnsupportedError, match=r"^`window` must be a Tumbling of "
                       r"duration size on a stream \(calendar sizes run on batch tables "
                       r"only\), found Tumbling\(size='1mo'"):
        ev.window(ws.Tumbling("1mo")).agg(ws.count())


def test_month_hopping_changes(spark: SparkSession) -> None:
    """output='changes': the result of the window of months [s, s + size) holds from
    its end to one hop later; equal results that touch merge."""
    df = spark.createDataFrame([(utc(2024, 1, 15), 1), (utc(2024, 3, 10), 2)],
                               "ts timestamp, v long")
    out = ws.events(df, time="ts").window(ws.Hopping("2mo", "1mo", output="changes")).agg(
        ws.sum("v"))
    got = [(r.window_start, r.window_end, r.time, r.sum_v)
           for r in out.orderBy("window_start").collect()]
    naive = dt.datetime
    # windows Dec-Jan and Jan-Feb hold 1 (valid Feb 1 .. Apr 1), Feb-Mar and Mar-Apr
    # hold 2 (valid Apr 1 .. Jun 1)
    assert got == [(naive(2024, 2, 1), naive(2024, 4, 1), naive(2024, 2, 1), 1),
                   (naive(2024, 4, 1), naive(2024, 6, 1), naive(2024, 4, 1), 2)]


def test_null_times_dropped_on_purpose_are_counted(spark: SparkSession) -> None:
    df = spark.createDataFrame([(utc(2024, 1, 15), 1), (None, 2), (utc(2024, 2, 1), 4)],
                               "ts timestamp, v long")
    result = ws.events(df, time="ts", on_null_time="drop").window(
        ws.Tumbling("1mo", tz="Europe/Berlin")).agg(ws.sum("v"))
    assert sorted(r.sum_v for r in result.collect()) == [1, 4]
    assert ws.report(result) == {"rows_in": 3, "rejected_null_time": 1}


def test_a_time_outside_the_calendar_years_fails_the_query(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.datetime(1, 6, 1, tzinfo=dt.UTC), 1)],
                               "ts timestamp, v long")
    result = ws.events(df, time="ts").window(ws.Tumbling("1y")).agg(ws.sum("v"))
    with pytest.raises(Exception) as failure:
        result.collect()
    found = ws.wisp_error(failure.value)
    assert isinstance(found, WispInputError)
    assert str(found).startswith("`time` must lie in the years 0002..9998 for calendar "
                                 "ticks, found 0001-06-01")
