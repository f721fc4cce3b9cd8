"""`Since` and `Trailing` on Spark against the brute-force oracle (tests/oracle_periods.py)
on random data: several keys (a null key among them) starting at different times, ties
in time, out-of-order rows, null and NaN values, predicate ticks with nulls, calendar
ticks in zones with DST changes and a +05:45 offset, pre-1970 and far-future times."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_periods import (
    calendar_ticks,
    since_calendar,
    since_predicate,
    trailing_calendar,
    trailing_predicate,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation
from wisp.spec.windows import CalendarTick
from wisp.windowed import run

pytestmark = pytest.mark.spark

SECOND = 1_000_000
HOUR = 3600 * SECOND
DAY = 24 * HOUR
COLUMNS = ["k", "ts", "v", "i", "s", "r", "seq"]
SCHEMA = "k string, t long, v double, i long, s string, r boolean, seq int"
FLOATS = ("sum_v", "mean_v", "variance_v", "stddev_v")
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.variance("v"), ws.collect("v"), ws.sum("i"),
    ws.max("s"), ws.first("s"),
    ws.udaf(lambda v, t: len(v), "i", returns="long").alias("len_i"),
]
SCALE = ws.udaf(lambda v, t: math.fsum(abs(x) for x in v if x == x), "v").alias("__scale")

values = st.one_of(st.none(), st.just(math.nan), st.floats(-1e9, 1e9, allow_nan=False),
                   st.sampled_from([0.0, -0.0, 1.5, 1e-3]))


def utc(text: str) -> int:
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


@st.composite
def event_rows(draw: st.DrawFn, base: int, spread: int, grain: int,
               ticks: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """Up to 24 rows; each key starts at its own offset; times on a grid of `grain` µs
    (so that ties happen) or, one time in three, exactly on one of `ticks`; then plus or
    minus 1 µs now and then."""
    starts = {k: draw(st.integers(0, spread // 2)) for k in ("a", "b", "", None)}
    rows = []
    for _ in range(draw(st.integers(0, 24))):
        k = draw(st.sampled_from(["a", "b", "", None]))
        offset = (starts[k] + draw(st.integers(0, spread // 2))) // grain * grain
        if ticks and draw(st.integers(0, 2)) == 0:
            offset = draw(st.sampled_from(ticks)) - base
        rows.append({
            "k": k,
            "ts": base + offset + draw(st.sampled_from([0, 0, 0, 1, -1])),
            "v": draw(values),
            "i": draw(st.one_of(st.none(), st.integers(-10**12, 10**12))),
            "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "é", ""]))),
            "r": draw(st.sampled_from([True, False, None])),
            "seq": draw(st.integers(0, 3)),
        })
    return rows


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [tuple(r[c] if c != "ts" else r["ts"] for c in COLUMNS) for r in rows]
    df = spark.createDataFrame(data, SCHEMA)
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "s", "r", "seq")


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected), (len(actual), len(expected))
    for got, want in zip(actual, expected, strict=True):
        scale = want.pop("__scale") or 0.0
        assert_rows_match([got], [want], scales=dict.fromkeys(FLOATS, scale + 1.0))


KEYS = [[], ["k"], ["k", "s"]]
PREDICATE_BASES = [0, utc("1900-01-01"), utc("9999-12-01"), -SECOND // 2]


@settings(max_examples=15)
@given(data=st.data(), base=st.sampled_from(PREDICATE_BASES), key=st.sampled_from(KEYS),
       use_order=st.booleans(), emit=st.sampled_from([None, "ticks", "events", "both"]),
       as_column=st.booleans())
def test_since_predicate_matches_oracle(spark: SparkSession, data: st.DataObject, base: int,
                                        key: list[str], use_order: bool, emit: str | None,
                                        as_column: bool) -> None:
    rows = data.draw(event_rows(base, 12 * SECOND, SECOND // 4))
    order = "seq" if use_order else None
    ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
    tick = F.col("r") if as_column else "r"
    actual = collect(ev.window(ws.Since(tick, emit=emit)).agg(*AGGREGATIONS),  # type: ignore[arg-type]
                     key)
    expected = since_predicate(rows, time="ts", key=key, order=order, columns=COLUMNS,
                               flag="r", emit=emit or "events", aggs=[*AGGREGATIONS, SCALE])
    check(actual, sort_output(expected, key))


@settings(max_examples=15)
@given(data=st.data(), base=st.sampled_from(PREDICATE_BASES), key=st.sampled_from(KEYS),
       use_order=st.booleans(), n=st.integers(1, 4), partial=st.booleans())
def test_trailing_predicate_matches_oracle(spark: SparkSession, data: st.DataObject,
                                           base: int, key: list[str], use_order: bool,
                                           n: int, partial: bool) -> None:
    rows = data.draw(event_rows(base, 12 * SECOND, SECOND // 4))
    order = "seq" if use_order else None
    ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
    actual = collect(ev.window(ws.Trailing(n, F.col("r"), partial=partial))
                     .agg(*AGGREGATIONS), key)
    expected = trailing_predicate(rows, time="ts", key=key, order=order, columns=COLUMNS,
                                  flag="r", n=n, partial=partial,
                                  aggs=[*AGGREGATIONS, SCALE])
    check(actual, sort_output(expected, key))


# (tick, base, spread, grain): spans the oracle can scan; bases on DST changes,
# a leap day, before 1970
CALENDARS: list[tuple[CalendarTick, int, int, int]] = [
    (ws.hourly("America/New_York"), utc("2024-11-03 03:00"), 8 * HOUR, 15 * 60 * SECOND),
    (ws.hourly("Asia/Kathmandu"), utc("2024-06-01"), 8 * HOUR, 15 * 60 * SECOND),
    (ws.daily("America/New_York"), utc("2024-03-08"), 6 * DAY, HOUR),
    (ws.daily("Europe/Berlin"), utc("2024-10-24"), 6 * DAY, HOUR),
    (ws.daily("America/New_York"), utc("1969-10-23"), 6 * DAY, HOUR),
    (ws.weekly("Europe/Berlin"), utc("2024-03-10"), 40 * DAY, DAY // 2),
    (ws.monthly("Asia/Kathmandu"), utc("2024-01-15"), 120 * DAY, DAY // 4),
    (ws.yearly(), utc("2010-06-01"), 8 * 365 * DAY, 30 * DAY),
    (ws.cron("30 2 * * *", tz="America/New_York"), utc("2024-03-09"), 3 * DAY, 30 * 60
     * SECOND),
    (ws.cron("0 */6 * * 4"), utc("2024-02-28"), 3 * DAY, HOUR),  # leap day: a Thursday
]


@functools.cache
def on_ticks(calendar: tuple[CalendarTick, int, int, int]) -> tuple[int, ...]:
    """The ticks over the calendar case's span (found by the oracle), to draw times on."""
    tick, base, spread, _ = calendar
    return tuple(calendar_ticks(tick, base, base + spread))


BEFORE = {"hourly": 8 * HOUR, "cron": 8 * DAY, "daily": 6 * DAY, "weekly": 40 * DAY,
          "monthly": 150 * DAY, "yearly": 6 * 366 * DAY}


@settings(max_examples=12)
@given(data=st.data(), calendar=st.sampled_from(CALENDARS), key=st.sampled_from(KEYS[:2]),
       emit=st.sampled_from([None, "ticks", "events", "both"]))
def test_since_calendar_matches_oracle(spark: SparkSession, data: st.DataObject,
                                       calendar: tuple[CalendarTick, int, int, int],
                                       key: list[str], emit: str | None) -> None:
    tick, base, spread, grain = calendar
    rows = data.draw(event_rows(base, spread, grain, on_ticks(calendar)))
    ev = ws.events(to_frame(spark, rows), time="ts", key=key)
    actual = collect(ev.window(ws.Since(tick, emit=emit)).agg(*AGGREGATIONS),  # type: ignore[arg-type]
                     key)
    expected = since_calendar(rows, time="ts", key=key, order=None, columns=COLUMNS,
                              tick=tick, emit=emit or "ticks", aggs=[*AGGREGATIONS, SCALE],
                              span_before=BEFORE[tick.unit])
    check(actual, sort_output(expected, key))


# ticks of one length in UTC (hourly, daily, weekly) emitted at the ticks, with
# order-free aggregations, run as one groupBy ("native-periods")
FIXED: list[tuple[CalendarTick, int, int, int]] = [
    (ws.hourly(), utc("1969-12-31 20:00"), 8 * HOUR, 15 * 60 * SECOND),
    (ws.daily(), utc("2024-02-26"), 6 * DAY, HOUR),
    (ws.weekly(), utc("1899-12-20"), 40 * DAY, DAY // 2),
    (ws.weekly(), utc("9998-10-01"), 40 * DAY, DAY // 2),
]
ORDER_FREE: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.variance("v"), ws.stddev("v"), ws.sum("i"), ws.mean("i"), ws.max("s"), ws.min("s"),
    ws.count("s"),
]


@settings(max_examples=12)
@given(data=st.data(), calendar=st.sampled_from(FIXED), key=st.sampled_from(KEYS))
def test_since_fixed_periods_by_groupby_match_oracle(
        spark: SparkSession, data: st.DataObject,
        calendar: tuple[CalendarTick, int, int, int], key: list[str]) -> None:
    tick, base, spread, grain = calendar
    rows = data.draw(event_rows(base, spread, grain, on_ticks(calendar)))
    ev = ws.events(to_frame(spark, rows), time="ts", key=key)
    result = ev.window(ws.Since(tick)).agg(*ORDER_FREE)
    assert "Strategy native-periods:" in ws.explain(result)
    expected = since_calendar(rows, time="ts", key=key, order=None, columns=COLUMNS,
                              tick=tick, emit="ticks", aggs=[*ORDER_FREE, SCALE],
                              span_before=BEFORE[tick.unit])
    check(collect(result, key), sort_output(expected, key))


@settings(max_examples=15)
@given(data=st.data(), calendar=st.sampled_from(CALENDARS), key=st.sampled_from(KEYS[:2]),
       n=st.integers(1, 3), partial=st.booleans())
def test_trailing_calendar_matches_oracle(spark: SparkSession, data: st.DataObject,
                                          calendar: tuple[CalendarTick, int, int, int],
                                          key: list[str], n: int, partial: bool) -> None:
    tick, base, spread, grain = calendar
    rows = data.draw(event_rows(base, spread, grain, on_ticks(calendar)))
    ev = ws.events(to_frame(spark, rows), time="ts", key=key)
    actual = collect(ev.window(ws.Trailing(n, tick, partial=partial)).agg(*AGGREGATIONS),
                     key)
    expected = trailing_calendar(rows, time="ts", key=key, order=None, columns=COLUMNS,
                                 tick=tick, n=n, partial=partial,
                                 aggs=[*AGGREGATIONS, SCALE], span_before=BEFORE[tick.unit])
    check(actual, sort_output(expected, key))


def test_keys_years_apart_build_their_own_tick_tables(spark: SparkSession) -> None:
    """Keys years apart and keys close together: each key gets its own periods (the
    kernel-level test in tests/kernels/test_period_frames.py puts such keys in one group)."""
    day = ws.daily("America/New_York")
    rows = []
    for seq, (k, when, v) in enumerate([
            ("a", "1969-10-25 03:00", 1.0), ("a", "1969-10-26 05:00", 2.0),
            ("a", "1969-10-26 23:00", 4.0), ("b", "2024-03-09 12:00", 8.0),
            ("b", "2024-03-10 04:00", 16.0), ("b", "2024-03-11 04:00", 32.0),
            ("c", "2024-03-10 01:00", 64.0), ("c", "2024-03-12 01:00", 128.0)]):
        rows.append({"k": k, "ts": utc(when), "v": v, "i": seq, "s": k, "r": False,
                     "seq": seq})
    ev = ws.events(to_frame(spark, rows), time="ts", key="k")
    since = collect(ev.window(ws.Since(day, emit="events")).agg(*AGGREGATIONS), ["k"])
    want = since_calendar(rows, time="ts", key=["k"], order=None, columns=COLUMNS, tick=day,
                          emit="events", aggs=[*AGGREGATIONS, SCALE],
                          span_before=BEFORE["daily"])
    check(since, sort_output(want, ["k"]))
    trailing = collect(ev.window(ws.Trailing(2, day)).agg(*AGGREGATIONS), ["k"])
    want = trailing_calendar(rows, time="ts", key=["k"], order=None, columns=COLUMNS,
                             tick=day, n=2, partial=False, aggs=[*AGGREGATIONS, SCALE],
                             span_before=BEFORE["daily"])
    check(trailing, sort_output(want, ["k"]))


def test_native_periods_on_date_time(spark: SparkSession) -> None:
    # weekly ticks at Monday midnights; a date is its midnight, so a Monday closes the
    # week before it. Key b's only event is on Thursday 1970-01-01; the newest event of
    # the input (1970-01-20, a Tuesday) is closed by the tick of 1970-01-26, so both
    # keys get every week up to it, empty weeks with count and sum 0.
    rows = [("a", dt.date(1969, 12, 29), 1.0), ("a", dt.date(1969, 12, 31), 2.0),
            ("a", dt.date(1970, 1, 5), 4.0), ("a", dt.date(1970, 1, 20), 8.0),
            ("b", dt.date(1970, 1, 1), 16.0)]
    df = spark.createDataFrame(rows, "k string, d date, v double")
    ev = ws.events(df, time="d", key="k")
    aggs = [ws.count(), ws.sum("v"), ws.mean("v")]
    result = ev.window(ws.Since(ws.weekly())).agg(*aggs)
    assert "Strategy native-periods:" in ws.explain(result)
    got = sorted(tuple(r) for r in result.collect())
    day = dt.date
    assert got == [
        ("a", day(1969, 12, 22), day(1969, 12, 29), day(1969, 12, 29), 1, 1.0, 1.0),
        ("a", day(1969, 12, 29), day(1970, 1, 5), day(1970, 1, 5), 2, 6.0, 3.0),
        ("a", day(1970, 1, 5), day(1970, 1, 12), day(1970, 1, 12), 0, 0.0, None),
        ("a", day(1970, 1, 12), day(1970, 1, 19), day(1970, 1, 19), 0, 0.0, None),
        ("a", day(1970, 1, 19), day(1970, 1, 26), day(1970, 1, 26), 1, 8.0, 8.0),
        ("b", day(1969, 12, 29), day(1970, 1, 5), day(1970, 1, 5), 1, 16.0, 16.0),
        ("b", day(1970, 1, 5), day(1970, 1, 12), day(1970, 1, 12), 0, 0.0, None),
        ("b", day(1970, 1, 12), day(1970, 1, 19), day(1970, 1, 19), 0, 0.0, None),
        ("b", day(1970, 1, 19), day(1970, 1, 26), day(1970, 1, 26), 0, 0.0, None),
    ]
    kernel = run(ev, ws.Since(ws.weekly()), aggs, strategy="arrow-ticks")
    assert sorted(tuple(r) for r in kernel.collect()) == got
    assert [(f.name, f.dataType) for f in result.schema] == [
        (f.name, f.dataType) for f in kernel.schema]


@pytest.mark.parametrize("strategy", ["native-periods", "arrow-ticks"])
def test_periods_refuse_times_outside_the_calendar(spark: SparkSession, strategy: str
                                                   ) -> None:
    early = dt.datetime(1, 6, 1, tzinfo=dt.UTC)
    df = spark.createDataFrame([(early, 1.0)], "ts timestamp, v double")
    result = run(ws.events(df, time="ts"), ws.Since(ws.daily()), [ws.sum("v")],
                 strategy=strategy)
    assert f"Strategy {strategy}:" in ws.explain(result)
    with pytest.raises(Exception, match=re.escape(
            "`time` must lie in the years 0002..9998 for calendar ticks, found "
            "0001-06-01 00:00:00")):
        result.collect()
