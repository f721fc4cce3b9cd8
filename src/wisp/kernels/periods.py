"""Frames of the reset (`Since`) and trailing-period (`Trailing`) windows over one key's
events, sorted by time and tie-break. No Spark; numpy only.

Every function returns half-open index ranges `[lo, hi)` into the key's sorted events;
several keys' runs can be computed at once (`runs`, as in `kernels.runs`), no frame
reaching over its run's start.

- Predicate ticks: a row whose flag is true closes its period (it belongs to the period
  it closes); the next row starts a new period. A null flag counts as false.
- Calendar ticks: `ticks` is an ascending int64 array of tick instants; the period of an
  event at `t` is `(previous tick, first tick >= t]`, so an event exactly on a tick
  belongs to the period that tick closes.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from ..spec import calendar
from ..spec.windows import CalendarTick
from .runs import RunSearch, offsets, one_run, owners, run_index, run_search

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def since_predicate(flags: BoolArray, runs: IntArray | None = None
                    ) -> tuple[IntArray, IntArray]:
    """`Since(pred)`: each row aggregates its period up to and including itself; a
    period never reaches back over the start of the row's run (`runs`, as in
    `kernels.runs`; one run by default)."""
    n = len(flags)
    return _period_starts(flags, 0, runs), np.arange(1, n + 1, dtype=np.int64)


def trailing_predicate(flags: BoolArray, n: int, runs: IntArray | None = None
                       ) -> tuple[IntArray, IntArray, BoolArray]:
    """`Trailing(n, pred)`: the row's period and the `n - 1` before it in its run, up
    to and including the row; `complete` is False while fewer than `n - 1` ticks of its
    run lie strictly before the row."""
    runs = one_run(len(flags)) if runs is None else runs
    ticks = flags.astype(np.int64)
    before = np.cumsum(ticks) - ticks
    in_run = before - before[runs[:-1]][run_index(runs)] if len(flags) else before
    lo = _period_starts(flags, n - 1, runs)
    return lo, np.arange(1, len(flags) + 1, dtype=np.int64), in_run >= n - 1


def _period_starts(flags: BoolArray, back: int, runs: IntArray | None) -> IntArray:
    """For each row, the first row of the period `back` periods before its own (each
    tick row closes its period), or its run's start when the run has fewer."""
    n = len(flags)
    runs = one_run(n) if runs is None else runs
    ticks = flags.astype(np.int64)
    before = np.cumsum(ticks) - ticks  # ticks strictly before each row
    first_rows = np.concatenate([np.zeros(1, np.int64),
                                 np.nonzero(flags)[0].astype(np.int64) + 1])
    lo = first_rows[np.maximum(before - back, 0)]
    result: IntArray = np.maximum(lo, runs[:-1][run_index(runs)])
    return result


def closing_positions(times: IntArray, ticks: IntArray) -> IntArray:
    """For each event time, the position in `ticks` of the tick closing its period (the
    first tick >= t). `ticks` must reach at least the last time."""
    positions: IntArray = np.searchsorted(ticks, times, side="left").astype(np.int64)
    if len(times) and int(positions.max()) >= len(ticks):
        raise ValueError("wisp: the tick table does not reach the last event")
    return positions


def calendar_events(times: IntArray, ticks: IntArray, n: int, first: IntArray,
                    runs: IntArray | None = None
                    ) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    """Per-event frames of the last `n` calendar periods (`n = 1`: `Since(calendar)` at
    events), up to and including the row; `times` sorted within each run (`runs`, as in
    `kernels.runs`; one run by default).

    `first[r]` is the position in `ticks` of run `r`'s first tick (the first tick >= its
    first event); `ticks` holds at least `n` ticks before each. Returns `(lo, hi,
    start_ticks, complete)`: the window is `(start_tick, t]`; `complete` is False while
    fewer than `n - 1` of the run's ticks lie strictly before the row.
    """
    runs = one_run(len(times)) if runs is None else runs
    run_of = run_index(runs)
    closing = closing_positions(times, ticks)
    if len(times) and int(closing.min()) - n < 0:
        raise ValueError("wisp: the tick table does not reach back far enough")
    starts = ticks[closing - n]
    lo = run_search(times, runs, starts, run_of, "right")
    hi = np.arange(1, len(times) + 1, dtype=np.int64)
    return lo, hi, starts, closing - first[run_of] >= n - 1


def calendar_ticks(times: IntArray, ticks: IntArray, first: IntArray, last: IntArray,
                   runs: IntArray | None = None
                   ) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """Per-tick frames of `Since(calendar)`: for each run `r`, for
    `ticks[first[r]..last[r]]` (inclusive), the run's events in `(previous tick, tick]`.
    Returns `(lo, hi, previous ticks, ticks, run of each)`."""
    runs = one_run(len(times)) if runs is None else runs
    if len(first) and int(first.min()) < 1:
        raise ValueError("wisp: the tick table needs the tick before the key's first tick")
    counts = np.maximum(last - first + 1, 0)
    run_of_tick = owners(counts)
    position = np.repeat(first, counts) + offsets(counts)
    ends, starts = ticks[position], ticks[position - 1]
    search = RunSearch(times, runs)
    lo, hi = search(starts, run_of_tick, "right"), search(ends, run_of_tick, "right")
    return lo, hi, starts, ends, run_of_tick


@functools.lru_cache(maxsize=4096)
def _chunk_array(tick: CalendarTick, chunk: int) -> IntArray:
    return np.array(calendar.chunk_ticks(tick, chunk), dtype=np.int64)


def _ticks_within(ticks: IntArray, lo: int, hi: int) -> IntArray:
    """The ticks `u` of an ascending array with `lo <= u <= hi` (a chunk of a minute's
    cron holds half a million: two binary searches, not a mask over them)."""
    return ticks[np.searchsorted(ticks, lo, "left"):np.searchsorted(ticks, hi, "right")]


def tick_table(tick: CalendarTick, first_time: int, last_time: int, back: int
               ) -> tuple[IntArray, int, int]:
    """The ticks a key needs: `back` ticks before the tick closing `first_time`'s period,
    then every tick up to the one closing `last_time`'s period. Returns `(ticks, first,
    last)`: the positions of those two closing ticks."""
    calendar.check_range(first_time)
    calendar.check_range(last_time)
    first_tick = calendar.closing_tick(tick, first_time)
    last_tick = calendar.closing_tick(tick, last_time)
    earlier = [first_tick]
    for _ in range(back):
        earlier.append(calendar.prev_tick(tick, earlier[-1]))
    chunks = range(first_tick // calendar.CHUNK, last_tick // calendar.CHUNK + 1)
    main = np.concatenate([_ticks_within(_chunk_array(tick, c), first_tick, last_tick)
                           for c in chunks])
    ticks = np.concatenate([np.array(earlier[:0:-1], dtype=np.int64), main])
    return ticks, back, back + len(main) - 1
