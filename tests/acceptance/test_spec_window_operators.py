"""The relative-index, relative-time and running-statistics examples of the \\psi
windowing document, with expected outputs worked out by hand from its text."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark
SECOND = 1_000_000


def stream(spark: SparkSession, times_us: list[int], values: list[float]) -> ws.Events:
    """One source stream: message k has value values[k] at originating time times_us[k]."""
    df = spark.createDataFrame(list(zip(times_us, values, strict=True)), "t long, v double")
    df = df.withColumn("ts", F.timestamp_micros("t")).drop("t")
    return ws.events(df, time="ts")


def rows_of(result: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """(time in seconds, *columns) per output, in time order."""
    collected = result.select((F.unix_micros("time") / SECOND).alias("time_s"),
                              *columns).orderBy("time_s").collect()
    return [tuple(r) for r in collected]


@pytest.fixture(scope="module")
def eight(spark: SparkSession) -> ws.Events:
    """Messages 1..8, one per second."""
    return stream(spark, [k * SECOND for k in range(8)], [float(k + 1) for k in range(8)])


def test_window_minus_two_to_zero_waits_for_complete_windows(eight: ws.Events) -> None:
    # source.Window(-2, 0): nothing for messages 1 and 2, then the last three messages,
    # stamped with the anchor (the last message of each window).
    result = eight.window(ws.Rows(-2, 0)).agg(ws.collect("v"))
    assert rows_of(result, "collect_v") == [
        (2.0, [1.0, 2.0, 3.0]), (3.0, [2.0, 3.0, 4.0]), (4.0, [3.0, 4.0, 5.0]),
        (5.0, [4.0, 5.0, 6.0]), (6.0, [5.0, 6.0, 7.0]), (7.0, [6.0, 7.0, 8.0])]


def test_left_bounded_interval_is_the_same_window(eight: ws.Events) -> None:
    # IntInterval.LeftBounded(-2) is Window(-2, 0); reversed bounds normalise to it too.
    assert ws.Rows(0, -2) == ws.Rows(-2, 0)
    assert rows_of(eight.window(ws.Rows(0, -2)).agg(ws.collect("v")), "collect_v") == \
        rows_of(eight.window(ws.Rows(-2, 0)).agg(ws.collect("v")), "collect_v")


def test_window_zero_to_two_is_forward_looking(eight: ws.Events) -> None:
    # source.Window(0, 2): the anchor is the first message of its window; the last two
    # messages never get a complete window.
    result = eight.window(ws.Rows(0, 2)).agg(ws.collect("v"))
    assert rows_of(result, "collect_v") == [
        (0.0, [1.0, 2.0, 3.0]), (1.0, [2.0, 3.0, 4.0]), (2.0, [3.0, 4.0, 5.0]),
        (3.0, [4.0, 5.0, 6.0]), (4.0, [5.0, 6.0, 7.0]), (5.0, [6.0, 7.0, 8.0])]


def test_window_minus_one_to_two(eight: ws.Events) -> None:
    # source.Window(-1, 2): the previous, current and two future messages; input 4
    # (at 3 s) outputs [3, 4, 5, 6], as the document says.
    result = eight.window(ws.Rows(-1, 2)).agg(ws.collect("v"), ws.count())
    assert rows_of(result, "collect_v", "count") == [
        (1.0, [1.0, 2.0, 3.0, 4.0], 4), (2.0, [2.0, 3.0, 4.0, 5.0], 4),
        (3.0, [3.0, 4.0, 5.0, 6.0], 4), (4.0, [4.0, 5.0, 6.0, 7.0], 4),
        (5.0, [5.0, 6.0, 7.0, 8.0], 4)]


def test_index_window_bounds_are_first_and_last_event_times(eight: ws.Events) -> None:
    result = eight.window(ws.Rows(-1, 2)).agg(ws.count())
    bounds = result.select((F.unix_micros("window_start") / SECOND).alias("s"),
                           (F.unix_micros("window_end") / SECOND).alias("e"),
                           (F.unix_micros("time") / SECOND).alias("t")).orderBy("t").collect()
    assert [tuple(r) for r in bounds] == [(0.0, 3.0, 1.0), (1.0, 4.0, 2.0), (2.0, 5.0, 3.0),
                                          (3.0, 6.0, 4.0), (4.0, 7.0, 5.0)]


def test_time_window_two_seconds_back_one_forward(spark: SparkSession) -> None:
    # source.Window(TimeSpan.FromSeconds(-2), TimeSpan.FromSeconds(1)): one output per
    # message, even near the start of the stream; the windows follow the messages' pace.
    times = [0, SECOND // 2, SECOND, 3 * SECOND, 3 * SECOND + SECOND // 5, 6 * SECOND]
    ev = stream(spark, times, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    result = ev.window(ws.Range("-2s", "1s")).agg(ws.collect("v"))
    assert rows_of(result, "collect_v") == [
        (0.0, [1.0, 2.0, 3.0]), (0.5, [1.0, 2.0, 3.0]), (1.0, [1.0, 2.0, 3.0]),
        (3.0, [3.0, 4.0, 5.0]), (3.2, [4.0, 5.0]), (6.0, [6.0])]
    bounds = result.select((F.unix_micros("window_start") / SECOND).alias("s"),
                           (F.unix_micros("window_end") / SECOND).alias("e")).orderBy("s")
    assert [tuple(r) for r in bounds.collect()] == [
        (-2.0, 1.0), (-1.5, 1.5), (-1.0, 2.0), (1.0, 4.0), (1.2, 4.2), (4.0, 7.0)]


@pytest.fixture(scope="module")
def twelve(spark: SparkSession) -> ws.Events:
    return stream(spark, [k * SECOND for k in range(12)], [float(k + 1) for k in range(12)])


def test_average_of_last_ten_messages(twelve: ws.Events) -> None:
    # source.Average(10) uses Window(-9, 0): the first output comes with message 10.
    result = twelve.window(ws.Rows(-9, 0)).agg(ws.mean("v"))
    assert rows_of(result, "mean_v") == [(9.0, 5.5), (10.0, 6.5), (11.0, 7.5)]


def test_select_average_over_window_equals_average(twelve: ws.Events) -> None:
    # source.Window(-9, 0).Select(xs => xs.Average()) is the same as Average(10).
    windows = twelve.window(ws.Rows(-9, 0)).agg(ws.collect("v"))
    averaged = [(t, sum(xs) / len(xs)) for t, xs in rows_of(windows, "collect_v")]
    assert averaged == [(9.0, 5.5), (10.0, 6.5), (11.0, 7.5)]


def test_average_over_last_ten_seconds(twelve: ws.Events) -> None:
    # source.Average(TimeSpan.FromSeconds(10)) uses RelativeTimeInterval.Past(10 s):
    # every message outputs, over the messages of the last ten seconds inclusive.
    result = twelve.window(ws.Range.past("10s")).agg(ws.mean("v"), ws.count())
    assert rows_of(result, "mean_v", "count") == [
        (0.0, 1.0, 1), (1.0, 1.5, 2), (2.0, 2.0, 3), (3.0, 2.5, 4), (4.0, 3.0, 5),
        (5.0, 3.5, 6), (6.0, 4.0, 7), (7.0, 4.5, 8), (8.0, 5.0, 9), (9.0, 5.5, 10),
        (10.0, 6.0, 11), (11.0, 7.0, 11)]


def test_running_statistics_without_a_size(twelve: ws.Events) -> None:
    # Without a size the statistical operators give a running result.
    result = twelve.agg(ws.mean("v"), ws.max("v"), ws.min("v"), ws.sum("v"))
    expected = [(float(k), (k + 2) / 2, float(k + 1), 1.0, (k + 1) * (k + 2) / 2)
                for k in range(12)]
    assert rows_of(result, "mean_v", "max_v", "min_v", "sum_v") == expected
