"""Running scans over positions cut into segments (kernels/segments.py) against the
same scan done segment by segment with plain Python: exact integer sums (past 64
bits), float sums in row order bit for bit, running maxima, first and last valid
positions."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wisp.kernels.segments import (
    Segments,
    first_positions,
    float_scan,
    int_scan,
    last_positions,
    segment_max,
)

BIG = np.iinfo(np.int64).max


def segments_of(lengths: list[int]) -> Segments:
    return Segments(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))


def pieces(segments: Segments) -> list[tuple[int, int]]:
    return list(itertools.pairwise(segments.starts.tolist()))


cut = st.lists(st.integers(1, 9), min_size=1, max_size=8)


def test_float_scans_add_in_row_order() -> None:
    """`float_scan` over segments short and long equals `np.cumsum` of each segment
    from +0.0, bit for bit (a -0.0 at a segment's head included)."""
    rng = np.random.default_rng(3)
    segments = segments_of([1, 3, 200, 65, 64, 2, 1, 90, 7])
    n = segments.n
    values = rng.normal(size=n) * 10.0 ** rng.integers(-9, 9, n)
    values[segments.starts[1]] = -0.0
    found = float_scan(values, segments)
    for begin, stop in pieces(segments):
        expected = np.cumsum(np.concatenate([[0.0], values[begin:stop]]))[1:]
        assert found[begin:stop].tobytes() == expected.tobytes()


@given(cut, st.data())
def test_integer_sums_are_exact_past_64_bits(lengths: list[int], data: st.DataObject
                                             ) -> None:
    segments = segments_of(lengths)
    values = data.draw(st.lists(st.sampled_from([BIG, -BIG - 1, 1, -1, 0, BIG - 7]),
                                min_size=segments.n, max_size=segments.n))
    found = int_scan(np.array(values, dtype=np.int64), segments)
    for begin, stop in pieces(segments):
        assert [int(v) for v in found[begin:stop]] == list(
            itertools.accumulate(values[begin:stop]))


@given(cut, st.data())
def test_running_maxima_restart_at_each_segment(lengths: list[int], data: st.DataObject
                                                ) -> None:
    segments = segments_of(lengths)
    values = data.draw(st.lists(st.integers(-5, 5), min_size=segments.n,
                                max_size=segments.n))
    found = segment_max(np.array(values, dtype=np.int64), segments)
    for begin, stop in pieces(segments):
        assert found[begin:stop].tolist() == list(itertools.accumulate(values[begin:stop],
                                                                       max))


@given(cut, st.data())
def test_first_and_last_valid_positions(lengths: list[int], data: st.DataObject) -> None:
    segments = segments_of(lengths)
    valid = np.array(data.draw(st.lists(st.booleans(), min_size=segments.n,
                                        max_size=segments.n)), dtype=bool)
    firsts, has_first = first_positions(valid, segments)
    lasts, has_last = last_positions(valid, segments)
    for begin, stop in pieces(segments):
        for at in range(begin, stop):
            seen = [p for p in range(begin, at + 1) if valid[p]]
            assert bool(has_first[at]) == bool(seen) == bool(has_last[at])
            if seen:
                assert (firsts[at], lasts[at]) == (seen[0], seen[-1])
