"""Bad arguments to the sliding and policy-tumbling windows: each is a `wisp.WispError`
whose message names the parameter, what was expected and what was found. Schema checks
run no Spark job; the null-attribute check runs one small action."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
from wisp import WispError, WispInputError, WispUnsupportedError
from wisp.windowed import run

pytestmark = pytest.mark.spark
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@contextmanager
def fails(*fragments: str, error: type[Exception] = WispInputError) -> Iterator[None]:
    pattern = ".*".join(re.escape(f) for f in fragments)
    with pytest.raises(error, match=pattern) as caught:
        yield
    assert isinstance(caught.value, WispError)


@pytest.fixture(scope="module")
def df(spark: SparkSession) -> DataFrame:
    rows = [(T0, 1, 1.0, "x", True, dt.date(2024, 1, 1)),
            (T0 + dt.timedelta(seconds=1), 2, None, "y", False, dt.date(2024, 1, 2))]
    return spark.createDataFrame(rows, "ts timestamp, n long, v double, s string, "
                                 "p boolean, d date")


@pytest.fixture(scope="module")
def ev(df: DataFrame) -> ws.Events:
    return ws.events(df, time="ts")


def test_punctuation_is_not_a_sliding_policy() -> None:
    with fails("`evict` must be wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)",
               "Punctuation(col='p')"):
        ws.Sliding(ws.Punctuation("p"))
    with fails("`trigger` must be wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)",
               "Punctuation(col='p')"):
        ws.Sliding(ws.Count(2), ws.Punctuation("p"))


def test_delta_on_a_missing_column(ev: ws.Events) -> None:
    with fails("`attr` must be a column of the DataFrame for the eviction Delta policy",
               "found 'temperature'"):
        ev.window(ws.Sliding(ws.Delta("temperature", 1.5))).agg(ws.count())
    with fails("`attr` must be a column of the DataFrame for the trigger Delta policy",
               "found 'tmp'"):
        ev.window(ws.Sliding(ws.Count(2), ws.Delta("tmp", 1))).agg(ws.count())


def test_delta_on_a_non_numeric_column(ev: ws.Events) -> None:
    with fails("`attr` must be a numeric, timestamp or date column",
               "found \"string column 's'\""):
        ev.window(ws.Tumbling(ws.Delta("s", 1))).agg(ws.count())


def test_delta_threshold_must_suit_the_attribute(ev: ws.Events) -> None:
    with fails("`d` must be a duration such as '2s' or a timedelta", "found 1.5"):
        ev.window(ws.Sliding(ws.Delta("ts", 1.5))).agg(ws.count())
    with fails("`d` must be a number", "found '2s'"):
        ev.window(ws.Sliding(ws.Delta("v", "2s"))).agg(ws.count())
    with fails("`d` must be a whole number", "found 0.5"):
        ev.window(ws.Sliding(ws.Delta("n", 0.5))).agg(ws.count())


def test_time_policy_must_suit_the_time_column(ev: ws.Events, df: DataFrame) -> None:
    with fails("`t` must be a duration such as '2s' or a timedelta for timestamp time",
               "found 5"):
        ev.window(ws.Sliding(ws.Time(5))).agg(ws.count())
    numeric = ws.events(df, time="n")
    with fails("`t` must be a number (durations are plain numbers for integer time",
               "found '5s'"):
        numeric.window(ws.Sliding(ws.Count(3), ws.Time("5s"))).agg(ws.count())
    dates = ws.events(df, time="d")
    with fails("`t` must be a whole number of days", "found '12h'"):
        dates.window(ws.Tumbling(ws.Time("12h"))).agg(ws.count())


def test_time_trigger_phase_must_suit_the_time_column(ev: ws.Events, df: DataFrame) -> None:
    with fails("`align` must be a datetime or a date for timestamp time", "found 3"):
        ev.window(ws.Sliding(ws.Count(3), ws.Time("1s", align=3))).agg(ws.count())
    numeric = ws.events(df, time="n")
    with fails("`align` must be a number for integer time", "found datetime.datetime"):
        numeric.window(ws.Sliding(ws.Count(3), ws.Time(2, align=T0))).agg(ws.count())


def test_punctuation_column_must_be_boolean(ev: ws.Events) -> None:
    with fails("`col` must be a boolean column for Punctuation", "found \"bigint column 'n'\""):
        ev.window(ws.Tumbling(ws.Punctuation("n"))).agg(ws.count())
    with fails("`col` must be a boolean column of the DataFrame", "found 'q'"):
        ev.window(ws.Tumbling(ws.Punctuation("q"))).agg(ws.count())


def test_policy_tumbling_takes_its_phase_from_the_time_policy(ev: ws.Events) -> None:
    with fails("`align` must be None for a policy-sized Tumbling window"):
        ev.window(ws.Tumbling(ws.Count(3), align=T0)).agg(ws.count())


def test_unknown_strategy_and_interval_events(ev: ws.Events, df: DataFrame) -> None:
    with fails("`strategy` must be 'arrow-spl' or None", "found 'native'"):
        run(ev, ws.Sliding(ws.Count(2)), [ws.count()], strategy="native")
    intervals = ws.events(df, time="ts", end="ts")
    with fails("`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime "
               "or Session for interval events (bound with `end`: column 'ts'), found "
               "Sliding, which reads point events", error=WispUnsupportedError):
        intervals.window(ws.Sliding(ws.Count(2))).agg(ws.count())


def test_null_delta_attribute_fails_the_query_naming_it(ev: ws.Events) -> None:
    result = ev.window(ws.Sliding(ws.Delta("v", 1.0))).agg(ws.count())
    with pytest.raises(PySparkException, match=re.escape(
            "`attr` column 'v' must not be null or NaN")):
        result.collect()


@pytest.mark.parametrize("window", [
    ws.Sliding(ws.Count(2), ws.Time("1us")), ws.Tumbling(ws.Time("1us"))])
def test_a_time_trigger_over_a_long_span_is_refused(spark: SparkSession,
                                                    window: ws.Window) -> None:
    """Two events a year apart and a trigger every microsecond: ~3·10^13 firings, refused
    in the worker before one is made."""
    later = T0 + dt.timedelta(days=366)
    df = spark.createDataFrame([(T0, 1.0), (later, 2.0)], "ts timestamp, v double")
    expected = (later - T0) // dt.timedelta(microseconds=1) + 1
    result = ws.events(df, time="ts").window(window).agg(ws.count())
    with pytest.raises(PySparkException, match=re.escape(
            f"`t` must make at most max_ticks=10,000,000 time trigger firings per key, "
            f"found about {expected:,} for one key; pass Time(..., max_ticks=...)")):
        result.collect()
