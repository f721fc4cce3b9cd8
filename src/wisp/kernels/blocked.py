"""Range queries `agg(x[lo:hi])` for many frames at once by blocked prefix/suffix scans
(van Herk / Gil-Werman), in O(n) for fixed-width frames.

Cut the sequence into blocks of `B = max(hi - lo)` positions and scan every block from
the left (prefix) and from the right (suffix). A frame `[l, r]` of at most `B` positions
either spans two adjacent blocks, and is `suffix[l] (+) prefix[r]`, or lies in one block
and starts at its first position (`prefix[r]`) or ends at its last one (`suffix[l]`); the
data are padded with the identity at both ends, so a frame that starts at the first event
or ends at the last one counts as touching its block's edge. Every fixed-width `Rows`
frame is resolved by this first grid.

The frames left (variable `Range` frames strictly inside a block) are resolved by the
same grid shifted by `B // 2`; what is still left lies inside a half block and is at
most `ceil(B / 2) - 2` wide, so the next round uses blocks half as large. Frames of
similar widths are done in one or two rounds; the worst case is O(n log w).

Each answer only combines values inside its frame, so there is no cancellation between
frames: a float sum's error is that of adding the frame's own values (at most about
`w * eps * sum(|x|)` over the frame), whatever lies outside it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .sparse import Monoid, State

IntArray = npt.NDArray[np.int64]


def _grid(leaves: State, monoid: Monoid, block: int, offset: int, left: IntArray,
          right: IntArray) -> tuple[npt.NDArray[np.bool_], State]:
    """One grid of blocks of `block` positions, shifted right by `offset` padding
    positions: which of the frames `[left, right]` it resolves, and their aggregates."""
    n = len(leaves[0])
    total = offset + n
    blocks = -(-total // block)
    size = blocks * block
    padded = tuple(np.concatenate([np.full(offset, ident, dtype=leaf.dtype), leaf,
                                   np.full(size - total, ident, dtype=leaf.dtype)])
                   if size > n else leaf
                   for leaf, ident in zip(leaves, monoid.identity, strict=True))
    shaped = tuple(p.reshape(blocks, block) for p in padded)
    pl, pr = left + offset, right + offset
    cross = (pl // block) != (pr // block)
    at_start = ~cross & ((pl % block == 0) | (left == 0))
    at_end = ~cross & ~at_start & ((pr % block == block - 1) | (right == n - 1))
    resolved = cross | at_start | at_end
    out = tuple(np.empty(len(left), dtype=leaf.dtype) for leaf in leaves)
    if (cross | at_end).any():
        suffix = tuple(s.reshape(size) for s in monoid.scan(shaped, True))
    if (cross | at_start).any():
        prefix = tuple(p.reshape(size) for p in monoid.scan(shaped, False))
    if cross.all():
        return resolved, monoid.combine(tuple(s[pl] for s in suffix),
                                        tuple(p[pr] for p in prefix))
    if cross.any():
        merged = monoid.combine(tuple(s[pl[cross]] for s in suffix),
                                tuple(p[pr[cross]] for p in prefix))
        for target, values in zip(out, merged, strict=True):
            target[cross] = values
    if at_start.any():
        for target, values in zip(out, prefix, strict=True):
            target[at_start] = values[pr[at_start]]
    if at_end.any():
        for target, values in zip(out, suffix, strict=True):
            target[at_end] = values[pl[at_end]]
    return resolved, out


NARROW = 32
"""Frames at most this wide are aggregated position by position (one vectorised pass
per position of the widest frame): cheaper than the grids up to about 64 positions,
as measured."""


def _narrow(leaves: State, lo: IntArray, hi: IntArray, monoid: Monoid, out: State
            ) -> State:
    """Frames of at most `NARROW` positions: each frame's first state, then each next
    one combined in order while the frame lasts (the identity is never combined in:
    for moments of infinite values it is not neutral)."""
    last = len(leaves[0]) - 1
    for j in range(int((hi - lo).max())):
        at = lo + j
        inside = at < hi
        where = np.minimum(at, last)
        states = tuple(leaf[where] for leaf in leaves)
        merged = states if j == 0 else monoid.combine(out, states)
        out = tuple(np.where(inside, new, old) for new, old in zip(merged, out, strict=True))
    return out


def blocked_query(leaves: State, lo: IntArray, hi: IntArray, monoid: Monoid) -> State:
    """For every `i`, the aggregate of the leaf states at `lo[i] .. hi[i]-1` (the
    identity for an empty frame)."""
    n = len(leaves[0])
    m = len(lo)
    out = tuple(np.full(m, ident, dtype=leaf.dtype)
                for ident, leaf in zip(monoid.identity, leaves, strict=True))
    if m == 0 or n == 0:
        return out
    if int((hi - lo).max()) <= NARROW:
        return _narrow(leaves, lo, hi, monoid, out)
    pending = np.nonzero(hi > lo)[0]
    while len(pending):
        left, right = lo[pending], hi[pending] - 1
        block = int((right - left).max()) + 1
        for offset in (0, block // 2) if block > 1 else (0,):
            resolved, values = _grid(leaves, monoid, block, offset, left, right)
            chosen = pending[resolved]
            for target, v in zip(out, values, strict=True):
                target[chosen] = v[resolved] if not resolved.all() else v
            keep = ~resolved
            pending, left, right = pending[keep], left[keep], right[keep]
            if not len(pending):
                break
    return out
