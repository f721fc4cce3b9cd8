"""Aggregates over "every item alive at a position", for many positions at once, without
listing any position's members: stabbing queries on a segment tree.

Item `i` (a tuple of a sliding window, an interval event) is alive over the positions
`qlo[i] .. qhi[i]-1` of `0 .. m-1` (firings of a trigger; runs of hopping windows with
one membership; snapshot segments). Each range is cut into O(log m) canonical nodes of a
perfect binary tree over the positions; a node aggregates its items, and a position
combines the nodes on its leaf-to-root path: O((n + m) log m) time and O(n log m)
memory, however many items are alive at once (an open-ended event costs O(log m)).
Counts and integer sums need no tree: a difference array, O(n + m), exact.

Only members' values are ever combined, never subtracted, so there is no cancellation:
a float sum's error is that of adding the window's own values. The aggregates are
commutative (sums, extremes, moments, first/last by position), since the nodes on a
path hold members in no particular order relative to each other.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from . import moments
from .window_agg import Lists, Take, Values

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Ticks = npt.NDArray[Any]
LONG = 1 << 63


class Stabbing:
    """Items alive over ranges `[qlo, qhi)` of `m` positions (an empty range where
    `qhi <= qlo`), and a segment tree over the positions, built on first use.

    Each range is cut into O(log m) canonical nodes (pieces: `nodes`, with `owners` the
    item of each piece), grouped by node once; a node's aggregate reduces its pieces,
    and a position's result combines the nodes on its leaf-to-root path. Memory is
    O(n log m) for the pieces."""

    def __init__(self, qlo: IntArray, qhi: IntArray, m: int) -> None:
        self.m = m
        self.n = len(qlo)
        self.qlo = qlo.astype(np.int64)
        self.qhi = np.maximum(qhi, qlo).astype(np.int64)
        size = 1
        while size < max(m, 1):
            size *= 2
        self.size = size

    @cached_property
    def _pieces(self) -> tuple[IntArray, IntArray, IntArray]:
        """(nodes, owners) sorted by node, and where each node's pieces start."""
        left, right = self.qlo + self.size, self.qhi + self.size
        owner = np.arange(self.n, dtype=np.int64)
        nodes: list[IntArray] = []
        owners: list[IntArray] = []
        while len(owner):
            live = left < right
            left, right, owner = left[live], right[live], owner[live]
            odd_left = (left & 1) == 1
            nodes.append(left[odd_left])
            owners.append(owner[odd_left])
            left = left + odd_left
            odd_right = (right & 1) == 1
            right = right - odd_right
            nodes.append(right[odd_right])
            owners.append(owner[odd_right])
            left, right = left // 2, right // 2
        all_nodes = np.concatenate([np.zeros(0, np.int64), *nodes])
        all_owners = np.concatenate([np.zeros(0, np.int64), *owners])
        order = np.argsort(all_nodes, kind="stable")
        sorted_nodes = all_nodes[order]
        starts = (np.concatenate([[0], np.nonzero(np.diff(sorted_nodes))[0] + 1]).astype(
            np.int64) if len(sorted_nodes) else np.zeros(0, dtype=np.int64))
        return sorted_nodes, all_owners[order], starts

    @property
    def nodes(self) -> IntArray:
        return self._pieces[0]

    @property
    def owners(self) -> IntArray:
        return self._pieces[1]

    @property
    def starts(self) -> IntArray:
        return self._pieces[2]

    @property
    def group_nodes(self) -> IntArray:
        return self.nodes[self.starts]

    def _paths(self) -> list[IntArray]:
        """For every firing, its leaf and each ancestor up to the root, level by level."""
        leaves = np.arange(self.m, dtype=np.int64) + self.size
        return [leaves >> k for k in range(self.size.bit_length())]

    def reduce(self, values: npt.NDArray[Any], ufunc: np.ufunc, identity: Any,
               mask: BoolArray | None = None) -> npt.NDArray[Any]:
        """`ufunc`-reduction per firing of the values of the tuples in its window
        (`mask` False: the tuple takes no part)."""
        acc = np.full(2 * self.size, identity, dtype=values.dtype)
        out = np.full(self.m, identity, dtype=values.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            if len(self.nodes):
                pieces = values[self.owners]
                if mask is not None:
                    pieces = np.where(mask[self.owners], pieces,
                                      np.asarray(identity, dtype=values.dtype))
                acc[self.group_nodes] = ufunc.reduceat(pieces, self.starts)
            for path in self._paths():
                out = ufunc(out, acc[path])
        return out

    def counts(self, mask: BoolArray | None = None) -> IntArray:
        """The number of (masked) items alive at each position: a difference array."""
        weights = np.ones(self.n, dtype=np.int64) if mask is None else mask.astype(np.int64)
        return self.exact_sums(weights).astype(np.int64)

    def exact_sums(self, weights: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """Per position, the exact sum of the alive items' integer `weights` (a
        difference array): int64 when no sum can leave 64 bits, else Python integers."""
        if weights.dtype != object:
            largest = max(abs(int(weights.max(initial=0))), abs(int(weights.min(initial=0))))
            if largest * self.n < LONG:
                delta = np.zeros(self.m + 1, np.int64)
                np.add.at(delta, self.qlo, weights.astype(np.int64))
                np.add.at(delta, self.qhi, -weights.astype(np.int64))
                sums: npt.NDArray[Any] = np.cumsum(delta)[:self.m]
                return sums
        exact = np.zeros(self.m + 1, dtype=object)
        np.add.at(exact, self.qlo, weights.astype(object))
        np.add.at(exact, self.qhi, -weights.astype(object))
        exact_sums: npt.NDArray[Any] = np.cumsum(exact)[:self.m]
        return exact_sums

    def moments(self, values: npt.NDArray[np.float64], valid: BoolArray) -> tuple[
            npt.NDArray[np.float64], ...]:
        """(count, mean, M2) of the valid values per firing: per node by two passes
        (mean, then squared deviations), merged along each path (Chan et al.)."""
        count = np.zeros(2 * self.size)
        mean = np.zeros(2 * self.size)
        m2 = np.zeros(2 * self.size)
        if len(self.nodes):
            c, _, mu, q = moments.of_groups(values[self.owners].astype(np.float64),
                                            valid[self.owners], self.starts)
            at = self.group_nodes
            count[at], mean[at], m2[at] = c, mu, q
        state: tuple[npt.NDArray[np.float64], ...] = (
            np.zeros(self.m), np.zeros(self.m), np.zeros(self.m))
        with np.errstate(invalid="ignore", over="ignore"):
            for path in self._paths():
                state = moments.combine(state, (count[path], mean[path], m2[path]))
        return state

    def pairs(self, mask: BoolArray) -> tuple[IntArray, IntArray]:
        """Every (firing, tuple) membership of the masked tuples, by firing then tuple
        (output-sized: for collect and user functions)."""
        qlo, qhi = self.qlo, self.qhi
        tuples = np.nonzero(mask)[0].astype(np.int64)
        lengths = np.maximum(qhi[tuples] - qlo[tuples], 0)
        owner = np.repeat(tuples, lengths)
        base = np.repeat(qlo[tuples], lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)])[:-1]
        within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(offsets, lengths)
        firing = base + within
        order = np.lexsort((owner, firing))
        return firing[order].astype(np.int64), owner[order].astype(np.int64)


def alive_positions(stab: Stabbing, n: int, valid: BoolArray, *, latest: bool) -> Take:
    """Position of the last (`latest`) or first tuple (in arrival order) among the valid
    tuples of each firing's window."""
    positions = np.arange(n, dtype=np.int64)
    if latest:
        pick = stab.reduce(positions, np.maximum, -1, valid)
        has = pick >= 0
    else:
        pick = stab.reduce(positions, np.minimum, n, valid)
        has = pick < n
    return Take(np.where(has, pick, 0).astype(np.int64), has)


def alive_sum(stab: Stabbing, values: npt.NDArray[Any], valid: BoolArray) -> Values:
    """Sum of the valid values (0 over a window without any). Integers (and unscaled
    decimals) are exact: a long result that overflows fails in `to_arrow`, as Spark's
    ANSI sum does."""
    everywhere = np.ones(stab.m, dtype=bool)
    if values.dtype == object or values.dtype.kind in "iub":
        return Values(stab.exact_sums(np.where(valid, values, 0)), everywhere)
    return Values(stab.reduce(values.astype(np.float64), np.add, 0.0, valid), everywhere)


def alive_mean(stab: Stabbing, values: npt.NDArray[Any], valid: BoolArray,
               sums: npt.NDArray[Any] | None = None, counts: IntArray | None = None
               ) -> Values:
    """Mean of the valid values (null over a window without any); `sums` and `counts`,
    when given, are the windows' sums and valid counts already computed."""
    if counts is None:
        counts = stab.counts(valid)
    if sums is None:
        sums = alive_sum(stab, values, valid).values
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(counts > 0, sums.astype(np.float64) / np.maximum(counts, 1), 0.0)
    return Values(means, counts > 0)


def alive_extreme(stab: Stabbing, values: npt.NDArray[Any], valid: BoolArray,
                  counts: IntArray | None = None, *, largest: bool) -> Values:
    """`max` (`largest`) or `min`; NaN is the greatest value, as in Spark. `counts`, when
    given, are the windows' valid counts already computed."""
    if counts is None:
        counts = stab.counts(valid)
    if values.dtype.kind == "f":
        data = values.astype(np.float64)
        if largest:
            result = stab.reduce(data, np.maximum, -np.inf, valid)
        else:
            result = stab.reduce(data, np.fmin, np.inf, valid)
            numbers = stab.counts(valid & ~np.isnan(data))
            result = np.where((counts > 0) & (numbers == 0), np.nan, result)
        return Values(result, counts > 0)
    info = np.iinfo(np.int64)
    data_i = values.astype(np.int64)
    if largest:
        result_i = stab.reduce(data_i, np.maximum, info.min, valid)
    else:
        result_i = stab.reduce(data_i, np.minimum, info.max, valid)
    return Values(result_i, counts > 0)


def alive_extreme_by_rank(stab: Stabbing, ranks: IntArray, valid: BoolArray, *,
                          largest: bool) -> Take:
    """`max` (`largest`) or `min` of any orderable type, given each value's dense rank."""
    extreme = alive_extreme(stab, ranks, valid, largest=largest)
    representative = np.zeros(int(ranks.max(initial=0)) + 1, dtype=np.int64)
    positions = np.nonzero(valid)[0]
    representative[ranks[positions]] = positions
    picked = representative[np.where(extreme.valid, extreme.values, 0)]
    return Take(picked.astype(np.int64), extreme.valid)


def alive_moments(stab: Stabbing, values: npt.NDArray[Any], valid: BoolArray, *,
                  root: bool) -> Values:
    """Sample `variance` (`root`: `stddev`, its square root) (n - 1); null below two
    valid values."""
    counts, _, m2 = stab.moments(values.astype(np.float64), valid)
    return Values(*moments.sample(counts, m2, root=root))


def alive_collect(stab: Stabbing, valid: BoolArray) -> Lists:
    """Positions of each window's valid values, in arrival order."""
    firing, owner = stab.pairs(valid)
    lengths = np.bincount(firing, minlength=stab.m).astype(np.int64)
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(lengths)])
    return Lists(offsets, owner)


def alive_apply(stab: Stabbing, func: Callable[[Any, Any], Any], values: npt.NDArray[Any],
                times: Ticks, valid: BoolArray) -> list[Any]:
    """A user function over each window's valid values and their times."""
    lists = alive_collect(stab, valid)
    return [func(values[lists.positions[b:e]], times[lists.positions[b:e]])
            for b, e in zip(lists.offsets[:-1], lists.offsets[1:], strict=True)]
