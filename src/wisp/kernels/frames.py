"""Frame bounds: for each anchor of a sorted key sequence, the half-open index range
`[lo, hi)` of the events in its window. Both bounds are non-decreasing in the anchor."""

from __future__ import annotations

import itertools
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
    lo = np.searchsorted(times, shifted(times, start), side=left_side).astype(np.int64)
    hi = np.searchsorted(times, shifted(times, end), side=right_side).astype(np.int64)
    return lo, np.maximum(hi, lo)


def cumulative_frames(n: int) -> tuple[IntArray, IntArray]:
    """Frames of the running window: the anchor at `i` holds positions `0..i`."""
    return np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)


def segment_bounds(starts: IntArray) -> tuple[IntArray, IntArray]:
    """For segments `[starts[s], starts[s + 1])` covering `0..starts[-1]`, each position's
    segment start and segment end."""
    lengths = np.diff(starts)
    return (np.repeat(starts[:-1], lengths).astype(np.int64),
            np.repeat(starts[1:], lengths).astype(np.int64))


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


SAFE_SPAN = float(1 << 62)


def segmented_range_frames(times: npt.NDArray[Any], starts: IntArray, start: int | float,
                           end: int | float, closed: str) -> tuple[IntArray, IntArray]:
    """`range_frames` for several sorted sequences at once, one per segment of `starts`.

    Integer times are moved into disjoint ranges, one per segment (each segment's times
    and bounds shifted to begin after the previous segment's), so that one search over
    all of them finds every frame inside its own segment. Float times, fractional
    offsets, bounds that saturate at the int64 limits, and segments whose ranges would
    together leave 2^62 are searched one segment at a time."""
    n = int(starts[-1])
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if times.dtype.kind != "i" or not (isinstance(start, (int, np.integer))
                                       and isinstance(end, (int, np.integer))):
        return _per_segment(times, starts, start, end, closed)
    heads = times[starts[:-1]]
    tails = times[starts[1:] - 1]
    below, above = min(int(start), int(end), 0), max(int(start), int(end), 0)
    info = np.iinfo(np.int64)
    saturates = (int(heads.min()) + below <= info.min or  # `shifted` saturates there
                 int(tails.max()) + above >= info.max)
    spans = tails.astype(np.float64) - heads.astype(np.float64) + (above - below) + 1
    if saturates or spans.sum() >= SAFE_SPAN:
        return _per_segment(times, starts, start, end, closed)
    lengths = np.diff(starts)
    widths = (tails - heads) + np.int64(above - below) + 1
    bases = np.concatenate([[0], np.cumsum(widths[:-1])]).astype(np.int64)
    placed = (times - np.repeat(heads, lengths)) + np.repeat(bases - below, lengths)
    left_side, right_side = search_sides(closed)
    lo = np.searchsorted(placed, placed + np.int64(start), side=left_side).astype(np.int64)
    hi = np.searchsorted(placed, placed + np.int64(end), side=right_side).astype(np.int64)
    begin, finish = segment_bounds(starts)
    lo = np.minimum(np.maximum(lo, begin), finish)
    hi = np.minimum(np.maximum(hi, begin), finish)
    return lo, np.maximum(hi, lo)


def _per_segment(times: npt.NDArray[Any], starts: IntArray, start: int | float,
                 end: int | float, closed: str) -> tuple[IntArray, IntArray]:
    los, his = [], []
    for a, b in itertools.pairwise(starts.tolist()):
        lo, hi = range_frames(times[a:b], start, end, closed)
        los.append(lo + a)
        his.append(hi + a)
    return np.concatenate(los), np.concatenate(his)
