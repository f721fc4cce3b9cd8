"""The sketch aggregations on the executors (`runtime.aggregates.sketches`), without Spark:

- merge laws: a set of values split into parts in any order, the parts' sketches
  merged in any order, gives the sketch of all the values at once: the same bytes for
  HLL and theta (canonical), the same estimate; KLL (random beyond `k` values) within
  its rank error;
- frames: every frame kernel's result is the sketch of the frame's values built
  directly (sliding, running and arbitrary frames, empty frames);
- error bounds (hypothesis, seeded): HLL's and theta's relative error within three
  standard errors, a KLL quantile's rank within the sketch's normalized rank error;
- the values: nulls count for nothing, `-0.0` is `0.0`, NaN is one value (KLL skips
  it), duplicates count once, an empty window gives the empty sketch, 0, and no
  quantile.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

from wisp.kernels.sketches import canonical_hll
from wisp.runtime.aggregates.aggregate import AggregateJob, aggregate
from wisp.runtime.aggregates.partials import Chunk, Layout, partial_of
from wisp.runtime.aggregates.sketches import FAMILIES, Hll, Kll


def job(fn: str, value_class: str = "integer", *, lg_k: int = 12, k: int = 200,
        q: float = 0.5, qs: tuple[float, ...] | None = None) -> AggregateJob:
    outputs = {"hll_sketch": pa.binary(), "theta_sketch": pa.binary(),
               "kll_sketch": pa.binary(), "approx_count_distinct": pa.int64(),
               "approx_quantile": pa.float64() if qs is None else pa.list_(pa.float64())}
    return built_in_job(fn, "v", value_class, outputs[fn], None, lg_k=lg_k, k=k, q=q,
                        qs=qs)


KINDS = {"integer": pa.int64(), "float": pa.float64(), "ordered": pa.string()}


def states(j: AggregateJob, groups: list[list[Any]], kind: pa.DataType) -> pa.Table:
    """One state per group (`add` of one chunk, groups not empty), as a pane table
    holds them."""
    rows = [v for g in groups for v in g]
    column = pa.array(rows, kind)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    starts = np.cumsum([0, *[len(g) for g in groups[:-1]]]).astype(np.int64)
    chunk = Chunk(column, valid, np.zeros(len(rows), dtype=np.int64), starts)
    layout = Layout(pa.schema([pa.field("v", kind)]), pa.int64())
    columns = partial_of(j).add(j, 0, chunk, layout)
    n = np.add.reduceat(valid.astype(np.int64), starts)
    return pa.table({"n0": pa.array(n, pa.int64()), "h0": columns["h0"]})


def merged(j: AggregateJob, table: pa.Table, members: list[list[int]]) -> list[Any]:
    """Each group of states merged (`members[g]`: its rows, in the order given), then
    finished."""
    order = np.array([m for g in members for m in g], dtype=np.int64)
    starts = np.cumsum([0, *[len(g) for g in members[:-1]]]).astype(np.int64)
    n = np.add.reduceat(table.column("n0").to_numpy()[order], starts)
    partial = partial_of(j)
    columns = partial.merge(j, 0, table, order, starts)
    result: list[Any] = partial.finish(j, 0, columns, n).to_pylist()
    return result


def direct(j: AggregateJob, values: list[Any], kind: pa.DataType) -> Any:
    """The result over `values` from one sketch built directly, in the order given."""
    family = FAMILIES[j.definition.algebra]
    column = pa.array(values, kind)
    sketch = family.new(j)
    family.update(sketch, family.values(j, column, column.is_valid().to_numpy(
        zero_copy_only=False)))
    return family.result(j, [family.combine(j, [sketch])]).to_pylist()[0]


def split(rng: random.Random, values: list[Any], parts: int) -> list[list[Any]]:
    shuffled = values[:]
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(len(values) + 1), parts - 1))
    bounds = [0, *cuts, len(values)]
    parts_ = [shuffled[a:b] for a, b in itertools.pairwise(bounds)]
    return [part for part in parts_ if part] or [[]]


def estimate(blob: bytes, algebra: str) -> float:
    if algebra == "hll":
        return float(datasketches.hll_sketch.deserialize(blob).get_estimate())
    return float(datasketches.compact_theta_sketch.deserialize(blob).get_estimate())


# ---------------------------------------------------------------- merge laws


@pytest.mark.parametrize("fn", ["hll_sketch", "theta_sketch", "approx_count_distinct"])
@pytest.mark.parametrize("value_class", sorted(KINDS))
@pytest.mark.parametrize("distinct", [0, 3, 60, 700, 9000])
def test_any_split_merged_in_any_order_is_the_sketch_of_all(
        fn: str, value_class: str, distinct: int) -> None:
    """List, set and register modes of HLL, exact and estimation modes of theta: the
    same bytes (and so the same estimate) whatever the split and the order."""
    rng = random.Random(distinct)
    j = job(fn, value_class, lg_k=10 if fn == "theta_sketch" else 12)
    base = rng.sample(range(10 ** 9), distinct)
    values: list[Any] = {"integer": base, "float": [v / 7 for v in base],
                         "ordered": [f"s{v}" for v in base]}[value_class]
    values = [*values, *rng.sample(values, min(len(values), 50)), None, None, None]
    kind = KINDS[value_class]
    want = direct(j, values, kind)
    for parts in (1, 2, 5):
        pieces = split(rng, values, parts)
        table = states(j, pieces, kind)
        for _ in range(2):
            members = list(range(len(pieces)))
            rng.shuffle(members)
            assert merged(j, table, [members]) == [want]
    if fn != "approx_count_distinct" and distinct:
        error = abs(estimate(want, j.definition.algebra) - distinct) / distinct
        assert error < 0.2


def test_a_kll_merge_is_exact_up_to_k_values_and_within_its_rank_error_beyond() -> None:
    rng = random.Random(7)
    values = [rng.random() for _ in range(5000)]
    for count, exact in ((150, True), (5000, False)):
        chosen = values[:count]
        j = job("approx_quantile", "float", k=200, qs=(0.0, 0.1, 0.5, 0.9, 1.0))
        pieces = split(rng, chosen, 4)
        table = states(j, pieces, pa.float64())
        (got,) = merged(j, table, [list(range(len(pieces)))])
        ordered = sorted(chosen)
        bound = datasketches.kll_doubles_sketch.get_normalized_rank_error(200, False)
        for q, value in zip((0.0, 0.1, 0.5, 0.9, 1.0), got, strict=True):
            rank = sum(1 for v in ordered if v <= value) / count
            if exact:  # the inclusive search: the least value whose rank reaches q
                assert value == ordered[max(0, math.ceil(q * count) - 1)]
            else:
                assert abs(rank - q) <= bound + 1 / count


# -------------------------------------------------------------------- frames


def frame_results(j: AggregateJob, values: list[Any], kind: pa.DataType,
                  lo: np.ndarray, hi: np.ndarray) -> list[Any]:
    table = pa.table({"v": pa.array(values, kind)})
    result: list[Any] = aggregate(j, table, np.arange(len(values)), lo.astype(np.int64),
                                  hi.astype(np.int64)).to_pylist()
    return result


FRAMES = ["sliding", "running", "ranges", "arbitrary", "disjoint"]


def frames_of(how: str, n: int, w: int, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    ends = np.arange(1, n + 1)
    if how == "sliding":
        return np.maximum(ends - w, 0), ends
    if how == "running":
        return np.zeros(n, dtype=np.int64), ends
    if how == "ranges":  # ties: equal frames, empty frames, frames ending before they grow
        lo = np.sort(rng.integers(0, n, n))
        hi = np.maximum(np.sort(rng.integers(0, n + 1, n)), lo - rng.integers(0, 2, n))
        return lo, np.maximum(hi, 0)
    if how == "disjoint":
        cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, n // w), replace=False))
        bounds = np.r_[0, cuts, n]
        return bounds[:-1], bounds[1:]
    lo = rng.integers(0, n, n)
    return lo, np.minimum(lo + rng.integers(0, 2 * w, n), n)


@pytest.mark.parametrize("how", FRAMES)
@pytest.mark.parametrize("fn", ["hll_sketch", "theta_sketch", "approx_count_distinct",
                                "approx_quantile"])
def test_frames_are_the_sketches_of_their_values(how: str, fn: str) -> None:
    rng = np.random.default_rng(3)
    n, w = 600, 40
    raw = rng.integers(0, 300, n).astype(object)
    raw[rng.random(n) < 0.1] = None
    values = raw.tolist()
    j = job(fn, lg_k=5 if fn == "theta_sketch" else 4, k=100)
    lo, hi = frames_of(how, n, w, rng)
    got = frame_results(j, values, pa.int64(), lo, hi)
    want = [direct(j, values[a:b] if b > a else [], pa.int64())
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]
    if fn != "approx_quantile":
        assert got == want
        return
    for (a, b), value, exact in zip(zip(lo, hi, strict=True), got, want, strict=True):
        kept = sorted(v for v in values[a:b] if v is not None)
        if not kept:
            assert value is None and exact is None
        elif len(kept) <= 100:
            assert value == exact
        else:
            rank = sum(1 for v in kept if v <= value) / len(kept)
            bound = datasketches.kll_doubles_sketch.get_normalized_rank_error(100, False)
            assert abs(rank - 0.5) <= bound + 1 / len(kept)


def test_the_suffixes_kept_past_the_budget_give_the_same_frames(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `SUFFIX_BUDGET`, a segment keeps every `stride`-th suffix and adds the
    values between: the same sketches."""
    from wisp.kernels import sketches

    rng = np.random.default_rng(5)
    values = rng.integers(0, 10 ** 6, 3000).tolist()
    j = job("hll_sketch", lg_k=6)
    lo, hi = frames_of("sliding", 3000, 500, rng)
    whole = frame_results(j, values, pa.int64(), lo, hi)
    monkeypatch.setattr(sketches, "SUFFIX_BUDGET", 5000)
    assert frame_results(j, values, pa.int64(), lo, hi) == whole


# ------------------------------------------------------------- error bounds


@settings(max_examples=12, deadline=None, derandomize=True)
@given(distinct=st.integers(1, 30_000), lg_k=st.integers(8, 14), seed=st.integers(0, 99))
def test_hll_and_theta_estimates_are_within_three_standard_errors(
        distinct: int, lg_k: int, seed: int) -> None:
    values = random.Random(seed).sample(range(1 << 60), distinct)
    for fn, error in (("approx_count_distinct", 1.04), ("theta_sketch", 1.0)):
        j = job(fn, lg_k=lg_k)
        got = direct(j, values, pa.int64())
        found = got if fn == "approx_count_distinct" else estimate(got, "theta")
        assert abs(found - distinct) <= 3 * error / math.sqrt(2 ** lg_k) * distinct + 1


@settings(max_examples=12, deadline=None, derandomize=True)
@given(count=st.integers(1, 20_000), k=st.sampled_from([8, 50, 200]),
       q=st.floats(0, 1), seed=st.integers(0, 99))
def test_a_kll_quantile_rank_is_within_the_normalized_rank_error(
        count: int, k: int, q: float, seed: int) -> None:
    values = np.random.default_rng(seed).normal(size=count).tolist()
    got = direct(job("approx_quantile", "float", k=k, q=q), values, pa.float64())
    ordered = np.sort(values)
    rank = np.searchsorted(ordered, got, side="right") / count
    bound = datasketches.kll_doubles_sketch.get_normalized_rank_error(k, False)
    # the inclusive search: the least value whose rank reaches q (exact up to k values)
    assert rank >= q - bound - 1 / count and rank - 1 / count <= q + bound


# ---------------------------------------------------------------- the values


def test_nulls_duplicates_signed_zeros_and_nan() -> None:
    floats = [0.0, -0.0, math.nan, -math.nan, 1.5, 1.5, None]
    for fn in ("approx_count_distinct", "theta_sketch"):
        j = job(fn, "float")
        got = direct(j, floats, pa.float64())
        count = got if fn == "approx_count_distinct" else round(estimate(got, "theta"))
        assert count == 3  # 0.0, NaN, 1.5
        assert direct(j, [0.0, math.nan, 1.5], pa.float64()) == got
    j = job("approx_count_distinct", "ordered")
    assert direct(j, ["a", "a", "", None, "é"], pa.string()) == 2  # "" counts for nothing
    quantile = job("approx_quantile", "float", qs=(0.0, 1.0))
    assert direct(quantile, [math.nan, 2.0, None, 1.0], pa.float64()) == [1.0, 2.0]
    assert direct(quantile, [math.nan], pa.float64()) is None


@pytest.mark.parametrize("fn", ["hll_sketch", "theta_sketch", "kll_sketch",
                                "approx_count_distinct", "approx_quantile"])
def test_empty_windows(fn: str) -> None:
    """No values (or only nulls): the empty sketch's bytes, an estimate of 0, no
    quantile; the same from a frame without rows and from states without values."""
    j = job(fn, "integer", lg_k=12)
    family = FAMILIES[j.definition.algebra]
    want = {"approx_count_distinct": 0, "approx_quantile": None}.get(
        fn, family.combine(j, []))
    assert direct(j, [None, None], pa.int64()) == want
    assert frame_results(j, [None, 1], pa.int64(), np.array([0, 1, 1]),
                         np.array([1, 1, 1]))[:2] == [want, want]
    table = states(j, [[None], [None, None]], pa.int64())
    assert merged(j, table, [[0, 1]]) == [want]
    if fn in ("hll_sketch", "theta_sketch"):
        assert estimate(want, j.definition.algebra) == 0.0


def test_canonical_hll_marks_the_register_mode_out_of_order() -> None:
    """Same registers, two update orders: two accumulators, one canonical form, whose
    estimate is the composite estimator's (a union's)."""
    values = list(range(20_000))
    sketches = []
    for order in (values, values[::-1]):
        sketch = datasketches.hll_sketch(10, datasketches.tgt_hll_type.HLL_8)
        for v in order:
            sketch.update(v)
        sketches.append(sketch)
    first, second = (canonical_hll(s.serialize_compact()) for s in sketches)
    assert first == second
    union = datasketches.hll_union(10)
    union.update(sketches[0])
    union.update(sketches[1])
    assert datasketches.hll_sketch.deserialize(first).get_estimate() == \
        union.get_estimate()


@settings(max_examples=40, deadline=None, derandomize=True)
@given(sizes=st.lists(st.sampled_from([0, 1, 3, 8, 9, 20, 60, 200, 700, 3000]), min_size=1,
                      max_size=3),
       lg_k=st.sampled_from([4, 5, 8, 10, 12]), seed=st.integers(0, 999))
def test_an_estimate_read_from_the_parts_is_the_canonical_sketchs(
        sizes: list[int], lg_k: int, seed: int) -> None:
    """The frame kernels read HLL estimates and KLL quantiles from the merged parts
    without making the canonical bytes: the same values as read from those bytes, in
    every HLL mode (coupon list, coupon set, registers)."""
    rng = random.Random(seed)
    hll, kll = Hll(), Kll()
    counts = job("approx_count_distinct", lg_k=lg_k)
    quantiles = job("approx_quantile", "float", qs=(0.0, 0.25, 0.5, 1.0))
    hll_parts, kll_parts = [], []
    for size in sizes:
        values = [rng.randrange(-10**12, 10**12) for _ in range(size)]
        sketch = hll.new(counts)
        hll.update(sketch, values)
        hll_parts.append(sketch)
        doubles = kll.new(quantiles)
        kll.update(doubles, np.array(values[:60], dtype=np.float64))
        kll_parts.append(doubles)
    assert hll.estimate_parts(counts, hll_parts) == hll.estimate(
        counts, hll.combine(counts, hll_parts))
    assert kll.read_parts(quantiles, kll_parts) == kll.read(
        quantiles, kll.load(quantiles, kll.combine(quantiles, kll_parts)))
