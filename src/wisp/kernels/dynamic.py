"""Dynamic (anchor-driven) windows over one key's sorted event times.

Each anchor gives a window `[start, end]` (sides per `closed`); its events are found by
binary search in the key's sorted event times, so the windows may have any sizes and
need not move monotonically: O((n + m) log n) for n events and m anchors. An unknown
(null) start is the start of time, an unknown end the end of time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def window_frames(times: npt.NDArray[Any], starts: npt.NDArray[Any], start_known: BoolArray,
                  ends: npt.NDArray[Any], end_known: BoolArray,
                  closed: str) -> tuple[IntArray, IntArray]:
    """`[lo, hi)` index ranges of sorted `times` inside each window `[start, end]`;
    `closed` is "both", "left", "right" or "neither". A window with start after end is
    empty (`lo == hi`)."""
    left: Literal["left", "right"] = "left" if closed in ("both", "left") else "right"
    right: Literal["left", "right"] = "right" if closed in ("both", "right") else "left"
    lo = np.where(start_known, np.searchsorted(times, starts, side=left), 0)
    hi = np.where(end_known, np.searchsorted(times, ends, side=right), len(times))
    lo = lo.astype(np.int64)
    return lo, np.maximum(hi.astype(np.int64), lo)


def _clock_range(first: int | float, last: int | float, every: int | float,
                 align: int | float) -> tuple[int, int]:
    """`(k0, count)`: the ticks in `[first, last]` are `align + (k0 + i)*every`."""
    if any(isinstance(v, float) for v in (first, last, every, align)):
        k0 = math.ceil((first - align) / every)
        k1 = math.floor((last - align) / every)
    else:
        a, e = int(align), int(every)
        k0 = -((a - int(first)) // e)  # ceil((first - align) / every), floor-mod safe
        k1 = (int(last) - a) // e
    return k0, max(0, k1 - k0 + 1)


def clock_count(first: int | float, last: int | float, every: int | float,
                align: int | float) -> int:
    """How many ticks `align + k*every` lie in `[first, last]` (both inclusive)."""
    return _clock_range(first, last, every, align)[1]


def clock_ticks(first: int | float, last: int | float, every: int | float,
                align: int | float, skip: int = 0, limit: int | None = None
                ) -> npt.NDArray[Any]:
    """The ticks `align + k*every` in `[first, last]` (both inclusive), in order, from the
    `skip`-th on and at most `limit` of them; exact integer arithmetic for integer ticks
    (floor-mod: correct before 1970), float64 for float time."""
    k0, count = _clock_range(first, last, every, align)
    stop = count if limit is None else min(count, skip + limit)
    steps = np.arange(k0 + skip, k0 + max(stop, skip), dtype=np.int64)
    if any(isinstance(v, float) for v in (first, last, every, align)):
        return float(align) + steps.astype(np.float64) * float(every)
    return int(align) + steps * int(every)


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


def obsolete_violation(starts: npt.NDArray[Any], start_known: BoolArray,
                       obsolete: npt.NDArray[Any], obsolete_known: BoolArray
                       ) -> Violation | None:
    """Check the anchors of one key, in anchor order: obsolete times must not decrease
    from one anchor to the next, and no window may start before an earlier anchor's
    obsolete. Unknown (null) obsolete and start are the start of time."""
    m = len(obsolete)
    if m < 2:
        return None
    floor = -np.inf if obsolete.dtype.kind == "f" else np.iinfo(np.int64).min
    obs = np.where(obsolete_known, obsolete, floor)
    begin = np.where(start_known, starts, floor)
    before = np.maximum.accumulate(obs)[:-1]  # the largest obsolete of earlier anchors
    decrease = obs[1:] < obs[:-1]
    early = begin[1:] < before
    bad = decrease | early
    if not bad.any():
        return None
    i = int(np.argmax(bad))
    if decrease[i]:
        return Violation(i + 1, "decrease", obsolete[i], obsolete[i + 1],
                         bool(obsolete_known[i + 1]))
    return Violation(i + 1, "start", before[i], starts[i + 1], bool(start_known[i + 1]))
