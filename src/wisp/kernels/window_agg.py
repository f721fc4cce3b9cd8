"""Aggregates over many frames `[lo, hi)` of one sorted key sequence at once.

Every function here costs O(n log n) at most, whatever the frames' widths: counts and
integer sums by prefix differences (exact: integers wrap modulo 2^64 and the window's
own sum is recovered exactly), float sums by prefix differences with their rounding
errors recovered and each frame's result certified (`certified.py`, O(n + m)),
everything else, and the float sums that cannot be certified, by the blocked
prefix/suffix scans of `blocked.py` (O(n) for fixed-width frames) backed by the
disjoint sparse table of `sparse.py`, which only ever add values inside the window.

Results are `Values` (numpy values with a validity mask), `Take` (positions into the
input column, for results that are input values: first, last, min/max of non-numeric
types) or `Lists` (offsets and positions, for collect).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import moments
from .blocked import blocked_query
from .certified import certified_sums
from .sparse import (
    extreme_monoid,
    extreme_ufunc,
    moments_monoid,
    overlap_fits,
    overlap_query,
    sum_monoid,
)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Values:
    """Computed values; `valid` False marks a null."""

    values: npt.NDArray[Any]
    valid: BoolArray


@dataclass(frozen=True)
class Take:
    """Results that are input values: `column.take(positions)`, null where not `valid`."""

    positions: IntArray
    valid: BoolArray


@dataclass(frozen=True)
class Lists:
    """One list per frame: `positions[offsets[i]:offsets[i+1]]` of the input column."""

    offsets: IntArray
    positions: IntArray


Result = Values | Take | Lists


def _prefix(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.concatenate([np.zeros(1, dtype=values.dtype), np.cumsum(values)])


def valid_counts(valid: BoolArray, lo: IntArray, hi: IntArray) -> IntArray:
    if valid.all():
        return (hi - lo).astype(np.int64)  # every value counts: no prefix needed
    counts = _prefix(valid.astype(np.int64))
    result: IntArray = counts[hi] - counts[lo]
    return result


def count_rows(lo: IntArray, hi: IntArray) -> Values:
    """`count()`: the number of events in each frame."""
    counts = (hi - lo).astype(np.int64)
    return Values(counts, np.ones(len(counts), dtype=bool))


def count_valid(valid: BoolArray, lo: IntArray, hi: IntArray) -> Values:
    """`count(col)`: the number of non-null values in each frame."""
    counts = valid_counts(valid, lo, hi)
    return Values(counts, np.ones(len(counts), dtype=bool))


def frame_sum(values: npt.NDArray[Any], valid: BoolArray, lo: IntArray,
              hi: IntArray) -> Values:
    """Sum of the non-null values (0 over a frame without any)."""
    everywhere = np.ones(len(lo), dtype=bool)
    if values.dtype == object:  # integers beyond 64 bits (wide decimals): exact
        exact = _prefix(np.where(valid, values, 0).astype(object))
        return Values(exact[hi] - exact[lo], everywhere)
    if values.dtype.kind in "iub":
        masked = np.where(valid, values, 0).astype(np.int64)
        largest = max(abs(int(masked.max(initial=0))), abs(int(masked.min(initial=0))))
        widest = largest * int((hi - lo).max(initial=0))
        if widest >= 1 << 63:  # a window sum may leave 64 bits: add exactly instead
            exact = _prefix(masked.astype(object))
            return Values(exact[hi] - exact[lo], everywhere)
        sums = _prefix(masked)
        return Values(sums[hi] - sums[lo], everywhere)
    masked_f = np.where(valid, values.astype(np.float64), 0.0)
    return Values(float_sums(masked_f, lo, hi), everywhere)


def float_sums(values: npt.NDArray[np.float64], lo: IntArray, hi: IntArray
               ) -> npt.NDArray[np.float64]:
    """Sums of `values[lo:hi]` per frame: certified prefix differences
    (`certified.py`, O(n + m)), and the blocked scans (which only add a frame's own
    values) for the frames that cannot be certified."""
    found = certified_sums(values, lo, hi)
    # a frame whose values add up beyond the float range sums to an infinity (or NaN,
    # with both signs), as adding them in order does: not worth a warning
    with np.errstate(over="ignore", invalid="ignore"):
        if found is None:
            (sums,) = blocked_query((values,), lo, hi, sum_monoid())
            return sums
        sums, certified = found
        if not certified.all():
            redo = np.nonzero(~certified)[0]
            (sums[redo],) = blocked_query((values,), lo[redo], hi[redo], sum_monoid())
    return sums


def frame_mean(values: npt.NDArray[Any], valid: BoolArray, lo: IntArray,
               hi: IntArray, sums: npt.NDArray[Any] | None = None,
               counts: IntArray | None = None) -> Values:
    """Mean of the non-null values as a double; null over a frame without any.
    `sums` and `counts`, when given, are the frames' sums and valid counts already
    computed (they are not recomputed)."""
    if counts is None:
        counts = valid_counts(valid, lo, hi)
    if sums is None:
        sums = frame_sum(values, valid, lo, hi).values
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(counts > 0, sums.astype(np.float64) / np.maximum(counts, 1), 0.0)
    return Values(means, counts > 0)


def frame_extreme(values: npt.NDArray[Any], valid: BoolArray, lo: IntArray,
                  hi: IntArray, *, largest: bool) -> Values:
    """`max` (`largest`) or `min` of numeric values; NaN is the greatest value, as in
    Spark. Two overlapping blocks per frame for frames up to a few thousand wide whose
    table fits (`sparse.overlap_fits`), the blocked grids otherwise."""
    counts = valid_counts(valid, lo, hi)
    data = values.astype(np.float64 if values.dtype.kind == "f" else np.int64)
    ufunc, ident = extreme_ufunc(data.dtype, largest=largest)
    leaves = np.where(valid, data, ident)
    widest = int((hi - lo).max()) if len(lo) else 0
    if overlap_fits(len(data), widest):
        result = overlap_query(leaves, lo, hi, ufunc, ident)
    else:
        (result,) = blocked_query((leaves,), lo, hi,
                                  extreme_monoid(data.dtype, largest=largest))
    if not largest and data.dtype.kind == "f":
        numbers = valid_counts(valid & ~np.isnan(data), lo, hi)
        result = np.where((counts > 0) & (numbers == 0), np.nan, result)
    return Values(result, counts > 0)


def frame_extreme_by_rank(ranks: IntArray, valid: BoolArray, lo: IntArray, hi: IntArray,
                          *, largest: bool) -> Take:
    """`max` (`largest`) or `min` of any orderable type, given each value's dense rank."""
    extreme = frame_extreme(ranks, valid, lo, hi, largest=largest)
    representative = np.zeros(int(ranks.max(initial=0)) + 1, dtype=np.int64)
    positions = np.nonzero(valid)[0]
    representative[ranks[positions]] = positions
    picked = representative[np.where(extreme.valid, extreme.values, 0)]
    return Take(picked.astype(np.int64), extreme.valid)


def frame_extreme_by(ranks: IntArray, valid: BoolArray, lo: IntArray, hi: IntArray, *,
                     largest: bool) -> Take:
    """`max_by` (`largest`) or `min_by`: the position of each frame's largest/smallest
    `by` (given as dense ranks, `valid` False for a null `by`), the earliest position
    among equals. One extreme over the keys `rank * n + tie`, whose low part prefers
    earlier positions."""
    n = len(ranks)
    positions = np.arange(n, dtype=np.int64)
    if largest:
        keys = ranks.astype(np.int64) * n + (n - 1 - positions)
        extreme = frame_extreme(keys, valid, lo, hi, largest=True)
        picked = n - 1 - np.where(extreme.valid, extreme.values, n - 1) % max(n, 1)
    else:
        keys = ranks.astype(np.int64) * n + positions
        extreme = frame_extreme(keys, valid, lo, hi, largest=False)
        picked = np.where(extreme.valid, extreme.values, 0) % max(n, 1)
    return Take(picked.astype(np.int64), extreme.valid)


def frame_first_last(valid: BoolArray, lo: IntArray, hi: IntArray, *, latest: bool
                     ) -> Take:
    """Position of the last (`latest`) or first non-null value of each frame."""
    present = np.nonzero(valid)[0].astype(np.int64)
    begin = np.searchsorted(present, lo, side="left")
    end = np.searchsorted(present, hi, side="left")
    has = end > begin
    pick = end - 1 if latest else begin
    positions = present[np.clip(pick, 0, max(len(present) - 1, 0))] if len(present) else \
        np.zeros(len(lo), dtype=np.int64)
    return Take(np.where(has, positions, 0).astype(np.int64), has)


def frame_moments(values: npt.NDArray[Any], valid: BoolArray, lo: IntArray, hi: IntArray,
                  *, root: bool) -> Values:
    """Sample `variance` (`root`: `stddev`, its square root) (n - 1); null below two
    non-null values."""
    data = values.astype(np.float64)
    leaves = (valid.astype(np.float64), np.where(valid, data, 0.0), np.zeros(len(data)))
    counts, _, m2 = blocked_query(leaves, lo, hi, moments_monoid())
    return Values(*moments.sample(counts, m2, root=root))


def frame_collect(valid: BoolArray, lo: IntArray, hi: IntArray) -> Lists:
    """Positions of each frame's non-null values, in order."""
    present = np.nonzero(valid)[0].astype(np.int64)
    begin = np.searchsorted(present, lo, side="left")
    end = np.searchsorted(present, hi, side="left")
    lengths = np.maximum(end - begin, 0)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
    total = int(offsets[-1])
    within = np.arange(total, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    positions = present[np.repeat(begin, lengths) + within] if total else \
        np.zeros(0, dtype=np.int64)
    return Lists(offsets, positions)


def frame_apply(func: Callable[[Any, Any], Any], values: npt.NDArray[Any],
                times: npt.NDArray[Any], valid: BoolArray, lo: IntArray,
                hi: IntArray) -> list[Any]:
    """A user function over each frame's non-null values and their times."""
    present = np.nonzero(valid)[0]
    kept_values, kept_times = values[present], times[present]
    begin = np.searchsorted(present, lo, side="left")
    end = np.searchsorted(present, hi, side="left")
    return [func(kept_values[b:e], kept_times[b:e]) for b, e in zip(begin, end, strict=True)]
