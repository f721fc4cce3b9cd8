"""Frames of the reset and trailing-period kernels against a literal per-row reading
(no Spark, many examples)."""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

import wisp as ws
from wisp import WispInputError
from wisp.kernels import periods as kf
from wisp.runtime.windows.periods import HIDDEN_NEWEST, TickKernel
from wisp.spec import calendar
from wisp.spec.windows import daily

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


def test_the_specification_sliding_two_on_always_true_ticks() -> None:
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
    lo, hi, starts, complete = kf.calendar_events(ordered, ticks, n, np.array([n]))
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
    lo, hi, starts, ends, _ = kf.calendar_ticks(ordered, ticks, np.array([first]),
                                                 np.array([last]))
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
        kf.calendar_events(np.array([5, 50], np.int64), np.array([0, 10], np.int64), 1,
                           np.array([1]))


runs_st = st.lists(st.lists(st.integers(0, 60), min_size=1, max_size=10), min_size=1,
                   max_size=6)


def laid_out(groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each run sorted, one after another, and where each begins."""
    times = np.array([t for g in groups for t in sorted(g)], dtype=np.int64)
    runs = np.cumsum([0, *map(len, groups)]).astype(np.int64)
    return times, runs


@settings(max_examples=200)
@given(groups=st.lists(flags_lists.filter(bool), min_size=1, max_size=6),
       n=st.integers(1, 4))
def test_predicate_frames_restart_per_run(groups: list[list[bool]], n: int) -> None:
    flags = np.array([f for g in groups for f in g], dtype=bool)
    runs = np.cumsum([0, *map(len, groups)]).astype(np.int64)
    since_lo, _ = kf.since_predicate(flags, runs)
    trailing_lo, _, complete = kf.trailing_predicate(flags, n, runs)
    for begin, stop in itertools.pairwise(runs.tolist()):
        alone = flags[begin:stop]
        assert (since_lo[begin:stop] - begin).tolist() == kf.since_predicate(alone)[0].tolist()
        lo, _, done = kf.trailing_predicate(alone, n)
        assert (trailing_lo[begin:stop] - begin).tolist() == lo.tolist()
        assert complete[begin:stop].tolist() == done.tolist()


@settings(max_examples=200)
@given(groups=runs_st, step=st.integers(1, 9), n=st.integers(1, 3))
def test_calendar_frames_restart_per_run(groups: list[list[int]], step: int, n: int) -> None:
    """Runs overlapping in time share one tick table; each run's frames are its own."""
    times, runs = laid_out(groups)
    ticks = np.arange(-(n + 1) * step, 80, step, dtype=np.int64)
    first = np.searchsorted(ticks, times[runs[:-1]]).astype(np.int64)
    last = np.full(len(first), len(ticks) - 1, dtype=np.int64)
    lo, hi, starts, complete = kf.calendar_events(times, ticks, n, first, runs)
    t_lo, t_hi, t_starts, t_ends, t_run = kf.calendar_ticks(times, ticks, first, last, runs)
    for r, (begin, stop) in enumerate(itertools.pairwise(runs.tolist())):
        alone = times[begin:stop]
        one = kf.calendar_events(alone, ticks, n, first[r:r + 1])
        assert (lo[begin:stop] - begin).tolist() == one[0].tolist()
        assert (hi[begin:stop] - begin).tolist() == one[1].tolist()
        assert starts[begin:stop].tolist() == one[2].tolist()
        assert complete[begin:stop].tolist() == one[3].tolist()
        mine = t_run == r
        own = kf.calendar_ticks(alone, ticks, first[r:r + 1], last[r:r + 1])
        assert (t_lo[mine] - begin).tolist() == own[0].tolist()
        assert (t_hi[mine] - begin).tolist() == own[1].tolist()
        assert t_starts[mine].tolist() == own[2].tolist()
        assert t_ends[mine].tolist() == own[3].tolist()


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


def test_keys_in_one_group_get_their_own_periods() -> None:
    """Several short keys in one call: close keys share one tick table, keys years
    apart build their own; either way each key's rows are those it gets alone."""
    day = 86_400_000_000
    kernel = TickKernel(
        keys=("k",), time="t", time_kind="timestamp", time_scale=0,
        calendar=ws.daily("America/New_York"), n=2, partial=True, emit="both",
        trailing=False, aggregates=(built_in_job("sum", "v", "float", pa.float64(), None),),
        schema=pa.schema([pa.field("k", pa.string()),
                          *[pa.field(f, pa.timestamp("us", tz="UTC"))
                            for f in ("window_start", "window_end", "time")],
                          pa.field("sum_v", pa.float64())]))
    base_1969, base_2024 = -6_000_000 * 1_000_000, 1_709_985_600_000_000
    keys = ["a", "a", "b", "b", "b", "c", "c"]
    times = [base_1969, base_1969 + day // 3, base_2024, base_2024 + day, base_2024 + 3 * day,
             base_2024 + day // 2, base_2024 + 2 * day]
    newest = [max(times)] * len(times)
    table = pa.table({"k": keys, "t": pa.array(times, pa.timestamp("us", tz="UTC")),
                      "v": [float(1 << i) for i in range(len(times))],
                      HIDDEN_NEWEST: pa.array(newest, pa.timestamp("us", tz="UTC"))})
    runs = np.array([0, 2, 5, 7], dtype=np.int64)
    together = kernel.run_group(table, runs).to_pylist()
    apart = [row for begin, stop in itertools.pairwise(runs.tolist())
             for row in kernel.run_group(table.slice(begin, stop - begin)).to_pylist()]
    assert together == apart
    assert {row["k"] for row in together} == {"a", "b", "c"}
    close = runs[[1, 2, 3]] - 2  # keys b and c alone: one shared table (the rows come
    # event rows first, then tick rows)
    assert ordered(kernel.run_group(table.slice(2), close).to_pylist()) == ordered(
        [row for row in apart if row["k"] != "a"])


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["k"], r["time"], r["window_start"], r["sum_v"]))


def test_tick_table_reaches_the_last_covered_day() -> None:
    """Times late in 9998 whose ticks lie in the covered years are served (the ~407-day
    chunk they fall in reaches past the years covered); a time past them fails, naming
    that time."""
    day = 86_400_000_000
    last_day = calendar.CALENDAR_MAX_US  # 9999-01-01 00:00 UTC, the end of 9998
    ticks, first, last = kf.tick_table(daily(), last_day - day - day // 2, last_day - day // 2, 1)
    assert ticks[first:last + 1].tolist() == [last_day - day, last_day]
    assert ticks[first - 1] == last_day - 2 * day
    with pytest.raises(WispInputError, match=re.escape(
            "`time` must lie in the years 0002..9998 for calendar ticks, found "
            "9999-01-01 00:00:00.000001 UTC")):
        kf.tick_table(daily(), last_day - day, last_day + 1, 1)
    first_day = calendar.CALENDAR_MIN_US  # 0002-01-01 00:00 UTC
    ticks, first, _ = kf.tick_table(daily(), first_day + day // 2, first_day + day, 1)
    assert ticks[first - 1:first + 1].tolist() == [first_day, first_day + day]
