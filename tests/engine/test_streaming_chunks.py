"""The Arrow frames kernel streams a key's run in chunks (tiny chunks and tiny Arrow
batches here: many chunks per key, and windows that straddle them) and still matches
the brute-force oracle, for `Rows` and `Range` windows of every shape, with a hot key."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, range_window, rows_window, sort_output
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
import wisp.engine.arrow as arrow
from wisp.spec.aggregates import Aggregation
from wisp.windowed import run

pytestmark = pytest.mark.spark

COLUMNS = ["k", "t", "v", "seq"]
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.variance("v"), ws.collect("v"),
    ws.udaf(lambda v, t: len(t), "v", returns="long").alias("n_v"),
]
SCALE = ws.udaf(lambda v, t: math.fsum(abs(x) for x in v if x == x), "v").alias("__scale")
FLOATS = ("sum_v", "mean_v", "variance_v")


@pytest.fixture(autouse=True)
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Chunks of 5 events (the session's Arrow batches hold 7 rows)."""
    monkeypatch.setattr(arrow, "CHUNK_ROWS", 5)
    yield


values = st.one_of(st.none(), st.just(math.nan), st.sampled_from([1e12, -1e12, 1e-3, 2.5]),
                   st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def event_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Up to 60 events, most on a hot key "h", times with ties and gaps."""
    n = draw(st.integers(0, 60))
    rows = []
    for i in range(n):
        rows.append({"k": draw(st.sampled_from(["h", "h", "h", "a", None])),
                     "t": draw(st.integers(-30, 30)) * draw(st.sampled_from([1, 1, 3])),
                     "v": draw(values), "seq": i})
    return rows


def frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    data = [(r["k"], r["t"], r["v"], r["seq"]) for r in rows]
    return spark.createDataFrame(data, "k string, t long, v double, seq int")


def check(result: DataFrame, expected: list[dict[str, Any]]) -> None:
    actual = sort_output([r.asDict() for r in result.collect()], ["k"])
    expected = sort_output(expected, ["k"])
    assert len(actual) == len(expected), (len(actual), len(expected))
    for got, want in zip(actual, expected, strict=True):
        scale = want.pop("__scale")
        assert_rows_match([got], [want], scales=dict.fromkeys(FLOATS, scale))


@settings(max_examples=10)
@given(rows=event_rows(), first=st.integers(-9, 4), width=st.integers(1, 9),
       partial=st.booleans())
def test_rows_streamed_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                      first: int, width: int, partial: bool) -> None:
    window = ws.Rows(first, first + width - 1, partial=partial)
    ev = ws.events(frame(spark, rows), time="t", key="k", order="seq")
    result = run(ev, window, AGGREGATIONS, strategy="arrow-frames")
    check(result, rows_window(rows, time="t", key=["k"], order="seq", columns=COLUMNS,
                              window=window, aggs=[*AGGREGATIONS, SCALE]))


@settings(max_examples=10)
@given(rows=event_rows(), start=st.integers(-40, 10), length=st.integers(0, 40),
       closed=st.sampled_from(["both", "left", "right", "neither"]))
def test_range_streamed_matches_oracle(spark: SparkSession, rows: list[dict[str, Any]],
                                       start: int, length: int, closed: str) -> None:
    if length == 0 and closed != "both":
        return  # a zero-length open window is refused by the spec (tested in tests/spec)
    window = ws.Range(start, start + length, closed=closed)  # type: ignore[arg-type]
    ev = ws.events(frame(spark, rows), time="t", key="k", order="seq")
    result = run(ev, window, AGGREGATIONS, strategy="arrow-frames")
    check(result, range_window(rows, time="t", key=["k"], order="seq", columns=COLUMNS,
                               window=window, aggs=[*AGGREGATIONS, SCALE]))


def test_hot_key_over_many_chunks(spark: SparkSession) -> None:
    """400 events of one key (80 chunks of 5) beside a small key, sums mixing 1e12 and
    1e-3: the same windows as the oracle."""
    rows = [{"k": "h" if i % 10 else "c", "t": i // 3, "v": 1e12 if i % 7 == 0 else 1e-3 * i,
             "seq": i} for i in range(400)]
    ev = ws.events(frame(spark, rows), time="t", key="k", order="seq")
    for window in (ws.Rows(-20, 3), ws.Range(-15, 2, closed="left")):
        result = run(ev, window, AGGREGATIONS, strategy="arrow-frames")
        oracle = rows_window if isinstance(window, ws.Rows) else range_window
        check(result, oracle(rows, time="t", key=["k"], order="seq", columns=COLUMNS,
                             window=window, aggs=[*AGGREGATIONS, SCALE]))  # type: ignore[arg-type]
