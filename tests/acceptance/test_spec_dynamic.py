"""The dynamic-window examples of the \\psi windowing document (section 3), with expected
outputs worked out by hand from its text: a clock every 0.5 s opening windows of
[-0.5 s, +0.5 s] around each tick, and windows that depend on the anchor message."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark
SECOND = 1_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def seconds(*columns: str) -> list[Any]:
    return [(F.unix_micros(c) / SECOND).alias(c) for c in columns]


def rows_of(result: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """(window_start, window_end, time) in seconds, then `columns`, in time order."""
    collected = result.select(*seconds("window_start", "window_end", "time"), *columns)
    return [tuple(r) for r in collected.orderBy("time").collect()]


@pytest.fixture(scope="module")
def source(spark: SparkSession) -> ws.Events:
    """Seven messages at irregular times (ms), values 1..7."""
    times_ms = [100, 350, 600, 900, 1000, 1700, 2200]
    df = spark.createDataFrame([(t * 1000, float(k + 1)) for k, t in enumerate(times_ms)],
                               "t long, v double")
    return ws.events(df.select(F.timestamp_micros("t").alias("ts"), "v"), time="ts")


def test_clock_from_zero_with_windows_of_half_a_second_each_side(source: ws.Events) -> None:
    # anchors = Generators.Repeat(p, 0, 0.5 s): ticks 0, 0.5, 1, ... up to the last
    # message; each opens [t - 0.5 s, t + 0.5 s] (both ends included), obsolete t - 0.5 s.
    window = ws.Dynamic(ws.clock("500ms", start=EPOCH), start="-500ms", end="500ms",
                        obsolete="-500ms")
    result = source.window(window).agg(ws.collect("v"), ws.mean("v"))
    assert rows_of(result, "collect_v", "mean_v") == [
        (-0.5, 0.5, 0.0, [1.0, 2.0], 1.5),
        (0.0, 1.0, 0.5, [1.0, 2.0, 3.0, 4.0, 5.0], 3.0),  # 1.0 s is on the closed end
        (0.5, 1.5, 1.0, [3.0, 4.0, 5.0], 4.0),
        (1.0, 2.0, 1.5, [5.0, 6.0], 5.5),
        (1.5, 2.5, 2.0, [6.0, 7.0], 6.5),  # reaches past the data: computed over what exists
    ]


def test_clock_over_the_data_span_by_default(source: ws.Events) -> None:
    # Without a start, the ticks lie between the first (0.1 s) and last (2.2 s) message.
    window = ws.Dynamic(ws.clock("500ms"), start="-500ms", end="500ms")
    assert rows_of(source.window(window).agg(ws.count()), "count") == [
        (0.0, 1.0, 0.5, 5), (0.5, 1.5, 1.0, 3), (1.0, 2.0, 1.5, 2), (1.5, 2.5, 2.0, 2)]


def test_half_open_windows_around_the_clock(source: ws.Events) -> None:
    window = ws.Dynamic(ws.clock("500ms", start=EPOCH), start="-500ms", end="500ms",
                        closed="left")
    assert [r[-1] for r in rows_of(source.window(window).agg(ws.count()), "count")] == [
        2, 4, 3, 2, 2]  # 1.0 s leaves the window of 0.5 s, joins the one of 1.0 s


def test_windows_given_by_the_anchor_message(spark: SparkSession,
                                             source: ws.Events) -> None:
    # The general case: each anchor message carries its own window, here the period over
    # which another stream was true, [began, ended], with obsolete = ended.
    periods = spark.createDataFrame(
        [(1000, 300, 1000), (2500, 1600, 2500), (2600, 2500, 2600)],
        "at long, began long, ended long")
    periods = periods.select(*[F.timestamp_millis(c).alias(c) for c in periods.columns])
    anchors = ws.events(periods, time="at")
    window = ws.Dynamic(anchors, start="began", end="ended", obsolete="ended")
    result = source.window(window).agg(ws.collect("v"), ws.count())
    assert rows_of(result, "collect_v", "count") == [
        (0.3, 1.0, 1.0, [2.0, 3.0, 4.0, 5.0], 4),
        (1.6, 2.5, 2.5, [6.0, 7.0], 2),
        (2.5, 2.6, 2.6, [], 0),  # past the data: an empty window, still one row
    ]


def test_window_size_from_the_anchor_content(spark: SparkSession,
                                             source: ws.Events) -> None:
    # Each anchor looks back `back_ms` and ahead 0: windows of different sizes.
    anchors_df = spark.createDataFrame([(1000, 100), (1000, 700), (2200, 1200)],
                                       "at long, back_ms long")
    anchors_df = anchors_df.withColumn("at", F.timestamp_millis("at"))
    start = F.col("at") - F.make_dt_interval(secs=F.col("back_ms") / 1000)
    window = ws.Dynamic(ws.events(anchors_df, time="at"), start=start, end="0s")
    result = source.window(window).agg(ws.collect("v"))
    got = sorted(rows_of(result, "collect_v"))
    assert got == [(0.3, 1.0, 1.0, [2.0, 3.0, 4.0, 5.0]),
                   (0.9, 1.0, 1.0, [4.0, 5.0]),
                   (1.0, 2.2, 2.2, [5.0, 6.0, 7.0])]
