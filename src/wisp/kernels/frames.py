"""Frame bounds: for each anchor of a sorted key sequence, the half-open index range
`[lo, hi)` of the events in its window. Both bounds are non-decreasing in the anchor."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def rows_frames(n: int, first: int, last: int, partial: bool) -> tuple[IntArray, IntArray,
                                                                       IntArray]:
    """Frames of a relative-index window over `n` events.

    The anchor at position `i` holds positions `i + first .. i + last` (inclusive).
    Returns `(anchors, lo, hi)`: only complete windows unless `partial`, in which case
    every anchor, with its frame clipped to `[0, n)` (possibly empty).
    """
    anchors = np.arange(n, dtype=np.int64)
    if not partial:
        anchors = anchors[(anchors + first >= 0) & (anchors + last < n)]
    lo = np.clip(anchors + first, 0, n)
    hi = np.clip(anchors + last + 1, 0, n)
    hi = np.maximum(hi, lo)
    return anchors, lo, hi


def shifted(times: npt.NDArray[Any], offset: int | float) -> npt.NDArray[Any]:
    """`times + offset`, saturating at the int64 range instead of wrapping."""
    if times.dtype.kind == "f":
        return times + offset
    info = np.iinfo(np.int64)
    if offset >= 0:
        limit = info.max - int(offset)
        return np.where(times > limit, info.max, times + np.int64(min(offset, info.max)))
    limit = info.min - int(offset)
    return np.where(times < limit, info.min, times + np.int64(max(offset, info.min)))


def range_frames(times: npt.NDArray[Any], start: int | float, end: int | float,
                 closed: str) -> tuple[IntArray, IntArray]:
    """Frames of the relative-time window `[t + start, t + end]` over sorted `times`.

    `closed` is "both", "left", "right" or "neither": an open side excludes events exactly
    on that bound. Returns `(lo, hi)` for every anchor.
    """
    left_side: Literal["left", "right"] = "left" if closed in ("both", "left") else "right"
    right_side: Literal["left", "right"] = "right" if closed in ("both", "right") else "left"
    lo = np.searchsorted(times, shifted(times, start), side=left_side).astype(np.int64)
    hi = np.searchsorted(times, shifted(times, end), side=right_side).astype(np.int64)
    return lo, np.maximum(hi, lo)


def cumulative_frames(n: int) -> tuple[IntArray, IntArray]:
    """Frames of the running window: the anchor at `i` holds positions `0..i`."""
    return np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)
