"""Aggregates over "every event alive at a point", for many points at once, without
listing any point's members: a stabbing query on a segment tree.

The points are `count` consecutive positions `0 .. count-1` (for interval windows: runs
of windows with one membership); event `i` covers the positions `first[i] .. stop[i]-1`.
Each event's range is cut into O(log count) canonical nodes of a perfect binary tree
over the positions; every node aggregates the events assigned to it, and each position
combines the nodes on its path to the root. Time and memory O(n log count + count),
however many events are alive at once: an open-ended event costs O(log count).

Only members' values are ever combined, never subtracted, so there is no cancellation:
a sum's error is that of adding its members' values. The aggregates are commutative
(sums, extremes, moments, first/last by event index), since the nodes on a path hold
members in no particular order relative to each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .sparse import State, moments_combine

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Cover:
    """The events' ranges cut into tree nodes: event `owner[j]` is assigned to node
    `node[j]` of a tree over `leaves` positions, of which the first `count` are real."""

    node: IntArray
    owner: IntArray
    leaves: int
    count: int


def cover(first: IntArray, stop: IntArray, count: int) -> Cover:
    """Event `i` covers the positions `first[i] .. stop[i]-1` of `0 .. count-1`."""
    return Cover(*canonical_nodes(first, stop, count), count)


def canonical_nodes(first: IntArray, stop: IntArray, count: int) -> tuple[
        IntArray, IntArray, int]:
    """Every event's range `[first, stop)` as the nodes of a perfect binary tree over
    `leaves >= count` positions (heap numbering: the root is 1, leaf `p` is `leaves + p`)
    that cover exactly that range. Returns (node, event) pairs, in no particular order,
    and `leaves`."""
    leaves = 1 << max(int(count - 1).bit_length(), 0) if count > 1 else 1
    events = np.arange(len(first), dtype=np.int64)
    nonempty = stop > first
    events = events[nonempty]
    lo, hi = first[nonempty] + leaves, stop[nonempty] + leaves
    nodes: list[IntArray] = []
    owners: list[IntArray] = []
    while len(events):
        left = (lo & 1) == 1
        nodes.append(lo[left])
        owners.append(events[left])
        lo = lo + left
        right = (hi & 1) == 1
        hi = hi - right
        nodes.append(hi[right])
        owners.append(events[right])
        lo, hi = lo >> 1, hi >> 1
        alive = lo < hi
        events, lo, hi = events[alive], lo[alive], hi[alive]
    node = np.concatenate([np.zeros(0, np.int64), *nodes])
    owner = np.concatenate([np.zeros(0, np.int64), *owners])
    return node, owner, leaves


def _push_down(tree: State, where: Cover, combine: Callable[[State, State], State]) -> State:
    """Combine every node with all its ancestors (root first) and return the leaves."""
    leaves, count = where.leaves, where.count
    level = 2
    while level < 2 * leaves:
        children = np.arange(level, 2 * level, dtype=np.int64)
        merged = combine(tuple(t[children >> 1] for t in tree),
                         tuple(t[children] for t in tree))
        for target, values in zip(tree, merged, strict=True):
            target[children] = values
        level *= 2
    return tuple(t[leaves:leaves + count] for t in tree)


def stab_sum(values: FloatArray, where: Cover) -> FloatArray:
    """Per position, the sum of its members' values (0 where none)."""
    tree = np.bincount(where.node, weights=values[where.owner], minlength=2 * where.leaves)
    (result,) = _push_down((tree,), where, lambda a, b: (a[0] + b[0],))
    return result


def stab_extreme(kind: str, values: npt.NDArray[np.float64] | IntArray, identity: float | int,
                 where: Cover) -> npt.NDArray[np.generic]:
    """Per position, the `min` or `max` of its members' values (`identity` where none).
    Float max propagates NaN (NaN is the greatest); float min ignores NaN (a position
    whose members are all NaN gets `identity`)."""
    if kind == "max":
        ufunc: np.ufunc = np.maximum
    else:
        ufunc = np.fmin if values.dtype.kind == "f" else np.minimum
    tree = np.full(2 * where.leaves, identity, dtype=values.dtype)
    with np.errstate(invalid="ignore"):
        ufunc.at(tree, where.node, values[where.owner])
        (result,) = _push_down((tree,), where, lambda a, b: (ufunc(a[0], b[0]),))
    return result


def stab_positions(kind: str, valid: BoolArray, where: Cover) -> tuple[IntArray, BoolArray]:
    """Per position, the first (smallest) or last (largest) index of a member with a valid
    value, and whether there is one."""
    index = np.arange(len(valid), dtype=np.int64)
    none = np.iinfo(np.int64).max if kind == "first" else -1
    picked = stab_extreme("min" if kind == "first" else "max", np.where(valid, index, none),
                          none, where)
    has = picked != none
    return np.where(has, picked, 0).astype(np.int64), has


def stab_moments(values: FloatArray, valid: BoolArray, where: Cover) -> tuple[
        FloatArray, FloatArray, FloatArray]:
    """Per position, (count, mean, M2) of its members' valid values: each node's by two
    passes (mean, then squared deviations from it), merged pairwise along each path."""
    node, size = where.node, 2 * where.leaves
    present = valid[where.owner]
    x = np.where(present, values[where.owner], 0.0)
    n = np.bincount(node, weights=present.astype(np.float64), minlength=size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = np.where(n > 0, np.bincount(node, weights=x, minlength=size)
                        / np.maximum(n, 1.0), 0.0)
        deviation = np.where(present, x - mean[node], 0.0)
        m2 = np.bincount(node, weights=deviation * deviation, minlength=size)
    c, m, q = _push_down((n, mean, m2), where, moments_combine)
    return c, m, q
