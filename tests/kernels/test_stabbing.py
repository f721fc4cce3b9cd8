"""The stabbing queries of `kernels/stabbing.py` against a brute force: for every
position, the aggregate of the items whose range covers it, listed one by one."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels.stabbing import (
    Stabbing,
    alive_collect,
    alive_extreme,
    alive_mean,
    alive_moments,
    alive_positions,
    alive_sum,
)

VALUES = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(math.nan),
                   st.sampled_from([1e12, -1e12, 1e-3]))


@st.composite
def ranges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray,
                                     np.ndarray]:
    m = draw(st.integers(0, 40))
    n = draw(st.integers(0, 30))
    qlo = [draw(st.integers(0, m)) for _ in range(n)]
    qhi = [min(lo + draw(st.integers(-2, m + 1)), m) for lo in qlo]  # some empty ranges
    values = [draw(VALUES) for _ in range(n)]
    integers = [draw(st.integers(-2**62, 2**62)) for _ in range(n)]
    valid = [draw(st.booleans()) for _ in range(n)]
    return (np.array(qlo, np.int64), np.array(qhi, np.int64), m,
            np.array(values, np.float64), np.array(integers, np.int64), np.array(valid, bool))


def members(qlo: np.ndarray, qhi: np.ndarray, p: int) -> list[int]:
    return [i for i in range(len(qlo)) if qlo[i] <= p < qhi[i]]


@settings(max_examples=300, deadline=None)
@given(ranges())
def test_every_aggregate_matches_listing_the_members(case: tuple) -> None:
    qlo, qhi, m, values, integers, valid = case
    stab = Stabbing(qlo, qhi, m)
    sums = alive_sum(stab, values, valid)
    exact = alive_sum(stab, integers, valid)
    means = alive_mean(stab, values, valid)
    highest = alive_extreme(stab, values, valid, largest=True)
    lowest = alive_extreme(stab, values, valid, largest=False)
    variance = alive_moments(stab, values, valid, root=False)
    first = alive_positions(stab, len(qlo), valid, latest=False)
    last = alive_positions(stab, len(qlo), valid, latest=True)
    lists = alive_collect(stab, valid)
    counts = stab.counts()
    for p in range(m):
        found = members(qlo, qhi, p)
        assert counts[p] == len(found)
        kept = [i for i in found if valid[i]]
        xs = [float(values[i]) for i in kept]
        numbers = [x for x in xs if not math.isnan(x)]
        assert lists.positions[lists.offsets[p]:lists.offsets[p + 1]].tolist() == kept
        assert int(exact.values[p]) == sum(int(integers[i]) for i in kept)
        assert bool(first.valid[p]) == bool(last.valid[p]) == bool(kept)
        assert bool(means.valid[p]) == bool(highest.valid[p]) == bool(kept)
        if kept:
            assert first.positions[p] == kept[0] and last.positions[p] == kept[-1]
        if len(numbers) < len(xs):
            assert math.isnan(sums.values[p]) and math.isnan(highest.values[p])
            assert math.isnan(means.values[p])
        else:
            assert math.isclose(sums.values[p], math.fsum(xs), rel_tol=1e-12,
                                abs_tol=1e-12 * sum(abs(x) for x in xs))
            if xs:
                assert highest.values[p] == max(xs)
                assert math.isclose(means.values[p], math.fsum(xs) / len(xs), rel_tol=1e-9,
                                    abs_tol=1e-9 * max(abs(x) for x in xs))
        if numbers:
            assert lowest.values[p] == min(numbers)
        elif xs:
            assert math.isnan(lowest.values[p])  # every value NaN: the minimum is NaN
        assert bool(variance.valid[p]) == (len(xs) >= 2)
        if len(xs) >= 2 and len(numbers) == len(xs):
            centre = math.fsum(xs) / len(xs)
            expected = math.fsum((x - centre) ** 2 for x in xs) / (len(xs) - 1)
            assert math.isclose(variance.values[p], expected, rel_tol=1e-9,
                                abs_tol=1e-9 * max(x * x for x in xs))


def test_ranges_reduce_over_the_positions_they_cover() -> None:
    # items 0..3 alive over positions [0,3), [1,2), [2,5), [4,4): sums per position
    qlo = np.array([0, 1, 2, 4], dtype=np.int64)
    qhi = np.array([3, 2, 5, 4], dtype=np.int64)
    stab = Stabbing(qlo, qhi, 5)
    values = np.array([1, 10, 100, 1000], dtype=np.int64)
    assert stab.reduce(values, np.add, 0).tolist() == [1, 11, 101, 100, 100]
    assert stab.counts().tolist() == [1, 2, 2, 1, 1]
    first = alive_positions(stab, 4, np.ones(4, dtype=bool), latest=False)
    assert first.positions.tolist() == [0, 0, 0, 2, 2]


def test_integer_sums_beyond_64_bits_stay_exact() -> None:
    # three items of 2^62 alive together: 3 * 2^62 does not fit a long
    stab = Stabbing(np.array([0, 0, 1]), np.array([2, 2, 2]), 2)
    sums = alive_sum(stab, np.full(3, 2**62, np.int64), np.ones(3, bool))
    assert [int(v) for v in sums.values] == [2**63, 3 * 2**62]


def test_open_ended_items_cost_logarithmic_memory() -> None:
    """200k items, half of them alive to the last position: listing members would take
    ~10^10 entries; the tree holds O(n log m)."""
    rng = np.random.default_rng(7)
    n, m = 200_000, 400_000
    qlo = np.sort(rng.integers(0, m, n)).astype(np.int64)
    qhi = np.where(np.arange(n) % 2 == 0, m, np.minimum(qlo + 3, m))
    values = rng.normal(size=n)
    tracemalloc.start()
    try:
        highest = alive_extreme(Stabbing(qlo, qhi, m), values, np.ones(n, bool), largest=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20
    # the last position holds every open-ended item: its max is theirs
    assert highest.values[-1] == values[::2].max()
