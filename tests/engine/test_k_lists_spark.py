"""first_k, last_k, top_k, bottom_k and histogram on Spark, through the public API,
across window kinds (Tumbling, Hopping, Rows, Range, Session, Sliding and the
cumulative window), against the brute-force oracles over each window (`oracle.aggregate`)
on random data: nulls, NaN, `-0.0`, duplicates, ties in time, several keys (a null one
among them), doubles, longs, strings and dates. Then a table by hand and the bad-input
texts."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, cumulative, range_window, rows_window, sort_output
from oracle_dynamic import sessions as oracle_sessions
from oracle_intervals import hopping as oracle_hopping
from oracle_policies import spl_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispError, WispInputError
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
Q = SECOND // 4
COLUMNS = ["k", "ts", "v", "i", "s", "d"]
SCHEMA = "k string, t long, v double, i long, s string, d date"

AGGS: list[Aggregation] = [
    ws.first_k("v", 2), ws.last_k("s", 3), ws.top_k("v", 3), ws.bottom_k("v", 2),
    ws.top_k("i", 2), ws.bottom_k("s", 4), ws.top_k("d", 1), ws.last_k("d", 2),
    ws.histogram("v"), ws.histogram("s"), ws.histogram("d"),
    ws.first_k("i", 5, min_count=2).alias("first_i2"),
]
KINDS = ["tumbling", "hopping", "rows", "range", "session", "sliding", "cumulative"]

values = st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, 1.5, 1.5, -2.0, 1e12]),
                   st.integers(-3, 3).map(float))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 20))
    day = dt.date(2024, 2, 28)
    return [{"k": draw(st.sampled_from(["a", "b", None])),
             "ts": draw(st.integers(-8, 8)) * Q,
             "v": draw(values),
             "i": draw(st.one_of(st.none(), st.integers(-2, 2),
                                 st.sampled_from([(1 << 63) - 1, -(1 << 63)]))),
             "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "Z", "é", ""]))),
             "d": draw(st.one_of(st.none(), st.integers(0, 3).map(
                 lambda j: day + dt.timedelta(days=j))))} for _ in range(n)]


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [tuple(r[c] for c in COLUMNS) for r in rows]
    df = spark.createDataFrame(data, SCHEMA)
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "s", "d")


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


def run_both(spark: SparkSession, rows: list[dict[str, Any]], kind: str, key: list[str]
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The engine's rows and the oracle's for window `kind`."""
    ev = ws.events(to_frame(spark, rows), time="ts", key=key)
    common: dict[str, Any] = {"time": "ts", "key": key, "order": None, "columns": COLUMNS,
                              "aggs": AGGS}
    if kind == "rows":
        window: Any = ws.Rows(-3, 1, partial=True)
        expected = rows_window(rows, window=window, **common)
    elif kind == "range":
        window = ws.Range("-1s", "250ms")
        expected = range_window(rows, window=window, **common)
    elif kind in ("tumbling", "hopping"):
        size, hop = (SECOND, SECOND) if kind == "tumbling" else (SECOND, Q * 2)
        window = ws.Tumbling("1s") if kind == "tumbling" else ws.Hopping("1s", "500ms")
        expected = oracle_hopping(rows, end=None, size=size, hop=hop, align=0,
                                  output="windows", **common)
    elif kind == "session":
        window = ws.Session(dt.timedelta(microseconds=2 * Q))
        expected = oracle_sessions(rows, gap=2 * Q, **common)
    elif kind == "sliding":
        window = ws.Sliding(ws.Count(3), ws.Count(2), partial=True)
        expected = spl_window(rows, window=window, **common)
    else:
        expected = cumulative(rows, **common)
        return collect(ev.agg(*AGGS), key), sort_output(expected, key)
    return collect(ev.window(window).agg(*AGGS), key), sort_output(expected, key)


@settings(max_examples=10, deadline=None)
@given(rows=event_rows(), kind=st.sampled_from(KINDS),
       key=st.sampled_from([[], ["k"]]))
def test_k_lists_and_histograms_match_the_oracles(
        spark: SparkSession, rows: list[dict[str, Any]], kind: str, key: list[str]) -> None:
    actual, expected = run_both(spark, rows, kind, key)
    assert_rows_match(actual, expected)


FIXED = [("a", 0, 1.5, 5, "x", 0), ("a", 0, -0.0, None, "y", 1), ("a", 1, 0.0, 2, None, 2),
         ("a", 1, math.nan, 2, "x", None), ("a", 3, None, -1, "é", 3),
         ("a", 6, 1.5, 7, "Z", 1), ("b", -3, 2.0, 1, "z", 0), (None, 2, 3.0, 0, "", 2),
         ("a", 7, math.nan, 9, "x", 0), ("a", 7, -2.0, None, "x", 2)]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_on_a_fixed_table(spark: SparkSession, kind: str) -> None:
    """Each kind at least once, whatever hypothesis draws."""
    day = dt.date(2024, 2, 28)
    rows = [{"k": k, "ts": t * Q, "v": v, "i": i, "s": s,
             "d": None if d is None else day + dt.timedelta(days=d)}
            for k, t, v, i, s, d in FIXED]
    actual, expected = run_both(spark, rows, kind, ["k"])
    assert actual and len(actual) == len(expected)
    assert_rows_match(actual, expected)


# ------------------------------------------------------------------ a table by hand


@pytest.fixture(scope="module")
def ev(spark: SparkSession) -> ws.Events:
    data = [("a", 0, 4.0, "p"), ("a", 1, -0.0, "q"), ("a", 2, None, "r"), ("a", 3, 0.0, "s"),
            ("a", 4, math.nan, "p"), ("a", 5, 10.0, "u"), ("a", 6, 0.0, None)]
    df = spark.createDataFrame(data, "k string, t long, v double, name string")
    return ws.events(df.withColumn("ts", F.timestamp_seconds("t")), time="ts", key="k")


def signs(values: list[float]) -> list[float]:
    return [math.copysign(1.0, v) for v in values]


def test_k_lists_by_hand(ev: ws.Events) -> None:
    out = ev.window(ws.Tumbling("10s")).agg(
        ws.first_k("v", 3), ws.last_k("v", 2), ws.top_k("v", 4), ws.bottom_k("v", 3),
        ws.histogram("v"), ws.histogram("name"), ws.top_k("name", 10),
        ws.first_k("v", 2, min_count=7).alias("need7"))
    assert out.columns == ["k", "window_start", "window_end", "time", "first_3_v",
                           "last_2_v", "top_4_v", "bottom_3_v", "histogram_v",
                           "histogram_name", "top_10_name", "need7"]
    fields = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert fields["top_4_v"] == "array<double>"
    assert fields["histogram_name"] == "map<string,bigint>"
    (row,) = out.collect()
    assert row["first_3_v"] == [4.0, -0.0, 0.0]  # the null skipped
    assert signs(row["first_3_v"]) == [1.0, -1.0, 1.0]
    assert row["last_2_v"] == [10.0, 0.0]
    top = row["top_4_v"]
    assert math.isnan(top[0]) and top[1:] == [10.0, 4.0, -0.0]
    assert signs(top[1:]) == [1.0, 1.0, -1.0]  # -0.0 before 0.0: window order
    assert row["bottom_3_v"] == [-0.0, 0.0, 0.0]
    assert signs(row["bottom_3_v"]) == [-1.0, 1.0, 1.0]
    histogram = row["histogram_v"]
    assert {k for k in histogram if not math.isnan(k)} == {4.0, 0.0, 10.0}
    assert histogram[0.0] == 3 and histogram[4.0] == 1 and histogram[10.0] == 1
    assert [histogram[k] for k in histogram if math.isnan(k)] == [1]
    assert all(math.copysign(1.0, k) == 1.0 for k in histogram)  # -0.0 counts as 0.0
    assert row["histogram_name"] == {"p": 2, "q": 1, "r": 1, "s": 1, "u": 1}
    assert row["top_10_name"] == ["u", "s", "r", "q", "p", "p"]
    assert row["need7"] is None  # six values below min_count=7


def test_empty_windows_give_empty_collections(ev: ws.Events) -> None:
    """A window whose values are all null: empty arrays and maps, not nulls."""
    out = ev.window(ws.Rows(0, 0)).agg(ws.top_k("v", 2), ws.histogram("v"),
                                       ws.last_k("name", 1))
    rows = out.orderBy("time").collect()
    assert [r["top_2_v"] for r in rows][2] == []
    assert [r["histogram_v"] for r in rows][2] == {}
    assert [r["last_1_name"] for r in rows][6] == []


# --------------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
@pytest.mark.parametrize("fn", ["first_k", "last_k", "top_k", "bottom_k"])
def test_k_must_be_a_whole_number_from_one(fn: str, bad: Any) -> None:
    with pytest.raises(WispInputError, match=re.escape(
            f"`k` must be a whole number >= 1 (how many values), found {bad!r}")):
        getattr(ws, fn)("v", bad)


@pytest.fixture(scope="module")
def nested(spark: SparkSession) -> ws.Events:
    df = spark.sql("SELECT 'a' AS k, timestamp_seconds(0) AS ts, array(1, 2) AS arr, "
                   "map('x', 1) AS m, 1.0D AS v")
    return ws.events(df, time="ts", key="k")


def test_top_k_of_a_column_without_order_is_refused(nested: ws.Events) -> None:
    for fn, column, shown in [("top_k", "m", "map<string,int>"),
                              ("bottom_k", "arr", "array<int>")]:
        with pytest.raises(WispError, match=re.escape(
                f"`col` must be an orderable column for {fn}(), found "
                f"\"{shown} column {column!r}\"")):
            nested.window(ws.Tumbling("10s")).agg(getattr(ws, fn)(column, 2))


def test_histogram_of_an_array_is_refused(nested: ws.Events) -> None:
    with pytest.raises(WispError, match=re.escape(
            "`col` must be a column of atomic values for histogram(), found "
            "\"array<int> column 'arr'\"")):
        nested.window(ws.Tumbling("10s")).agg(ws.histogram("arr"))


def test_first_k_takes_any_column(nested: ws.Events) -> None:
    (row,) = nested.window(ws.Tumbling("10s")).agg(ws.first_k("arr", 2),
                                                   ws.last_k("m", 1)).collect()
    assert row["first_2_arr"] == [[1, 2]]
    assert row["last_1_m"] == [{"x": 1}]
