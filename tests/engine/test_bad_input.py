"""Bad arguments, bad schemas and bad data: every one is a `wisp.WispError` whose message
names the parameter in backticks, states what was expected and shows what was found.

Schema and argument checks need a DataFrame but run no Spark job; the data checks (null
time) run a few small actions.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispError, WispInputError, WispUnsupportedError
from wisp.spec.windows import Window
from wisp.windowed import run

pytestmark = pytest.mark.spark

SCHEMA = ("ts timestamp, e timestamp, i int, n long, d date, dec decimal(10,2), "
          "k string, k2 int, v double, s string, seq long, arr array<bigint>, "
          "m map<string,int>")
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def sorted_rows(df: DataFrame, *columns: str) -> list[Row]:
    """`df.collect()` sorted in Python by `columns`, nulls first (no Spark sort job)."""
    return sorted(df.collect(),
                  key=lambda r: tuple((r[c] is not None, r[c]) for c in columns))


@pytest.fixture(scope="module")
def df(spark: SparkSession) -> DataFrame:
    rows = [
        (T0, T0 + dt.timedelta(seconds=5), 1, 10, dt.date(2024, 1, 1), Decimal("1.00"),
         "a", 1, 1.0, "x", 1, [1], {"a": 1}),
        (T0 + dt.timedelta(seconds=1), None, 2, 20, dt.date(2024, 1, 2), Decimal("1.01"),
         "a", 1, 2.0, "y", 2, [2], {"b": 2}),
        (T0 + dt.timedelta(seconds=3), None, 3, 30, dt.date(2024, 1, 4), Decimal("1.03"),
         "b", 2, 4.0, "z", 3, [3], {"c": 3}),
    ]
    return spark.createDataFrame(rows, SCHEMA)


@pytest.fixture(scope="module")
def ev(df: DataFrame) -> ws.Events:
    return ws.events(df, time="ts", key="k")


@contextmanager
def fails(*fragments: str, error: type[Exception] = WispInputError) -> Iterator[None]:
    """Expect `error` whose message contains every fragment, in order."""
    pattern = ".*".join(re.escape(f) for f in fragments)
    with pytest.raises(error, match=pattern) as caught:
        yield
    assert isinstance(caught.value, WispError)


# ------------------------------------------------------------------------------ df


@pytest.mark.parametrize("value, found", [([("a", 1)], "'list'"), (None, "'NoneType'"),
                                          ("table", "'str'")])
def test_df_must_be_a_dataframe(value: object, found: str) -> None:
    with fails("`df` must be a PySpark DataFrame", f"found {found}"):
        ws.events(value, time="ts")  # type: ignore[arg-type]
    assert issubclass(WispInputError, ValueError)


def test_a_streaming_dataframe_needs_a_lateness(spark: SparkSession) -> None:
    """Streams bind with a `lateness` (tests/streaming covers them whole)."""
    stream = spark.readStream.format("rate").load()
    assert stream.isStreaming
    with pytest.raises(WispError, match=re.escape("`lateness` must be a positive duration "
                                                  "for a streaming DataFrame")):
        ws.events(stream, time="timestamp")
    assert ws.events(stream, time="timestamp", lateness="1s").streaming


# ---------------------------------------------------------------------------- time


def test_time_missing_column_with_did_you_mean(df: DataFrame) -> None:
    with fails("`time` must be a column of the DataFrame", "columns: ts, e, i",
               "found 'tss'", "did you mean 'ts'?"):
        ws.events(df, time="tss")


def test_time_missing_column_without_near_miss(df: DataFrame) -> None:
    with pytest.raises(WispInputError) as caught:
        ws.events(df, time="zzzzzz")
    message = str(caught.value)
    assert message.startswith("`time` must be a column of the DataFrame")
    assert "found 'zzzzzz'" in message
    assert "did you mean" not in message


@pytest.mark.parametrize("value", [None, 3, ""])
def test_time_must_be_a_name(df: DataFrame, value: object) -> None:
    with fails("`time` must be a column name", f"found {value!r}"):
        ws.events(df, time=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("column, shown", [("s", "string column 's'"),
                                           ("arr", "array<bigint> column 'arr'"),
                                           ("m", "map<string,int> column 'm'")])
def test_time_of_unsupported_type(df: DataFrame, column: str, shown: str) -> None:
    with fails("`time` must be a timestamp, timestamp_ntz, date, integer, decimal or "
               "floating-point column", shown):
        ws.events(df, time=column)


# ----------------------------------------------------------------------------- end


def test_end_missing_column(df: DataFrame) -> None:
    with fails("`end` must be a column of the DataFrame", "found 'ee'", "did you mean 'e'"):
        ws.events(df, time="ts", end="ee")


@pytest.mark.parametrize("time, end, shown", [
    ("ts", "i", "int column 'i'"),
    ("ts", "d", "date column 'd'"),
    ("i", "n", "bigint column 'n'"),
])
def test_end_type_must_match_time(df: DataFrame, time: str, end: str, shown: str) -> None:
    expected = df.schema[time].dataType.simpleString()
    with fails("`end` must be a column of the same type as `time`", f"({expected})", shown):
        ws.events(df, time=time, end=end)


# ----------------------------------------------------------------------------- key


def test_key_missing_column(df: DataFrame) -> None:
    with fails("`key` must be a column of the DataFrame", "found 'kk'", "did you mean 'k'"):
        ws.events(df, time="ts", key="kk")
    with fails("`key` must be a column of the DataFrame", "found 'nope'"):
        ws.events(df, time="ts", key=["k", "nope"])


def test_key_of_map_type(df: DataFrame) -> None:
    with fails("`key` must be columns that Spark can group by (not maps)",
               "map column 'm'"):
        ws.events(df, time="ts", key=["k", "m"])


def test_key_duplicates(df: DataFrame) -> None:
    with fails("`key` must be distinct column names", "found ['k', 'k2', 'k']"):
        ws.events(df, time="ts", key=["k", "k2", "k"])


def test_key_equal_to_time_or_end(df: DataFrame) -> None:
    with fails("`key` must be columns other than the `time` column", "found 'ts'"):
        ws.events(df, time="ts", key=["k", "ts"])
    with fails("`key` must be columns other than the `end` column", "found 'e'"):
        ws.events(df, time="ts", end="e", key="e")


@pytest.mark.parametrize("value", [5, ["k", 5], [None], ("k", 2.5), {"k"}, {"k": 1}])
def test_key_must_be_names(df: DataFrame, value: Any) -> None:
    with fails("`key` must be a column name", f"found {value!r}"):
        ws.events(df, time="ts", key=value)


@pytest.mark.parametrize("value", [[], ()], ids=["list", "tuple"])
def test_empty_key_list_means_one_global_stream(df: DataFrame, value: Any) -> None:
    # documented choice (docs/semantics.md): an empty key list is like key=None
    assert ws.events(df, time="ts", key=value).key == ()


def test_key_empty_string(df: DataFrame) -> None:
    with fails("`key` must be a column name", "found ''"):
        ws.events(df, time="ts", key="")


# ------------------------------------------------------------ order and on_null_time


def test_order_missing_column(df: DataFrame) -> None:
    with fails("`order` must be a column of the DataFrame", "found 'sq'", "did you mean"):
        ws.events(df, time="ts", order="sq")


@pytest.mark.parametrize("column, shown", [("arr", "array<bigint> column 'arr'"),
                                           ("m", "map<string,int> column 'm'")])
def test_order_not_orderable(df: DataFrame, column: str, shown: str) -> None:
    with fails("`order` must be an orderable column (number, string, time)", shown):
        ws.events(df, time="ts", order=column)


@pytest.mark.parametrize("value", ["skip", "DROP", None, True])
def test_on_null_time_unknown(df: DataFrame, value: Any) -> None:
    with fails("`on_null_time` must be 'error' or 'drop'", f"found {value!r}"):
        ws.events(df, time="ts", on_null_time=value)


# ------------------------------------------------------------ window() and agg()


@pytest.mark.parametrize("value", ["10s", None, ws.Count(3), ws.daily()])
def test_window_given_a_non_window(ev: ws.Events, value: Any) -> None:
    with fails("`window` must be a wisp window such as wisp.Rows(-2, 0)",
               f"found {value!r}"):
        ev.window(value)


def test_agg_without_aggregation(ev: ws.Events) -> None:
    with fails("`aggregations` must be at least one aggregation such as wisp.count()",
               "found 'none'"):
        ev.agg()
    with fails("`aggregations` must be at least one aggregation"):
        ev.window(ws.Rows(-1, 0)).agg()


@pytest.mark.parametrize("make", [lambda: "v", lambda: F.sum("v"), lambda: 3, lambda: None],
                         ids=["str", "spark-column", "int", "none"])
def test_agg_given_a_non_aggregation(ev: ws.Events, make: Any) -> None:
    value = make()
    with fails("`aggregations` must be wisp aggregations such as wisp.sum('v')",
               f"found {value!r}"):
        ev.agg(ws.count(), value)
    with fails("`aggregations` must be wisp aggregations"):
        ev.window(ws.Range.past("2s")).agg(value)


def test_aggregation_column_missing(ev: ws.Events) -> None:
    with fails("`col` must be a column of the DataFrame for sum()", "found 'vv'",
               "did you mean 'v'"):
        ev.agg(ws.sum("vv"))
    with fails("`col` must be a column of the DataFrame for collect()", "found 'arrr'",
               "did you mean 'arr'"):
        ev.window(ws.Rows(-1, 0)).agg(ws.count(), ws.collect("arrr"))


@pytest.mark.parametrize("fn", [ws.sum, ws.mean, ws.stddev, ws.variance])
def test_numeric_aggregation_on_string(ev: ws.Events, fn: Any) -> None:
    with fails(f"`col` must be a numeric column for {fn.__name__}()", "string column 's'"):
        ev.agg(fn("s"))
    with fails(f"`col` must be a numeric column for {fn.__name__}()",
               "array<bigint> column 'arr'"):
        ev.window(ws.Rows(-1, 0)).agg(fn("arr"))


@pytest.mark.parametrize("fn", [ws.min, ws.max])
def test_min_max_on_array(ev: ws.Events, fn: Any) -> None:
    with fails(f"`col` must be an orderable column for {fn.__name__}()",
               "array<bigint> column 'arr'"):
        ev.window(ws.Rows(-1, 0)).agg(fn("arr"))
    with fails(f"`col` must be an orderable column for {fn.__name__}()",
               "map<string,int> column 'm'"):
        ev.agg(fn("m"))


def test_duplicate_output_names(ev: ws.Events) -> None:
    with fails("`alias` must be output names distinct from the key columns, window_start, "
               "window_end, time and each other", "found 'sum_v'"):
        ev.agg(ws.sum("v"), ws.sum("v"))
    with fails("`alias` must be output names distinct", "found 'count'"):
        ev.window(ws.Rows(-1, 0)).agg(ws.count(), ws.max("v").alias("count"))


@pytest.mark.parametrize("name", ["time", "window_start", "window_end", "k"])
def test_alias_clashes_with_output_columns(ev: ws.Events, name: str) -> None:
    with fails("`alias` must be output names distinct", f"found {name!r}"):
        ev.agg(ws.sum("v").alias(name))


def test_alias_must_be_a_name() -> None:
    with fails("`name` must be a non-empty column name", "found ''"):
        ws.sum("v").alias("")


@pytest.mark.parametrize("fn", [ws.sum, ws.collect, ws.count])
def test_aggregation_column_must_be_a_name(fn: Any) -> None:
    with fails("`col` must be a column name for", "found 3"):
        fn(3)


# ------------------------------------------------------------ durations vs time kind


def test_time_duration_on_integer_time(df: DataFrame) -> None:
    ev = ws.events(df, time="i", key="k")
    with fails("`start` must be a number (durations are plain numbers for integer time "
               "column 'i')", "found '-2s'"):
        ev.window(ws.Range("-2s", "2s")).agg(ws.count())
    with fails("`end` must be a number", "found '3s'"):
        ev.window(ws.Range(0, "3s")).agg(ws.count())
    with fails("`start` must be a number", "found datetime.timedelta(days=-1"):
        ev.window(ws.Range(-dt.timedelta(seconds=2), 0)).agg(ws.count())


def test_integer_time_needs_whole_numbers(df: DataFrame) -> None:
    ev = ws.events(df, time="n", key="k")
    with fails("`start` must be a whole number for integer time column 'n'", "found -1.5"):
        ev.window(ws.Range(-1.5, 0)).agg(ws.count())


def test_number_on_timestamp_time(ev: ws.Events) -> None:
    with fails("`start` must be a duration such as '2s' or a timedelta for timestamp time "
               "column 'ts'", "found -2"):
        ev.window(ws.Range(-2, 0)).agg(ws.count())
    with fails("`end` must be a duration such as '2s'", "found 1.5"):
        ev.window(ws.Range(0, 1.5)).agg(ws.count())


def test_date_time_needs_whole_days(spark: SparkSession, df: DataFrame) -> None:
    ev = ws.events(df, time="d", key="k")
    with fails("`start` must be a whole number of days for date time column 'd'",
               "found '-2h'"):
        ev.window(ws.Range("-2h", 0)).agg(ws.count())
    with fails("`end` must be a whole number of days", "found '1d1us'"):
        ev.window(ws.Range("-1d", "1d1us")).agg(ws.count())
    out = ev.window(ws.Range("-2d", 0)).agg(ws.count())
    rows = sorted_rows(out.select("k", "time", "window_start", "count"), "k", "time")
    assert [tuple(r) for r in rows] == [
        ("a", dt.date(2024, 1, 1), dt.date(2023, 12, 30), 1),
        ("a", dt.date(2024, 1, 2), dt.date(2023, 12, 31), 2),
        ("b", dt.date(2024, 1, 4), dt.date(2024, 1, 2), 1),
    ]


def test_decimal_time_scale(df: DataFrame) -> None:
    ev = ws.events(df, time="dec", key="k")
    with fails("`start` must be a number with at most 2 decimal places for decimal time "
               "column 'dec'", "found -0.001"):
        ev.window(ws.Range(-0.001, 0)).agg(ws.count())
    with fails("`start` must be a number with at most 2 decimal places",
               "found Decimal('-0.005')"):
        ev.window(ws.Range(Decimal("-0.005"), 0)).agg(ws.count())
    with fails("`start` must be a number (durations are plain numbers for decimal time"):
        ev.window(ws.Range("-1s", 0)).agg(ws.count())
    out = ev.window(ws.Range(Decimal("-0.01"), 0)).agg(ws.count())
    rows = sorted_rows(out.select("k", "time", "window_start", "count"), "k", "time")
    assert [tuple(r) for r in rows] == [
        ("a", Decimal("1.00"), Decimal("0.99"), 1),
        ("a", Decimal("1.01"), Decimal("1.00"), 2),
        ("b", Decimal("1.03"), Decimal("1.02"), 1),
    ]


# ---------------------------------------------------------------- unsupported


class Wobbly(Window):
    """A window kind wisp has no rule for."""


def test_unknown_window_kind_is_unsupported(ev: ws.Events) -> None:
    windowed = ev.window(Wobbly())  # binding alone is fine; agg() is where it is refused
    with pytest.raises(WispUnsupportedError) as caught:
        windowed.agg(ws.count())
    assert str(caught.value) == ("`window` must be a window kind this version of wisp "
                                 "executes, found Wobbly")


@pytest.mark.parametrize(("window", "name"), [
    (ws.Sliding(ws.Count(3)), "Sliding"),
    (ws.Tumbling(ws.Count(2)), "Tumbling by policy"),
    (ws.Since(ws.daily()), "Since"),
    (ws.Trailing(2, ws.daily()), "Trailing"),
    (ws.Rows(-1, 0), "Rows"),
    (ws.Range.past(10), "Range"),
    (None, "cumulative aggregation (Events.agg)"),
], ids=lambda w: getattr(w, "kind", str(w)))
def test_point_event_windows_refuse_interval_events(df: DataFrame, window: Window | None,
                                                    name: str) -> None:
    ev = ws.events(df, time="ts", end="e", key="k")
    with pytest.raises(WispUnsupportedError) as caught:
        if window is None:
            ev.agg(ws.count())
        else:
            ev.window(window).agg(ws.count())
    assert str(caught.value) == (
        "`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
        "Session for interval events (bound with `end`: column 'e'), found "
        f"{name}, which reads point events; bind the events without `end` to window their "
        "start times")


@pytest.mark.parametrize("window", [ws.Hopping(10, 5), ws.Tumbling(10), ws.Snapshot(),
                                    ws.CountByStartTime(2)], ids=lambda w: w.kind)
def test_interval_windows_refuse_float_time(df: DataFrame, window: Window) -> None:
    ev = ws.events(df, time="v", key="k")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.window(window).agg(ws.count())
    assert str(caught.value) == (
        f"`time` must be a timestamp, date, integer or decimal column for {window.kind} "
        "windows (they need exact ticks), found float column 'v'")


def test_time_weighted_mean_unsupported(df: DataFrame) -> None:
    ev = ws.events(df, time="ts", key="k")
    expected = ("`window` must be one of Hopping, Tumbling, Snapshot, CountByStartTime for "
                "time_weighted_mean (it weighs each value by its lifetime within the "
                "window), found {}")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.window(ws.Rows(-1, 0)).agg(ws.time_weighted_mean("v"))
    assert str(caught.value) == expected.format("Rows")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.agg(ws.time_weighted_mean("v"))
    assert str(caught.value) == expected.format("cumulative aggregation (Events.agg)")


def test_bad_strategy(ev: ws.Events) -> None:
    with fails("`strategy` must be one of native-running, arrow-frames or None",
               "found 'fast'"):
        run(ev, None, [ws.count()], strategy="fast")  # type: ignore[arg-type]
    with fails("`strategy` must be 'arrow-frames'", "found 'native-running'"):
        run(ev, ws.Rows(-1, 0), [ws.count()], strategy="native-running")
    with fails("`strategy` must be 'arrow-frames'", "found 'native-running'"):
        run(ev, ws.Range.past("1s"), [ws.count()], strategy="native-running")
    with fails("`strategy` must be 'arrow-frames'", "found 'native-running'"):
        run(ev, None, [ws.udaf(lambda v, t: 0.0, "v")], strategy="native-running")


# -------------------------------------------------------------------------- udaf


def test_udaf_bad_returns(ev: ws.Events) -> None:
    spread = ws.udaf(lambda v, t: 0.0, "v", returns="doubel")
    with fails("`returns` must be a Spark type as a DDL string such as 'double'",
               "found 'doubel'"):
        ev.window(ws.Rows(-1, 0)).agg(spread)
    with fails("`returns` must be a Spark type as a DDL string", "found 'array<'"):
        ev.agg(ws.udaf(lambda v, t: 0.0, "v", returns="array<"))


@pytest.mark.parametrize("returns", ["", 5, None])
def test_udaf_returns_must_be_a_string(returns: Any) -> None:
    with fails("`returns` must be a Spark type as a DDL string", f"found {returns!r}"):
        ws.udaf(lambda v, t: 0.0, "v", returns=returns)


def test_udaf_func_must_be_callable() -> None:
    with fails("`func` must be a callable f(values, times)", "found 'max'"):
        ws.udaf("max", "v")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- null time


@pytest.fixture(scope="module")
def null_df(spark: SparkSession) -> DataFrame:
    """Five rows, two with a null time; `x` is the same time as a double with one NaN
    and one null."""
    rows = [
        ("a", 1, 1.0, 10),
        ("a", None, float("nan"), 20),
        ("a", 3, 3.0, 30),
        ("b", None, None, 40),
        ("b", 5, 5.0, 50),
    ]
    return spark.createDataFrame(rows, "k string, t long, x double, v long")


def _action_fails_naming(result: DataFrame, column: str) -> None:
    with pytest.raises(Exception) as caught:
        result.collect()
    text = str(caught.value)
    assert "must not be null" in text
    assert f"`time` column {column!r}" in text


def test_null_time_fails_the_query_by_default(null_df: DataFrame) -> None:
    ev = ws.events(null_df, time="t", key="k")
    _action_fails_naming(ev.agg(ws.count()), "t")
    _action_fails_naming(ev.window(ws.Rows(-1, 0)).agg(ws.sum("v")), "t")


def test_nan_time_fails_the_query_by_default(null_df: DataFrame) -> None:
    ev = ws.events(null_df.filter(F.col("k") == "a"), time="x", key="k")
    _action_fails_naming(ev.window(ws.Range(-1.0, 0)).agg(ws.count()), "x")


def test_validate_counts_null_times(null_df: DataFrame) -> None:
    with fails("`time` column 't' must not be null, found 2 rows with a null time",
               "on_null_time='drop'"):
        ws.events(null_df, time="t", key="k").validate()


def test_validate_counts_nan_as_null_time(null_df: DataFrame) -> None:
    with fails("`time` column 'x' must not be null, found 2 rows with a null time"):
        ws.events(null_df, time="x").validate()
    with fails("`time` column 'x' must not be null, found 1 rows"):
        ws.events(null_df.filter(F.col("k") == "a"), time="x").validate()


def test_validate_passes(null_df: DataFrame) -> None:
    assert ws.events(null_df.filter(F.col("t").isNotNull()), time="t").validate() is None
    assert ws.events(null_df, time="t", on_null_time="drop").validate() is None


def test_drop_null_time_native(null_df: DataFrame) -> None:
    result = ws.events(null_df, time="t", key="k", on_null_time="drop").agg(
        ws.count(), ws.sum("v"))
    rows = sorted_rows(result.select("k", "time", "count", "sum_v"), "k", "time")
    assert [tuple(r) for r in rows] == [("a", 1, 1, 10), ("a", 3, 2, 40), ("b", 5, 1, 50)]
    assert ws.report(result) == {"rows_in": 5, "rejected_null_time": 2}


def test_drop_null_time_frames(null_df: DataFrame) -> None:
    result = ws.events(null_df, time="t", key="k", on_null_time="drop").window(
        ws.Range(-5, 0)).agg(ws.sum("v"))
    rows = sorted_rows(result.select("k", "time", "sum_v"), "k", "time")
    assert [tuple(r) for r in rows] == [("a", 1, 10), ("a", 3, 40), ("b", 5, 50)]
    assert ws.report(result) == {"rows_in": 5, "rejected_null_time": 2}


def test_drop_nan_time(null_df: DataFrame) -> None:
    result = ws.events(null_df, time="x", key="k", on_null_time="drop").window(
        ws.Rows(-1, 0, partial=True)).agg(ws.collect("v"))
    rows = sorted_rows(result.select("k", "time", "collect_v"), "k", "time")
    assert [tuple(r) for r in rows] == [("a", 1.0, [10]), ("a", 3.0, [10, 30]),
                                        ("b", 5.0, [50])]
    assert ws.report(result) == {"rows_in": 5, "rejected_null_time": 2}


def test_report_after_a_partial_action_counts_every_input_row(spark: SparkSession) -> None:
    # under "drop" rows are counted where they are read, before the shuffle, which every
    # action runs whole: counted later (on the output rows or per batch), take(1) would
    # see a few; under "error" the input is counted when the report is asked for
    df = spark.range(1_000).select((F.col("id") % 7).alias("k"), F.col("id").alias("t"),
                                   F.lit(1).alias("v"))
    for policy in ("drop", "error"):
        for window in (None, ws.Tumbling(ws.Count(10))):
            events = ws.events(df, time="t", key="k", on_null_time=policy)
            result = (events if window is None else events.window(window)).agg(ws.sum("v"))
            assert len(result.take(1)) == 1
            assert ws.report(result) == {"rows_in": 1_000, "rejected_null_time": 0}


def test_only_a_query_that_drops_rows_counts_them_as_it_reads(null_df: DataFrame) -> None:
    # under "error" no row can be dropped: the query carries no observation (whose cost
    # is the scan's, on every run) and the report counts the input when asked, even
    # before any action
    clean = null_df.filter(F.col("t").isNotNull())
    results = {policy: ws.events(clean, time="t", key="k", on_null_time=policy).agg(
        ws.sum("v")) for policy in ("error", "drop")}
    plans = {policy: result._jdf.queryExecution().analyzed().toString()
             for policy, result in results.items()}
    assert "CollectMetrics" not in plans["error"]
    assert "CollectMetrics" in plans["drop"]
    assert ws.report(results["error"]) == {"rows_in": 3, "rejected_null_time": 0}
    assert results["drop"].count() == 3
    assert ws.report(results["drop"]) == {"rows_in": 3, "rejected_null_time": 0}


def test_report_without_null_times(null_df: DataFrame) -> None:
    clean = null_df.filter(F.col("t").isNotNull())
    result = ws.events(clean, time="t").agg(ws.count())
    assert result.count() == 3
    assert ws.report(result) == {"rows_in": 3, "rejected_null_time": 0}


# ------------------------------------------------------------ explain and report


@pytest.mark.parametrize("tool", [ws.explain, ws.report])
def test_tools_reject_foreign_dataframes(df: DataFrame, ev: ws.Events, tool: Any) -> None:
    with fails("`result` must be a DataFrame returned by wisp's agg()", "found 'DataFrame'"):
        tool(df)
    derived = ev.agg(ws.count()).select("k", "count")  # a new DataFrame, not wisp's
    with fails("`result` must be a DataFrame returned by wisp's agg()", "found 'DataFrame'"):
        tool(derived)
    with fails("`result` must be a DataFrame returned by wisp's agg()", "found 'int'"):
        tool(42)
    with fails("`result` must be a DataFrame returned by wisp's agg()", "found 'str'"):
        tool("result")


def test_explain_on_a_wisp_result(ev: ws.Events, capsys: pytest.CaptureFixture[str]) -> None:
    text = ws.explain(ev.agg(ws.count()))
    assert "cumulative aggregation per key (k)" in text
    assert "Strategy " in text
    assert text in capsys.readouterr().out
