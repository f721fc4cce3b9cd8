"""Order statistics over many frames `[lo, hi)` of one sequence at once: quantiles and
distinct counts, O((n + m) log n) for n values and m frames whatever the frames' widths.

Every frame of a key's run is known before any is answered, so the queries are answered
offline, all frames together, level by level of a wavelet matrix (`WaveletMatrix`): a
bit-sliced stable partition of the values, one prefix count of zeros per bit level. A
frame's k-th smallest value descends one level per bit (`kth_smallest`); the number of
values below a bound in a frame likewise (`count_below`). Each level is one vectorised
numpy step over all frames: no Python loop per frame or per event.

`frame_quantile` ranks the frame's non-null values (ties broken by position, NaN the
greatest, as Spark orders them) and reads one or two order statistics per frame, then
interpolates as numpy's quantile methods do. `frame_count_distinct` counts, in each frame,
the positions whose previous equal value lies before the frame (a dominance count over
"previous equal position", answered by `count_below`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class WaveletMatrix:
    """Non-negative integers below `2**bits`, sliced by bit from the highest: at level
    `j` (bit `bits - 1 - j`) `zeros[j][i]` is the number of zero bits among the first
    `i` values of that level's order, `totals[j]` the level's zeros. Each level's order
    is the previous level's, values with a zero bit first (stably)."""

    zeros: tuple[npt.NDArray[Any], ...]
    totals: IntArray
    bits: int

    @classmethod
    def build(cls, values: IntArray) -> WaveletMatrix:
        """The matrix of `values` (>= 0): O(n log max) time, `bits` prefix arrays."""
        n = len(values)
        bits = max(1, int(values.max(initial=0)).bit_length())
        dtype = np.int32 if n < 2**31 - 1 else np.int64
        current = values.astype(np.int64)
        zeros: list[npt.NDArray[Any]] = []
        totals = np.zeros(bits, dtype=np.int64)
        for j, bit in enumerate(range(bits - 1, -1, -1)):
            is_zero = ((current >> bit) & 1) == 0
            prefix = np.zeros(n + 1, dtype=dtype)
            np.cumsum(is_zero, out=prefix[1:])
            zeros.append(prefix)
            totals[j] = int(prefix[-1])
            current = np.concatenate([current[is_zero], current[~is_zero]])
        return cls(tuple(zeros), totals, bits)

    def kth_smallest(self, lo: IntArray, hi: IntArray, k: IntArray) -> IntArray:
        """The `k`-th smallest value (0-based) of each frame `[lo, hi)`; requires
        `0 <= k < hi - lo`."""
        begin, end, rank = lo.astype(np.int64), hi.astype(np.int64), k.astype(np.int64)
        result = np.zeros(len(lo), dtype=np.int64)
        for j, bit in enumerate(range(self.bits - 1, -1, -1)):
            prefix = self.zeros[j]
            zeros_before, zeros_to = prefix[begin].astype(np.int64), prefix[end].astype(
                np.int64)
            zeros_in = zeros_to - zeros_before
            left = rank < zeros_in
            result |= np.where(left, 0, np.int64(1) << bit)
            rank = np.where(left, rank, rank - zeros_in)
            total = self.totals[j]
            begin = np.where(left, zeros_before, total + begin - zeros_before)
            end = np.where(left, zeros_to, total + end - zeros_to)
        return result

    def count_below(self, lo: IntArray, hi: IntArray, bound: IntArray) -> IntArray:
        """The number of values `< bound` in each frame `[lo, hi)`."""
        begin, end = lo.astype(np.int64), hi.astype(np.int64)
        everything = bound >= (np.int64(1) << self.bits)
        limit = np.clip(bound, 0, (1 << self.bits) - 1).astype(np.int64)
        count = np.zeros(len(lo), dtype=np.int64)
        for j, bit in enumerate(range(self.bits - 1, -1, -1)):
            prefix = self.zeros[j]
            zeros_before, zeros_to = prefix[begin].astype(np.int64), prefix[end].astype(
                np.int64)
            one = ((limit >> bit) & 1) == 1
            count += np.where(one, zeros_to - zeros_before, 0)
            total = self.totals[j]
            begin = np.where(one, total + begin - zeros_before, zeros_before)
            end = np.where(one, total + end - zeros_to, zeros_to)
        return np.where(everything, hi - lo, count).astype(np.int64)


def compact_frames(valid: BoolArray, lo: IntArray, hi: IntArray
                   ) -> tuple[IntArray, IntArray, IntArray]:
    """The positions of the non-null values, and each frame `[lo, hi)` as a frame of
    those positions."""
    present = np.nonzero(valid)[0].astype(np.int64)
    begin = np.searchsorted(present, lo, side="left").astype(np.int64)
    end = np.searchsorted(present, hi, side="left").astype(np.int64)
    return present, begin, np.maximum(end, begin)


def sorted_order(values: npt.NDArray[Any]) -> IntArray:
    """Positions in ascending order of value, ties by position, NaN last (Spark's
    order: NaN is the greatest)."""
    return np.argsort(values, kind="stable").astype(np.int64)


def lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    """`a + (b - a) * t`, from `b`'s side for `t >= 0.5` (as numpy's quantile
    interpolates, so that results are monotone and exact at the ends)."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = b - a
        result: FloatArray = np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
    return result


def frame_quantile(values: npt.NDArray[Any], valid: BoolArray, lo: IntArray, hi: IntArray,
                   q: float, interpolation: str, divisor: float = 1.0
                   ) -> tuple[FloatArray, BoolArray]:
    """The `q`-quantile of each frame's non-null `values` (as float64) by numpy's method
    `interpolation` over `h = (n - 1) * q`: "lower" value `floor(h)`, "higher"
    `ceil(h)`, "nearest" `h` rounded half to even, "midpoint" the mean of those two
    (the value itself for a whole `h`), "linear" `floor(h)` interpolated towards the
    next by `h - floor(h)`; a whole `h` gives the value there exactly (also next to an
    infinity or NaN, where numpy's arithmetic gives NaN). Null (valid False) over a
    frame without values. `values` are ordered as given and divided by `divisor`
    (decimals: their unscaled integers and `10**scale`)."""
    present, begin, end = compact_frames(valid, lo, hi)
    counts = end - begin
    has = counts > 0
    result = np.zeros(len(lo), dtype=np.float64)
    if not len(present) or not has.any():
        return result, has
    data = values[present]
    order = sorted_order(data)
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order), dtype=np.int64)
    ordered = data[order].astype(np.float64) / divisor
    matrix = WaveletMatrix.build(ranks)
    frames = np.nonzero(has)[0]
    b, e, n = begin[frames], end[frames], counts[frames]
    virtual = (n - 1).astype(np.float64) * q
    below = np.floor(virtual).astype(np.int64)
    if interpolation == "lower":
        picks = below
    elif interpolation == "higher":
        picks = np.ceil(virtual).astype(np.int64)
    elif interpolation == "nearest":
        picks = np.around(virtual).astype(np.int64)
    else:
        picks = None
    if picks is not None:
        picks = np.clip(picks, 0, n - 1)
        result[frames] = ordered[matrix.kth_smallest(b, e, picks)]
        return result, has
    above = np.minimum(below + 1, n - 1)
    a = ordered[matrix.kth_smallest(b, e, below)]
    c = ordered[matrix.kth_smallest(b, e, above)]
    gamma = virtual - below
    if interpolation == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    # a whole `h` is the value there, whatever its neighbour (numpy's 0 * inf would
    # make the quantile 0 of [0, inf] NaN)
    result[frames] = np.where(gamma == 0, a, lerp(a, c, gamma))
    return result, has


def frame_count_distinct(ranks: IntArray, valid: BoolArray, lo: IntArray, hi: IntArray
                         ) -> IntArray:
    """The number of distinct non-null values in each frame, given each value's dense
    rank (equal values share one): the positions `i` of the frame whose previous equal
    value lies before the frame's start."""
    present, begin, end = compact_frames(valid, lo, hi)
    if not len(present):
        return np.zeros(len(lo), dtype=np.int64)
    data = ranks[present]
    order = np.argsort(data, kind="stable")
    previous = np.full(len(data), -1, dtype=np.int64)
    same = data[order[1:]] == data[order[:-1]]
    previous[order[1:][same]] = order[:-1][same]
    matrix = WaveletMatrix.build(previous + 1)
    return matrix.count_below(begin, end, begin + 1)


DECAY_BLOCK = 256.0
"""Half-lives per block of `decayed_sums`: within a block, weights relative to its first
row stay within 2**256, far inside the float range."""


def decayed_sums(values: FloatArray, times: npt.NDArray[Any], heads: BoolArray,
                 half_life: float) -> FloatArray:
    """`S[k] = sum(values[i] * 0.5 ** ((times[k] - times[i]) / half_life))` over the
    positions `i <= k` of `k`'s segment (a segment begins at each `heads` position and
    at 0; times ascend within one), O(n): each segment is cut into blocks spanning less
    than `DECAY_BLOCK` half-lives; a block's sums are one cumulative sum of values
    scaled up by `2 ** ((t_i - t_first) / half_life)`, scaled back down at `k`; the sum
    at a block's last row carries into the next block of its segment, decayed."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    head = heads.copy()
    head[0] = True
    segment_first = np.maximum.accumulate(np.where(head, np.arange(n), 0))
    # differences of times in their own type (exact for integer ticks), then floats
    since = (times - times[segment_first]).astype(np.float64) / half_life
    cell = np.floor(since / DECAY_BLOCK)
    block_head = head.copy()
    block_head[1:] |= cell[1:] != cell[:-1]
    firsts = np.nonzero(block_head)[0]
    block_first = np.maximum.accumulate(np.where(block_head, np.arange(n), 0))
    relative = (times - times[block_first]).astype(np.float64) / half_life
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = values * np.exp2(relative)
        local = segmented_cumsum(scaled, np.append(firsts, n)) * np.exp2(-relative)
        carried = np.nonzero(block_head & ~head)[0]  # blocks continuing a segment
        if len(carried):
            lasts = np.append(firsts[1:] - 1, n - 1)
            last_of = dict(zip(firsts.tolist(), lasts.tolist(), strict=True))
            for first in carried.tolist():  # in order: the previous block is final
                previous = first - 1
                stop = last_of[first] + 1
                decay = np.exp2(-(times[first:stop] - times[previous]).astype(np.float64)
                                / half_life)
                local[first:stop] += local[previous] * decay
    result: FloatArray = local
    return result


SHORT = 64
"""Segments up to this long are scanned together, position by position (one vector
operation per position); longer ones one by one (one `np.cumsum` each)."""


def segmented_cumsum(values: FloatArray, starts: IntArray) -> FloatArray:
    """Cumulative sums restarting at each of `starts` (strictly increasing, from 0, then
    n), each added in position order: segments longer than `SHORT` by one `np.cumsum`
    each, the shorter ones together, one vector step per position."""
    out = np.empty_like(values)
    heads, lengths = starts[:-1], np.diff(starts)
    for s in np.nonzero(lengths > SHORT)[0].tolist():
        out[heads[s]:starts[s + 1]] = np.cumsum(values[heads[s]:starts[s + 1]])
    short = np.nonzero(lengths <= SHORT)[0]
    order = short[np.argsort(-lengths[short], kind="stable")]
    begins, sizes = heads[order], lengths[order]
    out[begins] = values[begins]
    longest = int(sizes[0]) if len(sizes) else 0
    alive = np.searchsorted(-sizes, -np.arange(longest), side="left")
    for j in range(1, longest):
        at = begins[:alive[j]] + j
        out[at] = out[at - 1] + values[at]
    return out


def frame_ewm_mean(values: FloatArray, valid: BoolArray, times: npt.NDArray[Any], lo: IntArray,
                   hi: IntArray, half_life: float) -> tuple[FloatArray, BoolArray]:
    """The time-decayed mean of each running frame `[lo, hi)` (frames sharing `lo`
    extend one segment; at most one segment begins at each `lo`) at the time of its last
    row: `sum(w_i x_i) / sum(w_i)`, `w_i = 0.5 ** ((t_last - t_i) / half_life)` over its
    non-null rows: the same ratio as at the frame's last non-null row, where it is read.
    Null over a frame without a non-null value."""
    n = len(values)
    heads = np.zeros(n, dtype=bool)
    heads[lo[(lo < n) & (hi > lo)]] = True
    x = np.where(valid, values.astype(np.float64), 0.0)
    sums = decayed_sums(x, times, heads, half_life)
    weights = decayed_sums(valid.astype(np.float64), times, heads, half_life)
    # the ratio does not change as both sums decay alike: read it at the frame's last
    # non-null row, whose own weight (1) keeps the weights' sum from underflowing
    positions = np.arange(n, dtype=np.int64)
    last_valid = np.maximum.accumulate(np.where(valid, positions, -1)) if n else positions
    at = last_valid[np.clip(hi - 1, 0, max(n - 1, 0))] if n else np.zeros(len(lo), np.int64)
    has = (hi > lo) & (at >= lo)
    at = np.maximum(at, 0)
    result = np.zeros(len(lo), dtype=np.float64)
    if n:
        with np.errstate(divide="ignore", invalid="ignore"):
            result = np.where(has, sums[at] / np.where(has, weights[at], 1.0), 0.0)
    return result, has
