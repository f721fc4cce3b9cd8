"""Bounded lists of values and value counts over many frames `[lo, hi)` of one sorted
key sequence at once: `first_k`/`last_k` (window order), `top_k`/`bottom_k` (by value,
ties by window order) and `histogram` (each distinct value's count).

- `frame_first_k`: the frame's first or last `k` non-null positions, from the sorted
  positions of the non-null values (two `searchsorted` per frame, then one gather):
  O(n + output).
- `frame_best_k`: the `k` best non-null positions of each frame by value rank, ties by
  position. The non-null values are ranked once by (value, position), which makes
  every key distinct; each frame's `j`-th smallest key, for every `j < min(k, size)`,
  is one descent of a wavelet matrix over the keys (`order_stats.WaveletMatrix`), all
  (frame, j) pairs together, one vector step per bit: O((n + output) log n), whatever
  the frames' widths, never re-reading a frame's members.
- `frame_value_counts`: each frame's distinct value ranks and their counts, ascending.
  Its output is as large as the frame's distinct values, so the frame's members are
  grouped (one sort of (frame, rank) pairs), a bounded batch of frames at a time.

Positions are into the sequence; the caller turns them into values (Arrow `take`).
Nothing here reads Arrow.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from .order_stats import WaveletMatrix, compact_frames
from .window_agg import Lists

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

PAIRS_PER_BATCH = 1 << 21
"""(frame, member) pairs one vector step handles at most (`frame_best_k`,
`frame_value_counts` group their frames into batches of about this many): bounds the
temporaries whatever the frames' widths."""


def _offsets(lengths: IntArray) -> IntArray:
    offsets: IntArray = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _within(lengths: IntArray, offsets: IntArray) -> IntArray:
    """Each item's index inside its frame, frames of `lengths` laid end to end."""
    total = int(offsets[-1])
    result: IntArray = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    return result


def _batches(lengths: IntArray, limit: int = PAIRS_PER_BATCH) -> Iterator[tuple[int, int]]:
    """Consecutive runs `[a, b)` of frames whose lengths add up to about `limit` (a
    single frame longer than it alone)."""
    if not len(lengths):
        return
    ends = _offsets(lengths)
    a = 0
    while a < len(lengths):
        b = int(np.searchsorted(ends, ends[a] + limit, side="right")) - 1
        b = min(max(b, a + 1), len(lengths))
        yield a, b
        a = b


def frame_first_k(valid: BoolArray, lo: IntArray, hi: IntArray, k: int, *,
                  latest: bool) -> Lists:
    """The positions of each frame's first `k` non-null values (`latest`: its last
    `k`), in position order; fewer when the frame holds fewer, none over an empty
    frame."""
    present, begin, end = compact_frames(valid, lo, hi)
    lengths = np.minimum(end - begin, k).astype(np.int64)
    first = end - lengths if latest else begin
    offsets = _offsets(lengths)
    picked = np.repeat(first, lengths) + _within(lengths, offsets)
    positions = present[picked] if len(picked) else np.zeros(0, dtype=np.int64)
    return Lists(offsets, positions.astype(np.int64))


def frame_best_k(ranks: IntArray, valid: BoolArray, lo: IntArray, hi: IntArray, k: int,
                 *, largest: bool) -> Lists:
    """The positions of each frame's `k` largest (`largest`) or smallest non-null
    values, given each value's rank (equal values share one), best first; among equal
    values the earlier position first. Fewer when the frame holds fewer."""
    present, begin, end = compact_frames(valid, lo, hi)
    lengths = np.minimum(end - begin, k).astype(np.int64)
    offsets = _offsets(lengths)
    positions = np.zeros(int(offsets[-1]), dtype=np.int64)
    if not len(positions):
        return Lists(offsets, positions)
    data = ranks[present].astype(np.int64)
    sequence = np.arange(len(present), dtype=np.int64)
    # keys by (value best first, position): distinct, so a frame's j-th smallest key
    # is its j-th pick
    order = np.lexsort((sequence, -data if largest else data))
    keys = np.empty(len(present), dtype=np.int64)
    keys[order] = sequence
    matrix = WaveletMatrix.build(keys)
    for a, b in _batches(lengths):
        part = lengths[a:b]
        frames = np.repeat(np.arange(a, b, dtype=np.int64), part)
        j = _within(part, _offsets(part))
        found = matrix.kth_smallest(begin[frames], end[frames], j)
        positions[offsets[a]:offsets[b]] = present[order[found]]
    return Lists(offsets, positions)


def frame_value_counts(ranks: IntArray, valid: BoolArray, lo: IntArray, hi: IntArray
                       ) -> tuple[IntArray, IntArray, IntArray]:
    """Each frame's distinct non-null value ranks in ascending order and how many of
    the frame's values have each: `(offsets, ranks, counts)`, frame `i`'s entries at
    `[offsets[i], offsets[i + 1])`."""
    present, begin, end = compact_frames(valid, lo, hi)
    sizes = (end - begin).astype(np.int64)
    data = ranks[present].astype(np.int64)
    span = int(data.max(initial=0)) + 1
    distinct = np.zeros(len(lo), dtype=np.int64)
    found_ranks: list[IntArray] = []
    found_counts: list[IntArray] = []
    for a, b in _batches(sizes):
        part = sizes[a:b]
        local = np.repeat(np.arange(b - a, dtype=np.int64), part)
        members = np.repeat(begin[a:b], part) + _within(part, _offsets(part))
        keys, counts = np.unique(local * span + data[members], return_counts=True)
        owners = keys // span
        distinct[a:b] = np.bincount(owners, minlength=b - a)
        found_ranks.append(keys - owners * span)
        found_counts.append(counts.astype(np.int64))
    empty = np.zeros(0, dtype=np.int64)
    return (_offsets(distinct), np.concatenate([empty, *found_ranks]),
            np.concatenate([empty, *found_counts]))
