"""Gap-based sessions over one key's events sorted by time.

Each event is alive from its time to its `reach` (its time for a point event, its end
for an interval event, "forever" for an open one). A session is
`[first, last + gap)` where `last` is the largest reach of its events; an event joins
the current session when its time is at most `last + gap` (as Spark's `session_window`)
and, with a maximum duration, strictly before `first + max_duration`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .frames import shifted
from .runs import chain, run_index, run_search, running_max

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Sessions:
    """Session `i` holds events `lo[i]:hi[i]` and spans `[start[i], end[i])`;
    `end_known[i]` is False when the session never ends (an open interval event)."""

    lo: IntArray
    hi: IntArray
    start: npt.NDArray[Any]
    end: npt.NDArray[Any]
    end_known: BoolArray


def forever(times: npt.NDArray[Any]) -> Any:
    """The reach of an open event: +inf for float ticks, the largest int64 otherwise."""
    return np.inf if times.dtype.kind == "f" else np.iinfo(np.int64).max


def sessions(times: npt.NDArray[Any], reach: npt.NDArray[Any], gap: int | float,
             max_duration: int | float | None = None,
             runs: IntArray | None = None) -> Sessions:
    """Sessions of sorted `times` with each event's `reach` (>= its time; `forever(...)`
    for an open event), vectorised (interval events with a `max_duration` within an
    uncapped session of over `BLOCK` events: one step per session). `runs`: where each of
    several keys' runs begins, then the length; `times` is sorted within each run, and
    no session spans two runs."""
    n = len(times)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Sessions(empty, empty, times[:0], times[:0], np.zeros(0, dtype=bool))
    if max_duration is None:
        lo, hi, last = _natural(times, reach, gap, runs)
        end = shifted(last, gap)
    elif np.array_equal(reach, times):
        lo, hi, end = _capped_points(times, gap, max_duration, runs)
    else:
        lo, hi, end = _capped_intervals(times, reach, gap, max_duration, runs)
    known = end != forever(times)
    return Sessions(lo, hi, times[lo], end, known)


def _natural(times: npt.NDArray[Any], reach: npt.NDArray[Any], gap: int | float,
             runs: IntArray | None = None) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    several = runs is not None and len(runs) > 2
    reach_max = running_max(reach, runs) if runs is not None else np.maximum.accumulate(reach)
    new = np.ones(len(times), dtype=bool)
    new[1:] = times[1:] > shifted(reach_max[:-1], gap)
    if runs is not None and several:
        new[runs[:-1]] = True
    lo = np.nonzero(new)[0].astype(np.int64)
    hi = np.append(lo[1:], len(times)).astype(np.int64)
    last = np.maximum.reduceat(reach, lo)
    return lo, hi, last


def _capped_points(times: npt.NDArray[Any], gap: int | float, max_duration: int | float,
                   runs: IntArray | None) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """Sessions of point events (every reach is the event's own time) with a maximum
    duration, vectorised. An event's gap test looks only at the event before it, so
    the gap breaks are the uncapped ones whatever a session's start; within each
    uncapped session the starts are the chain `first -> first event at or after
    first + max_duration -> ...`, followed for all sessions at once (`runs.chain`)."""
    natural = np.append(_natural(times, times, gap, runs)[0], len(times)).astype(np.int64)
    cap, capped = _cap_breaks(times, natural, max_duration)
    return _chained(capped, times, gap, cap)


def _cap_breaks(times: npt.NDArray[Any], natural: IntArray, max_duration: int | float
                ) -> tuple[npt.NDArray[Any], IntArray]:
    """Each event's cap (`times + max_duration`) and, for a session begun at it, where
    the cap ends it: the first event of its uncapped session (`natural`: where each
    begins, then the length) at or after the cap, and at least the next event."""
    cap = shifted(times, max_duration)
    reached = run_search(times, natural, cap, run_index(natural), "left")
    return cap, np.maximum(reached, np.arange(1, len(times) + 1, dtype=np.int64))


def _chained(nxt: IntArray, reach: npt.NDArray[Any], gap: int | float,
             cap: npt.NDArray[Any]) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """The sessions whose starts are the chain `0 -> nxt[0] -> ...` (`runs.chain`): their
    events `lo:hi` and ends (the largest reach + gap, at most the start's cap)."""
    lo = chain(nxt)
    hi = np.append(lo[1:], len(nxt)).astype(np.int64)
    end = np.minimum(shifted(np.maximum.reduceat(reach, lo), gap), cap[lo])
    return lo, hi, end


BLOCK = 1 << 15
"""Events of whole uncapped sessions that `_capped_intervals` computes at once: its
lifting tables take O(block * log block) memory. A longer uncapped session is walked."""


def _capped_intervals(times: npt.NDArray[Any], reach: npt.NDArray[Any], gap: int | float,
                      max_duration: int | float, runs: IntArray | None,
                      block: int = BLOCK) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """Sessions of interval events with a maximum duration. A capped session never
    outlasts the uncapped session it starts in, so the uncapped sessions are
    independent: those of up to `block` events are computed together, vectorised
    (`_capped_block`), a longer one by the session-by-session walk (`_capped`)."""
    n = len(times)
    natural = np.append(_natural(times, reach, gap, runs)[0], n).astype(np.int64)
    sizes = np.diff(natural)
    alone = sizes > block
    # a new piece where the running event count crosses a multiple of `block`, and
    # around every session walked alone
    cut = np.ones(len(sizes), dtype=bool)
    cut[1:] = (natural[1:-1] // block != natural[:-2] // block) | alone[1:] | alone[:-1]
    firsts = np.nonzero(cut)[0]
    los: list[IntArray] = []
    his: list[IntArray] = []
    ends: list[npt.NDArray[Any]] = []
    for first, last in itertools.pairwise([*firsts.tolist(), len(sizes)]):
        a, b = int(natural[first]), int(natural[last])
        if alone[first]:
            lo, hi, end = _capped(times[a:b], reach[a:b], gap, max_duration)
        else:
            lo, hi, end = _capped_block(times[a:b], reach[a:b], gap, max_duration,
                                        natural[first:last + 1] - a)
        los.append(lo + a)
        his.append(hi + a)
        ends.append(end)
    return np.concatenate(los), np.concatenate(his), np.concatenate(ends)


def _capped_block(times: npt.NDArray[Any], reach: npt.NDArray[Any], gap: int | float,
                  max_duration: int | float, natural: IntArray
                  ) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """Capped sessions of interval events within the uncapped sessions `natural` (where
    each begins, then the length), all at once.

    Event `j` breaks a session begun at `i` when no event of `i..j-1` reaches within
    `gap` of it, i.e. when `cover[j] < i`, `cover[j]` being the last earlier event of
    its uncapped session with `reach + gap >= times[j]` (-1 if none). So a session begun
    at `i` ends at the first `j > i` with `cover[j] < i`, or earlier at the first event
    at or after `times[i] + max_duration`; both searches are binary liftings over
    tables of block maxima and minima, and the sessions are the chain of these ends
    from each uncapped session's first event (`runs.chain`)."""
    n = len(times)
    owner = run_index(natural)
    first = natural[:-1][owner]
    after = natural[1:][owner]
    levels = max(1, int(np.diff(natural).max()).bit_length())
    positions = np.arange(n, dtype=np.int64)
    # cover: move left over whole blocks that all fall short of each event
    at = positions.copy()
    reaches = _block_tables(shifted(reach, gap), levels, np.maximum)
    for size, table in reversed(list(enumerate(reaches))):
        step = at - (1 << size)
        move = step >= first
        move[move] = table[step[move]] < times[move]
        at[move] = step[move]
    cover = np.where(at > first, at - 1, -1)
    # gap break: move right over whole blocks whose covers all reach back to the start
    at = positions + 1
    for size, table in reversed(list(enumerate(_block_tables(cover, levels, np.minimum)))):
        step = at + (1 << size)
        move = step <= after
        move[move] = table[at[move]] >= positions[move]
        at[move] = step[move]
    cap, capped = _cap_breaks(times, natural, max_duration)
    return _chained(np.minimum(at, capped), reach, gap, cap)


def _block_tables(values: npt.NDArray[Any], levels: int, combine: np.ufunc
                  ) -> list[npt.NDArray[Any]]:
    """`tables[k][q]` = `combine` of `values[q : q + 2**k]` (clipped at the end), for
    `k < levels`."""
    tables = [values]
    for size in range(1, levels):
        half = 1 << (size - 1)
        below = tables[-1]
        table = below.copy()
        combine(below[:-half], below[half:], out=table[:-half])
        tables.append(table)
    return tables


def _capped(times: npt.NDArray[Any], reach: npt.NDArray[Any], gap: int | float,
            max_duration: int | float) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """One step per session. A capped session never outlasts the uncapped session it
    starts in (its own reach is at most the running reach of all earlier events), so
    each step scans at most up to that session's end or the cap, vectorised."""
    n = len(times)
    natural_lo, _, _ = _natural(times, reach, gap)
    natural_end = np.append(natural_lo[1:], n)
    los: list[int] = []
    his: list[int] = []
    ends: list[Any] = []
    i = 0
    while i < n:
        cap = _plus(times[i], max_duration, times.dtype)
        within = int(natural_end[np.searchsorted(natural_lo, i, "right") - 1])
        stop = max(i + 1, min(within, int(np.searchsorted(times, cap, "left"))))
        last = np.maximum.accumulate(reach[i:stop])
        # an event joins while its time is <= the reach so far + gap (and < the cap)
        breaks = times[i + 1:stop] > shifted(last[:-1], gap)
        j = i + 1 + int(np.argmax(breaks)) if breaks.any() else stop
        los.append(i)
        his.append(j)
        ends.append(min(_plus(last[j - 1 - i], gap, times.dtype), cap))
        i = j
    return (np.array(los, dtype=np.int64), np.array(his, dtype=np.int64),
            np.array(ends, dtype=times.dtype))


def _plus(value: Any, offset: int | float, dtype: np.dtype[Any]) -> Any:
    """`value + offset` in ticks of `dtype`, saturating at the int64 range."""
    return shifted(np.array([value], dtype=dtype), offset)[0]
