"""Hopping, tumbling, snapshot and count-by-start-time windows on Spark against the
brute-force oracle (tests/oracle_intervals.py) on random interval and point events:
open ends, events spanning many windows, events exactly on window boundaries, times
and alignments before 1970 and far in the future, several keys including a null key."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_intervals import count_by_start_time, hopping, snapshot
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation
from wisp.windowed import run

pytestmark = pytest.mark.spark

SECOND = 1_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]
COLUMNS = ["k", "ts", "te", "v", "i", "s", "seq"]
SCHEMA = "k string, t long, e long, v double, i long, s string, seq int"
FLOATS = ("sum_v", "mean_v", "time_weighted_mean_v", "stddev_v")

# a lifetimes udaf showing what it receives: the clipped starts, then the ends (a lambda:
# pickled by value, so the Python workers need not import this module)
LIFETIMES = ws.udaf(lambda values, starts, ends: [int(x) for x in starts]
                    + [int(x) for x in ends], "i", returns="array<long>",
                    lifetimes=True).alias("lifetimes_i")

AGGS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("s"),
    ws.first("v"), ws.last("s"), ws.collect("i"), ws.sum("i"), ws.time_weighted_mean("v"),
    ws.time_weighted_mean("i"), ws.stddev("v"), ws.variance("i"), ws.min("i"), ws.max("v"),
    ws.mean("i"), ws.last("v"), ws.first("s"), ws.min("s"),
    ws.udaf(lambda v, t: int(max(t) - min(t)) if len(t) else None, "v",
            returns="long").alias("span_v"),
    LIFETIMES,
]
EXACT: list[Aggregation] = [ws.count(), ws.sum("i"), ws.max("s"), ws.first("v"),
                            ws.collect("i"), ws.time_weighted_mean("i"), LIFETIMES]

UNIT = SECOND // 4  # the grid of the random times (250 ms)


@st.composite
def event_rows(draw: st.DrawFn, small: bool = False) -> list[dict[str, Any]]:
    base = draw(st.sampled_from(BASES))
    rows = []
    for _ in range(draw(st.integers(0, 12))):
        t = base + draw(st.integers(-10, 10)) * UNIT + draw(st.sampled_from([0, 0, 0, 1]))
        shape = draw(st.sampled_from(["open", "short", "long", "zero"]))
        e = {"open": None, "zero": t,
             "short": t + draw(st.integers(1, 3)) * UNIT,
             "long": t + draw(st.integers(4, 60)) * UNIT}[shape]
        rows.append({
            "k": draw(st.sampled_from(["a", "b", None])), "ts": t, "te": e,
            "v": float(draw(st.integers(-4, 4))) if small else draw(st.one_of(
                st.none(), st.just(math.nan), st.floats(-1e9, 1e9, allow_nan=False))),
            "i": draw(st.one_of(st.none(), st.integers(-9, 9))),
            "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", ""]))),
            "seq": draw(st.integers(0, 3)),
        })
    return rows


def to_events(spark: SparkSession, rows: list[dict[str, Any]], interval: bool,
              key: list[str]) -> ws.Events:
    data = [(r["k"], r["ts"], r["te"], r["v"], r["i"], r["s"], r["seq"]) for r in rows]
    df = spark.createDataFrame(data, SCHEMA).select(
        "k", F.timestamp_micros("t").alias("ts"), F.timestamp_micros("e").alias("te"),
        "v", "i", "s", "seq")
    if not interval:
        df = df.drop("te")
    return ws.events(df, time="ts", end="te" if interval else None, key=key)


def columns(interval: bool) -> list[str]:
    return COLUMNS if interval else [c for c in COLUMNS if c != "te"]


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]],
          rows: list[dict[str, Any]]) -> None:
    scale = math.fsum(abs(r["v"]) for r in rows if r["v"] is not None and r["v"] == r["v"])
    assert_rows_match(actual, expected, scales=dict.fromkeys(FLOATS, max(scale, 1.0)))


def micros(text: str) -> int:
    """A duration of the test grid in microseconds, written out by hand."""
    return {"250ms": UNIT, "500ms": 2 * UNIT, "750ms": 3 * UNIT, "1s": 4 * UNIT,
            "1250ms": 5 * UNIT, "2s": 8 * UNIT}[text]


DURATIONS = ["250ms", "500ms", "750ms", "1s", "1250ms", "2s"]
KEYS = [[], ["k"]]
ALIGNS = [None, dt.datetime(1969, 12, 31, 23, 59, 59, 250_000, tzinfo=dt.UTC),
          dt.datetime(1900, 1, 1, 0, 0, 0, 500_000, tzinfo=dt.UTC)]


def align_micros(align: dt.datetime | None) -> int:
    if align is None:
        return 0
    delta = align - EPOCH
    return (delta.days * 86_400 + delta.seconds) * SECOND + delta.microseconds


@settings(max_examples=10)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), hop=st.sampled_from(DURATIONS),
       align=st.sampled_from(ALIGNS), key=st.sampled_from(KEYS), interval=st.booleans())
def test_hopping_windows_match_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                      size: str, hop: str, align: dt.datetime | None,
                                      key: list[str], interval: bool) -> None:
    ev = to_events(spark, rows, interval, key)
    actual = collect(ev.window(ws.Hopping(size, hop, align=align)).agg(*AGGS), key)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key,
                       order=None, columns=columns(interval), size=micros(size), hop=micros(hop),
                       align=align_micros(align), output="windows", aggs=AGGS)
    check(actual, sort_output(expected, key), rows)


@settings(max_examples=10)
@given(rows=event_rows(small=True), size=st.sampled_from(DURATIONS),
       hop=st.sampled_from(DURATIONS), align=st.sampled_from(ALIGNS),
       key=st.sampled_from(KEYS), interval=st.booleans())
def test_hopping_changes_match_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                      size: str, hop: str, align: dt.datetime | None,
                                      key: list[str], interval: bool) -> None:
    if micros(hop) > micros(size):
        size, hop = hop, size
    ev = to_events(spark, rows, interval, key)
    window = ws.Hopping(size, hop, align=align, output="changes")
    actual = collect(ev.window(window).agg(*EXACT), key)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key,
                       order=None, columns=columns(interval), size=micros(size), hop=micros(hop),
                       align=align_micros(align), output="changes", aggs=EXACT)
    check(actual, sort_output(expected, key), rows)


@settings(max_examples=10)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), align=st.sampled_from(ALIGNS),
       key=st.sampled_from(KEYS), interval=st.booleans())
def test_tumbling_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]], size: str,
                                 align: dt.datetime | None, key: list[str],
                                 interval: bool) -> None:
    ev = to_events(spark, rows, interval, key)
    actual = collect(ev.window(ws.Tumbling(size, align=align)).agg(*AGGS), key)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key,
                       order=None, columns=columns(interval), size=micros(size), hop=micros(size),
                       align=align_micros(align), output="windows", aggs=AGGS)
    check(actual, sort_output(expected, key), rows)


BUCKET_AGGS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.max("s"), ws.min("s"), ws.sum("i"), ws.mean("i"), ws.min("i"), ws.variance("i"),
    ws.stddev("v"), ws.count("s")]


@settings(max_examples=10)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), align=st.sampled_from(ALIGNS),
       key=st.sampled_from(KEYS))
def test_tumbling_point_events_by_groupby_match_oracle(
        spark: SparkSession, rows: list[dict[str, Any]], size: str,
        align: dt.datetime | None, key: list[str]) -> None:
    ev = to_events(spark, rows, False, key)
    result = ev.window(ws.Tumbling(size, align=align)).agg(*BUCKET_AGGS)
    assert "native-buckets" in ws.explain(result)
    expected = hopping(rows, time="ts", end=None, key=key, order=None,
                       columns=columns(False), size=micros(size), hop=micros(size),
                       align=align_micros(align), output="windows", aggs=BUCKET_AGGS)
    scale = math.fsum(abs(r["v"]) for r in rows if r["v"] is not None and r["v"] == r["v"])
    assert_rows_match(collect(result, key), sort_output(expected, key),
                      scales=dict.fromkeys(("sum_v", "mean_v", "stddev_v"), max(scale, 1.0)))


PANE_AGGS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.max("s"), ws.min("s"), ws.sum("i"), ws.mean("i"), ws.min("i"), ws.max("i"),
    ws.count("s")]


@settings(max_examples=12)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), hop=st.sampled_from(DURATIONS),
       align=st.sampled_from(ALIGNS), key=st.sampled_from(KEYS),
       output=st.sampled_from(["windows", "changes"]), interval=st.booleans())
def test_hopping_by_panes_match_oracle(
        spark: SparkSession, rows: list[dict[str, Any]], size: str, hop: str,
        align: dt.datetime | None, key: list[str], output: str, interval: bool) -> None:
    # panes of gcd(size, hop) (250 ms or more) hold several of the random events, some
    # exactly on pane boundaries, some 1 µs after them; interval events (open, zero-length,
    # short and long ones) share a pane when their starts and last ticks share cells of
    # the hop grid
    if output == "changes" and micros(hop) > micros(size):
        size, hop = hop, size
    ev = to_events(spark, rows, interval, key)
    result = ev.window(ws.Hopping(size, hop, align=align, output=output)).agg(*PANE_AGGS)
    assert "Strategy panes" in ws.explain(result)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key, order=None,
                       columns=columns(interval), size=micros(size), hop=micros(hop),
                       align=align_micros(align), output=output, aggs=PANE_AGGS)
    check(collect(result, key), sort_output(expected, key), rows)


def test_panes_sum_integers_exactly(spark: SparkSession) -> None:
    # one pane [0, 1 s) holds 2^62, 2^62 and -2^62: a long running sum would overflow on
    # the way to 2^62; the pane [1 s, 2 s) holds 2^62 and 2^62, whose sum leaves 64 bits
    big = 1 << 62
    df = spark.createDataFrame([(0, big), (1, big), (2, -big)], "t long, i long").select(
        F.timestamp_micros("t").alias("ts"), "i")
    ev = ws.events(df, time="ts")
    result = ev.window(ws.Hopping("2s", "1s")).agg(ws.sum("i"), ws.mean("i"), ws.count())
    assert "Strategy panes" in ws.explain(result)
    assert [tuple(r) for r in result.select(F.unix_seconds("window_start"), "sum_i",
                                            "mean_i", "count")
            .orderBy("window_start").collect()] == [
        (-1, big, big / 3, 3), (0, big, big / 3, 3)]
    overflowing = spark.createDataFrame([(0, big), (SECOND, big), (SECOND + 1, big)],
                                        "t long, i long").select(
        F.timestamp_micros("t").alias("ts"), "i")
    with pytest.raises(Exception, match=re.escape(
            "wisp: sum(i) overflows a long (64-bit) result")):
        ws.events(overflowing, time="ts").window(ws.Hopping("2s", "1s")).agg(
            ws.sum("i")).collect()


@pytest.mark.parametrize("kind", ["integer", "date", "timestamp", "timestamp_ntz"])
def test_hopping_point_events_on_every_time_kind(spark: SparkSession, kind: str) -> None:
    # times -7, -3, -3, -1, 0, 4, 5 (days for date time, seconds for timestamps), windows of
    # 4 every 2 aligned at 1 (panes of 2: [-7, -5), [-3, -1), [-1, 1), [3, 5), [5, 7))
    cast = {"integer": "t", "date": "date_from_unix_date(t)",
            "timestamp": "timestamp_seconds(t)",
            "timestamp_ntz": "CAST(timestamp_seconds(t) AS TIMESTAMP_NTZ)"}[kind]
    df = spark.createDataFrame([(-7, 1.0), (-3, 2.0), (-3, None), (-1, 4.0), (0, 8.0),
                                (4, 16.0), (5, 32.0)], "t int, v double").selectExpr(
        f"{cast} AS t", "v")
    origin = dt.datetime(1970, 1, 1, 0, 0, 1)
    size, hop, align = {"integer": (4, 2, 1), "date": ("4d", "2d", dt.date(1970, 1, 2)),
                        "timestamp": ("4s", "2s", origin.replace(tzinfo=dt.UTC)),
                        "timestamp_ntz": ("4s", "2s", origin)}[kind]
    ev = ws.events(df, time="t")
    result = ev.window(ws.Hopping(size, hop, align=align)).agg(
        ws.count(), ws.sum("v"), ws.mean("v"), ws.max("v"))
    # timestamp_ntz time runs as timestamp time does in a UTC session (the tests' own)
    assert "Strategy panes:" in ws.explain(result)
    ticks = {"integer": "window_start", "date": "unix_date(window_start)",
             "timestamp": "unix_seconds(window_start)",
             "timestamp_ntz": "unix_seconds(CAST(window_start AS TIMESTAMP))"}[kind]
    got = [tuple(r) for r in result.selectExpr(f"{ticks} AS a", "count", "sum_v", "mean_v",
                                               "max_v").orderBy("a").collect()]
    assert got == [(-9, 1, 1.0, 1.0, 1.0), (-7, 1, 1.0, 1.0, 1.0), (-5, 2, 2.0, 2.0, 2.0),
                   (-3, 4, 14.0, 14.0 / 3, 8.0), (-1, 2, 12.0, 6.0, 8.0),
                   (1, 1, 16.0, 16.0, 16.0), (3, 2, 48.0, 24.0, 32.0),
                   (5, 1, 32.0, 32.0, 32.0)]
    assert result.schema["window_start"].dataType == df.schema["t"].dataType or \
        kind == "integer"
    # the interval kernel, forced, gives the same rows
    kernel = run(ev, ws.Hopping(size, hop, align=align),
                 [ws.count(), ws.sum("v"), ws.mean("v"), ws.max("v")],
                 strategy="arrow-intervals")
    assert sorted(map(tuple, kernel.collect())) == sorted(map(tuple, result.collect()))


@settings(max_examples=10)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), align=st.sampled_from(ALIGNS),
       key=st.sampled_from(KEYS), interval=st.booleans())
def test_tumbling_by_panes_match_oracle(
        spark: SparkSession, rows: list[dict[str, Any]], size: str,
        align: dt.datetime | None, key: list[str], interval: bool) -> None:
    # interval events run as panes by default, point events when asked for
    ev = to_events(spark, rows, interval, key)
    result = run(ev, ws.Tumbling(size, align=align), PANE_AGGS,
                 strategy=None if interval else "panes")
    assert "Strategy panes" in ws.explain(result)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key, order=None,
                       columns=columns(interval), size=micros(size), hop=micros(size),
                       align=align_micros(align), output="windows", aggs=PANE_AGGS)
    check(collect(result, key), sort_output(expected, key), rows)


def test_interval_panes_keep_zero_length_events_apart(spark: SparkSession) -> None:
    # Hopping(6, 4) over integer time: windows [4n, 4n + 6). [2, 3) and the zero-length
    # event at 4 (lifetime [4, 5)) start in the same cell of the start grid ([2, 6)), but
    # their last ticks, 2 and 4, lie in different cells of the end grid ([0, 4), [4, 8)):
    # two panes. [3, 4) shares the first pane; [9, open) is a pane of its own.
    df = spark.createDataFrame([(2, 3, 1.0), (4, 4, 2.0), (3, 4, 4.0), (9, None, 8.0)],
                               "t long, e long, v double")
    ev = ws.events(df, time="t", end="e")
    result = ev.window(ws.Hopping(6, 4)).agg(ws.count(), ws.sum("v"), ws.max("v"))
    assert "Strategy panes:" in ws.explain(result)
    # windows [-4, 2): none; [0, 6): the first three; [4, 10): [4, 5) and [9, open);
    # [8, 14): [9, open); the horizon is 10 (one tick after the newest start, 9), so
    # [12, 18) and every later window are the tail row (null window_end)
    expected = [(0, 6, 6, 3, 7.0, 4.0), (4, 10, 10, 2, 10.0, 8.0),
                (8, 14, 14, 1, 8.0, 8.0), (12, None, 18, 1, 8.0, 8.0)]
    got = sorted(tuple(r) for r in result.collect())
    assert got == expected
    kernel = run(ev, ws.Hopping(6, 4), [ws.count(), ws.sum("v"), ws.max("v")],
                 strategy="arrow-intervals")
    assert sorted(tuple(r) for r in kernel.collect()) == expected


def test_an_end_column_never_null_needs_no_horizon(spark: SparkSession) -> None:
    # an end column the schema says is never null holds no open-ended event, so the
    # plan reads no newest start and end (no scalar subquery, no pass over the input),
    # and gives the rows the same events give through a nullable end column
    never_null = spark.range(40).select((F.col("id") % 3).alias("k"), F.col("id").alias("t"),
                                        (F.col("id") + 3).alias("e"),
                                        F.lit(1.0).alias("v"))
    nullable = never_null.withColumn("e", F.when(F.col("t") >= 0, F.col("e")))
    assert not never_null.schema["e"].nullable and nullable.schema["e"].nullable
    aggs = [ws.count(), ws.sum("v"), ws.max("v")]
    for strategy in ("panes", "arrow-intervals"):
        results = [run(ws.events(df, time="t", end="e", key="k"), ws.Hopping(6, 2), aggs,
                       strategy=strategy) for df in (never_null, nullable)]
        plans = [r._jdf.queryExecution().analyzed().toString() for r in results]
        assert ["scalar-subquery" in plan for plan in plans] == [False, True]
        rows = [sorted(tuple(r) for r in result.collect()) for result in results]
        assert len(rows[0]) > 20
        assert rows[0] == rows[1]


@settings(max_examples=10)
@given(rows=event_rows(), key=st.sampled_from(KEYS), interval=st.booleans())
def test_snapshot_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                 key: list[str], interval: bool) -> None:
    ev = to_events(spark, rows, interval, key)
    actual = collect(ev.window(ws.Snapshot()).agg(*AGGS), key)
    expected = snapshot(rows, time="ts", end="te" if interval else None, key=key,
                        order=None, columns=columns(interval), aggs=AGGS)
    check(actual, sort_output(expected, key), rows)


@settings(max_examples=10)
@given(rows=event_rows(), key=st.sampled_from(KEYS), interval=st.booleans(),
       n=st.integers(1, 4))
def test_count_by_start_time_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                            key: list[str], interval: bool, n: int) -> None:
    ev = to_events(spark, rows, interval, key)
    actual = collect(ev.window(ws.CountByStartTime(n)).agg(*AGGS), key)
    expected = count_by_start_time(rows, time="ts", end="te" if interval else None, key=key,
                                   order=None, columns=columns(interval), n=n, aggs=AGGS)
    check(actual, sort_output(expected, key), rows)


# ------------------------------------------- point events: Spark's own window() agrees


def spark_windows(ev: ws.Events, size: str, hop: str, offset_us: int) -> list[tuple[Any, ...]]:
    """Hand-written PySpark: groupBy(key, window(ts, size, slide, startTime))."""
    size_us, hop_us = micros(size), micros(hop)
    grouped = ev.df.groupBy("k", F.window("ts", f"{size_us} microseconds",
                                          f"{hop_us} microseconds",
                                          f"{offset_us % hop_us} microseconds"))
    out = grouped.agg(F.count(F.lit(1)).alias("count"),
                      F.coalesce(F.sum("i"), F.lit(0)).alias("sum_i"),
                      F.max("s").alias("max_s"))
    rows = out.select("k", F.unix_micros("window.start").alias("a"),
                      F.unix_micros("window.end").alias("b"), "count", "sum_i", "max_s")
    return sorted((tuple(r) for r in rows.collect()), key=repr)


@settings(max_examples=10)
@given(rows=event_rows(), size=st.sampled_from(DURATIONS), hop=st.sampled_from(DURATIONS),
       align=st.sampled_from(ALIGNS), tumbling=st.booleans())
def test_point_windows_agree_with_spark_window(spark: SparkSession,
                                               rows: list[dict[str, Any]], size: str,
                                               hop: str, align: dt.datetime | None,
                                               tumbling: bool) -> None:
    if micros(hop) > micros(size):
        size, hop = hop, size  # Spark's window() needs slide <= size
    if tumbling:
        hop = size
    ev = to_events(spark, rows, interval=False, key=["k"])
    window = ws.Tumbling(size, align=align) if tumbling else ws.Hopping(size, hop,
                                                                        align=align)
    ours = ev.window(window).agg(ws.count(), ws.sum("i"), ws.max("s"))
    got = sorted((tuple(r) for r in ours.select(
        "k", F.unix_micros("window_start"), F.unix_micros("window_end"), "count", "sum_i",
        "max_s").collect()), key=repr)
    assert got == spark_windows(ev, size, hop, align_micros(align))


# ------------------------------------------------- events spanning very many windows


def test_an_event_spanning_a_million_windows_is_one_change(spark: SparkSession) -> None:
    # [0, 1 s) with windows of 2 µs every 1 µs: a million windows, all holding the
    # event and nothing else, so one result valid from the end of the first window
    # [-1, 1) (1 µs) to one hop after the end of the last window [1 s - 1 µs, 1 s + 1 µs)
    # (1 s + 2 µs); the open-ended event
    # starting at 5 s gives one row to the end of time.
    df = spark.createDataFrame([(0, SECOND, 1.0), (5 * SECOND, None, 2.0)],
                               "t long, e long, v double").select(
        F.timestamp_micros("t").alias("ts"), F.timestamp_micros("e").alias("te"), "v")
    ev = ws.events(df, time="ts", end="te")
    result = ev.window(ws.Hopping("2us", "1us", output="changes")).agg(ws.count(),
                                                                      ws.sum("v"))
    assert [tuple(r) for r in result.select(
        F.unix_micros("window_start"), F.unix_micros("window_end"), "count", "sum_v")
        .orderBy("window_start").collect()] == [
        (1, SECOND + 2, 1, 1.0), (5 * SECOND + 1, None, 1, 2.0)]


def test_many_open_ended_events_do_not_list_every_windows_members(
        spark: SparkSession) -> None:
    # 20 000 events at t = 0, 1, 2, ... (long time); the even ones are open-ended, the
    # odd ones last one tick. Snapshot segment [t, t + 1) holds the even events up to t,
    # plus t itself when t is odd; the last segment [20 000, end of time) holds every
    # even event. Listing each segment's members would take ~10^8 entries.
    n = 20_000
    df = spark.range(n).select(
        F.col("id").alias("t"),
        F.when(F.col("id") % 2 == 1, F.col("id") + 1).alias("e"),
        F.col("id").cast("double").alias("v"))
    ev = ws.events(df, time="t", end="e")
    out = ev.window(ws.Snapshot()).agg(ws.count(), ws.max("v"), ws.mean("v"),
                                       ws.stddev("v"), ws.first("v"), ws.last("v"))
    rows = {r["window_start"]: r for r in out.collect()}
    assert len(rows) == n + 1
    # segment [2m+1, 2m+2): evens 0..2m and 2m+1: m + 2 events
    m = 3_000
    odd = rows[2 * m + 1]
    assert (odd["window_end"], odd["count"], odd["max_v"], odd["first_v"], odd["last_v"]) \
        == (2 * m + 2, m + 2, 2 * m + 1, 0.0, 2 * m + 1)
    assert odd["mean_v"] == pytest.approx((m * (m + 1) + 2 * m + 1) / (m + 2), rel=1e-12)
    last = rows[n]
    assert (last["window_end"], last["count"], last["max_v"], last["last_v"]) == (
        None, n // 2, n - 2, n - 2)
    # evens 0, 2, ..., n-2 (h = n/2 values): mean n/2 - 1; the sample variance of
    # 0, 1, ..., h-1 is h (h+1) / 12, and spacing the values by 2 multiplies it by 4
    h = n // 2
    assert last["mean_v"] == pytest.approx(n / 2 - 1, rel=1e-12)
    assert last["stddev_v"] == pytest.approx(math.sqrt(4 * h * (h + 1) / 12), rel=1e-9)


@pytest.mark.parametrize("kind", ["integer", "date", "timestamp"])
def test_tumbling_by_groupby_on_every_time_kind(spark: SparkSession, kind: str) -> None:
    # times -3, -1, 0, 4, 5 (days for date time, seconds for timestamps) in windows of 3
    # aligned at 1: [-5, -2) holds -3; [-2, 1) holds -1 and 0; [4, 7) holds 4 and 5
    cast = {"integer": "t", "date": "date_from_unix_date(t)",
            "timestamp": "timestamp_seconds(t)"}[kind]
    df = spark.createDataFrame([(-3, 1.0), (-1, 2.0), (0, None), (4, 4.0), (5, 8.0)],
                               "t int, v double").selectExpr(f"{cast} AS t", "v")
    size, align = {"integer": (3, 1), "date": ("3d", dt.date(1970, 1, 2)),
                   "timestamp": ("3s", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC))}[kind]
    ev = ws.events(df, time="t")
    result = ev.window(ws.Tumbling(size, align=align)).agg(ws.count(), ws.sum("v"),
                                                          ws.mean("v"))
    assert "native-buckets" in ws.explain(result)
    starts = [r["window_start"] for r in result.orderBy("window_start").collect()]
    expected_starts = {"integer": [-5, -2, 4],
                       "date": [dt.date(1969, 12, 27), dt.date(1969, 12, 30),
                                dt.date(1970, 1, 5)],
                       "timestamp": [EPOCH.replace(tzinfo=None) + dt.timedelta(seconds=s)
                                     for s in (-5, -2, 4)]}[kind]
    assert starts == expected_starts
    assert [tuple(r)[1:] for r in result.orderBy("window_start").select(
        "window_start", "count", "sum_v", "mean_v").collect()] == [
        (1, 1.0, 1.0), (2, 2.0, 2.0), (2, 12.0, 6.0)]
    # the interval kernel, forced, gives the same rows
    kernel = run(ev, ws.Tumbling(size, align=align), [ws.count(), ws.sum("v"),
                                                      ws.mean("v")],
                 strategy="arrow-intervals")
    assert sorted(map(tuple, kernel.collect())) == sorted(map(tuple, result.collect()))
