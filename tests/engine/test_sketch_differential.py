"""Sketches, approximate aggregations, k-collections and histograms on Spark, on every
window kind of `test_new_aggregations` (Rows, Range, cumulative, Since, Tumbling,
Hopping, Session, Sliding, Trailing, Dynamic; member lists: Snapshot, CountByStartTime,
Hopping over interval events, Sliding with out-of-order delta eviction), against the
brute-force oracles on the same random data: nulls, NaN, `-0.0`, empty strings, ties in
time, several keys (a null and an empty one among them), pre-1970 and far-future times.

The windows hold at most 24 values, where the sketches are exact: an HLL or theta
sketch's estimate is the distinct count, and a KLL sketch holds every value. So the
sketch columns are read back by Spark's own functions (`hll_sketch_estimate`,
`theta_sketch_estimate`, `kll_sketch_get_quantile_double` at 0.5), which must give the
oracle's exact distinct count and inclusive median."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_new_aggregations import KINDS, Q, event_rows, run_both, run_listed

import wisp as ws
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SKETCHES: list[Aggregation] = [
    ws.hll_sketch("v"), ws.hll_sketch("s", 21).alias("hll_s"),
    ws.hll_sketch("i", 10).alias("hll_i"), ws.theta_sketch("s"), ws.kll_sketch("v"),
    ws.kll_sketch("i", 24).alias("kll_i"),
    ws.approx_count_distinct("v"), ws.approx_count_distinct("s", lg_k=5).alias("acd_s"),
    ws.approx_quantile("v", 0.5), ws.approx_quantile("i", [0.0, 0.3, 1.0]),
]
LISTS: list[Aggregation] = [
    ws.first_k("v", 2), ws.last_k("s", 3), ws.top_k("v", 3), ws.bottom_k("i", 2),
    ws.top_k("s", 1), ws.first_k("i", 30), ws.histogram("v"), ws.histogram("s"),
    ws.top_k("v", 2, min_count=2).alias("top2")]
EVERYTHING = [*SKETCHES, *LISTS]
RUNNING = [a for a in EVERYTHING if a.fn != "histogram"]
"""A histogram keeps every distinct value: the running kernels carry accumulators."""
READERS = {"hll": F.hll_sketch_estimate, "theta": F.theta_sketch_estimate}


def read(df: DataFrame) -> DataFrame:
    """Sketch columns through Spark's readers (an empty KLL sketch has no median: null)."""
    columns: dict[str, Any] = {}
    for agg in EVERYTHING:
        name = agg.output_name
        if name not in df.columns:
            continue
        if agg.fn in ("hll_sketch", "theta_sketch"):
            columns[name] = READERS[agg.fn.split("_")[0]](name)
        elif agg.fn == "kll_sketch":
            columns[name] = F.when(F.kll_sketch_get_n_double(name) > 0,
                                   F.kll_sketch_get_quantile_double(name, F.lit(0.5)))
    return df.withColumns(columns)


@settings(max_examples=12, deadline=None)
@given(rows=event_rows(), kind=st.sampled_from(KINDS),
       key=st.sampled_from([[], ["k"], ["k", "s"]]), use_order=st.booleans())
def test_sketches_and_lists_match_the_oracles(spark: SparkSession,
                                              rows: list[dict[str, Any]], kind: str,
                                              key: list[str], use_order: bool) -> None:
    actual, expected = run_both(spark, rows, kind, key, "seq" if use_order else None,
                                EVERYTHING, RUNNING, read)
    assert_rows_match(actual, expected, rel=0.0)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_runs_them_on_a_fixed_table(spark: SparkSession, kind: str) -> None:
    rows = [{"k": k, "ts": t * Q, "v": v, "i": i, "s": s, "seq": 0, "r": r}
            for k, t, v, i, s, r in [
                ("a", 0, 1.0, 5, "x", False), ("a", 1, None, 5, "", True),
                ("a", 1, 3.0, 2, "x", None), ("a", 5, float("nan"), None, None, False),
                ("a", 5, -0.0, 9, "y", False), ("a", 5, 0.0, -9, "y", True),
                ("b", -3, 2.0, 1, "z", True), ("a", 6, -1.0, 7, "y", False)]]
    actual, expected = run_both(spark, rows, kind, ["k"], None, EVERYTHING, RUNNING, read)
    assert actual and len(actual) == len(expected)
    assert_rows_match(actual, expected, rel=0.0)


@settings(max_examples=8, deadline=None)
@given(rows=event_rows(), ends=st.lists(st.one_of(st.none(), st.integers(0, 8)),
                                        min_size=24, max_size=24),
       kind=st.sampled_from(["sliding_delta", "snapshot", "count_by_start", "hopping"]),
       key=st.sampled_from([[], ["k"]]), use_order=st.booleans())
def test_member_lists_match_the_oracles(spark: SparkSession, rows: list[dict[str, Any]],
                                        ends: list[int | None], kind: str, key: list[str],
                                        use_order: bool) -> None:
    for row, extra in zip(rows, ends, strict=False):
        row["te"] = None if extra is None else row["ts"] + extra * Q
    actual, expected = run_listed(spark, rows, kind, key, "seq" if use_order else None,
                                  EVERYTHING, EVERYTHING, read)
    assert_rows_match(actual, expected, rel=0.0)
