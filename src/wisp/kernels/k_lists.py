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
  the frames' widths, never re-reading a frame's members. Frames about as wide as `k`
  (`NARROW`) sort their members' keys instead, which is cheaper there.
- `frame_value_counts`: each frame's distinct value ranks and their counts, ascending.
  Its output is as large as the frame's distinct values. Few distinct values over wide
  frames: prefix counts of each value, a frame's counts their differences (O((n + m)
  * distinct values), whatever the widths); else the frame's members are grouped (one
  sort of (frame, value) pairs), a bounded batch of frames at a time.

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


NARROW = 4
"""`frame_best_k` sorts each frame's members where they are at most this many times
the values it keeps (frames about as wide as `k`), else descends the wavelet matrix."""


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
    sizes = (end - begin).astype(np.int64)
    if int(sizes.sum()) <= NARROW * len(positions):  # frames not much wider than k
        for a, b in _batches(sizes):
            part, take = sizes[a:b], lengths[a:b]
            local = np.repeat(np.arange(b - a, dtype=np.int64), part)
            members = np.repeat(begin[a:b], part) + _within(part, _offsets(part))
            ordered = np.sort(local * len(present) + keys[members])
            picks = np.repeat(_offsets(part)[:-1], take) + _within(take, _offsets(take))
            positions[offsets[a]:offsets[b]] = present[order[ordered[picks] % len(present)]]
        return Lists(offsets, positions)
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
    `[offsets[i], offsets[i + 1])`. By prefix counts of each distinct value where that
    costs less than grouping the frames' members (few distinct values, wide frames),
    else by grouping them."""
    present, begin, end = compact_frames(valid, lo, hi)
    sizes = (end - begin).astype(np.int64)
    distinct, codes = np.unique(ranks[present].astype(np.int64), return_inverse=True)
    codes = codes.astype(np.int64).reshape(-1)
    if len(distinct) * (len(present) + len(lo)) <= 2 * int(sizes.sum()):
        frames, found, counts = _prefix_counts(codes, len(distinct), begin, end)
    else:
        frames, found, counts = _grouped_counts(codes, len(distinct), begin, sizes)
    return _offsets(np.bincount(frames, minlength=len(lo)).astype(np.int64)), \
        distinct[found], counts


def _grouped_counts(codes: IntArray, distinct: int, begin: IntArray, sizes: IntArray
                    ) -> tuple[IntArray, IntArray, IntArray]:
    """(frame, value code, count) of each frame's distinct values, frame by frame and
    ascending: one sort of each batch of frames' (frame, code) pairs."""
    found: list[tuple[IntArray, IntArray, IntArray]] = []
    for a, b in _batches(sizes):
        part = sizes[a:b]
        local = np.repeat(np.arange(b - a, dtype=np.int64), part)
        members = np.repeat(begin[a:b], part) + _within(part, _offsets(part))
        keys, counts = np.unique(local * distinct + codes[members], return_counts=True)
        owners = keys // distinct
        found.append((owners + a, keys - owners * distinct, counts.astype(np.int64)))
    return _joined(found)


def _prefix_counts(codes: IntArray, distinct: int, begin: IntArray, end: IntArray
                   ) -> tuple[IntArray, IntArray, IntArray]:
    """(frame, value code, count) of each frame's distinct values, frame by frame and
    ascending: the prefix counts of a block of values at a time (`PAIRS_PER_BATCH`
    cells), each frame's counts their differences."""
    found: list[tuple[IntArray, IntArray, IntArray]] = []
    block = max(1, PAIRS_PER_BATCH // (max(len(codes), len(begin)) + 1))
    narrow = np.int32 if len(codes) < 2**31 - 1 else np.int64
    for first in range(0, distinct, block):
        values = np.arange(first, min(first + block, distinct), dtype=np.int64)
        prefix = np.zeros((len(codes) + 1, len(values)), dtype=narrow)
        np.cumsum(codes[:, None] == values[None, :], axis=0, out=prefix[1:])
        counts = (prefix[end] - prefix[begin]).ravel()
        held = np.flatnonzero(counts)  # frame by frame, values ascending
        found.append((held // len(values), values[held % len(values)],
                      counts[held].astype(np.int64)))
    frames, found_codes, counts = _joined(found)
    if len(found) > 1:  # blocks ascend: a stable sort by frame keeps values ascending
        order = np.argsort(frames, kind="stable")
        frames, found_codes, counts = frames[order], found_codes[order], counts[order]
    return frames, found_codes, counts


def _joined(parts: list[tuple[IntArray, IntArray, IntArray]]
            ) -> tuple[IntArray, IntArray, IntArray]:
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate([empty, *(p[0] for p in parts)]),
            np.concatenate([empty, *(p[1] for p in parts)]),
            np.concatenate([empty, *(p[2] for p in parts)]))
