"""Frame bounds: for each anchor of a sorted key sequence, the half-open index range
`[lo, hi)` of the events in its window. Both bounds are non-decreasing in the anchor."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .runs import RunSearch, run_index

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
    """`times + offset`, saturating at the int64 range instead of wrapping (`times`
    itself for a zero offset)."""
    if offset == 0:
        return times
    if times.dtype.kind == "f":
        return times + offset
    info = np.iinfo(np.int64)
    if offset >= 0:
        limit = info.max - int(offset)
        return np.where(times > limit, info.max, times + np.int64(min(offset, info.max)))
    limit = info.min - int(offset)
    return np.where(times < limit, info.min, times + np.int64(max(offset, info.min)))


Side = Literal["left", "right"]


def search_sides(closed: str) -> tuple[Side, Side]:
    """The binary-search sides of a frame's start and end bound: an open side excludes
    events exactly on that bound."""
    return ("left" if closed in ("both", "left") else "right",
            "right" if closed in ("both", "right") else "left")


def range_frames(times: npt.NDArray[Any], start: int | float, end: int | float,
                 closed: str) -> tuple[IntArray, IntArray]:
    """Frames of the relative-time window `[t + start, t + end]` over sorted `times`.

    `closed` is "both", "left", "right" or "neither": an open side excludes events exactly
    on that bound. Returns `(lo, hi)` for every anchor.
    """
    left_side, right_side = search_sides(closed)
    lo = offset_positions(times, start, left_side)
    hi = offset_positions(times, end, right_side)
    return lo, np.maximum(hi, lo)


def offset_positions(times: npt.NDArray[Any], offset: int | float, side: Side,
                     starts: IntArray | None = None, search: RunSearch | None = None
                     ) -> IntArray:
    """Where `times + offset` falls in the sorted `times` (`searchsorted` on `side`):
    the edge of each anchor's own group of equal times when `offset` is 0, found
    without a search; else a search in the whole array, or within each run of `starts`
    by `search` (which such a search needs)."""
    if offset == 0:
        return tie_bounds(times, side, starts)
    if starts is None:
        found: IntArray = np.searchsorted(times, shifted(times, offset), side=side).astype(
            np.int64)
        return found
    assert search is not None
    return search(shifted(times, offset), search.run_of, side)


def tie_bounds(times: npt.NDArray[Any], side: Side, starts: IntArray | None = None
               ) -> IntArray:
    """`searchsorted(times, times, side)` without a search, in O(n): each position's
    first position of equal time ("left") or one past its last ("right"). With
    `starts` (run starts, then the total length), equal times never join across runs,
    as a search within each run would find."""
    n = len(times)
    positions = np.arange(n, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = times[1:] != times[:-1]
    if starts is not None:
        new[starts[:-1][starts[:-1] < n]] = True
    if new.all():  # no ties: every position is its own group
        return positions if side == "left" else positions + 1
    if side == "left":
        firsts: IntArray = np.maximum.accumulate(np.where(new, positions, 0))
        return firsts
    last = np.ones(n, dtype=bool)
    last[:-1] = new[1:]
    ends: IntArray = np.minimum.accumulate(np.where(last, positions + 1, n)[::-1])[::-1]
    return ends


def cumulative_frames(n: int) -> tuple[IntArray, IntArray]:
    """Frames of the running window: the anchor at `i` holds positions `0..i`."""
    return np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)


def segment_bounds(starts: IntArray) -> tuple[IntArray, IntArray]:
    """For segments `[starts[s], starts[s + 1])` covering `0..starts[-1]`, each position's
    segment start and segment end."""
    segment = run_index(starts)
    return starts[:-1][segment], starts[1:][segment]


def segmented_rows_frames(starts: IntArray, first: int, last: int, partial: bool
                          ) -> tuple[IntArray, IntArray, IntArray]:
    """`rows_frames` for several sequences at once, one per segment of `starts`: frames
    are clipped to their own segment (and only complete windows kept unless `partial`)."""
    begin, end = segment_bounds(starts)
    anchors = np.arange(int(starts[-1]), dtype=np.int64)
    if not partial:
        whole = (anchors + first >= begin) & (anchors + last < end)
        anchors, begin, end = anchors[whole], begin[whole], end[whole]
    lo = np.minimum(np.maximum(anchors + first, begin), end)
    hi = np.minimum(np.maximum(anchors + last + 1, begin), end)
    return anchors, lo, np.maximum(hi, lo)


def segmented_range_frames(times: npt.NDArray[Any], starts: IntArray, start: int | float,
                           end: int | float, closed: str) -> tuple[IntArray, IntArray]:
    """`range_frames` for several sorted sequences at once, one per segment of `starts`:
    each bound is searched within its own segment (`runs.RunSearch`), so no frame
    leaves its segment."""
    search = RunSearch(times, starts) if start != 0 or end != 0 else None
    left_side, right_side = search_sides(closed)
    lo = offset_positions(times, start, left_side, starts, search)
    hi = offset_positions(times, end, right_side, starts, search)
    return lo, np.maximum(hi, lo)

