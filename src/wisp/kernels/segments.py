"""Running scans over positions cut into segments, numpy alone: exact integer and
sequential float running sums, running maxima and the first and last valid positions,
each restarting at every segment's start (`Segments`). The running windows' scans
(`runtime/windows/scans.py`) read every aggregation at every row through these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import order_stats
from .runs import run_index, running_max

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Segments:
    """Positions `0..n-1` cut into segments (`starts`: where each begins, strictly
    increasing, then `n`), and each position's segment start."""

    starts: IntArray

    @property
    def n(self) -> int:
        return int(self.starts[-1])

    def firsts(self) -> IntArray:
        result: IntArray = self.starts[:-1][run_index(self.starts)]
        return result

    def previous(self, values: npt.NDArray[Any], zero: Any) -> npt.NDArray[Any]:
        """Each position's predecessor in its segment (`zero` at a segment's start)."""
        shifted = np.empty_like(values)
        if len(values):
            shifted[0] = zero
            shifted[1:] = values[:-1]
            shifted[self.starts[:-1]] = zero
        return shifted


def int_scan(leaves: npt.NDArray[Any], segments: Segments) -> npt.NDArray[Any]:
    """Exact running sums of integers per segment: int64 (wrapping prefix sums, whose
    differences are exact when the result fits) unless a segment's sum may leave 64
    bits, then Python integers (an object array)."""
    if leaves.dtype != object and len(leaves):
        largest = max(abs(int(leaves.max())), abs(int(leaves.min())))
        if largest * int(np.diff(segments.starts).max()) >= 1 << 63:
            leaves = leaves.astype(object)
    sums = np.cumsum(leaves)
    firsts = segments.firsts()
    result: npt.NDArray[Any] = sums - (sums[firsts] - leaves[firsts])
    return result


def float_scan(leaves: FloatArray, segments: Segments) -> FloatArray:
    """Running sums of floats per segment, each added in position order from +0.0 (as
    one sequential `np.cumsum` would): a segment's sums do not depend on the others, so
    cutting a segment and carrying its sum gives the same bits."""
    x = leaves.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        x[segments.starts[:-1]] += 0.0  # a -0.0 head sums as 0.0 + -0.0, as after a carried 0.0
        return order_stats.segmented_cumsum(x, segments.starts)


def segment_max(values: npt.NDArray[Any], segments: Segments) -> npt.NDArray[Any]:
    """Running maximum per segment (NaN the greatest float)."""
    if segments.n == 0:
        return values
    return running_max(values, segments.starts)


def first_positions(valid: BoolArray, segments: Segments) -> tuple[IntArray, BoolArray]:
    """Each position's first valid position in its segment up to it, and whether any."""
    n = segments.n
    present = np.nonzero(valid)[0].astype(np.int64)
    heads = segments.starts[:-1]
    found = np.searchsorted(present, heads, side="left")
    firsts = np.append(present, n)[found][run_index(segments.starts)]
    positions = np.arange(n, dtype=np.int64)
    has = firsts <= positions
    return np.where(has, firsts, 0).astype(np.int64), has


def last_positions(valid: BoolArray, segments: Segments) -> tuple[IntArray, BoolArray]:
    """Each position's last valid position in its segment up to it, and whether any:
    positions only grow, so one running maximum serves all segments (a position before
    its segment's start marks none)."""
    positions = np.arange(segments.n, dtype=np.int64)
    firsts = segments.firsts()
    best = np.maximum.accumulate(np.where(valid, positions, firsts - 1)) if len(positions) \
        else positions
    has = best >= firsts
    return np.where(has, best, 0).astype(np.int64), has
