"""The count-window rules of the count-window document, with expected values worked out
by hand: windows over n distinct start times, collocated events counting once, lifetimes
clipped to the window's span, output at the window's last start time, nothing until a
key has n distinct start times. Integer time: one tick is 1."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import wisp as ws

pytestmark = pytest.mark.spark


def rows_of(result: Any, *columns: str) -> list[tuple[Any, ...]]:
    ordered = result.orderBy("time", *[c for c in ("k",) if c in result.columns])
    return [tuple(r[c] for c in ("window_start", "window_end", "time", *columns))
            for r in ordered.collect()]


@pytest.fixture(scope="module")
def three(spark: SparkSession) -> ws.Events:
    """Three interval events: e1 on [1, 6), e2 on [3, 5), e3 on [4, 9)."""
    df = spark.createDataFrame([("e1", 1, 6, 10.0), ("e2", 3, 5, 20.0), ("e3", 4, 9, 40.0)],
                               "name string, t long, e long, v double")
    return ws.events(df, time="t", end="e")


def test_each_window_spans_n_start_times_plus_one_tick(three: ws.Events) -> None:
    # first window: starts of e1 and e2, span [1, 3 + 1); second: e2 and e3, [3, 4 + 1)
    result = three.window(ws.CountByStartTime(2)).agg(ws.count(), ws.collect("name"))
    assert rows_of(result, "count", "collect_name") == [
        (1, 4, 3, 2, ["e1", "e2"]),
        (3, 5, 4, 2, ["e2", "e3"]),
    ]


def test_time_weighted_mean_sees_lifetimes_clipped_to_the_span(three: ws.Events) -> None:
    # window [1, 4): e1 clipped to [1, 4) (3 ticks), e2 to [3, 4) (1 tick):
    #   (10*3 + 20*1) / 4 = 12.5
    # window [3, 5): e2 clipped to [3, 5) (2 ticks), e3 to [4, 5) (1 tick):
    #   (20*2 + 40*1) / 3 = 26.666...
    result = three.window(ws.CountByStartTime(2)).agg(ws.time_weighted_mean("v"),
                                                      ws.mean("v"))
    got = rows_of(result, "time_weighted_mean_v", "mean_v")
    assert got[0] == (1, 4, 3, 12.5, 15.0)
    assert got[1][:3] == (3, 5, 4)
    assert got[1][3] == pytest.approx(80 / 3, rel=1e-15)
    assert got[1][4] == 30.0
    assert len(got) == 2


def test_a_udaf_sees_lifetimes_clipped_to_the_span(three: ws.Events) -> None:
    def lifetimes_seen(values: Any, starts: Any, ends: Any) -> list[list[int]]:
        """[value, clipped start, clipped end] per member."""
        return [[int(v), int(s), int(e)] for v, s, e in zip(values, starts, ends,
                                                             strict=True)]

    # window [1, 4): e1 [1, 6) clipped to [1, 4), e2 [3, 5) to [3, 4)
    # window [3, 5): e2 [3, 5) stays, e3 [4, 9) clipped to [4, 5)
    seen = ws.udaf(lifetimes_seen, "v", returns="array<array<long>>", lifetimes=True)
    result = three.window(ws.CountByStartTime(2)).agg(seen.alias("seen"))
    assert rows_of(result, "seen") == [
        (1, 4, 3, [[10, 1, 4], [20, 3, 4]]),
        (3, 5, 4, [[20, 3, 5], [40, 4, 5]]),
    ]


def test_a_time_weighted_udaf_equals_time_weighted_mean(three: ws.Events) -> None:
    def weighted(values: Any, starts: Any, ends: Any) -> float:
        weights = ends - starts
        return float((values * weights).sum() / weights.sum())

    result = three.window(ws.CountByStartTime(2)).agg(
        ws.udaf(weighted, "v", lifetimes=True).alias("mine"), ws.time_weighted_mean("v"))
    got = rows_of(result, "mine", "time_weighted_mean_v")
    assert [g[3] for g in got] == pytest.approx([12.5, 80 / 3], rel=1e-15)
    assert [g[3] for g in got] == pytest.approx([g[4] for g in got], rel=1e-15)


def test_one_window_holds_all_three_start_times(three: ws.Events) -> None:
    result = three.window(ws.CountByStartTime(3)).agg(ws.count(), ws.time_weighted_mean("v"))
    # span [1, 5): e1 [1, 5) 4 ticks, e2 [3, 5) 2 ticks, e3 [4, 5) 1 tick
    assert rows_of(result, "count", "time_weighted_mean_v") == [
        (1, 5, 4, 3, (10 * 4 + 20 * 2 + 40 * 1) / 7)]


@pytest.fixture(scope="module")
def points(spark: SparkSession) -> ws.Events:
    """Point events; b and c are collocated at time 2."""
    df = spark.createDataFrame([("a", 1), ("b", 2), ("c", 2), ("d", 3), ("e", 5)],
                               "name string, t long")
    return ws.events(df, time="t")


def test_collocated_events_count_once(points: ws.Events) -> None:
    # distinct start times 1, 2, 3, 5; a window of two start times holds three events
    # when one of them is shared by b and c
    result = points.window(ws.CountByStartTime(2)).agg(ws.count(), ws.collect("name"))
    assert rows_of(result, "count", "collect_name") == [
        (1, 3, 2, 3, ["a", "b", "c"]),
        (2, 4, 3, 3, ["b", "c", "d"]),
        (3, 6, 5, 2, ["d", "e"]),
    ]


def test_point_events_lie_entirely_in_their_window(points: ws.Events) -> None:
    # each point lives one tick, inside the span: the time-weighted mean is the mean
    df = points.df.selectExpr("name", "t", "cast(t * 10 as double) as v")
    result = ws.events(df, time="t").window(ws.CountByStartTime(2)).agg(
        ws.time_weighted_mean("v"))
    assert [r[3] for r in rows_of(result, "time_weighted_mean_v")] == [
        (10 + 20 + 20) / 3, (20 + 20 + 30) / 3, (30 + 50) / 2]


def test_no_output_until_a_key_has_n_distinct_start_times(spark: SparkSession) -> None:
    df = spark.createDataFrame([("x", 1), ("x", 2), ("x", 2), ("x", 4), ("y", 1), ("y", 3),
                                ("y", 3)], "k string, t long")
    result = ws.events(df, time="t", key="k").window(ws.CountByStartTime(3)).agg(ws.count())
    assert [(r.k, r.window_start, r.window_end, r.time, r["count"])
            for r in result.collect()] == [("x", 1, 5, 4, 4)]
