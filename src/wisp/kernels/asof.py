"""The as-of match on sorted arrays: for each left row, the right row it takes.

The rows of both sides come together, sorted by key, then time (a missing time first,
NaN last, as Spark sorts), then the right side's tie-break; `new_key` marks where a key
begins. A "group" is a run of rows of one key and one time. Every candidate is found by
one running maximum (the last right row at or before each position) and one running
minimum from the end (the first right row at or after it), read at the edges of each
left row's group, so the whole array is matched in O(n), every key at once:

| direction, exact matches | candidate |
|---|---|
| backward, allowed | the last right row of the key at the left row's time or before |
| backward, not allowed | the last right row of the key before the left row's time |
| forward, allowed | the first right row of the key at the left row's time or after |
| forward, not allowed | the first right row of the key after the left row's time |
| nearest | the closer of the backward and the forward candidate, backward on a tie |

Right rows of one time are taken in their sorted order: the last of them backward, the
first forward (`pandas.merge_asof` takes them in the right frame's order). A candidate
further than `tolerance` from the left row's time is no match.

Rows may arrive in pieces: `match` also says where the rows whose match is final end
(`Matches.cut`), given that more rows may follow (`open_end`): rows before the cut are
settled whatever comes next; the rows from the cut on, with the last right row of the
cut's key before it, are all a later call needs to settle the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..spec.joins import Direction

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Matches:
    """`match[i]`: the position of the right row left row `i` takes, -1 for none (and for
    every right row). `cut`: the rows before it are settled; `context`: the position of
    the last right row of the cut row's key before the cut (-1: none), which must be
    kept with the rows from the cut on."""

    match: IntArray
    cut: int
    context: int


def distance(later: npt.NDArray[Any], earlier: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`later - earlier` (both sorted that way) without overflow: exact as uint64 for
    integer ticks, float64 for float ticks."""
    if later.dtype.kind == "f":
        result: npt.NDArray[Any] = later - earlier
        return result
    return later.astype(np.uint64) - earlier.astype(np.uint64)


def within(gap: npt.NDArray[Any], tolerance: int | float | None) -> BoolArray:
    if tolerance is None:
        return np.ones(len(gap), dtype=bool)
    if gap.dtype.kind == "u":
        return np.asarray(gap <= np.uint64(int(tolerance)), dtype=bool)
    return np.asarray(gap <= tolerance, dtype=bool)


def match(new_key: BoolArray, ticks: npt.NDArray[Any], valid: BoolArray, left: BoolArray,
          direction: Direction, exact: bool, tolerance: int | float | None,
          open_end: bool) -> Matches:
    """Match every left row with a valid time to a right row with a valid time (see the
    module's table). `ticks` (int64, or float64 for float time) hold anything where
    `valid` is False (a missing time: no match, never matched). `new_key[0]` must be
    True. `open_end`: more rows of the last key may follow, so the rows whose match
    they could change are not settled (`Matches.cut`)."""
    n = len(ticks)
    if n == 0:
        return Matches(np.zeros(0, dtype=np.int64), 0, -1)
    positions = np.arange(n, dtype=np.int64)
    right = ~left & valid
    key_starts = np.flatnonzero(new_key)
    key_id = np.cumsum(new_key) - 1
    key_start = key_starts[key_id]
    key_end = np.append(key_starts[1:], n)[key_id]
    new_group = new_key.copy()
    new_group[1:] |= (ticks[1:] != ticks[:-1]) | (valid[1:] != valid[:-1])
    group_starts = np.flatnonzero(new_group)
    group_id = np.cumsum(new_group) - 1
    group_start = group_starts[group_id]
    group_end = np.append(group_starts[1:], n)[group_id]
    last_right = np.maximum.accumulate(np.where(right, positions, -1))
    next_right = np.minimum.accumulate(np.where(right, positions, n)[::-1])[::-1]
    if exact:
        back = last_right[group_end - 1]
        ahead = next_right[group_start]
    else:
        back = np.where(group_start > 0, last_right[np.maximum(group_start - 1, 0)], -1)
        ahead = np.where(group_end < n, next_right[np.minimum(group_end, n - 1)], n)
    asking = left & valid
    back = np.where(asking & (back >= key_start), back, -1)
    ahead = np.where(asking & (ahead < key_end), ahead, -1)
    back_gap = distance(ticks, ticks[np.maximum(back, 0)])
    ahead_gap = distance(ticks[np.maximum(ahead, 0)], ticks)
    back_within = np.where(back >= 0, within(back_gap, tolerance), False)
    ahead_within = np.where(ahead >= 0, within(ahead_gap, tolerance), False)
    found_back = np.where(back_within, back, -1)
    found_ahead = np.where(ahead_within, ahead, -1)
    if direction == "backward":
        result = found_back
    elif direction == "forward":
        result = found_ahead
    else:
        closer_back = back_within & (~ahead_within | (back_gap <= ahead_gap))
        result = np.where(closer_back, found_back, found_ahead)
    result = result.astype(np.int64)
    if not open_end or not valid[-1]:
        # a missing time last: the key's valid times all came (NaN sorts last) or none
        # came yet (a null sorts first): nothing before needs what follows
        return Matches(result, n, -1)
    # the rows of the last (key, time) always wait: more of that time may follow
    ended = key_id != key_id[-1]
    edge_gap = distance(np.full(n, ticks[-1], dtype=ticks.dtype), ticks)
    beyond = ~within(edge_gap, tolerance) if tolerance is not None else np.zeros(n, bool)
    settled = ended | (ahead >= 0) | beyond
    if direction == "backward":
        settled[:] = True
    elif direction == "nearest":
        # a later forward candidate is at least `edge_gap` away: no closer than backward
        settled |= back_within & (edge_gap >= back_gap)
    pending = asking & ~settled
    cut = int(group_starts[group_id[-1]])
    if pending.any():
        cut = min(cut, int(group_start[np.argmax(pending)]))
    context = -1
    if cut > 0 and last_right[cut - 1] >= key_start[cut]:
        context = int(last_right[cut - 1])
    return Matches(result, cut, context)
