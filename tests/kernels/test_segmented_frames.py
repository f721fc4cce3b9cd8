"""Frames of several key runs computed at once equal the frames of each run alone:
`segmented_rows_frames` / `segmented_range_frames` against `rows_frames` /
`range_frames` run segment by segment, including times at the int64 limits (where
bounds saturate) and float times."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import frames as fr

LIMIT = 2**63 - 1
times = st.one_of(st.integers(-50, 50), st.integers(-LIMIT - 1, LIMIT),
                  st.sampled_from([-LIMIT - 1, -LIMIT, LIMIT - 1, LIMIT]))
runs = st.lists(st.lists(times, min_size=1, max_size=8).map(sorted), min_size=1, max_size=6)
offsets = st.one_of(st.integers(-60, 60), st.sampled_from([-LIMIT - 1, LIMIT, 0]))
CLOSED = st.sampled_from(["both", "left", "right", "neither"])


def starts_of(segments: list[list[int]] | list[list[float]]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum([len(s) for s in segments])]).astype(np.int64)


def one_by_one(segments: list[np.ndarray], start: int | float, end: int | float,
               closed: str) -> tuple[np.ndarray, np.ndarray]:
    los, his, base = [], [], 0
    for seg in segments:
        lo, hi = fr.range_frames(seg, start, end, closed)
        los.append(lo + base)
        his.append(hi + base)
        base += len(seg)
    return np.concatenate(los), np.concatenate(his)


def check_range_frames(arrays: list[np.ndarray], start: int | float, end: int | float,
                       closed: str) -> None:
    starts = np.concatenate([[0], np.cumsum([len(a) for a in arrays])]).astype(np.int64)
    lo, hi = fr.segmented_range_frames(np.concatenate(arrays), starts, start, end, closed)
    want_lo, want_hi = one_by_one(arrays, start, end, closed)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)


@settings(max_examples=400)
@given(segments=runs, start=offsets, end=offsets, closed=CLOSED)
def test_range_frames_of_several_runs(segments: list[list[int]], start: int, end: int,
                                      closed: str) -> None:
    check_range_frames([np.array(s, dtype=np.int64) for s in segments], start, end, closed)


@settings(max_examples=100)
@given(segments=st.lists(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=6).map(sorted),
                         min_size=1, max_size=4),
       start=st.floats(-50, 50), end=st.floats(-50, 50), closed=CLOSED)
def test_range_frames_of_several_float_runs(segments: list[list[float]], start: float,
                                            end: float, closed: str) -> None:
    check_range_frames([np.array(s, dtype=np.float64) for s in segments], start, end,
                       closed)


@settings(max_examples=300)
@given(segments=runs, side=st.sampled_from(["left", "right"]))
def test_tie_bounds_are_the_searches_they_replace(segments: list[list[int]],
                                                  side: str) -> None:
    """A window bound at the anchor's own time (offset 0) is found without a search:
    the same positions as `searchsorted` of the times in themselves, run by run."""
    arrays = [np.array(s, dtype=np.int64) for s in segments]
    for one in arrays:
        np.testing.assert_array_equal(fr.tie_bounds(one, side),
                                      np.searchsorted(one, one, side=side))
    starts = starts_of(segments)
    want = np.concatenate([np.searchsorted(a, a, side=side) + b
                           for a, b in zip(arrays, starts, strict=False)])
    np.testing.assert_array_equal(
        fr.tie_bounds(np.concatenate(arrays), side, starts), want)


@settings(max_examples=300)
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=6),
       bounds=st.tuples(st.integers(-7, 7), st.integers(-7, 7)).map(sorted),
       partial=st.booleans())
def test_rows_frames_of_several_runs(lengths: list[int], bounds: list[int],
                                     partial: bool) -> None:
    first, last = bounds
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    anchors, lo, hi = fr.segmented_rows_frames(starts, first, last, partial)
    parts = [fr.rows_frames(n, first, last, partial) for n in lengths]
    for got, index in ((anchors, 0), (lo, 1), (hi, 2)):
        want = np.concatenate([p[index] + base for p, base in zip(parts, starts[:-1],
                                                                  strict=True)])
        np.testing.assert_array_equal(got, want)
