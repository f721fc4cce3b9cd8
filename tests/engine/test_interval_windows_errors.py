"""Bad arguments and bad data of the hopping, tumbling, snapshot and count windows and of
`from_edges`/`snap_to_hops`: each is a `WispError` naming the parameter and the value."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
from wisp import WispError, WispInputError, WispUnsupportedError
from wisp.snap import snap_to_hops
from wisp.windowed import run

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([("a", at(0), at(3), 1.0), ("a", at(2), None, 2.0)],
                                 "k string, ts timestamp, te timestamp, v double")


def test_size_must_be_positive() -> None:
    with pytest.raises(WispInputError, match=re.escape(
            "`size` must be a positive duration, found '0s'")):
        ws.Hopping("0s", "1s")
    with pytest.raises(WispInputError, match=re.escape("`size` must be a positive duration")):
        ws.Tumbling("-2s")


def test_hop_must_be_positive() -> None:
    with pytest.raises(WispInputError, match=re.escape(
            "`hop` must be a positive duration, found '-1s'")):
        ws.Hopping("2s", "-1s")


def test_n_must_be_at_least_one() -> None:
    with pytest.raises(WispInputError, match=re.escape("`n` must be an integer >= 1, found 0")):
        ws.CountByStartTime(0)


def test_changes_need_hop_at_most_size(df: DataFrame) -> None:
    ev = ws.events(df, time="ts", end="te", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`hop` must be at most `size` ('1s') for output='changes'")) as caught:
        ev.window(ws.Hopping("1s", "2s", output="changes")).agg(ws.count())
    assert "found '2s'" in str(caught.value)
    # gaps between windows are fine for output="windows"
    assert ev.window(ws.Hopping("1s", "2s")).agg(ws.count()).columns[-1] == "count"


def test_snap_to_hops_needs_hop_at_most_size(df: DataFrame) -> None:
    ev = ws.events(df, time="ts", end="te", key="k")
    with pytest.raises(WispInputError, match=re.escape("`hop` must be at most `size` ('1s')")):
        snap_to_hops(ev, "1s", "3s")
    with pytest.raises(WispInputError, match=re.escape(
            "`size` must be a positive duration, found '0s'")):
        snap_to_hops(ev, "0s", "1s")


def test_align_must_match_the_time_column(df: DataFrame) -> None:
    ev = ws.events(df, time="ts", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`align` must be a datetime or a date for timestamp time column 'ts', found 5")):
        ev.window(ws.Hopping("2s", "1s", align=5)).agg(ws.count())


def test_unknown_strategy(df: DataFrame) -> None:
    ev = ws.events(df, time="ts", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' for Snapshot windows or None, found 'x'")):
        run(ev, ws.Snapshot(), [ws.count()], strategy="x")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals', 'native-buckets', 'panes' for Tumbling "
            "windows or None, found 'x'")):
        run(ev, ws.Tumbling("1s"), [ws.count()], strategy="x")


def test_native_buckets_need_point_events_and_order_free_aggregates(df: DataFrame) -> None:
    points = ws.events(df, time="ts", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' or None here (collect_v has no order-free "
            "Spark aggregate giving wisp's result), found 'native-buckets'")):
        run(points, ws.Tumbling("1s"), [ws.collect("v")], strategy="native-buckets")
    intervals = ws.events(df, time="ts", end="te", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "(interval events span several windows)")):
        run(intervals, ws.Tumbling("1s"), [ws.count()], strategy="native-buckets")
    # without a strategy, such queries run on the interval kernel, or as panes where
    # every aggregation merges per-pane partials
    assert "arrow-intervals" in ws.explain(points.window(ws.Tumbling("1s")).agg(
        ws.first("v")))
    assert "Strategy panes:" in ws.explain(intervals.window(ws.Tumbling("1s")).agg(
        ws.count()))
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' or None here (first_v is not a merge of "
            "per-pane partial results), found 'panes'")):
        run(intervals, ws.Tumbling("1s"), [ws.first("v")], strategy="panes")


def test_panes_need_mergeable_aggregates(df: DataFrame) -> None:
    points = ws.events(df, time="ts", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals', 'panes' for Hopping windows or None, "
            "found 'native-buckets'")):
        run(points, ws.Hopping("2s", "1s"), [ws.count()], strategy="native-buckets")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' or None here (stddev_v is not a merge of "
            "per-pane partial results), found 'panes'")):
        run(points, ws.Hopping("2s", "1s"), [ws.sum("v"), ws.stddev("v")], strategy="panes")
    intervals = ws.events(df, time="ts", end="te", key="k")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' or None here (first_v is not a merge of "
            "per-pane partial results), found 'panes'")):
        run(intervals, ws.Hopping("2s", "1s"), [ws.count(), ws.first("v")], strategy="panes")
    assert "Strategy panes:" in ws.explain(intervals.window(ws.Hopping("2s", "1s"))
                                           .agg(ws.count()))
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' for Snapshot windows or None, "
            "found 'panes'")):
        run(points, ws.Snapshot(), [ws.count()], strategy="panes")
    # without a strategy, such queries run on the interval kernel
    assert "Strategy arrow-intervals:" in ws.explain(points.window(ws.Hopping("2s", "1s"))
                                                     .agg(ws.first("v")))
    assert "Strategy panes:" in ws.explain(points.window(ws.Hopping("2s", "1s"))
                                           .agg(ws.max("v")))


def test_udaf_lifetimes_must_be_a_bool() -> None:
    with pytest.raises(WispInputError, match=re.escape(
            "`lifetimes` must be True or False, found 'yes'")):
        ws.udaf(lambda v, s, e: 0.0, "v", lifetimes="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("window", [ws.Rows(-1, 0), ws.Range.past("2s"), ws.Session("1s"),
                                    ws.Sliding(ws.Count(2), ws.Count(1))],
                         ids=["Rows", "Range", "Session", "Sliding"])
def test_lifetimes_need_interval_windows(df: DataFrame, window: object) -> None:
    ev = ws.events(df, time="ts", key="k")
    expected = ("`window` must be one of Hopping, Tumbling, Snapshot, CountByStartTime for "
                "{} (it weighs each value by its lifetime within the window), found "
                f"{type(window).__name__}")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.window(window).agg(  # type: ignore[arg-type]
            ws.udaf(lambda v, s, e: 0.0, "v", lifetimes=True))
    assert str(caught.value) == expected.format("udaf(..., lifetimes=True)")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.window(window).agg(ws.time_weighted_mean("v"))  # type: ignore[arg-type]
    assert str(caught.value) == expected.format("time_weighted_mean")


def test_float_time_is_not_supported(spark: SparkSession) -> None:
    ev = ws.events(spark.createDataFrame([(1.5,)], "t double"), time="t")
    with pytest.raises(WispUnsupportedError) as caught:
        ev.window(ws.Snapshot()).agg(ws.count())
    assert str(caught.value) == ("`time` must be a timestamp, date, integer or decimal "
                                 "column for Snapshot windows (they need exact ticks), "
                                 "found float column 't'")


def _fails_with(result: DataFrame, *fragments: str) -> None:
    with pytest.raises(Exception) as caught:  # Spark wraps raise_error in its own type
        result.collect()
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_end_before_time_fails_the_query(spark: SparkSession) -> None:
    bad = spark.createDataFrame([("a", at(5), at(4))], "k string, ts timestamp, te timestamp")
    ev = ws.events(bad, time="ts", end="te", key="k")
    for window in (ws.Hopping("2s", "1s"), ws.Tumbling("1s"), ws.Snapshot(),
                   ws.CountByStartTime(1)):
        _fails_with(ev.window(window).agg(ws.count()),
                    "`end` column 'te' must not be before the `time` column 'ts', found end "
                    "2024-01-01 00:00:04 < time 2024-01-01 00:00:05")


def test_null_time_fails_the_query(spark: SparkSession) -> None:
    bad = spark.createDataFrame([("a", None, None)], "k string, ts timestamp, te timestamp")
    _fails_with(ws.events(bad, time="ts", end="te").window(ws.Snapshot()).agg(ws.count()),
                "`time` column 'ts' must not be null")


def test_dropped_null_times_are_counted(spark: SparkSession) -> None:
    rows = spark.createDataFrame([("a", None, None), ("a", at(1), None)],
                                 "k string, ts timestamp, te timestamp")
    ev = ws.events(rows, time="ts", end="te", on_null_time="drop")
    result = ev.window(ws.Snapshot()).agg(ws.count())
    assert [(r.window_end, r["count"]) for r in result.collect()] == [(None, 1)]
    assert ws.report(result) == {"rows_in": 2, "rejected_null_time": 1}


# --------------------------------------------------------------------- from_edges


@pytest.fixture(scope="module")
def edge_rows(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [("x", at(0), "start", "p"), ("x", at(4), "end", "p"), ("x", at(1), "start", "q"),
         ("y", at(2), "start", "p")], "k string, t timestamp, kind string, id string")


def test_from_edges_pairs_per_key_and_id(edge_rows: DataFrame) -> None:
    ev = ws.from_edges(edge_rows, time="t", edge="kind", id="id", key="k")
    assert ev.end == "end" and ev.key == ("k",)
    got = sorted((r.k, r.id, r.t, r.end) for r in ev.df.collect())
    assert [(k, i, t.astimezone(dt.UTC), None if e is None else e.astimezone(dt.UTC))
            for k, i, t, e in got] == [
        ("x", "p", at(0), at(4)), ("x", "q", at(1), None), ("y", "p", at(2), None)]


def test_from_edges_rejects_an_end_without_a_start(spark: SparkSession) -> None:
    rows = spark.createDataFrame([(at(0), "start", "p"), (at(1), "end", "p"),
                                  (at(2), "end", "p")], "t timestamp, kind string, id string")
    ev = ws.from_edges(rows, time="t", edge="kind", id="id")
    _fails_with(ev.window(ws.Snapshot()).agg(ws.count()),
                "`edge` column 'kind' must close an interval opened by a start edge",
                "found an end edge without a start for id p")


def test_from_edges_rejects_unknown_edge_values(spark: SparkSession) -> None:
    rows = spark.createDataFrame([(at(0), "begin", "p")], "t timestamp, kind string, id string")
    _fails_with(ws.from_edges(rows, time="t", edge="kind", id="id").df,
                "`edge` column 'kind' must hold 'start' or 'end'")


def test_from_edges_checks_its_columns(edge_rows: DataFrame) -> None:
    with pytest.raises(WispInputError, match=re.escape("`edge` must be a column of the")):
        ws.from_edges(edge_rows, time="t", edge="side", id="id")
    with pytest.raises(WispInputError, match=re.escape(
            "`edge` must be a string column holding 'start' or 'end', found \"timestamp "
            "column 't'\"")):
        ws.from_edges(edge_rows, time="k", edge="t", id="id")
    with pytest.raises(WispError, match=re.escape("`id` must be a column of the")):
        ws.from_edges(edge_rows, time="t", edge="kind", id="ident")


# ---------------------------------------------------------------- date time: days


def test_date_time_ticks_are_days(spark: SparkSession) -> None:
    days = spark.createDataFrame([(dt.date(1969, 12, 30), 1.0), (dt.date(1970, 1, 2), 3.0)],
                                 "d date, v double")
    ev = ws.events(days, time="d")
    counted = ev.window(ws.CountByStartTime(1)).agg(ws.count())
    assert [(r.window_start, r.window_end, r.time) for r in counted.orderBy("time").collect()] \
        == [(dt.date(1969, 12, 30), dt.date(1969, 12, 31), dt.date(1969, 12, 30)),
            (dt.date(1970, 1, 2), dt.date(1970, 1, 3), dt.date(1970, 1, 2))]
    tumbling = ev.window(ws.Tumbling("2d")).agg(ws.sum("v"))
    assert [(r.window_start, r.window_end, r.sum_v)
            for r in tumbling.orderBy("time").collect()] == [
        (dt.date(1969, 12, 30), dt.date(1970, 1, 1), 1.0),
        (dt.date(1970, 1, 1), dt.date(1970, 1, 3), 3.0)]
