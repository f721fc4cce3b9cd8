"""Feature sets (`Events.features`) on Spark: every window at every event against the
brute-force oracle (`oracle.features`) on random data (duplicates and ties in time,
nulls, NaN, null keys, times before 1970); against each window run alone as its own
query; one shuffle of the events for a set of four windows (read from the executed
plan); `min_count` per feature column; and bad input, each error naming its parameter."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, point_in_time, sort_output
from oracle import features as oracle_features
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation
from wisp.windowed import _run_of

pytestmark = pytest.mark.spark

COLUMNS = ["k", "t", "v", "i", "seq", "f"]
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.max("v"), ws.min("i"),
    ws.first("v"), ws.last("i"), ws.count_distinct("i")]
values = st.one_of(st.none(), st.just(math.nan), st.integers(-40, 40).map(lambda x: x / 4))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 40))
    return [{"k": draw(st.sampled_from(["a", "b", None])),
             "t": draw(st.integers(-8, 8)) * 3 + draw(st.sampled_from([0, 0, 1])),
             "v": draw(values), "i": draw(st.one_of(st.none(), st.integers(-5, 5))),
             "seq": i, "f": draw(st.sampled_from([True, False, False, None]))}
            for i in range(n)]


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows],
                                 "k string, t long, v double, i long, seq int, f boolean")


windows_st = st.fixed_dictionaries({
    "r": st.builds(ws.Range, st.sampled_from([-9, -4, -1]), st.sampled_from([0, 2, 6]),
                   st.sampled_from(["both", "left", "right", "neither"])),
    "w": st.builds(ws.Rows, st.integers(-5, 0), st.integers(0, 2)),
    "all": st.none(),
    "p": st.one_of(st.just(ws.Since("f")), st.builds(ws.Trailing, st.integers(1, 3),
                                                     st.just("f")))})


@settings(max_examples=15)
@given(rows=event_rows(), windows=windows_st, use_order=st.booleans())
def test_every_window_at_every_event_matches_the_oracle(
        spark: SparkSession, rows: list[dict[str, Any]],
        windows: dict[str, Any], use_order: bool) -> None:
    order = "seq" if use_order else None
    ev = ws.events(to_frame(spark, rows), time="t", key="k", order=order)
    result = ev.features(windows, *AGGREGATIONS)
    assert _run_of(result).plan.strategy == "arrow-features"
    got = [r.asDict() for r in result.collect()]
    want = oracle_features(rows, time="t", key=["k"], order=order, columns=COLUMNS,
                           windows=list(windows.items()), aggs=AGGREGATIONS)
    assert len(got) == len(rows)
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]))


def test_a_feature_set_equals_each_window_run_alone(spark: SparkSession) -> None:
    """Three keys, 600 events with ties: each window's feature columns are the
    aggregation columns of that window's own query, row for row (exact: quarter values
    sum exactly); tick periods over Column expressions included."""
    rng = np.random.default_rng(11)
    n = 600
    data = [(f"k{int(k)}", int(t), float(v) / 4, int(i), j) for j, (k, t, v, i) in
            enumerate(zip(rng.integers(0, 3, n), rng.integers(0, 400, n),
                          rng.integers(-40, 40, n), rng.integers(-9, 9, n), strict=True))]
    df = spark.createDataFrame(data, "k string, t long, v double, i long, seq int")
    ev = ws.events(df, time="t", key="k", order="seq")
    aggs = [ws.sum("v"), ws.count(), ws.max("i"), ws.mean("v")]
    windows: dict[str, Any] = {
        "r30": ws.Range(-30, 0), "r5": ws.Range(-5, 5, closed="left"),
        "w4": ws.Rows(-3, 0, partial=True), "all": None,
        "s": ws.Since(F.col("i") > 5), "tr": ws.Trailing(2, F.col("i") < -5, partial=True)}
    features = ev.features(windows, *aggs).collect()
    names = [a.output_name for a in aggs]
    for label, window in windows.items():
        alone = (ev.agg(*aggs) if window is None else ev.window(window).agg(*aggs)).collect()
        mine = sorted(repr((r["k"], r["time"], *(r[f"{name}_{label}"] for name in names)))
                      for r in features)
        theirs = sorted(repr((r["k"], r["time"], *(r[name] for name in names)))
                        for r in alone)
        assert mine == theirs, label


def test_one_shuffle_for_four_windows(spark: SparkSession) -> None:
    df = spark.range(200).select((F.col("id") % 7).alias("k"), F.col("id").alias("t"),
                                 (F.col("id") % 5).cast("double").alias("v"))
    ev = ws.events(df, time="t", key="k")
    result = ev.features({"10": ws.Range(-10, 0), "30": ws.Range(-30, 0),
                          "last5": ws.Rows(-4, 0), "all": None}, ws.sum("v"), ws.max("v"))
    result.collect()
    plan = result._jdf.queryExecution().executedPlan().toString()
    final = plan.split("== Initial Plan ==")[0]  # adaptive: the plan that ran
    assert final.count("Exchange") == 1, plan
    assert len(result.columns) == 2 + 2 * 4


def test_min_count_applies_to_each_feature_column(spark: SparkSession) -> None:
    """`sum(v, min_count=2)` is null where the window holds fewer than 2 values, per
    window; the hidden counts are not in the result."""
    df = spark.createDataFrame([("a", t, 1.0) for t in (0, 1, 2, 10)], "k string, t long, v double")
    ev = ws.events(df, time="t", key="k")
    result = ev.features({"3": ws.Range(-2, 0), "all": None}, ws.sum("v", min_count=2))
    assert result.columns == ["k", "time", "sum_v_3", "sum_v_all"]
    rows = [(r["time"], r["sum_v_3"], r["sum_v_all"]) for r in result.orderBy("time").collect()]
    assert rows == [(0, None, None), (1, 2.0, 2.0), (2, 3.0, 3.0), (10, None, 4.0)]


def test_explain_names_the_strategy_and_each_window(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 1.0)], "k string, t long, v double")
    result = ws.events(df, time="t", key="k").features(
        {"1h": ws.Range(-3600, 0), "last3": ws.Rows(-2, 0)}, ws.sum("v"))
    text = ws.explain(result)
    assert "Strategy arrow-features" in text
    assert "walks each key's events once for the 2 windows of the set (1h, last3)" in text
    assert text.startswith("features({'1h': Range(start=-3600, end=0, closed='both'), "
                           "'last3': Rows(start=-2, end=0")


def test_bad_arguments_name_their_parameter(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 1.0)], "k string, t long, v double")
    ev = ws.events(df, time="t", key="k")
    cases: list[tuple[Any, dict[str, Any], type[Exception], str]] = [
        ([ws.Range(-1, 0)], {}, ws.WispInputError,
         "`windows` must be a mapping (dict) of labels to Range, Rows, Since, Trailing or "
         "None (the cumulative window), found 'list'"),
        ({}, {}, ws.WispInputError,
         "`windows` must be a mapping of at least one label to Range, Rows, Since, "
         "Trailing or None (the cumulative window), found 'an empty mapping'"),
        ({"1 h": ws.Range(-1, 0)}, {}, ws.WispInputError,
         "`windows` must be labels made of letters, digits and underscores (each names "
         "its columns: sum_v_<label>), found '1 h'"),
        ({"x": "1h"}, {}, ws.WispInputError,
         "`windows` must be Range, Rows, Since, Trailing or None (the cumulative window) "
         "for each label, found '1h'"),
        ({"d": ws.Tumbling(10)}, {}, ws.WispUnsupportedError,
         "`windows` must map each label to Range, Rows, Since, Trailing or None (the "
         "cumulative window) in a feature set, found Tumbling for 'd'; run it as its own "
         "query"),
        ({"h": ws.Since(ws.hourly())}, {}, ws.WispInputError,
         "`tick` must be a boolean column (calendar ticks need a timestamp or date time "
         "column; integer time column 't' is numeric), found"),
        ({"s": ws.Since("v", emit="both")}, {}, ws.WispInputError,
         "`windows` must be Since without `emit` (a feature set has one row per event) "
         "for 's', found 'both'"),
        ({"s": ws.Since("flag")}, {}, ws.WispInputError,
         "`windows` must be a boolean tick column of the events for 's' (columns: k, t, "
         "v), found 'flag'"),
        ({"s": ws.Trailing(2, "v")}, {}, ws.WispInputError,
         "`windows` must be a boolean tick column or expression for 's', found \"double "
         "column 'v'\""),
        ({"s": ws.Since(F.col("v") + 1)}, {}, ws.WispInputError,
         "`windows` must be a boolean tick column or expression for 's', found 'double "
         "expression \"Column<"),
        ({"x": None}, {"include_current": 1}, ws.WispInputError,
         "`include_current` must be True or False, found 1"),
        ({"x": None}, {"include_current": True}, ws.WispInputError,
         "`include_current` must be False without `at`"),
            ({"x": None}, {"strategy": "arrow-frames"}, ws.WispInputError,
         "`strategy` must be 'arrow-features' for a feature set or None, found "
         "'arrow-frames'"),
    ]
    for windows, options, error, text in cases:
        with pytest.raises(error) as caught:
            ev.features(windows, ws.sum("v"), **options)
        assert str(caught.value).startswith(text), str(caught.value)
    with pytest.raises(ws.WispInputError, match=r"^`aggregations` must be at least one "
                       r"aggregation such as wisp.count\(\), found 'none'"):
        ev.features({"x": None})
    clash = ws.events(df.withColumnRenamed("k", "sum_v_x"), time="t", key="sum_v_x")
    with pytest.raises(ws.WispInputError, match=r"^`windows` must be labels whose feature "
                       r"columns are unique and differ from the key columns and `time`, "
                       r"found 'sum_v_x'"):
        clash.features({"x": None}, ws.sum("v"))
    intervals = ws.events(df.withColumn("e", F.col("t") + 1), time="t", key="k", end="e")
    with pytest.raises(ws.WispUnsupportedError, match="found a feature set, which reads "
                       "point events"):
        intervals.features({"x": None}, ws.sum("v"))


@st.composite
def label_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 15))
    return [{"k": draw(st.sampled_from(["a", "b", "c", None])),
             "t": draw(st.integers(-10, 10)) * 3 + draw(st.sampled_from([0, 1])),
             "tag": draw(st.one_of(st.none(), st.text("xyz", max_size=2)))}
            for _ in range(n)]


@settings(max_examples=15)
@given(rows=event_rows(), labels=label_rows(), windows=windows_st,
       include_current=st.booleans(), as_events=st.booleans())
def test_label_rows_match_a_brute_force_over_earlier_events(
        spark: SparkSession, rows: list[dict[str, Any]], labels: list[dict[str, Any]],
        windows: dict[str, Any], include_current: bool,
        as_events: bool) -> None:
    """Point-in-time: one row per label row (keys only among the labels, label rows
    before a key's first event, ties with events in time, null keys), each window over
    the key's events before the label's time, or at or before it."""
    ev = ws.events(to_frame(spark, rows), time="t", key="k", order="seq")
    label_df = spark.createDataFrame([(r["k"], r["t"], r["tag"]) for r in labels],
                                     "k string, t long, tag string")
    at = ws.events(label_df, time="t", key="k") if as_events else label_df
    result = ev.features(windows, *AGGREGATIONS, at=at, include_current=include_current)
    assert result.columns[:3] == ["k", "time", "tag"]
    got = [r.asDict() for r in result.collect()]
    want = point_in_time(rows, labels, time="t", key=["k"], order="seq", columns=COLUMNS,
                         windows=list(windows.items()), aggs=AGGREGATIONS,
                         include_current=include_current, carried=["tag"])
    assert len(got) == len(labels)
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]))


def test_label_rows_take_one_shuffle_and_no_join(spark: SparkSession) -> None:
    df = spark.range(300).select((F.col("id") % 7).alias("k"), F.col("id").alias("t"),
                                 (F.col("id") % 5).cast("double").alias("v"))
    labels = spark.range(50).select((F.col("id") % 9).alias("k"),
                                    (F.col("id") * 6).alias("t"), F.lit("x").alias("y"))
    result = ws.events(df, time="t", key="k").features(
        {"10": ws.Range(-10, 0), "last3": ws.Rows(-2, 0), "all": None}, ws.sum("v"),
        at=labels)
    assert result.count() == 50
    plan = result._jdf.queryExecution().executedPlan().toString()
    final = plan.split("== Initial Plan ==")[0]
    assert final.count("Exchange") == 1 and "Join" not in final, plan


def test_bad_label_tables_name_at(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 1.0)], "k string, t long, v double")
    ev = ws.events(df, time="t", key="k")
    cases: list[tuple[Any, type[Exception], str]] = [
        (spark.createDataFrame([("a", 1)], "k string, when long"), ws.WispInputError,
         "`at` must be an event table (wisp.events) or a DataFrame with the events' key "
         "and time columns ['k', 't'], found \"a DataFrame without ['t']\""),
        (ws.events(spark.createDataFrame([("a", 1)], "g string, t long"), time="t",
                   key="g"), ws.WispInputError,
         "`at` must be label rows with the events' key columns ['k'], found ['g']"),
        (ws.events(spark.createDataFrame([(1, 1)], "k int, t long"), time="t", key="k"),
         ws.WispInputError, "`at` must be key column 'k' of type string (as in the "
         "events), found 'int'"),
        (ws.events(spark.createDataFrame([("a", 1.5)], "k string, t double"), time="t",
                   key="k"), ws.WispInputError,
         "`at` must be label rows whose `time` has the type of the events' (bigint)"),
        (ws.events(spark.createDataFrame([("a", 1, 2)], "k string, t long, e long"),
                   time="t", key="k", end="e"), ws.WispUnsupportedError,
         "`at` must be point rows (wisp.events without `end`), found interval events"),
        (ws.events(spark.createDataFrame([("a", 1, 2.0)], "k string, t long, sum_v_x double"),
                   time="t", key="k"), ws.WispInputError,
         "`at` must be label rows whose other columns differ from the key columns, "
         "`time` and the feature columns, found 'sum_v_x'"),
    ]
    for at, error, text in cases:
        with pytest.raises(error) as caught:
            ev.features({"x": None}, ws.sum("v"), at=at)
        assert str(caught.value).startswith(text), str(caught.value)


def test_calendar_periods_equal_their_own_queries_across_daylight_saving(
        spark: SparkSession, new_york: None) -> None:
    """`Since(ws.daily("America/New_York"))` and `Trailing(3, ws.hourly())` in a set:
    each event's columns equal those of the window's own query (one row per event:
    emit="events", partial=True), over events across New York's spring change."""
    start = 1_710_000_000  # 2024-03-09 16:00 UTC
    rng = np.random.default_rng(5)
    n = 300
    data = [(f"k{int(k)}", start + int(s), float(v) / 4, j) for j, (k, s, v) in
            enumerate(zip(rng.integers(0, 3, n), rng.integers(0, 3 * 86_400, n),
                          rng.integers(-40, 40, n), strict=True))]
    df = spark.createDataFrame(data, "k string, s long, v double, seq int").select(
        "k", F.timestamp_seconds("s").alias("ts"), "v", "seq")
    ev = ws.events(df, time="ts", key="k", order="seq")
    aggs = [ws.sum("v"), ws.count()]
    windows: dict[str, Any] = {"d": ws.Since(ws.daily("America/New_York")),
                               "h3": ws.Trailing(3, ws.hourly())}
    alone = {"d": ws.Since(ws.daily("America/New_York"), emit="events"),
             "h3": ws.Trailing(3, ws.hourly(), partial=True)}
    features = ev.features(windows, *aggs).collect()
    for label, window in alone.items():
        theirs = sorted(repr((r["k"], r["time"], r["sum_v"], r["count"]))
                        for r in ev.window(window).agg(*aggs).collect())
        mine = sorted(repr((r["k"], r["time"], r[f"sum_v_{label}"], r[f"count_{label}"]))
                      for r in features)
        assert mine == theirs, label
