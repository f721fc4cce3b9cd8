"""Primitives over several keys' runs held one after another (kernels/runs.py) against
the same computation run by run: integers (lifted by a span), integers near the int64
limits and floats (lifted by ranks)."""

from __future__ import annotations

from typing import Literal

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels.runs import counts_at_most, run_index, run_search, running_max

BIG = np.iinfo(np.int64).max
numbers = st.one_of(st.integers(-50, 50), st.sampled_from([-BIG - 1, BIG, -BIG, BIG - 1]))


def layout(groups: list[list[int]]) -> np.ndarray:
    runs = [0]
    for group in groups:
        runs.append(runs[-1] + len(group))
    return np.array(runs, dtype=np.int64)


@settings(max_examples=200)
@given(groups=st.lists(st.lists(numbers, min_size=1, max_size=8), min_size=1, max_size=6),
       as_float=st.booleans())
def test_running_max_restarts_per_run(groups: list[list[int]], as_float: bool) -> None:
    dtype = np.float64 if as_float else np.int64
    runs = layout(groups)
    values = np.array([v for g in groups for v in g], dtype=dtype)
    got = running_max(values, runs)
    want = np.concatenate([np.maximum.accumulate(np.array(g, dtype=dtype)) for g in groups])
    assert got.dtype == values.dtype
    assert got.tolist() == want.tolist()


@settings(max_examples=200)
@given(groups=st.lists(st.lists(numbers, min_size=0, max_size=8), min_size=1, max_size=6),
       queries=st.lists(st.tuples(st.integers(0, 5), numbers), max_size=12),
       side=st.sampled_from(["left", "right"]), as_float=st.booleans())
def test_run_search_stays_in_each_run(groups: list[list[int]],
                                      queries: list[tuple[int, int]],
                                      side: Literal["left", "right"], as_float: bool) -> None:
    """Runs may be empty (a run of events with no eviction events)."""
    dtype = np.float64 if as_float else np.int64
    runs = layout(groups)
    values = np.array([v for g in groups for v in sorted(g)], dtype=dtype)
    asked = [(r % len(groups), q) for r, q in queries]
    got = run_search(values, runs, np.array([q for _, q in asked], dtype=dtype),
                     np.array([r for r, _ in asked], dtype=np.int64), side)
    want = [int(runs[r]) + int(np.searchsorted(np.array(sorted(groups[r]), dtype=dtype),
                                               dtype(q), side=side))
            for r, q in asked]
    assert got.tolist() == want


def test_run_index() -> None:
    assert run_index(np.array([0, 2, 2, 5], dtype=np.int64)).tolist() == [0, 0, 2, 2, 2]


@settings(max_examples=300)
@given(values=st.lists(st.integers(-5, 40), max_size=40), m=st.integers(0, 30))
def test_counts_at_most_is_a_search_of_the_sorted_values(values: list[int], m: int) -> None:
    ordered = np.sort(np.array(values, dtype=np.int64))
    want = np.searchsorted(ordered, np.arange(m), side="right")
    np.testing.assert_array_equal(counts_at_most(np.array(values, dtype=np.int64), m), want)
