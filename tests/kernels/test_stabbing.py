"""The stabbing queries of `kernels/stabbing.py` against a brute force: for every
position, the aggregate of the events whose range covers it, listed one by one."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels.stabbing import (
    canonical_nodes,
    cover,
    stab_extreme,
    stab_moments,
    stab_positions,
    stab_sum,
)

VALUES = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan),
                   st.sampled_from([1e12, -1e12, 1e-3]))


@st.composite
def ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    count = draw(st.integers(0, 40))
    n = draw(st.integers(0, 30))
    first = [draw(st.integers(0, count)) for _ in range(n)]
    stop = [min(f + draw(st.integers(0, count + 1)), count) for f in first]
    values = [draw(VALUES) for _ in range(n)]
    valid = [draw(st.booleans()) for _ in range(n)]
    return (np.array(first, np.int64), np.array(stop, np.int64), count,
            np.array(values, np.float64), np.array(valid, bool))


def members(first: np.ndarray, stop: np.ndarray, p: int) -> list[int]:
    return [i for i in range(len(first)) if first[i] <= p < stop[i]]


@settings(max_examples=300, deadline=None)
@given(ranges())
def test_every_aggregate_matches_listing_the_members(case: tuple) -> None:
    first, stop, count, values, valid = case
    where = cover(first, stop, count)
    sums = stab_sum(values, where)
    highest = stab_extreme("max", values, -math.inf, where)
    lowest = stab_extreme("min", values, math.inf, where)
    n, means, m2 = stab_moments(values, valid, where)
    first_at, has_first = stab_positions("first", valid, where)
    last_at, has_last = stab_positions("last", valid, where)
    for p in range(count):
        found = members(first, stop, p)
        xs = [float(values[i]) for i in found]
        numbers = [x for x in xs if not math.isnan(x)]
        if len(numbers) < len(xs):
            assert math.isnan(sums[p]) and math.isnan(highest[p])
        else:
            assert math.isclose(sums[p], math.fsum(xs), rel_tol=1e-12,
                                abs_tol=1e-12 * sum(abs(x) for x in xs))
            assert highest[p] == (max(xs) if xs else -math.inf)
        assert lowest[p] == (min(numbers) if numbers else math.inf)
        kept = [float(values[i]) for i in found if valid[i]]
        assert n[p] == len(kept)
        if len(kept) >= 2 and not any(math.isnan(x) for x in kept):
            centre = math.fsum(kept) / len(kept)
            assert math.isclose(means[p], centre, rel_tol=1e-9,
                                abs_tol=1e-9 * max(abs(x) for x in kept))
            expected = math.fsum((x - centre) ** 2 for x in kept)
            assert math.isclose(m2[p], expected, rel_tol=1e-9,
                                abs_tol=1e-9 * max(x * x for x in kept))
        elif any(math.isnan(x) for x in kept):
            assert math.isnan(m2[p])
        with_value = [i for i in found if valid[i]]
        assert bool(has_first[p]) == bool(has_last[p]) == bool(with_value)
        if with_value:
            assert first_at[p] == with_value[0] and last_at[p] == with_value[-1]


@settings(max_examples=200, deadline=None)
@given(ranges())
def test_each_range_is_cut_into_disjoint_nodes_covering_it_exactly(case: tuple) -> None:
    first, stop, count, _, _ = case
    node, owner, leaves = canonical_nodes(first, stop, count)
    assert leaves >= count
    for i in range(len(first)):
        covered: list[int] = []
        for v in node[owner == i]:
            depth = int(v).bit_length() - 1
            width = leaves >> depth
            begin = (int(v) - (1 << depth)) * width
            covered += range(begin, begin + width)
        assert sorted(covered) == list(range(first[i], max(stop[i], first[i])))
        assert len(node[owner == i]) <= 2 * max(leaves.bit_length(), 1)


def test_open_ended_events_cost_logarithmic_memory() -> None:
    """200k events, half of them alive to the last position: listing members would take
    ~10^10 entries; the tree holds O(n log count)."""
    rng = np.random.default_rng(7)
    n, count = 200_000, 400_000
    first = np.sort(rng.integers(0, count, n)).astype(np.int64)
    stop = np.where(np.arange(n) % 2 == 0, count, np.minimum(first + 3, count))
    values = rng.normal(size=n)
    tracemalloc.start()
    try:
        where = cover(first, stop, count)
        highest = stab_extreme("max", values, -math.inf, where)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20  # measured: 50 MB
    # the last position holds every open-ended event: its max is theirs
    assert highest[-1] == values[::2].max()
