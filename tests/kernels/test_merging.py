"""Frames of a user's mergeable aggregation by merged states (`kernels/merging.py`),
without Spark: two stacks and the segment tree against one `add` of each frame's values,
the running scan against a fresh `add` of every prefix, and the merge laws of the test
aggregators (`tests/aggregators.py`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from aggregators import Positives, Spread, Total, Trajectory, brute_force
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import merging

AGGREGATORS = [Spread(), Trajectory(), Total()]


class Counting:
    """Counts the calls to `add` and `merge` of the aggregator it wraps."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def zero(self) -> Any:
        return self.inner.zero()

    def add(self, state: Any, values: Any, times: Any) -> Any:
        self.calls += 1
        return self.inner.add(state, values, times)

    def merge(self, a: Any, b: Any) -> Any:
        self.calls += 1
        return self.inner.merge(a, b)

    def finish(self, state: Any) -> Any:
        return self.inner.finish(state)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, inside structs too."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@st.composite
def columns(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 40))
    values = np.array(draw(st.lists(st.one_of(st.integers(-50, 50), st.just(float("nan"))),
                                    min_size=n, max_size=n)), dtype=np.float64)
    valid = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    times = np.cumsum(np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
                               dtype=np.int64)) - 7
    return values, times, valid


def oracle(aggregator: Any, values: np.ndarray, times: np.ndarray, valid: np.ndarray,
           a: int, b: int) -> Any:
    kept = [i for i in range(a, b) if valid[i]]
    return brute_force(aggregator, [values[i] for i in kept], [times[i] for i in kept])


def integer_values(values: np.ndarray) -> np.ndarray:
    """`Total` sums integers: NaN as 0."""
    return np.where(np.isnan(values), 0, values).astype(np.int64)


@pytest.mark.parametrize("aggregator", AGGREGATORS, ids=lambda a: type(a).__name__)
@settings(max_examples=150)
@given(data=columns(), bounds=st.data())
def test_monotone_frames_match_one_add_per_frame(aggregator: Any, data: Any,
                                                 bounds: st.DataObject) -> None:
    values, times, valid = data
    if isinstance(aggregator, Total):
        values = integer_values(values)
    n = len(values)
    width = bounds.draw(st.integers(0, n + 1))
    lead = bounds.draw(st.integers(-3, 3))
    lo = np.clip(np.arange(n, dtype=np.int64) - width + lead, 0, n)
    hi = np.clip(np.arange(n, dtype=np.int64) + 1 + lead, 0, n)
    assert merging.monotone(lo, hi)
    got = merging.frame_results(aggregator, values, times, valid, lo, hi)
    for i in range(n):
        assert same(got[i], oracle(aggregator, values, times, valid, int(lo[i]), int(hi[i])))


@pytest.mark.parametrize("aggregator", AGGREGATORS, ids=lambda a: type(a).__name__)
@settings(max_examples=150)
@given(data=columns(), bounds=st.data())
def test_any_frames_match_one_add_per_frame(aggregator: Any, data: Any,
                                            bounds: st.DataObject) -> None:
    values, times, valid = data
    if isinstance(aggregator, Total):
        values = integer_values(values)
    n = len(values)
    m = bounds.draw(st.integers(0, 12))
    lo = np.array(bounds.draw(st.lists(st.integers(0, n), min_size=m, max_size=m)),
                  dtype=np.int64)
    hi = np.array([bounds.draw(st.integers(int(a), n)) for a in lo], dtype=np.int64)
    got = merging.frame_results(aggregator, values, times, valid, lo, hi)
    for i in range(m):
        assert same(got[i], oracle(aggregator, values, times, valid, int(lo[i]), int(hi[i])))


@pytest.mark.parametrize("aggregator", AGGREGATORS, ids=lambda a: type(a).__name__)
@settings(max_examples=100)
@given(data=columns(), cuts=st.lists(st.integers(1, 39), max_size=4))
def test_running_results_restart_at_each_segment(aggregator: Any, data: Any,
                                                 cuts: list[int]) -> None:
    values, times, valid = data
    if isinstance(aggregator, Total):
        values = integer_values(values)
    n = len(values)
    starts = np.array(sorted({0, *[c for c in cuts if c < n]}), dtype=np.int64)
    got, last = merging.running_results(aggregator, merging.NOTHING_CARRIED, values, times,
                                        valid, starts)
    begins = [int(starts[np.searchsorted(starts, i, side="right") - 1]) for i in range(n)]
    for i in range(n):
        assert same(got[i], oracle(aggregator, values, times, valid, begins[i], i + 1))
    if n:  # the state after the last row resumes the last segment
        resumed, _ = merging.running_results(aggregator, last, values[:0], times[:0],
                                             valid[:0], np.zeros(1, np.int64))
        assert resumed == []
        assert same(aggregator.finish(last), got[-1])


def test_two_stacks_cost_is_flat_in_the_width() -> None:
    """Calls to add and merge per frame stay bounded whatever the frame width: each row
    enters each stack once (a count, not a timing)."""
    n = 4000
    values = np.arange(n, dtype=np.float64)
    times = np.arange(n, dtype=np.int64)
    valid = np.ones(n, dtype=bool)
    for width in (10, 1000):
        counting = Counting(Spread())
        lo = np.maximum(np.arange(n, dtype=np.int64) - width + 1, 0)
        hi = np.arange(n, dtype=np.int64) + 1
        merging.frame_results(counting, values, times, valid, lo, hi)
        assert counting.calls <= 5 * n


@pytest.mark.parametrize("aggregator", AGGREGATORS, ids=lambda a: type(a).__name__)
@settings(max_examples=200)
@given(data=columns(), split=st.data())
def test_merge_laws(aggregator: Any, data: Any, split: st.DataObject) -> None:
    """`zero()` is merge's identity, merge is associative, and add over any split of the
    values then merge equals one add."""
    values, times, _ = data
    if isinstance(aggregator, Total):
        values = integer_values(values)
    n = len(values)
    i = split.draw(st.integers(0, n))
    j = split.draw(st.integers(i, n))

    def state(a: int, b: int) -> Any:
        return aggregator.add(aggregator.zero(), values[a:b], times[a:b])

    whole = aggregator.finish(state(0, n))
    a, b, c = state(0, i), state(i, j), state(j, n)
    left = aggregator.merge(aggregator.merge(a, b), c)
    right = aggregator.merge(a, aggregator.merge(b, c))
    assert same(aggregator.finish(left), whole)
    assert same(aggregator.finish(right), whole)
    assert same(aggregator.finish(aggregator.merge(aggregator.zero(), a)),
                aggregator.finish(a))
    assert same(aggregator.finish(aggregator.merge(a, aggregator.zero())),
                aggregator.finish(a))
    assert same(aggregator.finish(aggregator.add(a, values[i:n], times[i:n])), whole)


@settings(max_examples=100)
@given(data=columns(), split=st.integers(0, 40))
def test_remove_undoes_add(data: Any, split: int) -> None:
    values, times, _ = data
    total = Total()
    values = integer_values(values)
    k = min(split, len(values))
    everything = total.add(total.zero(), values, times)
    assert total.remove(everything, values[:k], times[:k]) == total.add(
        total.zero(), values[k:], times[k:])


@settings(max_examples=100)
@given(data=columns(), bounds=st.data())
def test_states_updated_in_place_are_never_shared(data: Any, bounds: st.DataObject) -> None:
    values, times, valid = data
    n = len(values)
    width = bounds.draw(st.integers(1, n + 1))
    lo = np.maximum(np.arange(n, dtype=np.int64) - width + 1, 0)
    hi = np.arange(n, dtype=np.int64) + 1
    expected = [[float(v) for v, ok in zip(values[a:b], valid[a:b], strict=True)
                 if ok and v > 0] for a, b in zip(lo, hi, strict=True)]
    assert merging.frame_results(Positives(), values, times, valid, lo, hi) == expected
    shuffled = np.array(bounds.draw(st.permutations(range(n))), dtype=np.int64)
    assert merging.frame_results(Positives(), values, times, valid, lo[shuffled],
                                 hi[shuffled]) == [expected[i] for i in shuffled]
    running, _ = merging.running_results(Positives(), merging.NOTHING_CARRIED, values, times, valid,
                                         np.zeros(1, np.int64))
    assert running == [expected_all for expected_all in (
        [float(v) for v, ok in zip(values[:i + 1], valid[:i + 1], strict=True)
         if ok and v > 0] for i in range(n))]
