"""`ws.asof_join` on Spark: against `pandas.merge_asof` (tests/oracle_asof.py) on random
tables of every time kind, with duplicates, ties, null keys and missing times, in every
direction, with tolerances and without exact matches; the plan (one shuffle, no join);
null times under each policy; column names; and bad input, named."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_asof import matched, merge_asof
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispInputError, WispUnsupportedError

pytestmark = pytest.mark.spark

KINDS = ["long", "double", "decimal", "timestamp", "timestamp_ntz", "date"]
DIRECTIONS = ["backward", "forward", "nearest"]
LEFT_SCHEMA = "a string, b int, t long, half double, id long, v double"
RIGHT_SCHEMA = "a string, b int, t long, half double, rid long, seq int, v double"


def timed(t: Column, half: Column, kind: str) -> Column:
    """A time of `kind` from the integer `t` (or `half` = t / 2, NaN kept, for double)."""
    if kind == "double":
        return half
    if kind == "decimal":
        return half.cast("decimal(6,1)")
    if kind == "timestamp":
        return F.timestamp_seconds(t)
    if kind == "timestamp_ntz":
        return F.timestamp_seconds(t).cast("timestamp_ntz")
    if kind == "date":
        return F.date_from_unix_date(t.cast("int"))
    return t


def spark_tolerance(kind: str, tolerance: int) -> Any:
    """`tolerance` units of `t` as the kind's tolerance (halves for double and decimal)."""
    if kind == "double":
        return tolerance / 2
    if kind == "decimal":
        return Decimal(tolerance) / 2
    if kind in ("timestamp", "timestamp_ntz"):
        return dt.timedelta(seconds=tolerance)
    if kind == "date":
        return dt.timedelta(days=tolerance)
    return tolerance


@st.composite
def tables(draw: st.DrawFn, nan: bool) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Left rows (a, b, t, half, id, v) and right rows (a, b, t, half, rid, seq, v): few
    keys (null among them), few times (ties within and across sides, missing ones)."""

    def time() -> tuple[Any, Any]:
        if draw(st.integers(0, 9)) == 0:
            return None, (math.nan if nan and draw(st.booleans()) else None)
        t = draw(st.integers(-4, 12))
        return t, t / 2

    def key() -> tuple[Any, Any]:
        return draw(st.sampled_from(["x", "y", None])), draw(st.sampled_from([0, 1, None]))

    left = [(*key(), *time(), i, float(i)) for i in range(draw(st.integers(0, 14)))]
    right = [(*key(), *time(), 100 + i, draw(st.integers(0, 3)), 100.0 + i)
             for i in range(draw(st.integers(0, 14)))]
    return left, right


def frame(rows: list[tuple[Any, ...]], columns: list[str]) -> pd.DataFrame:
    data = pd.DataFrame(rows, columns=columns)
    for c in ("a", "b"):
        data[c] = pd.Series([r[columns.index(c)] for r in rows], dtype=object)
    return data


@settings(max_examples=20)
@given(data=st.data(), kind=st.sampled_from(KINDS),
       by=st.sampled_from([[], ["a"], ["a", "b"]]), direction=st.sampled_from(DIRECTIONS),
       exact=st.booleans(), tolerance=st.sampled_from([None, 0, 1, 3]),
       left_events=st.booleans(), by_given=st.booleans())
def test_matches_pandas_merge_asof(spark: SparkSession, data: st.DataObject, kind: str,
                                   by: list[str], direction: str, exact: bool,
                                   tolerance: int | None, left_events: bool,
                                   by_given: bool) -> None:
    left_rows, right_rows = data.draw(tables(nan=kind == "double"))
    left_df = spark.createDataFrame(left_rows, LEFT_SCHEMA)
    right_df = spark.createDataFrame(right_rows, RIGHT_SCHEMA)
    left_df = left_df.withColumn("t", timed(F.col("t"), F.col("half"), kind)).drop("half")
    right_df = right_df.withColumn("t", timed(F.col("t"), F.col("half"), kind)).drop("half")
    left: Any = (ws.events(left_df, time="t", key=by, on_null_time="drop") if left_events
                 else left_df)
    right = ws.events(right_df, time="t", key=by, order="seq", on_null_time="drop")
    result = ws.asof_join(left, right, by=by if by_given else None,
                          direction=direction,  # type: ignore[arg-type]
                          tolerance=None if tolerance is None
                          else spark_tolerance(kind, tolerance),
                          allow_exact_matches=exact)
    rows = result.select("id", "rid", "seq", "v", "v_right").collect()

    numeric = "half" if kind in ("double", "decimal") else "t"
    pandas_left = frame(left_rows, ["a", "b", "t", "half", "id", "v"])
    pandas_right = frame(right_rows, ["a", "b", "t", "half", "rid", "seq", "v"])
    for side in (pandas_left, pandas_right):
        side["t"] = side[numeric].astype("float64")
        side.drop(columns="half", inplace=True)
    if left_events:  # on_null_time="drop": a left row without a time is no output row
        pandas_left = pandas_left[pandas_left["t"].notna()]
    expected = merge_asof(pandas_left, pandas_right, on="t", by=by, direction=direction,
                          tolerance=None if tolerance is None
                          else (tolerance / 2 if numeric == "half" else float(tolerance)),
                          exact=exact, order="seq")
    assert result.columns == list(expected.columns)
    assert {r["id"]: r["rid"] for r in rows} == matched(expected, "id", "rid")
    assert {r["id"]: (r["seq"], r["v"], r["v_right"]) for r in rows} == {
        r["id"]: (plain(r["seq"]), r["v"], plain(r["v_right"]))
        for r in expected.to_dict("records")}


def plain(value: Any) -> Any:
    """pandas' missing value as None, its numbers as Python's."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value


# --------------------------------------------------------------------- the plan


def test_one_shuffle_and_no_join(spark: SparkSession) -> None:
    left = spark.createDataFrame([(1, 1, 1.0)], "k int, t long, v double")
    right = spark.createDataFrame([(1, 0, 2.0)], "k int, t long, w double")
    for direction in DIRECTIONS:
        result = ws.asof_join(left, right, on="t", by="k",
                              direction=direction)  # type: ignore[arg-type]
        plan = result._jdf.queryExecution().executedPlan().toString()
        assert plan.count("Exchange") == 1, plan
        for join in ("Join", "CartesianProduct", "NestedLoop", "Broadcast"):
            assert join not in plan, plan
        w = None if direction == "forward" else 2.0
        assert [tuple(r) for r in result.collect()] == [(1, 1, 1.0, w)]


# ------------------------------------------------------------- a documented example

T0 = dt.datetime(2024, 1, 2, 10, tzinfo=dt.UTC)


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_the_documented_example(spark: SparkSession) -> None:
    """docs/asof.md's example, with the output the page shows."""
    quotes_df = spark.createDataFrame(
        [(at(0), "AAPL", 100.0), (at(1), "MSFT", 50.0), (at(2), "AAPL", 101.0),
         (at(5), "AAPL", 102.0)], "ts timestamp, sym string, bid double")
    trades_df = spark.createDataFrame(
        [(at(0), "AAPL", 5), (at(3), "AAPL", 1), (at(4), "MSFT", 7), (at(9), "AAPL", 2),
         (at(1), "GOOG", 3)], "ts timestamp, sym string, qty int")
    trades = ws.events(trades_df, time="ts", key="sym")
    quotes = ws.events(quotes_df, time="ts", key="sym")
    out = ws.asof_join(trades, quotes, tolerance="2s")
    assert out.columns == ["ts", "sym", "qty", "bid"]
    shown = F.date_format("ts", "yyyy-MM-dd HH:mm:ss").alias("ts")
    rows = out.orderBy("ts", "sym").select(shown, "sym", "qty", "bid").collect()
    assert [tuple(r) for r in rows] == [
        ("2024-01-02 10:00:00", "AAPL", 5, 100.0), ("2024-01-02 10:00:01", "GOOG", 3, None),
        ("2024-01-02 10:00:03", "AAPL", 1, 101.0), ("2024-01-02 10:00:04", "MSFT", 7, None),
        ("2024-01-02 10:00:09", "AAPL", 2, None)]
    nearest = ws.asof_join(trades, quotes, direction="nearest").orderBy("ts", "sym")
    assert [r["bid"] for r in nearest.collect()] == [100.0, None, 101.0, 50.0, 102.0]


# ------------------------------------------------------------------- null times


def test_a_dataframe_left_row_without_time_comes_out_unmatched(spark: SparkSession) -> None:
    left = spark.createDataFrame([(1, None, 0), (1, 5.0, 1), (1, math.nan, 2)],
                                 "k int, t double, id int")
    right = spark.createDataFrame([(1, 1.0, 10), (1, None, 11), (1, math.nan, 12)],
                                  "k int, t double, rid int")
    for direction in DIRECTIONS:
        result = ws.asof_join(left, right, on="t", by="k",
                              direction=direction)  # type: ignore[arg-type]
        got = {r["id"]: r["rid"] for r in result.collect()}
        # a right row without a time (null or NaN) is never matched
        assert got == {0: None, 1: None if direction == "forward" else 10, 2: None}


def test_an_events_side_applies_its_null_time_policy(spark: SparkSession) -> None:
    left_df = spark.createDataFrame([(1, None, 0), (1, 5, 1)], "k int, t long, id int")
    right_df = spark.createDataFrame([(1, 1, 10), (1, None, 11)], "k int, t long, rid int")
    dropped = ws.asof_join(ws.events(left_df, time="t", key="k", on_null_time="drop"),
                           ws.events(right_df, time="t", key="k", on_null_time="drop"))
    assert [(r["id"], r["rid"]) for r in dropped.collect()] == [(1, 10)]
    message = ("`time` column 't' must not be null, found a null time; pass "
               "on_null_time='drop' to drop such rows on purpose (they are counted by "
               "wisp.report)")
    for result in (ws.asof_join(ws.events(left_df, time="t", key="k"), right_df),
                   ws.asof_join(left_df.filter("t is not null"),
                                ws.events(right_df, time="t", key="k"))):
        with pytest.raises(Exception) as failure:
            result.collect()
        found = ws.wisp_error(failure.value)
        assert type(found) is WispInputError
        assert str(found) == message


# ------------------------------------------------------------- keys and columns


def test_keys_of_one_side_only_and_null_keys(spark: SparkSession) -> None:
    """A right key no left row has is no error; a left key no right row has is
    unmatched; a null key matches a null key (as in pandas)."""
    left = spark.createDataFrame([("x", 5, 0), ("z", 5, 1), (None, 5, 2)],
                                 "k string, t long, id int")
    right = spark.createDataFrame([("x", 1, 10), ("y", 1, 11), (None, 2, 12)],
                                  "k string, t long, rid int")
    result = ws.asof_join(left, right, on="t", by="k")
    assert {r["id"]: r["rid"] for r in result.collect()} == {0: 10, 1: None, 2: 12}
    empty = ws.asof_join(left, right.limit(0), on="t", by="k")
    assert {r["id"]: r["rid"] for r in empty.collect()} == {0: None, 1: None, 2: None}
    assert ws.asof_join(left.limit(0), right, on="t", by="k").collect() == []


def test_columns_of_any_name(spark: SparkSession) -> None:
    """Names holding a dot, a backtick or a space, in `on`, `by` and the payloads."""
    left = spark.createDataFrame([("x", 5, "l")], "`a.b` string, `t s` long, `x y` string")
    right = spark.createDataFrame([("x", 4, "r")], "`a.b` string, `t s` long, `v``w` string")
    result = ws.asof_join(left, right, on="t s", by="a.b")
    assert result.columns == ["a.b", "t s", "x y", "v`w"]
    assert [tuple(r) for r in result.collect()] == [("x", 5, "l", "r")]


def test_two_events_with_differently_named_times(spark: SparkSession) -> None:
    """The right's time column keeps its own name in the output (it is no left column)."""
    trades = ws.events(spark.createDataFrame([(5, 1)], "t long, id int"), time="t")
    quotes = ws.events(spark.createDataFrame([(3, 7)], "qt long, bid int"), time="qt")
    result = ws.asof_join(trades, quotes)
    assert result.columns == ["t", "id", "qt", "bid"]
    assert [tuple(r) for r in result.collect()] == [(5, 1, 3, 7)]


def test_suffixes(spark: SparkSession) -> None:
    left = spark.createDataFrame([(5, 1.0, 2.0)], "t long, v double, W double")
    right = spark.createDataFrame([(3, 7.0, 8.0)], "t long, v double, w double")
    result = ws.asof_join(left, right, on="t", suffixes=("_l", "_r"))
    assert result.columns == ["t", "v_l", "W_l", "v_r", "w_r"]
    assert [tuple(r) for r in result.collect()] == [(5, 1.0, 2.0, 7.0, 8.0)]


# ------------------------------------------------------------------- bad input


def bad(spark: SparkSession, message: str, left: str = "k int, t long, v double",
        right: str = "k int, t long, w double", **options: Any) -> None:
    left_df = spark.createDataFrame([], left)
    right_df = spark.createDataFrame([], right)
    with pytest.raises(WispInputError) as error:
        ws.asof_join(left_df, right_df, **options)
    assert str(error.value) == message


def test_bad_tolerance(spark: SparkSession) -> None:
    bad(spark, "`tolerance` must be a number (durations are plain numbers for integer "
        "time column 't'), found '2s'", on="t", tolerance="2s")
    bad(spark, "`tolerance` must be a whole number for integer time column 't', found 1.5",
        on="t", tolerance=1.5)
    bad(spark, "`tolerance` must be a duration such as '2s' or a timedelta for timestamp "
        "time column 't', found 5", left="t timestamp", right="t timestamp", on="t",
        tolerance=5)
    bad(spark, "`tolerance` must be a duration of at least 0 (the largest distance between "
        "a left and its matched right time), found '-2s'", on="t", tolerance="-2s")
    bad(spark, "`tolerance` must be None or a duration such as '250ms', '2s', '1h30m', a "
        "datetime.timedelta, or a number (at least 0), found [1]", on="t", tolerance=[1])
    bad(spark, "`tolerance` must be a whole number of days for date time column 't', found "
        "'12h'", left="t date", right="t date", on="t", tolerance="12h")


def test_on_columns_of_different_types(spark: SparkSession) -> None:
    bad(spark, "`on` must be columns of one type on both sides (left 't': bigint), found "
        "\"int column 't' on the right\"; cast one of them", right="t int", on="t")
    bad(spark, "`on` must be columns of one type on both sides (left 't': timestamp), found "
        "\"timestamp_ntz column 't' on the right\"; cast one of them", left="t timestamp",
        right="t timestamp_ntz", on="t")


def test_bad_on(spark: SparkSession) -> None:
    bad(spark, "`on` must be a column name when neither side is a wisp Events (whose time "
        "column is the default), found None")
    bad(spark, "`on` must be a column of the right table (columns: k, u, w), found 't'",
        right="k int, u long, w double", on="t")
    bad(spark, "`on` must be a timestamp, timestamp_ntz, date, integer, decimal or "
        "floating-point column, found \"string column 't'\"", left="t string",
        right="t string", on="t")
    bad(spark, "`on` must be a column name or None (the time columns of wisp Events), "
        "found ''", on="")
    left = ws.events(spark.createDataFrame([], "t long, u long"), time="t")
    with pytest.raises(WispInputError) as error:
        ws.asof_join(left, spark.createDataFrame([], "u long"), on="u")
    assert str(error.value) == "`on` must be the time column of the left Events ('t') or " \
        "None, found 'u'"


def test_bad_by(spark: SparkSession) -> None:
    bad(spark, "`by` must be a column of the right table (columns: t, w), found 'k'",
        right="t long, w double", on="t", by="k")
    bad(spark, "`by` must be columns of one type on both sides (left 'k': int), found "
        "\"bigint column 'k' on the right\"; cast one of them", right="k long, t long",
        on="t", by="k")
    bad(spark, "`by` must be columns of single values (numbers, strings, booleans, binary, "
        "times), found \"array<int> column 'k'\"", left="k array<int>, t long",
        right="k array<int>, t long", on="t", by="k")
    bad(spark, "`by` must be columns other than the `on` column, found 't'", on="t", by="t")
    bad(spark, "`by` must be distinct column names, found ['k', 'k']", on="t", by=["k", "k"])
    bad(spark, "`by` must be a column name, a list of column names or None, found 3",
        on="t", by=3)
    left = ws.events(spark.createDataFrame([], "k int, j int, t long"), time="t", key="k")
    right = ws.events(spark.createDataFrame([], "k int, j int, t long"), time="t", key="j")
    with pytest.raises(WispInputError) as error:
        ws.asof_join(left, right)
    assert str(error.value) == ("`by` must be the columns to match, given when the two "
                                "Events have different keys (left ['k'], right ['j']), "
                                "found None")
    assert ws.asof_join(left, right, by=["k", "j"]).columns == ["k", "j", "t"]


def test_bad_options(spark: SparkSession) -> None:
    bad(spark, "`direction` must be one of 'backward', 'forward', 'nearest', found "
        "'backwards'; did you mean 'backward'?", on="t", direction="backwards")
    bad(spark, "`allow_exact_matches` must be True or False, found 'yes'", on="t",
        allow_exact_matches="yes")
    bad(spark, "`suffixes` must be two different strings (one for each side), found "
        "('', '')", on="t", suffixes=("", ""))
    bad(spark, "`suffixes` must be a pair of strings, such as ('', '_right'), found "
        "'_right'", on="t", suffixes="_right")
    bad(spark, "`suffixes` must be suffixes that keep the output's column names distinct, "
        "found ('', '_right'); 'w_right' would name two columns",
        left="k int, t long, w double, w_right double", right="k int, t long, w double", on="t",
        by="k")


def test_bad_sides(spark: SparkSession) -> None:
    df = spark.createDataFrame([], "t long")
    with pytest.raises(WispInputError) as error:
        ws.asof_join([1], df, on="t")  # type: ignore[arg-type]
    assert str(error.value) == "`left` must be a wisp Events or a PySpark DataFrame, " \
        "found 'list'"
    with pytest.raises(WispInputError) as error:
        ws.asof_join(df, spark.createDataFrame([], "t long, T long"), on="t")
    assert str(error.value).startswith("`df` must be a DataFrame whose column names are "
                                       "distinct, found the columns 't' and 'T'")
    stream = spark.readStream.format("rate").load()
    with pytest.raises(WispUnsupportedError) as refused:
        ws.asof_join(df.withColumnRenamed("t", "timestamp"), stream, on="timestamp")
    assert str(refused.value) == ("`right` must be a batch table (an as-of join of streams "
                                  "is not supported), found a streaming DataFrame")
