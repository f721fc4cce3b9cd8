"""The `native-frames` strategy (narrow `Rows` windows on Spark's own sliding frame)
against the brute-force oracle, and the planner's choice between it and the kernel."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, rows_window, sort_output
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.session import ARROW_BATCH_BYTES, UNCAPPED_ARROW_BATCH_BYTES
from wisp.spec.aggregates import Aggregation
from wisp.windowed import _run_of, run

pytestmark = pytest.mark.spark

COLUMNS = ["k", "ts", "v", "i", "seq"]
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.min("i"), ws.max("i"), ws.count("i")]
SCALE = ws.udaf(lambda v, t: math.fsum(abs(x) for x in v if x == x), "v").alias("__scale")

values = st.one_of(st.none(), st.just(math.nan), st.sampled_from([1e12, -1e12, 1e-3, 0.0]),
                   st.floats(-1e9, 1e9, allow_nan=False))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 30))
    return [{"k": draw(st.sampled_from(["a", "b", None])),
             "ts": draw(st.integers(-6, 6)) * 1_000_000 + draw(st.sampled_from([0, 0, 1])),
             "v": draw(values), "i": draw(st.one_of(st.none(), st.integers(-10**12, 10**12))),
             "seq": i} for i in range(n)]


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [(r["k"], r["ts"], r["v"], r["i"], r["seq"]) for r in rows]
    df = spark.createDataFrame(data, "k string, t long, v double, i long, seq int")
    return df.select("k", F.timestamp_micros("t").alias("ts"), "v", "i", "seq")


@settings(max_examples=12)
@given(rows=event_rows(), before=st.integers(0, 5), after=st.integers(0, 3),
       partial=st.booleans(), use_order=st.booleans())
def test_native_frames_match_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                    before: int, after: int, partial: bool,
                                    use_order: bool) -> None:
    window = ws.Rows(-before, after, partial=partial)
    order = "seq" if use_order else None
    ev = ws.events(to_frame(spark, rows), time="ts", key="k", order=order)
    result = run(ev, window, AGGREGATIONS)
    assert _run_of(result).plan.strategy == "native-frames"
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    actual = sort_output([r.asDict() for r in converted.collect()], ["k"])
    expected = sort_output(rows_window(rows, time="ts", key=["k"], order=order,
                                       columns=COLUMNS, window=window,
                                       aggs=[*AGGREGATIONS, SCALE]), ["k"])
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        scale = want.pop("__scale")
        assert_rows_match([got], [want], scales=dict.fromkeys(("sum_v", "mean_v"), scale))


def strategy_of(ev: ws.Events, window: ws.Rows, *aggs: Aggregation,
                strategy: str | None = None) -> str:
    return _run_of(run(ev, window, aggs, strategy=strategy)).plan.strategy


def test_planner_choice(spark: SparkSession) -> None:
    ev = ws.events(to_frame(spark, []), time="ts", key="k")
    assert strategy_of(ev, ws.Rows(-31, 0), ws.sum("v")) == "native-frames"
    assert strategy_of(ev, ws.Rows(-32, 0), ws.sum("v")) == "arrow-frames"  # 33 wide
    assert strategy_of(ev, ws.Rows(-3, -1), ws.sum("v")) == "arrow-frames"  # no anchor
    assert strategy_of(ev, ws.Rows(-3, 0), ws.sum("i")) == "arrow-frames"  # int sums wrap
    assert strategy_of(ev, ws.Rows(-3, 0), ws.collect("v")) == "arrow-frames"
    assert strategy_of(ev, ws.Rows(-3, 0), ws.sum("v"), strategy="arrow-frames") == \
        "arrow-frames"
    text = ws.explain(run(ev, ws.Rows(-9, 0), [ws.mean("v")]))
    assert "Strategy native-frames: Spark's window operator with a ROWS BETWEEN 9 " \
           "PRECEDING AND 0 FOLLOWING frame" in text
    assert ("Why: the window holds at most 10 events (<= 32), every aggregation has a "
            "native form, and the session measures every Arrow batch row by row") in text
    text = ws.explain(run(ev, ws.Rows(-999, 0), [ws.mean("v")]))
    assert "Strategy arrow-frames" in text and "blocked prefix/suffix scans" in text


def test_planner_runs_the_kernel_when_arrow_batches_are_not_measured(
        spark: SparkSession) -> None:
    ev = ws.events(to_frame(spark, []), time="ts", key="k")
    spark.conf.set(ARROW_BATCH_BYTES, str(UNCAPPED_ARROW_BATCH_BYTES))
    try:
        narrow = run(ev, ws.Rows(-9, 0), [ws.mean("v")])
        sliding = run(ev, ws.Sliding(ws.Count(10)), [ws.sum("v")])
    finally:
        spark.conf.unset(ARROW_BATCH_BYTES)
    assert _run_of(narrow).plan.strategy == "arrow-frames"
    assert _run_of(sliding).plan.strategy == "arrow-spl"
    assert ("Why: the session sends Arrow batches to the Python worker without measuring "
            "them row by row (spark.sql.execution.arrow.maxBytesPerBatch at its largest "
            "value), so the kernel's round trip costs less than Spark's own sliding frame "
            "even for a window this narrow.") in ws.explain(narrow)
    # built under Spark's default cap, the same windows run on Spark's own frame
    assert strategy_of(ev, ws.Rows(-9, 0), ws.mean("v")) == "native-frames"
    assert _run_of(run(ev, ws.Sliding(ws.Count(10)), [ws.sum("v")])).plan.strategy == \
        "native-frames"


@pytest.mark.parametrize("window", [ws.Rows(-2, 0), ws.Rows(-2, 1, partial=True), None])
def test_only_input_columns_go_through_the_shuffle(spark: SparkSession,
                                                   window: ws.Rows | None) -> None:
    """Spark's window operator gets the events' own columns: no output expression (such
    as the copy of the time column named `time`, which Spark moved below the window
    operator when a result's columns were selected) is computed before the shuffle."""
    rows = [{"k": "a", "ts": 1, "v": 1.0, "i": 1, "seq": 0}]
    ev = ws.events(to_frame(spark, rows), time="ts", key="k")
    result = run(ev, window, [ws.sum("v"), ws.max("v")])
    assert _run_of(result).plan.strategy in ("native-frames", "native-running")
    selected = result.select("k", F.col("time").alias("t"), "sum_v", "max_v")
    plan = selected._jdf.queryExecution().executedPlan().toString()
    below_shuffle = plan[plan.index("Exchange hashpartitioning"):]
    assert "Window [" in plan
    for output in ("time", "window_start", "window_end", "sum_v", "max_v"):
        assert f" AS {output}#" not in below_shuffle
    complete_only = window is not None and not window.partial  # one event: no window
    assert [tuple(r) for r in selected.collect()] == (
        [] if complete_only else [("a", dt.datetime(1970, 1, 1, 0, 0, 0, 1), 1.0, 1.0)])
