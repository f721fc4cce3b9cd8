"""Frames of the reset and trailing-period kernels against a literal per-row reading
(no Spark, many examples)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import fenl as kf

flags_lists = st.lists(st.booleans(), max_size=40)


def literal_periods(flags: list[bool]) -> list[int]:
    """Period of each row: the number of true flags strictly before it."""
    return [sum(flags[:i]) for i in range(len(flags))]


@settings(max_examples=300)
@given(flags=flags_lists)
def test_since_predicate_frames(flags: list[bool]) -> None:
    lo, hi = kf.since_predicate(np.array(flags, dtype=bool))
    periods = literal_periods(flags)
    for i in range(len(flags)):
        members = [j for j in range(i + 1) if periods[j] == periods[i]]
        assert (lo[i], hi[i]) == (members[0], i + 1)


@settings(max_examples=300)
@given(flags=flags_lists, n=st.integers(1, 5))
def test_trailing_predicate_frames(flags: list[bool], n: int) -> None:
    lo, hi, complete = kf.trailing_predicate(np.array(flags, dtype=bool), n)
    periods = literal_periods(flags)
    for i in range(len(flags)):
        members = [j for j in range(i + 1) if periods[i] - periods[j] < n]
        assert (lo[i], hi[i]) == (members[0], i + 1)
        assert complete[i] == (sum(flags[:i]) >= n - 1)


def test_seed_sliding_two_on_always_true_ticks() -> None:
    lo, hi, complete = kf.trailing_predicate(np.ones(4, dtype=bool), 2)
    assert lo.tolist() == [0, 0, 1, 2]
    assert hi.tolist() == [1, 2, 3, 4]
    assert complete.tolist() == [False, True, True, True]


@settings(max_examples=300)
@given(times=st.lists(st.integers(0, 60), min_size=1, max_size=30),
       step=st.integers(1, 9), n=st.integers(1, 4))
def test_calendar_event_frames(times: list[int], step: int, n: int) -> None:
    ordered = np.array(sorted(times), dtype=np.int64)
    first_tick = -(-int(ordered[0]) // step) * step  # first multiple of step >= first time
    ticks = np.arange(first_tick - n * step, int(ordered[-1]) + 2 * step, step,
                      dtype=np.int64)
    lo, hi, starts, complete = kf.calendar_events(ordered, ticks, n, n)
    for i, t in enumerate(ordered.tolist()):
        closing = -(-t // step) * step
        start = closing - n * step
        assert starts[i] == start
        members = [j for j in range(i + 1) if ordered[j] > start]
        assert (lo[i], hi[i]) == (members[0], i + 1)
        before = len([u for u in range(first_tick, t, step)])
        assert complete[i] == (before >= n - 1)


@settings(max_examples=200)
@given(times=st.lists(st.integers(0, 60), min_size=1, max_size=30), step=st.integers(1, 9))
def test_calendar_tick_frames(times: list[int], step: int) -> None:
    ordered = np.array(sorted(times), dtype=np.int64)
    ticks = np.arange(-step, 80, step, dtype=np.int64)
    first = int(np.searchsorted(ticks, ordered[0]))
    last = len(ticks) - 1
    lo, hi, starts, ends = kf.calendar_ticks(ordered, ticks, first, last)
    assert ends.tolist() == ticks[first:].tolist()
    for k in range(len(ends)):
        assert starts[k] == ends[k] - step
        members = [j for j, t in enumerate(ordered.tolist()) if starts[k] < t <= ends[k]]
        if members:
            assert (lo[k], hi[k]) == (members[0], members[-1] + 1)
        else:
            assert lo[k] == hi[k]


def test_tick_table_must_reach_the_last_event() -> None:
    with pytest.raises(ValueError, match="does not reach the last event"):
        kf.calendar_events(np.array([5, 50], np.int64), np.array([0, 10], np.int64), 1, 1)


def test_tick_table_reaches_back_and_forward() -> None:
    from wisp.spec.windows import daily

    hour = 3_600_000_000
    # 2024-03-09 12:00Z and 2024-03-11 04:00Z (exactly the New York midnight of 03-11)
    first_time, last_time = 1_709_985_600_000_000, 1_710_129_600_000_000
    ticks, first, last = kf.tick_table(daily("America/New_York"), first_time, last_time, 2)
    # New York midnights of 03-08 .. 03-11: two before the one closing 03-09 12:00Z
    # (03-10 05:00Z), then up to the one the last time sits exactly on
    midnights = [1_709_874_000_000_000, 1_709_960_400_000_000, 1_710_046_800_000_000,
                 1_710_129_600_000_000]
    assert ticks.tolist() == midnights
    assert (first, last) == (2, 3)
    assert midnights[3] - midnights[2] == 23 * hour
