"""A user's mergeable aggregation (`ws.Aggregator`, `ws.aggregate`) on Spark: the test
aggregators of tests/aggregators.py (`Spread`, order-sensitive `Trajectory`, invertible
`Total`, with and without `min_count`) on every window kind against the brute-force
oracles (one `add` of a window's values, then `finish`) on random data: nulls, NaN,
ties in time, several keys (a null and an empty one among them), pre-1970 and
far-future times. `Spread` is also checked against wisp's own `max - min` in the same
query. Then a table by hand, what `explain` names, a user's error found on the
executors (rebuilt by `ws.wisp_error`), a `returns` Spark cannot parse, and a state that
`add` updates in place (wisp only gives `add` fresh states)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from aggregators import Positives, Spread, Total, Trajectory
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, cumulative, range_window, rows_window, sort_output
from oracle_dynamic import clock_anchors, dynamic_window
from oracle_dynamic import sessions as oracle_sessions
from oracle_intervals import count_by_start_time as oracle_count_windows
from oracle_intervals import hopping as oracle_hopping
from oracle_intervals import snapshot as oracle_snapshot
from oracle_periods import since_calendar, since_predicate, trailing_predicate
from oracle_policies import spl_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
Q = SECOND // 4
DAY = 86_400 * SECOND
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]  # 1970, 1900,
# 9999-12-31 (each a midnight: daily ticks fall among the events), just before the epoch
COLUMNS = ["k", "ts", "v", "i", "s", "seq", "r"]
IV_COLUMNS = [*COLUMNS, "te"]
SCHEMA = "k string, t long, v double, i long, s string, seq int, r boolean, e long"

USER: list[Aggregation] = [
    ws.aggregate(Spread(), "v"), ws.aggregate(Trajectory(), "v"),
    ws.aggregate(Total, "i"),  # a class: built without arguments
    ws.aggregate(Total(), "i", min_count=2).alias("total2"),
    ws.aggregate(Spread(), "i"),
]
BUILT_INS = [ws.max("v"), ws.min("v")]
"""Computed by wisp in the same query: `spread_v` must be `max_v - min_v`."""

values = st.one_of(
    st.none(), st.just(math.nan),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.sampled_from([1e12, -1e12, 1e-3, 0.0, -0.0, 1.5, 1.5, 2.0]))


@st.composite
def event_rows(draw: st.DrawFn, bases: list[int] = BASES) -> list[dict[str, Any]]:
    """Up to 20 rows around a base time, ties in time, and an end (`te`: an interval
    event's, None for an open-ended one) that the interval kinds read."""
    n = draw(st.integers(0, 20))
    base = draw(st.sampled_from(bases))
    rows = []
    for _ in range(n):
        ts = base + draw(st.integers(-12, 12)) * Q + draw(st.sampled_from([0, 0, 1]))
        extra = draw(st.one_of(st.none(), st.integers(0, 8)))
        rows.append({"k": draw(st.sampled_from(["a", "b", "", None])), "ts": ts,
                     "v": draw(values),
                     "i": draw(st.one_of(st.none(), st.integers(-3, 3),
                                         st.integers(-10**15, 10**15))),
                     "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "é", ""]))),
                     "seq": draw(st.integers(0, 3)),
                     "r": draw(st.one_of(st.none(), st.booleans())),
                     "te": None if extra is None else ts + extra * Q})
    return rows


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    df = spark.createDataFrame([tuple(r[c] for c in IV_COLUMNS) for r in rows], SCHEMA)
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "s", "seq", "r",
                     F.timestamp_micros("e").alias("te"))


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """`trajectory_v`'s struct as a (change, span) tuple, which `assert_rows_match`
    compares field by field (NaN equal to NaN)."""
    found = row.get("trajectory_v")
    if found is not None:
        row["trajectory_v"] = (found["change"], found["span"])
    return row


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([flat(r.asDict(recursive=True)) for r in converted.collect()], key)


KINDS = ["rows_back", "rows_centered", "range", "cumulative", "since", "since_daily",
         "trailing", "tumbling", "hopping", "session", "dynamic", "sliding", "sliding_time",
         "sliding_delta", "snapshot", "count_by_start", "hopping_intervals"]
CLOSED = ["both", "left", "right", "neither"]


def run_both(spark: SparkSession, rows: list[dict[str, Any]], kind: str, key: list[str],
             order: str | None, closed: str = "both",
             ) -> tuple[DataFrame, list[dict[str, Any]]]:
    """The engine's result (not yet collected) and the oracle's rows for `kind`."""
    aggs = [*USER, *BUILT_INS]
    intervals = kind in ("snapshot", "count_by_start", "hopping_intervals")
    ev = ws.events(to_frame(spark, rows), time="ts", end="te" if intervals else None,
                   key=key, order=order)
    common: dict[str, Any] = {"time": "ts", "key": key, "order": order, "columns": COLUMNS}
    if kind in ("rows_back", "rows_centered"):
        window: Any = (ws.Rows(-3, 0) if kind == "rows_back"
                       else ws.Rows(-1, 2, partial=True))
        expected = rows_window(rows, window=window, aggs=aggs, **common)
    elif kind == "range":
        window = ws.Range("-1s", "250ms", closed=closed)  # type: ignore[arg-type]
        expected = range_window(rows, window=window, aggs=aggs, **common)
    elif kind == "cumulative":
        return ev.agg(*aggs), cumulative(rows, aggs=aggs, **common)
    elif kind == "since":
        window = ws.Since("r")
        expected = since_predicate(rows, flag="r", emit="events", aggs=aggs, **common)
    elif kind == "since_daily":
        window = ws.Since(ws.daily(), emit="both")
        expected = since_calendar(rows, tick=ws.daily(), emit="both", aggs=aggs,
                                  span_before=2 * DAY, **common)
    elif kind == "trailing":
        window = ws.Trailing(2, "r")
        expected = trailing_predicate(rows, flag="r", n=2, partial=False, aggs=aggs,
                                      **common)
    elif kind in ("tumbling", "hopping"):
        hop = SECOND if kind == "tumbling" else 2 * Q
        window = ws.Tumbling("1s") if kind == "tumbling" else ws.Hopping("1s", "500ms")
        expected = oracle_hopping(rows, end=None, size=SECOND, hop=hop, align=0,
                                  output="windows", aggs=aggs, **common)
    elif kind == "session":
        window = ws.Session(dt.timedelta(microseconds=2 * Q))
        expected = oracle_sessions(rows, gap=2 * Q, aggs=aggs, **common)
    elif kind == "dynamic":
        window = ws.Dynamic(ws.clock("1s", align=EPOCH), start="-1s", end="0s")
        ticks = [{**t, "at": t["ts"]} for t in clock_anchors(rows, time="ts", key=key,
                                                             every=SECOND, align=0)]
        expected = dynamic_window(rows, ticks, anchor_time="at", anchor_order=None,
                                  anchor_columns=[*key, "ts", "at"],
                                  start=lambda a: a["at"] - SECOND, end=lambda a: a["at"],
                                  obsolete=None, closed="both", aggs=aggs, **common)
    elif kind.startswith("sliding"):
        window = {"sliding": ws.Sliding(ws.Count(3), ws.Count(2), partial=True),
                  # fires on empty windows too: finish(zero())
                  "sliding_time": ws.Sliding(ws.Time("500ms"), ws.Time("1s")),
                  # `seq` is not monotonic: evictions out of arrival order
                  "sliding_delta": ws.Sliding(ws.Delta("seq", 1), ws.Count(1),
                                              partial=True)}[kind]
        expected = spl_window(rows, window=window, aggs=aggs, **common)
    else:
        common["columns"] = IV_COLUMNS
        if kind == "snapshot":
            window = ws.Snapshot()
            expected = oracle_snapshot(rows, end="te", aggs=aggs, **common)
        elif kind == "count_by_start":
            window = ws.CountByStartTime(2)
            expected = oracle_count_windows(rows, end="te", n=2, aggs=aggs, **common)
        else:
            window = ws.Hopping("1s", "500ms")
            expected = oracle_hopping(rows, end="te", size=SECOND, hop=2 * Q, align=0,
                                      output="windows", aggs=aggs, **common)
    return ev.window(window).agg(*aggs), expected


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """The oracle's rows exactly (floats: `Spread` and `Trajectory` subtract the same
    two values either way), and `spread_v` is wisp's own `max_v - min_v`."""
    assert_rows_match(actual, expected, rel=0.0)
    for row in actual:
        high, low = row["max_v"], row["min_v"]
        want = None if high is None else high - low
        assert_rows_match([{"spread_v": row["spread_v"]}], [{"spread_v": want}], rel=0.0)


@settings(max_examples=8, deadline=None)
@given(data=st.data(), kind=st.sampled_from(KINDS),
       key=st.sampled_from([[], ["k"], ["k", "s"]]), use_order=st.booleans(),
       closed=st.sampled_from(CLOSED))
def test_user_aggregators_match_the_oracles(spark: SparkSession, data: st.DataObject,
                                            kind: str, key: list[str], use_order: bool,
                                            closed: str) -> None:
    # daily ticks past 9999-12-31 are beyond Python's datetime (the oracle's calendar)
    rows = data.draw(event_rows(BASES[:2] if kind == "since_daily" else BASES))
    result, expected = run_both(spark, rows, kind, key, "seq" if use_order else None,
                                closed)
    check(collect(result, key), sort_output([flat(r) for r in expected], key))


FIXED = [{"k": k, "ts": t * Q, "v": v, "i": i, "s": s, "seq": q, "r": r,
          "te": None if e is None else (t + e) * Q}
         for k, t, v, i, s, q, r, e in [
             ("a", 0, 1.0, 5, "x", 3, False, 2), ("a", 1, None, 5, "y", 0, True, None),
             ("a", 1, 3.0, 2, "x", 2, None, 1), ("a", 2, 0.5, None, None, 1, False, 4),
             ("a", 5, 2.0, 1, "z", 3, True, 0), ("b", -3, 2.0, 1, "z", 0, True, 3),
             ("a", 6, -1.0, 7, "y", 0, False, 3), ("a", 7, 4.0, -2, "y", 2, False, 1),
             ("a", 9, math.nan, 3, "x", 1, None, 2), ("a", 10, 6.0, None, "x", 0, False, 1)]]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_on_a_fixed_table(spark: SparkSession, kind: str) -> None:
    """Each kind at least once, whatever hypothesis draws."""
    result, expected = run_both(spark, FIXED, kind, ["k"], None)
    actual = collect(result, ["k"])
    assert actual
    check(actual, sort_output([flat(r) for r in expected], ["k"]))


# ---------------------------------------------------------------------- explain


@pytest.fixture(scope="module")
def ev(spark: SparkSession) -> ws.Events:
    data = [("a", t, float(v), v) for t, v in enumerate([4, 1, 3, 3, 10])]
    df = spark.createDataFrame(data, "k string, t long, v double, i long")
    return ws.events(df.withColumn("ts", F.timestamp_seconds("t")), time="ts", key="k")


def test_explain_names_the_kernel_and_the_merging(ev: ws.Events) -> None:
    text = ws.explain(ev.window(ws.Rows(-2, 0)).agg(ws.aggregate(Spread(), "v")))
    assert "\nStrategy arrow-frames: " in text
    assert "aggregations: spread_v;" in text
    assert ("spread_v is mergeable (the aggregator's merge), so windows are merged partial "
            "states") in text
    assert "two stacks of merged states" in text


def test_rows_by_hand(ev: ws.Events) -> None:
    out = ev.window(ws.Rows(-2, 0, partial=True)).agg(
        ws.aggregate(Spread(), "v"), ws.aggregate(Total(), "i", min_count=3),
        ws.aggregate(Trajectory(), "v"))
    rows = out.orderBy("time").collect()
    assert out.columns == ["k", "window_start", "window_end", "time", "spread_v", "total_i",
                           "trajectory_v"]
    assert [r["spread_v"] for r in rows] == [0.0, 3.0, 3.0, 2.0, 7.0]
    assert [r["total_i"] for r in rows] == [None, None, 8, 7, 16]
    assert [(r["trajectory_v"]["change"], r["trajectory_v"]["span"]) for r in rows] == [
        (0.0, 0), (-3.0, SECOND), (-1.0, 2 * SECOND), (2.0, 2 * SECOND), (7.0, 2 * SECOND)]


# ------------------------------------------------------- errors of the user's code


def broken() -> tuple[type[ws.Aggregator], type[ws.Aggregator], type[ws.Aggregator]]:
    """Bad aggregators, made in a function so that Spark ships the classes by value
    (this module is not on the Python workers' path)."""

    class BrokenMerge(Total):
        def merge(self, a: Any, b: Any) -> Any:
            raise ValueError("no merging today")

    class Wordy(Spread):
        def finish(self, state: Any) -> Any:
            return "wide"

    class Misspelt(Spread):
        returns = "doubel"

    return BrokenMerge, Wordy, Misspelt


BrokenMerge, Wordy, Misspelt = broken()




def failure(result: DataFrame) -> ws.WispError:
    """The `WispError` that collecting `result` raises, rebuilt from Spark's exception."""
    with pytest.raises(Exception) as caught:
        result.collect()
    found = ws.wisp_error(caught.value)
    assert found is not None, str(caught.value)
    assert found.__cause__ is caught.value
    return found


def test_a_merge_that_raises_is_named(ev: ws.Events) -> None:
    found = failure(ev.window(ws.Rows(-2, 0)).agg(ws.aggregate(BrokenMerge(), "i")))
    assert type(found) is ws.WispInputError
    assert str(found) == ("`merge` of aggregator BrokenMerge must run without error, found "
                          "ValueError: no merging today")


def test_a_finish_of_another_type_is_named(ev: ws.Events) -> None:
    found = failure(ev.window(ws.Tumbling("2s")).agg(ws.aggregate(Wordy(), "v")))
    assert type(found) is ws.WispInputError
    assert str(found) == ("`finish` of aggregator Wordy must return values of its `returns` "
                          "type 'double' (double) or None, found 'wide' (str)")


def test_a_state_updated_in_place_is_not_shared_between_windows(
        spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, -1.0), (2, 2.0), (3, 3.0)], "t long, v double")
    running = ws.events(df, time="t").agg(ws.aggregate(Positives(), "v"))
    assert [r["positives_v"] for r in running.orderBy("time").collect()] == [
        [], [2.0], [2.0, 3.0]]


def test_returns_not_a_spark_type_is_refused_when_the_query_is_built(ev: ws.Events) -> None:
    misspelt = ws.aggregate(Misspelt(), "v")  # a string: accepted until Spark parses it
    for build in (lambda: ev.window(ws.Rows(-1, 0)).agg(misspelt), lambda: ev.agg(misspelt)):
        with pytest.raises(ws.WispInputError) as caught:
            build()
        assert str(caught.value) == ("`returns` of aggregator Misspelt must be a Spark type "
                                     "as a DDL string such as 'double', found 'doubel'")
