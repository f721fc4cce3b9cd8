"""quantile/median, count_distinct, max_by/min_by, ewm_mean and min_count on Spark,
across window kinds (Rows, Range, cumulative, Since, Trailing, Tumbling, Hopping,
Session, Sliding, Dynamic; member lists: Snapshot, CountByStartTime, Hopping over
interval events, Sliding with out-of-order delta eviction), against the brute-force
oracles on random data: nulls, NaN, ties in time and in `by`, several keys (a null and
an empty one among them), pre-1970 and far-future times. Then tables by hand, the
planner's routing and the bad-input texts."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, cumulative, range_window, rows_window, sort_output
from oracle_dynamic import clock_anchors, dynamic_window
from oracle_dynamic import sessions as oracle_sessions
from oracle_intervals import count_by_start_time as oracle_count_windows
from oracle_intervals import hopping as oracle_hopping
from oracle_intervals import snapshot as oracle_snapshot
from oracle_periods import since_predicate, trailing_predicate
from oracle_policies import spl_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispInputError, WispUnsupportedError
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
Q = SECOND // 4
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]
COLUMNS = ["k", "ts", "v", "i", "s", "seq", "r"]
SCHEMA = "k string, t long, v double, i long, s string, seq int, r boolean"

NEW: list[Aggregation] = [
    ws.median("v"), ws.quantile("v", 0.9, "lower"), ws.quantile("i", 0.25, "nearest"),
    ws.quantile("v", 0.3, "midpoint"), ws.quantile("i", 0.75, "higher"),
    ws.quantile("v", 0.35),
    ws.count_distinct("v"), ws.count_distinct("s"), ws.count_distinct("i"),
    ws.max_by("s", "v"), ws.min_by("v", "s"), ws.max_by("i", "seq"), ws.min_by("s", "i"),
    ws.sum("v", min_count=2).alias("sum2"), ws.count(min_count=3).alias("count3"),
    ws.max("s", min_count=1).alias("max1"), ws.median("v", min_count=2).alias("med2"),
    ws.count("v", min_count=2).alias("countv2"),
]
RUNNING = [*NEW, ws.ewm_mean("v", half_life="1s"),
           ws.ewm_mean("i", half_life="250ms", min_count=2).alias("ewm_i")]

values = st.one_of(
    st.none(), st.just(math.nan),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.sampled_from([1e12, -1e12, 1e-3, 0.0, -0.0, 1.5, 1.5, 2.0]))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 24))
    base = draw(st.sampled_from(BASES))
    return [{"k": draw(st.sampled_from(["a", "b", "", None])),
             "ts": base + draw(st.integers(-12, 12)) * Q + draw(st.sampled_from([0, 0, 1])),
             "v": draw(values),
             "i": draw(st.one_of(st.none(), st.integers(-3, 3),
                                 st.integers(-10**15, 10**15))),
             "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "Z", "é", ""]))),
             "seq": draw(st.integers(0, 3)),
             "r": draw(st.one_of(st.none(), st.booleans()))} for _ in range(n)]


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [tuple(r[c] for c in COLUMNS) for r in rows]
    df = spark.createDataFrame(data, SCHEMA)
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "s", "seq", "r")


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


KINDS = ["rows", "range", "cumulative", "since", "tumbling", "hopping", "session",
         "sliding", "trailing", "dynamic"]


def run_both(spark: SparkSession, rows: list[dict[str, Any]], kind: str, key: list[str],
             order: str | None, aggs: Sequence[Aggregation] = tuple(NEW),
             running: Sequence[Aggregation] = tuple(RUNNING),
             read: Callable[[DataFrame], DataFrame] = lambda df: df,
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The engine's rows and the oracle's for window `kind`: `aggs` (`running` over the
    running windows), the engine's result read by `read` before it is collected."""
    ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
    common = {"time": "ts", "key": key, "order": order, "columns": COLUMNS}
    if kind == "rows":
        window: Any = ws.Rows(-3, 1, partial=True)
        expected = rows_window(rows, window=window, aggs=aggs, **common)
        actual = ev.window(window).agg(*aggs)
    elif kind == "range":
        window = ws.Range("-1s", "250ms")
        expected = range_window(rows, window=window, aggs=aggs, **common)
        actual = ev.window(window).agg(*aggs)
    elif kind == "cumulative":
        expected = cumulative(rows, aggs=running, **common)
        actual = ev.agg(*running)
    elif kind == "since":
        expected = since_predicate(rows, flag="r", emit="events", aggs=running, **common)
        actual = ev.window(ws.Since("r")).agg(*running)
    elif kind in ("tumbling", "hopping"):
        size, hop = (SECOND, SECOND) if kind == "tumbling" else (SECOND, Q * 2)
        window = ws.Tumbling("1s") if kind == "tumbling" else ws.Hopping("1s", "500ms")
        expected = oracle_hopping(rows, end=None, size=size, hop=hop, align=0,
                                  output="windows", aggs=aggs, **common)
        actual = ev.window(window).agg(*aggs)
    elif kind == "trailing":
        expected = trailing_predicate(rows, flag="r", n=2, partial=True, aggs=aggs, **common)
        actual = ev.window(ws.Trailing(2, "r", partial=True)).agg(*aggs)
    elif kind == "dynamic":
        ticks = [{**t, "at": t["ts"]} for t in clock_anchors(rows, time="ts", key=key,
                                                             every=SECOND, align=0)]
        expected = dynamic_window(rows, ticks, anchor_time="at", anchor_order=None,
                                  anchor_columns=[*key, "ts", "at"],
                                  start=lambda a: a["at"] - SECOND, end=lambda a: a["at"],
                                  obsolete=None, closed="both", aggs=aggs, **common)
        actual = ev.window(ws.Dynamic(ws.clock("1s", align=dt.datetime(
            1970, 1, 1, tzinfo=dt.UTC)), start="-1s", end="0s")).agg(*aggs)
    elif kind == "session":
        expected = oracle_sessions(rows, gap=2 * Q, aggs=aggs, **common)
        actual = ev.window(ws.Session(dt.timedelta(microseconds=2 * Q))).agg(*aggs)
    else:
        window = ws.Sliding(ws.Count(3), ws.Count(2), partial=True)
        expected = spl_window(rows, window=window, aggs=aggs, **common)
        actual = ev.window(window).agg(*aggs)
    return collect(read(actual), key), sort_output(expected, key)


@settings(max_examples=12, deadline=None)
@given(rows=event_rows(), kind=st.sampled_from(KINDS),
       key=st.sampled_from([[], ["k"], ["k", "s"]]), use_order=st.booleans())
def test_new_aggregations_match_the_oracles(spark: SparkSession, rows: list[dict[str, Any]],
                                            kind: str, key: list[str],
                                            use_order: bool) -> None:
    actual, expected = run_both(spark, rows, kind, key, "seq" if use_order else None)
    assert_rows_match(actual, expected, rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_runs_on_a_fixed_table(spark: SparkSession, kind: str) -> None:
    """Each kind at least once, whatever hypothesis draws."""
    rows = [{"k": k, "ts": t * Q, "v": v, "i": i, "s": s, "seq": 0, "r": r}
            for k, t, v, i, s, r in [("a", 0, 1.0, 5, "x", False), ("a", 1, None, 5, "y", True),
                                     ("a", 1, 3.0, 2, "x", None), ("a", 5, math.nan, None, None,
                                                                   False),
                                     ("b", -3, 2.0, 1, "z", True), ("a", 6, -1.0, 7, "y", False)]]
    actual, expected = run_both(spark, rows, kind, ["k"], None)
    assert actual and len(actual) == len(expected)
    assert_rows_match(actual, expected, rel=1e-9)


# ------------------------------------------------------------------ tables by hand


@pytest.fixture(scope="module")
def ev(spark: SparkSession) -> ws.Events:
    data = [("a", 0, 4.0, "p"), ("a", 1, 1.0, "q"), ("a", 2, None, "r"), ("a", 3, 3.0, "s"),
            ("a", 4, 3.0, "t"), ("a", 5, 10.0, "u")]
    df = spark.createDataFrame(data, "k string, t long, v double, name string")
    return ws.events(df.withColumn("ts", F.timestamp_seconds("t")), time="ts", key="k")


def values_of(result: DataFrame, column: str) -> list[Any]:
    return [r[column] for r in result.orderBy("time").collect()]


def test_rolling_median_and_quantiles_by_hand(ev: ws.Events) -> None:
    out = ev.window(ws.Rows(-2, 0)).agg(ws.median("v"), ws.quantile("v", 1.0, "lower"),
                                        ws.count_distinct("v"), ws.max_by("name", "v"),
                                        ws.min_by("name", "v"),
                                        ws.mean("v", min_count=2).alias("m2"))
    # windows: [4,1,null] [1,null,3] [null,3,3] [3,3,10]
    assert values_of(out, "median_v") == [2.5, 2.0, 3.0, 3.0]
    assert values_of(out, "q100_v") == [4.0, 3.0, 3.0, 10.0]
    assert values_of(out, "count_distinct_v") == [2, 2, 1, 2]
    assert values_of(out, "max_by_name") == ["p", "s", "s", "u"]  # a tie: the earliest row
    assert values_of(out, "min_by_name") == ["q", "q", "s", "s"]
    assert values_of(out, "m2") == [2.5, 2.0, 3.0, pytest.approx(16 / 3)]


def test_ewm_mean_by_hand(ev: ws.Events) -> None:
    out = ev.agg(ws.ewm_mean("v", half_life="1s"))
    # weights halve each second: at t=1 (4*0.5 + 1) / 1.5 = 2; t=2 (null) keeps it;
    # t=3 (4/8 + 1/4 + 3) / (1/8 + 1/4 + 1) = 3.75 / 1.375
    got = values_of(out, "ewm_mean_v")
    assert got[:3] == [4.0, 2.0, 2.0]
    assert got[3] == pytest.approx(3.75 / 1.375)


def test_min_count_nulls_below_the_count(ev: ws.Events) -> None:
    out = ev.window(ws.Tumbling("3s")).agg(ws.sum("v", min_count=3), ws.count(min_count=3),
                                           ws.count_distinct("v", min_count=3))
    rows = out.orderBy("time").collect()
    # windows [0,3s): 4, 1, null (2 values, 3 rows); [3s,6s): 3, 3, 10
    assert [r["sum_v"] for r in rows] == [None, 16.0]
    assert [r["count"] for r in rows] == [3, 3]
    assert [r["count_distinct_v"] for r in rows] == [None, 2]
    assert out.columns == ["k", "window_start", "window_end", "time", "sum_v", "count",
                           "count_distinct_v"]


# ---------------------------------------------------------------------- planning


def test_cumulative_routes_new_aggregations_to_the_kernel(ev: ws.Events) -> None:
    out = ev.agg(ws.median("v"), ws.sum("v"))
    assert "Strategy arrow-frames" in ws.explain(out)
    assert "median_v has no exact, incremental running form" in ws.explain(out)
    assert "Strategy native-running" in ws.explain(ev.agg(ws.sum("v", min_count=2)))
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-frames' for median_v (no exact incremental running "
            "form in Spark), found 'native-running'")):
        ev.agg(ws.median("v"), strategy="native-running")


def test_tumbling_routes_new_aggregations_to_the_kernel(ev: ws.Events) -> None:
    text = ws.explain(ev.window(ws.Tumbling("2s")).agg(ws.count_distinct("v")))
    assert "Strategy arrow-intervals" in text
    assert "Strategy native-buckets" in ws.explain(
        ev.window(ws.Tumbling("2s")).agg(ws.sum("v", min_count=1)))


def test_explain_names_min_count_not_its_hidden_count(ev: ws.Events) -> None:
    text = ws.explain(ev.window(ws.Rows(-1, 0)).agg(ws.sum("v", min_count=2)))
    assert "aggregations: sum_v (null below 2 values);" in text
    assert "__wisp" not in text


# --------------------------------------------------------------------- bad input


def test_bad_arguments_are_named() -> None:
    with pytest.raises(WispInputError, match=re.escape("`q` must be a number in [0, 1], "
                                                       "found 1.5")):
        ws.quantile("v", 1.5)
    with pytest.raises(WispInputError, match=re.escape("`q` must be a number in [0, 1], "
                                                       "found -0.1")):
        ws.quantile("v", -0.1)
    with pytest.raises(WispInputError, match=re.escape(
            "`interpolation` must be one of linear, lower, higher, nearest, midpoint, "
            "found 'cubic'")):
        ws.quantile("v", 0.5, "cubic")
    for bad in (0, -1, -0.5):
        with pytest.raises(WispInputError, match=re.escape(
                f"`half_life` must be a duration > 0 such as '10s', found {bad!r}")):
            ws.ewm_mean("v", half_life=bad)
    with pytest.raises(WispInputError, match=re.escape(
            "`min_count` must be a whole number >= 0 or None, found -1")):
        ws.sum("v", min_count=-1)
    with pytest.raises(WispInputError, match=re.escape(
            "`min_count` must be a whole number >= 0 or None, found True")):
        ws.count(min_count=True)
    with pytest.raises(WispInputError, match=re.escape(
            "`by` must be a column name for max_by(), found ''")):
        ws.max_by("v", "")


def test_bad_columns_are_named(ev: ws.Events) -> None:
    with pytest.raises(WispInputError, match=re.escape(
            "`col` must be a numeric column for quantile(), found \"string column 'name'\"")):
        ev.agg(ws.quantile("name", 0.5))
    with pytest.raises(WispInputError, match=re.escape(
            "`col` must be a numeric column for median(), found \"string column 'name'\"")):
        ev.agg(ws.median("name"))
    with pytest.raises(WispInputError, match=re.escape(
            "`by` must be a column of the DataFrame for max_by() (columns: ")):
        ev.agg(ws.max_by("v", "nope"))
    with pytest.raises(WispInputError, match=re.escape(
            "`half_life` must be a duration such as '2s' or a timedelta")):
        ev.agg(ws.ewm_mean("v", half_life=3))


def test_ewm_mean_is_refused_off_running_windows(ev: ws.Events) -> None:
    with pytest.raises(WispUnsupportedError, match=re.escape(
            "`aggregations` over Rows windows must be defined there, found ewm_mean "
            "(ewm_mean_v), which is defined over the cumulative window (ev.agg) and Since "
            "periods only")):
        ev.window(ws.Rows(-2, 0)).agg(ws.ewm_mean("v", half_life="1s"))


# --------------------------------------------- member lists: interval events, delta


IV_COLUMNS = [*COLUMNS, "te"]


def interval_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [tuple(r[c] for c in IV_COLUMNS) for r in rows]
    df = spark.createDataFrame(data, SCHEMA + ", e long")
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "s", "seq", "r",
                     F.timestamp_micros("e").alias("te"))


LISTED = [a for a in NEW if a.fn != "count" or a.col is not None]
"""The windows below list members (count() over interval windows counts lifetimes)."""


def run_listed(spark: SparkSession, rows: list[dict[str, Any]], kind: str, key: list[str],
               order: str | None, aggs: Sequence[Aggregation] = tuple(NEW),
               listed: Sequence[Aggregation] = tuple(LISTED),
               read: Callable[[DataFrame], DataFrame] = lambda df: df,
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The engine's rows and the oracle's for the member-list kinds: `aggs` over
    `sliding_delta`, `listed` over interval events."""
    common = {"time": "ts", "key": key, "order": order}
    if kind == "sliding_delta":  # `seq` is not monotonic: evictions out of arrival order
        ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
        window: Any = ws.Sliding(ws.Delta("seq", 1), ws.Count(1), partial=True)
        expected = spl_window(rows, columns=COLUMNS, window=window, aggs=aggs, **common)
        return collect(read(ev.window(window).agg(*aggs)), key), sort_output(expected, key)
    ev = ws.events(interval_frame(spark, rows), time="ts", end="te", key=key, order=order)
    if kind == "snapshot":
        expected = oracle_snapshot(rows, end="te", columns=IV_COLUMNS, aggs=listed, **common)
        actual = ev.window(ws.Snapshot()).agg(*listed)
    elif kind == "count_by_start":
        expected = oracle_count_windows(rows, end="te", columns=IV_COLUMNS, n=2,
                                        aggs=listed, **common)
        actual = ev.window(ws.CountByStartTime(2)).agg(*listed)
    else:
        expected = oracle_hopping(rows, end="te", columns=IV_COLUMNS, size=SECOND,
                                  hop=2 * Q, align=0, output="windows", aggs=listed,
                                  **common)
        actual = ev.window(ws.Hopping("1s", "500ms")).agg(*listed)
    return collect(read(actual), key), sort_output(expected, key)


@settings(max_examples=10, deadline=None)
@given(rows=event_rows(), ends=st.lists(st.one_of(st.none(), st.integers(0, 8)),
                                        min_size=24, max_size=24),
       kind=st.sampled_from(["sliding_delta", "snapshot", "count_by_start", "hopping"]),
       key=st.sampled_from([[], ["k"]]), use_order=st.booleans())
def test_member_lists_match_the_oracles(spark: SparkSession, rows: list[dict[str, Any]],
                                        ends: list[int | None], kind: str, key: list[str],
                                        use_order: bool) -> None:
    for row, extra in zip(rows, ends, strict=False):
        row["te"] = None if extra is None else row["ts"] + extra * Q
    actual, expected = run_listed(spark, rows, kind, key, "seq" if use_order else None)
    # a float sum is exact to rounding, not to the digit: 1e12 - 1e12 + 0.001 added in
    # order gives 0.0009765625; its error is bounded by the values' magnitudes
    magnitude = math.fsum(abs(r["v"]) for r in rows
                          if r["v"] is not None and math.isfinite(r["v"]))
    assert_rows_match(actual, expected, rel=1e-9, scales={"sum2": max(magnitude, 1.0)})


@pytest.mark.parametrize("kind", ["sliding_delta", "snapshot", "count_by_start", "hopping"])
def test_each_listed_kind_runs_on_a_fixed_table(spark: SparkSession, kind: str) -> None:
    rows = [{"k": "a", "ts": t * Q, "v": v, "i": i, "s": s, "seq": q, "r": None,
             "te": None if e is None else (t + e) * Q}
            for t, v, i, s, q, e in [(0, 1.0, 5, "x", 3, 2), (1, None, 5, "y", 0, None),
                                     (1, 3.0, 2, "x", 2, 1), (2, math.nan, None, None, 1, 4),
                                     (3, 2.0, 1, "z", 3, 0), (5, -1.0, 7, "y", 0, 3)]]
    actual, expected = run_listed(spark, rows, kind, ["k"], None)
    assert actual and len(actual) == len(expected)
    assert_rows_match(actual, expected, rel=1e-9)


def test_min_count_is_refused_where_rows_coalesce_by_their_results(ev: ws.Events) -> None:
    with pytest.raises(WispUnsupportedError, match=re.escape(
            "`aggregations` over Hopping(output='changes') must not set min_count (its rows "
            "coalesce by their results before min_count applies), found sum_v with "
            "min_count=2")):
        ev.window(ws.Hopping("2s", "1s", output="changes")).agg(ws.sum("v", min_count=2))
