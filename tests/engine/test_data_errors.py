"""Bad data found while a query runs reaches the caller wrapped in Spark's own exception;
`ws.wisp_error` gives back wisp's error (class and message, naming the column). Also:
`Range` windows beyond the 64-bit tick range, a udaf that returns another type than it
declares, and `ws.report` asked before any action."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.windowed import run

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
TICK_RANGE = ("`time` column 't' must keep every window bound within the 64-bit tick "
              "range, found a bound beyond it (a time too close to the limits of the range "
              "for this window; for a decimal time, cast to a decimal with fewer decimal "
              "places)")


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def caught(action: Callable[[], object]) -> tuple[Exception, ws.WispError | None]:
    """The exception `action` raises, and the `WispError` rebuilt from it."""
    with pytest.raises(Exception) as failure:
        action()
    assert not isinstance(failure.value, ws.WispError)  # Spark's own exception type
    return failure.value, ws.wisp_error(failure.value)


def assert_data_error(result: DataFrame, cls: type[ws.WispError], message: str) -> None:
    """Collecting `result` fails; the rebuilt error has class `cls` (exactly) and text
    `message`, and keeps the Spark exception as its cause."""
    error, found = caught(result.collect)
    assert found is not None, str(error)
    assert type(found) is cls
    assert str(found) == message
    assert found.__cause__ is error
    assert isinstance(found, ws.WispError)


# ------------------------------------------------- data checks that Spark runs


def test_null_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(at(0), 1.0), (None, 2.0)], "ts timestamp, v double")
    assert_data_error(ws.events(df, time="ts").agg(ws.sum("v")), ws.WispInputError,
                      "`time` column 'ts' must not be null, found a null time; pass "
                      "on_null_time='drop' to drop such rows on purpose (they are counted "
                      "by wisp.report)")


def test_end_before_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(5, 2, 1.0)], "t long, e long, v double")
    result = ws.events(df, time="t", end="e").window(ws.Tumbling(2)).agg(ws.count())
    assert_data_error(result, ws.WispInputError, "`end` column 'e' must not be before the "
                      "`time` column 't', found end 2 < time 5")


def test_null_delta_attribute(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, None, 1.0)], "t long, a double, v double")
    result = ws.events(df, time="t").window(ws.Sliding(ws.Delta("a", 1.0))).agg(ws.count())
    assert_data_error(result, ws.WispInputError, "`attr` column 'a' must not be null or NaN "
                      "(a Delta policy compares its values), found a null or NaN value")


def test_obsolete_violation(spark: SparkSession) -> None:
    source = ws.events(spark.createDataFrame([(at(1), 1.0)], "ts timestamp, v double"),
                       time="ts")
    anchors = spark.createDataFrame([(at(1), at(0.5)), (at(2), at(0.25))],
                                    "at timestamp, ob timestamp")
    window = ws.Dynamic(ws.events(anchors, time="at"), start="-1s", end="0s", obsolete="ob")
    assert_data_error(source.window(window).agg(ws.count()), ws.WispInputError,
                      "`obsolete` must not decrease from one anchor to the next, found "
                      "obsolete 2024-01-01 00:00:00.250000 UTC at the anchor at time "
                      "2024-01-01 00:00:02.000000 UTC after obsolete 2024-01-01 "
                      "00:00:00.500000 UTC of the anchor before it")


def test_orphan_and_unknown_edges(spark: SparkSession) -> None:
    orphan = spark.createDataFrame([(1, "end", 7)], "t long, edge string, id int")
    ev = ws.from_edges(orphan, time="t", edge="edge", id="id")
    assert_data_error(ev.window(ws.Snapshot()).agg(ws.count()), ws.WispInputError,
                      "`edge` column 'edge' must close an interval opened by a start edge "
                      "of the same `id` ('id'), found an end edge without a start for id 7")
    unknown = spark.createDataFrame([(1, "begin", 7)], "t long, edge string, id int")
    ev = ws.from_edges(unknown, time="t", edge="edge", id="id")
    error, found = caught(ev.df.collect)
    assert isinstance(found, ws.WispInputError), str(error)
    assert str(found).startswith("`edge` column 'edge' must hold 'start' or 'end', found ")


def test_a_native_window_beyond_the_tick_range(spark: SparkSession) -> None:
    df = spark.createDataFrame([(LONG_MAX - 5, 1.0)], "t long, v double")
    result = ws.events(df, time="t").window(ws.Tumbling(10)).agg(ws.sum("v"))
    assert "Strategy native-buckets:" in ws.explain(result)
    assert_data_error(result, ws.WispInputError, TICK_RANGE)


def test_a_time_outside_the_calendar(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.datetime(1, 1, 1, tzinfo=dt.UTC), 1.0)],
                               "ts timestamp, v double")
    result = ws.events(df, time="ts").window(ws.Since(ws.daily())).agg(ws.count())
    error, found = caught(result.collect)
    assert isinstance(found, ws.WispInputError), str(error)
    assert str(found).startswith("`time` must lie in the years 0002..9998 for calendar "
                                 "ticks, found 0001-01-01")


# ------------------------------------------------ errors the Python worker raises


def test_a_kernel_window_beyond_the_tick_range(spark: SparkSession) -> None:
    df = spark.createDataFrame([(LONG_MAX - 5, 1.0)], "t long, v double")
    result = run(ws.events(df, time="t"), ws.Tumbling(10), [ws.sum("v")],
                 strategy="arrow-intervals")
    assert_data_error(result, ws.WispInputError, TICK_RANGE)


def test_a_clock_with_too_many_ticks(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0, 1.0), (10**9, 1.0)], "t long, v double")
    window = ws.Dynamic(ws.clock(1), start=-1, end=0)
    assert_data_error(ws.events(df, time="t").window(window).agg(ws.count()),
                      ws.WispInputError,
                      "`every` must make at most max_ticks=10,000,000 clock ticks per key, "
                      "found about 1,000,000,001 for one key; pass clock(..., max_ticks=...) "
                      "to allow more, or a larger `every` or a shorter span")


def test_a_decimal_time_beyond_64_bit_ticks(spark: SparkSession) -> None:
    df = spark.createDataFrame([(Decimal(10), Decimal("12.5"))],
                               "t decimal(38,18), e decimal(38,18)")
    result = ws.events(df, time="t", end="e").window(ws.Snapshot()).agg(ws.count())
    assert_data_error(result, ws.WispInputError,
                      "a decimal(38, 18) time or attribute holds a value whose ticks (units "
                      "of 10^-18) leave 64 bits; windows are computed on 64-bit ticks: cast "
                      "the column to a decimal with fewer decimal places, e.g. "
                      "decimal(38, 6)")


@pytest.mark.parametrize("window", [ws.Rows(-1, 0), ws.Tumbling(10), ws.Session(5)],
                         ids=lambda w: w.kind)
def test_a_udaf_returning_another_type(spark: SparkSession, window: object) -> None:
    df = spark.createDataFrame([(1, 1.0), (2, 2.0)], "t long, v double")
    label = ws.udaf(lambda v, t: "many" if len(v) > 1 else float(len(v)), "v").alias(
        "label")
    result = ws.events(df, time="t").window(window).agg(label)  # type: ignore[arg-type]
    assert_data_error(result, ws.WispInputError,
                      "`returns` of udaf 'label' must be the type of its results, found "
                      "returns='double' (double) and the result 'many' (str), which does not "
                      "convert to it; return values of the declared type, or declare the "
                      "type the function returns")


def test_a_lifetimes_udaf_returning_another_type(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, 3, 1.0)], "t long, e long, v double")
    spans = ws.udaf(lambda v, s, e: [int(x) for x in s], "v", returns="long",
                    lifetimes=True).alias("starts")
    result = ws.events(df, time="t", end="e").window(ws.Snapshot()).agg(spans)
    assert_data_error(result, ws.WispInputError,
                      "`returns` of udaf 'starts' must be the type of its results, found "
                      "returns='long' (int64) and the result [1] (list), which does not "
                      "convert to it; return values of the declared type, or declare the "
                      "type the function returns")


# ------------------------------------------------------------- Range bounds


def test_range_anchors_whose_bounds_leave_the_tick_range(spark: SparkSession) -> None:
    # Range(-1, 10): an anchor within 10 ticks of the top has its end beyond the range,
    # one at the very bottom its start below it; each used to be clamped silently
    for t in (LONG_MAX - 5, LONG_MIN):
        df = spark.createDataFrame([(0, 1.0), (t, 2.0)], "t long, v double")
        result = ws.events(df, time="t").window(ws.Range(-1, 10)).agg(ws.sum("v"))
        assert_data_error(result, ws.WispInputError, TICK_RANGE)


def test_range_anchors_at_the_edges_of_the_tick_range(spark: SparkSession) -> None:
    # bounds that reach the very edges of the range, but not beyond
    bottom = spark.createDataFrame([(LONG_MIN + 1, 1.0)], "t long, v double")
    past = ws.events(bottom, time="t").window(ws.Range(-1, 0)).agg(ws.sum("v"))
    assert [tuple(r) for r in past.collect()] == [
        (LONG_MIN, LONG_MIN + 1, LONG_MIN + 1, 1.0)]
    top = spark.createDataFrame([(LONG_MAX - 10, 2.0), (LONG_MAX, 4.0)], "t long, v double")
    trailing = ws.events(top, time="t").window(ws.Range(-10, 0)).agg(ws.sum("v"))
    assert sorted(tuple(r) for r in trailing.collect()) == [
        (LONG_MAX - 20, LONG_MAX - 10, LONG_MAX - 10, 2.0),
        (LONG_MAX - 10, LONG_MAX, LONG_MAX, 6.0)]
    ahead = ws.events(top.filter(F.col("t") < LONG_MAX), time="t").window(ws.Range(0, 10))
    assert [tuple(r) for r in ahead.agg(ws.sum("v")).collect()] == [
        (LONG_MAX - 10, LONG_MAX, LONG_MAX - 10, 2.0)]


def test_a_decimal_range_bound_beyond_the_tick_range(spark: SparkSession) -> None:
    df = spark.createDataFrame([(Decimal(1), 1.0)], "t decimal(38,18), v double")
    with pytest.raises(ws.WispInputError) as failure:
        ws.events(df, time="t").window(ws.Range(-10, 0)).agg(ws.count())
    assert str(failure.value) == (
        "`start` must be a duration within the 64-bit tick range (at most 2^63 - 1 ticks of "
        "10^-18, the unit of decimal time column 't'), found -10")


# ------------------------------------------------------------------- wisp_error


def test_other_failures_are_not_wisp_errors(spark: SparkSession) -> None:
    error, found = caught(spark.sql("SELECT 1 / 0").collect)
    assert found is None, str(error)
    assert ws.wisp_error(ValueError("WispError: a message of someone else's")) is None


def test_a_wisp_error_is_its_own() -> None:
    error = ws.WispInputError("`x` must be 1, found 2")
    assert ws.wisp_error(error) is error


def test_the_last_wisp_error_of_a_chained_traceback_wins() -> None:
    # a worker's traceback where the memory guard turned a MemoryError into its own
    # error: the text ends with the error raised last
    text = ("An exception was thrown from the Python worker:\nTraceback (most recent call "
            "last):\n  File \"kernel.py\", line 1, in run\nMemoryError\n\nThe above "
            "exception was the direct cause of the following exception:\n\nTraceback (most "
            "recent call last):\n  File \"limits.py\", line 2, in __call__\n"
            "wisp.errors.WispMemoryError: `spark.executor.pyspark.memory` must hold what "
            "the window needs per key, found the Python worker out of memory")
    found = ws.wisp_error(RuntimeError(text))
    assert type(found) is ws.WispMemoryError
    assert str(found) == ("`spark.executor.pyspark.memory` must hold what the window needs "
                          "per key, found the Python worker out of memory")


def test_a_plan_that_merely_holds_a_check_is_no_data_error() -> None:
    # an analysis error printing a plan that holds a data check is not that check failing
    text = ("[UNRESOLVED_COLUMN] A column cannot be resolved. Plan: Filter "
            "CASE WHEN isnull(ts) THEN raise_error(WispError: `time` column 'ts' must not be "
            "null, found a null time) ELSE true END")
    assert ws.wisp_error(RuntimeError(text)) is None


# ---------------------------------------------------------------------- report


def test_report_before_any_action_says_to_run_one(spark: SparkSession) -> None:
    df = spark.createDataFrame([(at(0), 1.0), (None, 2.0)], "ts timestamp, v double")
    result = ws.events(df, time="ts", on_null_time="drop").agg(ws.count())
    with pytest.raises(ws.WispInputError) as failure:
        ws.report(result)
    assert str(failure.value) == (
        "`result` must have been computed by an action (collect, count, show, write, ...) "
        "before its report under on_null_time='drop' (the query counts its rows as it "
        "reads them), found a result no action has finished on yet; run an action first")
    assert len(result.collect()) == 1
    assert ws.report(result) == {"rows_in": 2, "rejected_null_time": 1}


def test_report_under_error_counts_before_any_action(spark: SparkSession) -> None:
    df = spark.createDataFrame([(at(0), 1.0), (at(1), 2.0)], "ts timestamp, v double")
    result = ws.events(df, time="ts").agg(ws.count())
    assert ws.report(result) == {"rows_in": 2, "rejected_null_time": 0}
