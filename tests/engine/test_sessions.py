"""Session windows on Spark: against hand-written PySpark `session_window` on point
events, against the brute-force oracle on random point and interval events, by hand for
`max_duration` splits and interval lifetimes, and bad input."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_dynamic import sessions as oracle_sessions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispInputError, WispUnsupportedError
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
Q = SECOND // 4
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]
COLUMNS = ["k", "ts", "te", "v", "s", "seq"]
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.variance("v"), ws.collect("v"), ws.min("s"),
    ws.collect("s"),
]
SCALE = ws.udaf(lambda v, t: math.fsum(abs(x) for x in v if x == x), "v").alias("__scale")
values = st.one_of(st.none(), st.just(math.nan),
                   st.floats(min_value=-1e12, max_value=1e12, allow_nan=False))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    base = draw(st.sampled_from(BASES))
    rows = []
    for _ in range(draw(st.integers(0, 24))):
        ts = base + draw(st.integers(-16, 16)) * Q + draw(st.sampled_from([0, 0, 1, -1]))
        te = None if draw(st.integers(0, 8)) == 0 else ts + draw(st.integers(0, 12)) * Q
        rows.append({"k": draw(st.sampled_from(["a", "b", "", None])), "ts": ts, "te": te,
                     "v": draw(values),
                     "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "é"]))),
                     "seq": draw(st.integers(0, 3))})
    return rows


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    df = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows],
                               "k string, ts long, te long, v double, s string, seq int")
    return df.withColumns({"ts": F.timestamp_micros("ts"), "te": F.timestamp_micros("te")})


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


@settings(max_examples=15)
@given(rows=event_rows(), gap=st.integers(1, 6),
       max_duration=st.one_of(st.none(), st.integers(1, 16)), interval=st.booleans(),
       keyed=st.booleans(), use_order=st.booleans())
def test_sessions_match_oracle(spark: SparkSession, rows: list[dict[str, Any]], gap: int,
                               max_duration: int | None, interval: bool, keyed: bool,
                               use_order: bool) -> None:
    key = ["k"] if keyed else []
    order = "seq" if use_order else None
    columns = COLUMNS if interval else [c for c in COLUMNS if c != "te"]
    df = to_frame(spark, rows)
    if not interval:
        df = df.drop("te")
    ev = ws.events(df, time="ts", end="te" if interval else None, key=key, order=order)
    window = ws.Session(dt.timedelta(microseconds=gap * Q),
                        None if max_duration is None
                        else dt.timedelta(microseconds=max_duration * Q))
    actual = collect(ev.window(window).agg(*AGGREGATIONS), key)
    expected = sort_output(oracle_sessions(
        [{c: r[c] for c in columns} for r in rows], time="ts", key=key, order=order,
        columns=columns, gap=gap * Q, max_duration=None if max_duration is None
        else max_duration * Q, end="te" if interval else None,
        aggs=[*AGGREGATIONS, SCALE]), key)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        scale = want.pop("__scale")
        assert_rows_match([got], [want], scales={"sum_v": scale, "mean_v": scale,
                                                 "variance_v": scale * scale})


# -------------------------------------------------- against Spark's session_window


@pytest.fixture(scope="module")
def clicks(spark: SparkSession) -> DataFrame:
    """Point events of three users; gaps of exactly 10 s, just under and just over it,
    and duplicates."""
    seconds = {"ann": [0, 10, 20, 31, 31, 45], "bob": [3, 12.999999, 23, 33.000001],
               "cy": [100]}
    rows = [(user, T0 + dt.timedelta(seconds=s), float(i))
            for user, times in seconds.items() for i, s in enumerate(times)]
    return spark.createDataFrame(rows, "user string, ts timestamp, v double")


def test_sessions_agree_with_session_window(clicks: DataFrame) -> None:
    expected = (clicks.groupBy("user", F.session_window("ts", "10 seconds"))
                .agg(F.count(F.lit(1)).alias("count"), F.sum("v").alias("sum_v"))
                .select("user", F.col("session_window.start").alias("window_start"),
                        F.col("session_window.end").alias("window_end"), "count", "sum_v")
                .orderBy("user", "window_start").collect())
    actual = (ws.events(clicks, time="ts", key="user").window(ws.Session("10s"))
              .agg(ws.count(), ws.sum("v"))
              .select("user", "window_start", "window_end", "count", "sum_v")
              .orderBy("user", "window_start").collect())
    assert [tuple(r) for r in actual] == [tuple(r) for r in expected]


def seconds(result: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """Rows of `result` with its time columns as seconds after T0, ordered."""
    t0 = int(T0.timestamp()) * SECOND
    times = {c: (F.unix_micros(c) - t0) / SECOND for c in ("window_start", "window_end",
                                                            "time")}
    converted = result.withColumns(times).orderBy("user", "window_start")
    return [tuple(r) for r in converted.select(*columns).collect()]


def test_sessions_by_hand(clicks: DataFrame) -> None:
    result = ws.events(clicks, time="ts", key="user").window(ws.Session("10s")).agg(
        ws.count())
    got = seconds(result, "user", "window_start", "window_end", "time", "count")
    # ann: 0, 10 and 20 are each exactly 10 s apart: one session; 31 is 11 s after 20,
    # 45 is 14 s after 31. bob: 12.999999 is within 10 s of 3; 23 is 1 µs more than 10 s
    # after it, and 33.000001 1 µs more than 10 s after 23
    assert got == [("ann", 0.0, 30.0, 30.0, 3), ("ann", 31.0, 41.0, 41.0, 2),
                   ("ann", 45.0, 55.0, 55.0, 1), ("bob", 3.0, 22.999999, 22.999999, 2),
                   ("bob", 23.0, 33.0, 33.0, 1), ("bob", 33.000001, 43.000001, 43.000001, 1),
                   ("cy", 100.0, 110.0, 110.0, 1)]


def test_max_duration_splits_sessions(clicks: DataFrame) -> None:
    result = ws.events(clicks, time="ts", key="user").window(
        ws.Session("10s", max_duration="25s")).agg(ws.count(), ws.collect("v"))
    got = seconds(result, "user", "window_start", "window_end", "count", "collect_v")
    # ann's first session would run 0..30: cut at 0 + 25 (31 starts a new one anyway);
    # the shorter ones are kept whole
    assert got == [("ann", 0.0, 25.0, 3, [0.0, 1.0, 2.0]),
                   ("ann", 31.0, 41.0, 2, [3.0, 4.0]), ("ann", 45.0, 55.0, 1, [5.0]),
                   ("bob", 3.0, 22.999999, 2, [0.0, 1.0]), ("bob", 23.0, 33.0, 1, [2.0]),
                   ("bob", 33.000001, 43.000001, 1, [3.0]),
                   ("cy", 100.0, 110.0, 1, [0.0])]


def test_max_duration_cut_starts_a_new_session_at_the_next_event(
        spark: SparkSession) -> None:
    df = spark.createDataFrame([(t, 1) for t in (0, 4, 8, 12, 16, 20)], "t long, one int")
    result = ws.events(df, time="t").window(ws.Session(5, max_duration=10)).agg(ws.count())
    assert [tuple(r) for r in result.orderBy("window_start").collect()] == [
        (0, 10, 10, 3), (12, 22, 22, 3)]  # 12 >= 0 + 10 opens the second session


def test_interval_events_extend_sessions_by_their_lifetime(spark: SparkSession) -> None:
    rows = [("a", 0, 30), ("a", 5, 6), ("a", 35, 36), ("a", 50, 50), ("b", 0, None),
            ("b", 1000, 1001), ("c", 0, None), ("c", 1000, 1001)]
    df = spark.createDataFrame(rows, "k string, t long, e long")
    ev = ws.events(df, time="t", end="e", key="k")
    got = [tuple(r) for r in ev.window(ws.Session(5)).agg(ws.count())
           .orderBy("k", "window_start").collect()]
    # a: [0, 30) keeps the session alive until 30 + 5; 35 joins (exactly the gap);
    #    50 is 14 after 36. b: an open event keeps the session open forever.
    assert got[:2] == [("a", 0, 41, 41, 3), ("a", 50, 55, 55, 1)]
    assert got[2:] == [("b", 0, None, None, 2), ("c", 0, None, None, 2)]
    capped = [tuple(r) for r in ev.window(ws.Session(5, max_duration=100)).agg(ws.count())
              .filter(F.col("k") == "b").orderBy("window_start").collect()]
    assert capped == [("b", 0, 100, 100, 1), ("b", 1000, 1006, 1006, 1)]


# ------------------------------------------------------------------------ bad input


def test_end_before_time_fails_the_query(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0, 5), (10, 9)], "t long, e long")
    result = ws.events(df, time="t", end="e").window(ws.Session(5)).agg(ws.count())
    with pytest.raises(Exception, match="`end` column 'e' must not be before the `time` "
                       "column 't', found end 9 < time 10"):
        result.collect()


def test_session_durations_must_fit_the_time_column(clicks: DataFrame,
                                                    spark: SparkSession) -> None:
    ev = ws.events(clicks, time="ts", key="user")
    with pytest.raises(WispInputError, match="`gap` must be a duration such as '2s'"):
        ev.window(ws.Session(10)).agg(ws.count())
    numeric = ws.events(spark.createDataFrame([(1,)], "t long"), time="t")
    with pytest.raises(WispInputError, match=r"`gap` must be a number \(durations"):
        numeric.window(ws.Session("1s")).agg(ws.count())
    with pytest.raises(WispInputError, match="`max_duration` must be the same kind of "
                       "duration as `gap`"):
        ws.Session(10, max_duration="1s")
    with pytest.raises(WispInputError, match="`gap` must be a whole number"):
        numeric.window(ws.Session(1.5)).agg(ws.count())


def test_session_bad_strategy_and_aggregation(clicks: DataFrame) -> None:
    from wisp.windowed import run

    ev = ws.events(clicks, time="ts", key="user")
    with pytest.raises(WispInputError, match="`strategy` must be 'arrow-sessions'"):
        run(ev, ws.Session("10s"), [ws.count()], strategy="native-running")
    with pytest.raises(WispUnsupportedError, match="time_weighted_mean"):
        ev.window(ws.Session("10s")).agg(ws.time_weighted_mean("v"))
