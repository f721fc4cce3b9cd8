"""Frames of the reset (`Since`) and trailing-period (`Trailing`) windows over one key's
events, sorted by time and tie-break. No Spark; numpy only.

Every function returns half-open index ranges `[lo, hi)` into the key's sorted events.

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

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def periods(flags: BoolArray) -> tuple[IntArray, IntArray]:
    """For each row, the number of ticks strictly before it (its period's index), and
    for each period index, the position of its first row."""
    ticks = flags.astype(np.int64)
    before = np.cumsum(ticks) - ticks
    first_rows = np.concatenate([np.zeros(1, np.int64),
                                 np.nonzero(flags)[0].astype(np.int64) + 1])
    return before, first_rows


def since_predicate(flags: BoolArray) -> tuple[IntArray, IntArray]:
    """`Since(pred)`: each row aggregates its period up to and including itself."""
    before, first_rows = periods(flags)
    return first_rows[before], np.arange(1, len(flags) + 1, dtype=np.int64)


def trailing_predicate(flags: BoolArray, n: int) -> tuple[IntArray, IntArray, BoolArray]:
    """`Trailing(n, pred)`: the row's period and the `n - 1` before it, up to and
    including the row; `complete` is False while fewer than `n - 1` ticks lie strictly
    before the row."""
    before, first_rows = periods(flags)
    lo = first_rows[np.maximum(before - (n - 1), 0)]
    return lo, np.arange(1, len(flags) + 1, dtype=np.int64), before >= n - 1


def closing_positions(times: IntArray, ticks: IntArray) -> IntArray:
    """For each event time, the position in `ticks` of the tick closing its period (the
    first tick >= t). `ticks` must reach at least the last time."""
    positions: IntArray = np.searchsorted(ticks, times, side="left").astype(np.int64)
    if len(times) and positions[-1] >= len(ticks):
        raise ValueError("wisp: the tick table does not reach the last event")
    return positions


def calendar_events(times: IntArray, ticks: IntArray, n: int, first: int
                    ) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    """Per-event frames of the last `n` calendar periods (`n = 1`: `Since(calendar)` at
    events), up to and including the row.

    `first` is the position in `ticks` of the key's first tick (the first tick >= its
    first event); `ticks` holds at least `n` ticks before it. Returns `(lo, hi,
    start_ticks, complete)`: the window is `(start_tick, t]`; `complete` is False while
    fewer than `n - 1` of the key's ticks lie strictly before the row.
    """
    closing = closing_positions(times, ticks)
    if len(times) and int(closing.min()) - n < 0:
        raise ValueError("wisp: the tick table does not reach back far enough")
    starts = ticks[closing - n]
    lo = np.searchsorted(times, starts, side="right").astype(np.int64)
    hi = np.arange(1, len(times) + 1, dtype=np.int64)
    return lo, hi, starts, closing - first >= n - 1


def calendar_ticks(times: IntArray, ticks: IntArray, first: int, last: int
                   ) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Per-tick frames of `Since(calendar)`: for ticks[first..last] (inclusive), the
    events in `(previous tick, tick]`. Returns `(lo, hi, previous ticks, ticks)`."""
    if first < 1:
        raise ValueError("wisp: the tick table needs the tick before the key's first tick")
    ends = ticks[first:last + 1]
    starts = ticks[first - 1:last]
    lo = np.searchsorted(times, starts, side="right").astype(np.int64)
    hi = np.searchsorted(times, ends, side="right").astype(np.int64)
    return lo, hi, starts, ends


@functools.lru_cache(maxsize=4096)
def _chunk_array(tick: CalendarTick, chunk: int) -> IntArray:
    return np.array(calendar.chunk_ticks(tick, chunk), dtype=np.int64)


def tick_table(tick: CalendarTick, first_time: int, last_time: int, back: int
               ) -> tuple[IntArray, int, int]:
    """The ticks a key needs: `back` ticks before the tick closing `first_time`'s period,
    then every tick up to the one closing `last_time`'s period. Returns `(ticks, first,
    last)`: the positions of those two closing ticks."""
    first_tick = calendar.closing_tick(tick, first_time)
    last_tick = calendar.closing_tick(tick, last_time)
    earlier = [first_tick]
    for _ in range(back):
        earlier.append(calendar.prev_tick(tick, earlier[-1]))
    chunks = range(first_tick // calendar.CHUNK, last_tick // calendar.CHUNK + 1)
    table = np.concatenate([_chunk_array(tick, c) for c in chunks])
    main = table[(table >= first_tick) & (table <= last_tick)]
    ticks = np.concatenate([np.array(earlier[:0:-1], dtype=np.int64), main])
    return ticks, back, back + len(main) - 1
