"""The shared math of the sample variance and standard deviation ("moments"): a group
of values as its count, sum or mean, and `M2` (the sum of squared deviations from its
mean); Chan et al.'s merge of such states; and the finish, `M2 / (n - 1)` (its square
root for the standard deviation), null below two values.

Each caller keeps its own algorithm and only shares these: the blocked prefix/suffix
scans and the disjoint sparse table (`sparse.moments_monoid`), the segment tree of
stabbing queries (`stabbing.Stabbing.moments`), the running scans by Welford's update
(`runtime.windows.running.scan_moments`) and the partial states of panes and streams
(`runtime.aggregates.partials.Moments`).

Non-finite values: NaN propagates; an infinity makes a merged `M2` NaN (inf - inf), as
Spark's `var_samp` gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Moments = tuple[npt.NDArray[Any], ...]
"""(count, mean, M2), elementwise."""


def combine(a: Moments, b: Moments) -> Moments:
    """Chan et al.'s pairwise merge of (count, mean, M2) states, elementwise: the state
    of `a`'s values and `b`'s (a state with count 0 is the identity)."""
    na, ma, qa = a
    nb, mb, qb = b
    n = na + nb
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = mb - ma
        mean = np.where(na == 0, mb, np.where(nb == 0, ma, ma + delta * (nb / n)))
        # an infinite value makes delta infinite or NaN: the spread is NaN, as Spark's
        # var_samp gives (inf - inf), not the inf that delta * delta would give
        spread = np.where(np.isfinite(delta), qa + qb + delta * delta * (na * nb / n), np.nan)
        m2 = np.where(na == 0, qb, np.where(nb == 0, qa, spread))
    return n, mean, m2


def of_groups(values: FloatArray, valid: BoolArray, starts: IntArray
              ) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
    """Each group's (count, sum, mean, M2) of its valid `values`, groups beginning at
    `starts` (none empty), by two passes: the mean, then the squared deviations from it.
    A group without valid values has all four 0."""
    data = np.where(valid, values, 0.0)
    sizes = np.diff(np.r_[starts, len(data)])
    count: IntArray = np.add.reduceat(valid.astype(np.int64), starts)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf - inf: NaN
        sums: FloatArray = np.add.reduceat(data, starts)
        means: FloatArray = np.where(count > 0, sums / np.maximum(count, 1), 0.0)
        deviation = np.where(valid, data - np.repeat(means, sizes), 0.0)
        m2: FloatArray = np.add.reduceat(deviation * deviation, starts)
    return count, sums, means, m2


def merge_groups(count: IntArray, sums: FloatArray, m2: FloatArray, starts: IntArray
                 ) -> tuple[IntArray, FloatArray, FloatArray]:
    """Chan et al.'s merge of many (count, sum, M2) parts at once, per group of parts
    (groups beginning at `starts`, none empty): the group's count, sum and M2, each
    part adding its own M2 and its count times the square of its mean's distance from
    the group's (parts without values: nothing)."""
    n: IntArray = np.add.reduceat(count, starts)
    sizes = np.diff(np.r_[starts, len(count)])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inf - inf: NaN
        total: FloatArray = np.add.reduceat(sums, starts)
        mean = np.repeat(total / np.maximum(n, 1), sizes)
        own = np.where(count > 0, sums / np.maximum(count, 1), 0.0)
        shares = np.where(count > 0, m2 + count * (own - mean) ** 2, 0.0)
        m2_total: FloatArray = np.add.reduceat(shares, starts)
    return n, total, m2_total


def sample(count: npt.NDArray[Any], m2: FloatArray, *, root: bool
           ) -> tuple[FloatArray, BoolArray]:
    """The sample variance `M2 / (n - 1)` (`root`: the standard deviation, its square
    root) of each state, and where it is defined: at two values or more (elsewhere 0,
    to be masked as null)."""
    enough: BoolArray = count >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        variance: FloatArray = np.where(enough, m2 / np.maximum(count - 1, 1), 0.0)
    return (np.sqrt(variance) if root else variance), enough
