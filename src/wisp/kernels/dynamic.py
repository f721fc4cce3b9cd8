"""Dynamic (anchor-driven) windows over one key's sorted event times.

Each anchor gives a window `[start, end]` (sides per `closed`); its events are found by
binary search in the key's sorted event times, so the windows may have any sizes and
need not move monotonically: O((n + m) log n) for n events and m anchors. An unknown
(null) start is the start of time, an unknown end the end of time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .runs import RunSearch, one_run, running_max

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def window_frames(times: npt.NDArray[Any], starts: npt.NDArray[Any], start_known: BoolArray,
                  ends: npt.NDArray[Any], end_known: BoolArray, closed: str,
                  runs: IntArray | None = None, anchor_runs: IntArray | None = None
                  ) -> tuple[IntArray, IntArray]:
    """`[lo, hi)` index ranges of sorted `times` inside each window `[start, end]`;
    `closed` is "both", "left", "right" or "neither". A window with start after end is
    empty (`lo == hi`). Several keys at once: `runs` (as in `kernels.runs`) where each
    key's times begin, `anchor_runs` the key of each window, searched in its key's
    times only."""
    left: Literal["left", "right"] = "left" if closed in ("both", "left") else "right"
    right: Literal["left", "right"] = "right" if closed in ("both", "right") else "left"
    runs = one_run(len(times)) if runs is None else runs
    owners = np.zeros(len(starts), dtype=np.int64) if anchor_runs is None else anchor_runs
    search = RunSearch(times, runs)
    lo = np.where(start_known, search(starts, owners, left), runs[owners])
    hi = np.where(end_known, search(ends, owners, right), runs[owners + 1])
    lo = lo.astype(np.int64)
    return lo, np.maximum(hi.astype(np.int64), lo)


def clock_origin(every: int | float, align: int | float) -> int:
    """Integer ticks: `align` reduced modulo `every`, the same ticks, from which their
    indices fit in 64 bits however far `align` lies from the data."""
    return int(align) % int(every)


def clock_ranges(first: npt.NDArray[Any], last: npt.NDArray[Any], every: int | float,
                 align: int | float) -> tuple[npt.NDArray[Any], IntArray]:
    """Per span `[first[i], last[i]]`: `(k0, count)`, its ticks are
    `align + (k0 + j)*every`, `j < count` (for integer ticks, with `align % every` in
    place of `align`: the same ticks, and `k0` fits in 64 bits however far `align` lies
    from the span). Exact integer arithmetic for integer ticks (floor-mod: correct
    before 1970), float64 for float time."""
    if any(isinstance(v, float) for v in (every, align)) or first.dtype.kind == "f":
        k0 = np.ceil((first.astype(np.float64) - align) / every)
        k1 = np.floor((last.astype(np.float64) - align) / every)
        return k0.astype(np.int64), np.maximum(0, k1 - k0 + 1).astype(np.int64)
    e, a = int(every), clock_origin(every, align)
    k0_big = -((a - first.astype(object)) // e)  # ceil((first - align) / every)
    k1_big = (last.astype(object) - a) // e
    counts = np.maximum(0, k1_big - k0_big + 1).astype(np.int64)
    return k0_big.astype(np.int64), counts


def clock_count(first: int | float, last: int | float, every: int | float,
                align: int | float) -> int:
    """How many ticks `align + k*every` lie in `[first, last]` (both inclusive)."""
    _, counts = clock_ranges(np.array([first]), np.array([last]), every, align)
    return int(counts[0])


def clock_ticks(first: int | float, last: int | float, every: int | float,
                align: int | float, skip: int = 0, limit: int | None = None
                ) -> npt.NDArray[Any]:
    """The ticks `align + k*every` in `[first, last]` (both inclusive), in order, from the
    `skip`-th on and at most `limit` of them."""
    k0s, counts = clock_ranges(np.array([first]), np.array([last]), every, align)
    k0, count = int(k0s[0]), int(counts[0])
    stop = count if limit is None else min(count, skip + limit)
    steps = np.arange(k0 + skip, k0 + max(stop, skip), dtype=np.int64)
    return tick_values(steps, every, align, np.array([first]).dtype.kind == "f")


def tick_values(steps: IntArray, every: int | float, align: int | float,
                float_time: bool) -> npt.NDArray[Any]:
    """`align + k*every` for each step `k` from `clock_ranges` (which counts integer
    steps from `align % every`)."""
    if float_time or any(isinstance(v, float) for v in (every, align)):
        result: npt.NDArray[Any] = float(align) + steps.astype(np.float64) * float(every)
        return result
    return clock_origin(every, align) + steps * int(every)


@dataclass(frozen=True)
class Violation:
    """The first anchor (in anchor order) that breaks an obsolete rule.

    `rule` is "decrease" (its obsolete is below the one of the anchor before it) or
    "start" (its window starts before an earlier anchor's obsolete); `bound` is that
    earlier obsolete, `found` the anchor's own obsolete or start."""

    index: int
    rule: str
    bound: Any
    found: Any
    found_known: bool


def obsolete_violations(starts: npt.NDArray[Any], start_known: BoolArray,
                        obsolete: npt.NDArray[Any], obsolete_known: BoolArray,
                        anchor_runs: IntArray | None = None) -> list[Violation]:
    """Check each key's anchors (`anchor_runs`: the key of each; one key by default), in
    anchor order: obsolete times must not decrease from one anchor to the next, and no
    window may start before an earlier anchor's obsolete. Unknown (null) obsolete and
    start are the start of time. Returns each key's first violation."""
    m = len(obsolete)
    if m < 2:
        return []
    owners = np.zeros(m, dtype=np.int64) if anchor_runs is None else anchor_runs
    floor = -np.inf if obsolete.dtype.kind == "f" else np.iinfo(np.int64).min
    obs = np.where(obsolete_known, obsolete, floor)
    begin = np.where(start_known, starts, floor)
    bounds = np.searchsorted(owners, np.arange(int(owners[-1]) + 2), side="left")
    before = running_max(obs, bounds.astype(np.int64))[:-1]  # the largest of earlier anchors
    same = owners[1:] == owners[:-1]
    decrease = same & (obs[1:] < obs[:-1])
    early = same & (begin[1:] < before)
    bad = np.nonzero(decrease | early)[0]
    firsts = bad[np.unique(owners[bad + 1], return_index=True)[1]]
    found = []
    for i in firsts.tolist():
        if decrease[i]:
            found.append(Violation(i + 1, "decrease", obsolete[i], obsolete[i + 1],
                                   bool(obsolete_known[i + 1])))
        else:
            found.append(Violation(i + 1, "start", before[i], starts[i + 1],
                                   bool(start_known[i + 1])))
    return found
