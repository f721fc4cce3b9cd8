"""Sliding and policy-tumbling windows on Spark against the literal simulation of
tests/oracle_policies.py, on random data: several keys (a null key and an empty-string key
among them), ties, out-of-order arrival through `order`, nulls, NaN, pre-1970 and
far-future times, timestamp delta attributes and every policy combination."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_policies import spl_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND - 30 * SECOND]
COLUMNS = ["k", "ts", "a", "v", "s", "p", "seq"]
SCHEMA = "k string, t long, a double, v double, s string, p boolean, seq int"
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.stddev("v"), ws.collect("v"), ws.max("s"),
    ws.collect("s"),
]

values = st.one_of(st.none(), st.just(math.nan), st.floats(-1e6, 1e6, allow_nan=False),
                   st.sampled_from([0.0, 1.5]))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 24))
    base = draw(st.sampled_from(BASES))
    return [{"k": draw(st.sampled_from(["a", "b", "", None])),
             "ts": base + draw(st.integers(-8, 8)) * (SECOND // 2),
             "a": draw(st.integers(-6, 6)) * 0.5, "v": draw(values),
             "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "é"]))),
             "p": draw(st.one_of(st.none(), st.booleans())),
             "seq": draw(st.integers(0, 5))} for _ in range(n)]


SUBNORMAL_ROOT = 1e-145
"""Above the square root of the smallest normal double (about 1.5e-154), by a margin:
the scale below which moments' squares are subnormal and lose digits."""


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [(r["k"], r["ts"], r["a"], r["v"], r["s"], r["p"], r["seq"]) for r in rows]
    df = spark.createDataFrame(data, SCHEMA)
    return df.select("k", F.timestamp_micros("t").alias("ts"), "a", "v", "s", "p", "seq")


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected), (len(actual), len(expected))
    for got, want in zip(actual, expected, strict=True):
        scale = math.fsum(abs(x) for x in want["collect_v"] if math.isfinite(x)) or 1.0
        # squares below the smallest normal double (2.2e-308) lose digits: a standard
        # deviation of values near 1e-160 is exact only to about 1e-154
        assert_rows_match([got], [want], scales={"sum_v": scale, "mean_v": scale,
                                                 "stddev_v": max(scale, SUBNORMAL_ROOT)})


def policy(kind: str, size: int, d: float, time_attr: bool) -> Any:
    if kind == "count":
        return ws.Count(size)
    if kind == "time":
        return ws.Time(f"{size * 500}ms")
    if time_attr:
        return ws.Delta("ts", f"{int(d * 1000)}ms")
    return ws.Delta("a", d)


def expected_rows(rows: list[dict[str, Any]], window: Any, key: list[str],
                  order: str | None) -> list[dict[str, Any]]:
    return sort_output(spl_window(rows, time="ts", key=key, order=order, columns=COLUMNS,
                                  window=window, aggs=AGGREGATIONS), key)


@settings(max_examples=10)
@given(rows=event_rows(), evict=st.sampled_from(["count", "time", "delta"]),
       trigger=st.sampled_from(["count", "time", "delta"]), size_e=st.integers(1, 5),
       size_t=st.integers(1, 4), d_e=st.sampled_from([0.0, 0.5, 1.5]),
       d_t=st.sampled_from([0.0, 1.0]), partial=st.booleans(),
       key_choice=st.integers(0, 2), use_order=st.booleans(), time_attr=st.booleans())
def test_sliding_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]], evict: str,
                                trigger: str, size_e: int, size_t: int, d_e: float,
                                d_t: float, partial: bool, key_choice: int, use_order: bool,
                                time_attr: bool) -> None:
    key = [[], ["k"], ["k", "s"]][key_choice]
    order = "seq" if use_order else None
    window = ws.Sliding(policy(evict, size_e, d_e, time_attr),
                        policy(trigger, size_t, d_t, time_attr), partial=partial)
    ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
    check(collect(ev.window(window).agg(*AGGREGATIONS), key),
          expected_rows(rows, window, key, order))


@settings(max_examples=10)
@given(rows=event_rows(), kind=st.sampled_from(["count", "time", "delta", "punctuation"]),
       size=st.integers(1, 4), d=st.sampled_from([0.0, 1.0]), partial=st.booleans(),
       key_choice=st.integers(0, 1), use_order=st.booleans())
def test_tumbling_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]], kind: str,
                                 size: int, d: float, partial: bool, key_choice: int,
                                 use_order: bool) -> None:
    key = [[], ["k"]][key_choice]
    order = "seq" if use_order else None
    size_spec = ws.Punctuation("p") if kind == "punctuation" else policy(kind, size, d, False)
    window = ws.Tumbling(size_spec, partial=partial)
    ev = ws.events(to_frame(spark, rows), time="ts", key=key, order=order)
    check(collect(ev.window(window).agg(*AGGREGATIONS), key),
          expected_rows(rows, window, key, order))


NATIVE_AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.count("s"), ws.sum("v"), ws.mean("v"), ws.min("v"),
    ws.max("v"), ws.max("a"), ws.min("a")]


@settings(max_examples=10)
@given(rows=event_rows(), n=st.integers(1, 6), partial=st.booleans(),
       key_choice=st.integers(0, 2))
def test_last_n_tuples_by_spark_frames_match_oracle(spark: SparkSession,
                                                    rows: list[dict[str, Any]], n: int,
                                                    partial: bool, key_choice: int) -> None:
    # Sliding(Count(n)) with the default Count(1) trigger, in time order, is the Rows
    # window (-(n-1), 0): with aggregations Spark computes exactly it runs on Spark's frame
    assert_on_spark_matches_oracle(spark, rows, [[], ["k"], ["k", "s"]][key_choice],
                                   ws.Sliding(ws.Count(n), partial=partial),
                                   NATIVE_AGGREGATIONS, "native-frames")


def assert_on_spark_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                   key: list[str], window: Any,
                                   aggregations: list[Aggregation], strategy: str) -> None:
    """`window` over `rows` (time order, no `order`) runs as `strategy` and matches the
    oracle: float sums, means and moments within the scale of the values."""
    ev = ws.events(to_frame(spark, rows), time="ts", key=key)
    result = ev.window(window).agg(*aggregations)
    assert f"Strategy {strategy}" in ws.explain(result)
    expected = sort_output(spl_window(rows, time="ts", key=key, order=None, columns=COLUMNS,
                                      window=window, aggs=aggregations), key)
    scale = math.fsum(abs(r["v"]) for r in rows if r["v"] is not None and r["v"] == r["v"])
    scale = max(scale if math.isfinite(scale) else 1.0, 1.0)
    assert_rows_match(collect(result, key), expected,
                      scales={"sum_v": scale, "mean_v": scale, "stddev_v": scale,
                              "variance_v": scale * scale})


BATCH_AGGREGATIONS: list[Aggregation] = [
    *NATIVE_AGGREGATIONS, ws.stddev("v"), ws.variance("v"), ws.max("s"), ws.min("s")]


@settings(max_examples=10)
@given(rows=event_rows(), n=st.integers(1, 5), partial=st.booleans(),
       key_choice=st.integers(0, 2))
def test_batches_of_n_by_spark_match_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                            n: int, partial: bool, key_choice: int) -> None:
    # Tumbling(Count(n)) in time order is batches of n consecutive tuples: with order-free
    # aggregations it runs as Spark's row_number and one groupBy
    assert_on_spark_matches_oracle(spark, rows, [[], ["k"], ["k", "s"]][key_choice],
                                   ws.Tumbling(ws.Count(n), partial=partial),
                                   BATCH_AGGREGATIONS, "native-batches")


def test_batches_need_time_order_and_order_free_aggregations(spark: SparkSession) -> None:
    rows = [{"k": "a", "ts": BASES[0] + i * SECOND, "a": 0.0, "v": float(i), "s": "x",
             "p": False, "seq": 5 - i} for i in range(5)]
    ev = ws.events(to_frame(spark, rows), time="ts", key="k")
    batches = ws.Tumbling(ws.Count(2))
    assert "Strategy native-batches" in ws.explain(ev.window(batches).agg(ws.sum("v")))
    # first/last/collect follow arrival order, which a hash aggregation does not keep
    assert "Strategy arrow-spl" in ws.explain(ev.window(batches).agg(ws.first("v")))
    # with `order`, arrival is not time order: the kernel replays it
    ordered = ws.events(to_frame(spark, rows), time="ts", key="k", order="seq")
    assert "Strategy arrow-spl" in ws.explain(ordered.window(batches).agg(ws.sum("v")))
    # a tumbling window sized by time, delta or punctuation stays on the kernel
    assert "Strategy arrow-spl" in ws.explain(
        ev.window(ws.Tumbling(ws.Time(dt.timedelta(seconds=2)))).agg(ws.sum("v")))
