"""The frame kernels of the k-collections and the histogram (`runtime.aggregates.k_lists`, over
`kernels.k_lists`), alone, without Spark: every frame `[lo, hi)` of a run of rows in
window order (random frames, empty ones among them, `k` from 1 to beyond the frames'
sizes) against a brute-force oracle written here from the semantics
(`spec.aggregates`): the non-null values in window order; `top_k`/`bottom_k` by Spark's
order (NaN the greatest), equal values in window order, so `-0.0` and `0.0` keep their
order and sign; `histogram` entries in ascending order of value, NaN one value, `-0.0`
counted as `0.0` and shown as `0.0`. Results compare exactly, a zero's sign included.

The partial states' laws are tested with the other algebras' in test_partials.py; here,
the order of equal values that differ (`-0.0`, `0.0`) across states merged in any
order, which those laws cannot see (they compare `-0.0` equal to `0.0`)."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

from wisp.kernels import k_lists as kl
from wisp.runtime.aggregates.aggregate import aggregate
from wisp.runtime.aggregates.partials import Chunk, Layout, partial_of

NAN = math.nan
KINDS: dict[str, tuple[str, pa.DataType, st.SearchStrategy[Any]]] = {
    "float": ("float", pa.float64(), st.one_of(
        st.integers(-3, 3).map(float),
        st.sampled_from([NAN, -0.0, 0.0, -0.0, math.inf, -math.inf]))),
    "integer": ("integer", pa.int64(), st.one_of(
        st.integers(-3, 3), st.sampled_from([(1 << 63) - 1, -(1 << 63)]))),
    "decimal": ("decimal", pa.decimal128(12, 2),
                st.integers(-400, 400).map(lambda u: Decimal(u).scaleb(-2))),
    "string": ("ordered", pa.string(), st.text(alphabet="aBé😀", max_size=2)),
    "date": ("ordered", pa.date32(), st.dates(dt.date(1969, 12, 30), dt.date(1970, 1, 3))),
    "boolean": ("boolean", pa.bool_(), st.booleans()),
    "array": ("other", pa.list_(pa.int64()), st.lists(st.integers(0, 2), max_size=2)),
}
TAKES = {"first_k": list(KINDS), "last_k": list(KINDS),
         "top_k": ["float", "integer", "decimal", "string", "date"],
         "bottom_k": ["float", "integer", "decimal", "string", "date"],
         "histogram": ["float", "integer", "decimal", "string", "date", "boolean"]}
CASES = [(fn, kind) for fn, kinds in TAKES.items() for kind in kinds]


def spark_key(value: Any) -> tuple[Any, ...]:
    """Spark's ascending order of non-null values: NaN after every number, `-0.0` equal
    to `0.0`."""
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


def exact(value: Any) -> Any:
    """A value compared exactly: a float's sign of zero counts, every NaN one value."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else (value, math.copysign(1.0, value))
    if isinstance(value, list):
        return [exact(v) for v in value]
    if isinstance(value, tuple):
        return tuple(exact(v) for v in value)
    return value


def oracle(fn: str, values: list[Any], k: int) -> Any:
    """One frame's result from its values in window order (nulls among them)."""
    present = [v for v in values if v is not None]
    if fn == "first_k":
        return present[:k]
    if fn == "last_k":
        return present[-k:]
    if fn in ("top_k", "bottom_k"):  # a stable sort: equal values in window order
        return sorted(present, key=spark_key, reverse=fn == "top_k")[:k]
    counts: dict[tuple[Any, ...], int] = {}
    shown: dict[tuple[Any, ...], Any] = {}
    for value in present:
        key = spark_key(value)
        counts[key] = counts.get(key, 0) + 1
        shown[key] = 0.0 if isinstance(value, float) and value == 0 else value
    return [(shown[key], counts[key]) for key in sorted(counts)]


def output_type(fn: str, kind: pa.DataType) -> pa.DataType:
    if fn == "histogram":
        return pa.map_(kind, pa.field("value", pa.int64(), nullable=False))
    return pa.list_(pa.field("element", kind, nullable=False))


def run(fn: str, kind: str, values: list[Any], lo: list[int], hi: list[int], k: int
        ) -> list[Any]:
    value_class, data_type, _ = KINDS[kind]
    job = built_in_job(fn, "v", value_class, output_type(fn, data_type), None,
                       k=k if fn != "histogram" else 0)
    group = pa.table({"v": pa.array(values, data_type)})
    result = aggregate(job, group, np.arange(len(values), dtype=np.int64),
                       np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64))
    assert result.type == job.output_type
    assert result.null_count == 0
    got: list[Any] = result.to_pylist()
    return got


@st.composite
def runs(draw: st.DrawFn, kind: str) -> tuple[list[Any], list[int], list[int], int]:
    """A run's values (nulls, duplicates), its frames (empty ones among them) and k."""
    values = draw(st.lists(st.none() | KINDS[kind][2], max_size=30))
    n = len(values)
    frames = draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, n)), max_size=12))
    lo = [min(a, b) for a, b in frames]
    hi = [max(a, b) for a, b in frames]
    if draw(st.booleans()):  # sliding frames of one width, as Rows gives them
        width = draw(st.integers(1, 6))
        lo += [max(0, i - width + 1) for i in range(n)]
        hi += [i + 1 for i in range(n)]
    return values, lo, hi, draw(st.integers(1, 8))


@settings(max_examples=60, deadline=None, derandomize=True)
@pytest.mark.parametrize(("fn", "kind"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@given(data=st.data())
def test_every_frame_is_the_oracle(fn: str, kind: str, data: st.DataObject) -> None:
    values, lo, hi, k = data.draw(runs(kind))
    got = run(fn, kind, values, lo, hi, k)
    for j, (a, b) in enumerate(zip(lo, hi, strict=True)):
        want = oracle(fn, values[a:b], k)
        assert exact(got[j]) == exact(want), (fn, kind, k, values[a:b], got[j], want)


@settings(max_examples=25, deadline=None, derandomize=True)
@pytest.mark.parametrize("fn", ["top_k", "bottom_k", "histogram"])
@given(data=st.data())
def test_frames_split_into_batches_alike(fn: str, data: st.DataObject,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames handled a few (frame, member) pairs at a time give the same results."""
    values, lo, hi, k = data.draw(runs("float"))
    whole = run(fn, "float", values, lo, hi, k)
    with monkeypatch.context() as patch:
        patch.setattr(kl, "PAIRS_PER_BATCH", data.draw(st.integers(1, 5)))
        assert exact(run(fn, "float", values, lo, hi, k)) == exact(whole)


def test_equal_zeros_keep_window_order_and_histograms_show_zero() -> None:
    values = [-0.0, 0.0, NAN, None, -0.0, 1.0, NAN, 0.0]
    assert exact(run("top_k", "float", values, [0, 0], [8, 3], 5)) == exact(
        [[NAN, NAN, 1.0, -0.0, 0.0], [NAN, -0.0, 0.0]])
    assert exact(run("bottom_k", "float", values, [1, 0], [8, 0], 3)) == exact(
        [[0.0, -0.0, 0.0], []])
    assert exact(run("histogram", "float", values, [0], [8], 0)) == exact(
        [[(0.0, 4), (1.0, 1), (NAN, 2)]])


def test_big_frames_keep_k_values() -> None:
    """Frames far wider than k over many rows: exact against sorting each frame."""
    rng = np.random.default_rng(7)
    n, width, k = 3000, 400, 5
    values = rng.integers(0, 50, n).astype(float).tolist()
    lo = [max(0, i - width + 1) for i in range(n)]
    hi = [i + 1 for i in range(n)]
    got = run("top_k", "float", values, lo, hi, k)
    for j in range(0, n, 97):
        assert got[j] == sorted(values[lo[j]:hi[j]], reverse=True)[:k]
    got = run("last_k", "float", values, lo, hi, k)
    assert all(got[j] == values[max(lo[j], hi[j] - k):hi[j]] for j in range(n))


# ----------------------------------------------------- partial states, zeros' order


def states(fn: str, rows: list[tuple[int, float]], k: int) -> pa.Table:
    """One state per row (its time and value), the value also its tie-break column."""
    job = built_in_job(fn, "v", "float", pa.list_(pa.float64()), None, k=k)
    layout = Layout(pa.schema([pa.field("v", pa.float64())]), pa.int64(), ("v",))
    column = pa.array([v for _, v in rows], pa.float64())
    chunk = Chunk(column, np.ones(len(rows), dtype=bool),
                  np.array([t for t, _ in rows], dtype=np.int64),
                  np.arange(len(rows), dtype=np.int64), None, (column,))
    added = partial_of(job).add(job, 0, chunk, layout)
    return pa.table({"n0": pa.array(np.ones(len(rows), dtype=np.int64)), **added})


@pytest.mark.parametrize("fn", ["top_k", "bottom_k", "first_k", "last_k"])
def test_merged_states_order_equal_zeros_by_window_order(fn: str) -> None:
    """States of one row each, merged in any order: equal zeros in window order, each
    with its sign (`top_k` of these: 1.0, 0.0, -0.0, 0.0)."""
    rows = [(0, 0.0), (1, -1.0), (2, -0.0), (3, 1.0), (4, 0.0), (5, 0.0)]
    want = oracle(fn, [v for _, v in rows], 4)
    job = built_in_job(fn, "v", "float", pa.list_(pa.float64()), None, k=4)
    table = states(fn, rows, 4)
    for seed in range(8):
        order = list(range(len(rows)))
        random.Random(seed).shuffle(order)
        merged = partial_of(job).merge(job, 0, table, np.array(order, dtype=np.int64),
                                       np.zeros(1, dtype=np.int64))
        got = partial_of(job).finish(job, 0, merged, np.array([len(rows)])).to_pylist()
        assert exact(got) == exact([want]), (fn, order)
