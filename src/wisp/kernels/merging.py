"""Frames of a mergeable aggregation by merged partial states, never re-adding a frame's
values per frame: the strategy for a user's aggregator (`spec.aggregates.Aggregator`)
on every window kind whose windows are frames `[lo, hi)` of a key's rows.

An aggregation here is anything with `zero()`, `add(state, values, times)`,
`merge(a, b)` and `finish(state)` (`Mergeable`); states are opaque Python values.

- Frames whose starts and ends both never decrease (sliding `Rows`/`Range`, periods,
  policies, hopping windows' member runs): two stacks. Each row's own state is one
  `add` to a fresh `zero()`, made once. The back holds one state of the rows
  `[b, hi)`, each new row merged in (a state once given as a result is never
  changed); the front holds each row's suffix state `[j, b)`, made when the frame's
  start passes `b` (one `merge` each). A frame is `merge(front[lo], back)`. Every row
  enters each stack once: one `add`, three `merge`s and one `finish` a frame, whatever
  the frames' widths.
- Any other frames (dynamic windows, listed members): a segment tree of merged states
  over the rows, O(log n) merges a frame.

Frames are over the rows whose `valid` flag is set (non-null values); an empty frame's
result is `finish(zero())`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Mergeable(Protocol):
    def zero(self) -> Any: ...

    def add(self, state: Any, values: Any, times: Any) -> Any: ...

    def merge(self, a: Any, b: Any) -> Any: ...

    def finish(self, state: Any) -> Any: ...


def present_frames(valid: BoolArray, lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray,
                                                                           IntArray]:
    """The positions of the valid rows, and each frame `[lo, hi)` as a frame of them."""
    present = np.nonzero(valid)[0].astype(np.int64)
    begin = np.searchsorted(present, lo, side="left").astype(np.int64)
    end = np.searchsorted(present, hi, side="left").astype(np.int64)
    return present, begin, np.maximum(end, begin)


def monotone(lo: IntArray, hi: IntArray) -> bool:
    """Whether frame starts and ends both never decrease (two stacks apply)."""
    return bool(np.all(np.diff(lo) >= 0) and np.all(np.diff(hi) >= 0))


def frame_results(aggregation: Mergeable, values: npt.NDArray[Any], times: npt.NDArray[Any],
                  valid: BoolArray, lo: IntArray, hi: IntArray) -> list[Any]:
    """`finish` of every frame `[lo[i], hi[i])` over the valid rows of `values`."""
    present, begin, end = present_frames(valid, lo, hi)
    kept_values, kept_times = values[present], times[present]
    frame_states = two_stacks if monotone(begin, end) else tree_states
    return [aggregation.finish(state) for state in
            frame_states(aggregation, kept_values, kept_times, begin, end)]


def two_stacks(aggregation: Mergeable, values: npt.NDArray[Any], times: npt.NDArray[Any],
               lo: IntArray, hi: IntArray) -> list[Any]:
    """The state of every frame `[lo[i], hi[i])` of `values`, for starts and ends that
    never decrease. Each row's own state (one `add` to a fresh `zero()`) is made once
    and merged into the back stack, then into its suffix state when it moves to the
    front; a frame equal to the one before shares its state."""
    merge = aggregation.merge
    singles = Singles(aggregation, values, times)
    back_start = back_end = 0
    back = aggregation.zero()
    front: dict[int, Any] = {}
    states: list[Any] = []
    previous: tuple[int, int] | None = None
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        if (a, b) == previous:
            states.append(states[-1])
            continue
        previous = (a, b)
        if b <= a:
            states.append(aggregation.zero())
            continue
        if b > back_end:
            for j in range(max(back_end, back_start), b):
                back = merge(back, singles[j])
            back_end = b
        if a >= back_start:  # the front is used up: the back's rows from `a` move there
            front = suffix_states(aggregation, singles, a, back_end)
            back_start = back_end
            back = aggregation.zero()
            states.append(front[a])
            continue
        states.append(merge(front[a], back) if back_end > back_start else front[a])
    return states


class Singles:
    """Each row's own state, `add(zero(), values[j:j + 1], times[j:j + 1])`, made
    once when first asked for and kept while later rows are asked for (`merge` never
    changes a state, so one serves the back stack and the suffix states alike)."""

    def __init__(self, aggregation: Mergeable, values: npt.NDArray[Any],
                 times: npt.NDArray[Any]) -> None:
        self.aggregation = aggregation
        self.values = values
        self.times = times
        self.made: dict[int, Any] = {}

    def __getitem__(self, j: int) -> Any:
        found = self.made.get(j)
        if found is None:
            found = self.made[j] = self.aggregation.add(
                self.aggregation.zero(), self.values[j:j + 1], self.times[j:j + 1])
        return found

    def forget_before(self, j: int) -> None:
        """Drop the states of rows before `j` (no later frame reads them)."""
        for k in [k for k in self.made if k < j]:
            del self.made[k]


def suffix_states(aggregation: Mergeable, singles: Singles, start: int, stop: int
                  ) -> dict[int, Any]:
    """The state of `[j, stop)` for every `j` in `[start, stop)`."""
    singles.forget_before(start)
    states: dict[int, Any] = {}
    following: Any = None
    for j in range(stop - 1, start - 1, -1):
        single = singles[j]
        following = single if following is None else aggregation.merge(single, following)
        states[j] = following
    singles.forget_before(stop)
    return states


def tree_states(aggregation: Mergeable, values: npt.NDArray[Any], times: npt.NDArray[Any],
                lo: IntArray, hi: IntArray) -> list[Any]:
    """The state of every frame `[lo[i], hi[i])` of `values`, for any frames: a
    bottom-up segment tree of merged states (window order kept: left before right)."""
    n = len(values)
    if n == 0:
        return [aggregation.zero() for _ in range(len(lo))]
    size = 1 << max(0, (n - 1).bit_length())
    tree: list[Any] = [None] * (2 * size)
    for j in range(n):
        tree[size + j] = aggregation.add(aggregation.zero(), values[j:j + 1], times[j:j + 1])
    merge: Callable[[Any, Any], Any] = aggregation.merge
    for node in range(size - 1, 0, -1):
        left, right = tree[2 * node], tree[2 * node + 1]
        tree[node] = left if right is None else right if left is None else merge(left, right)
    states: list[Any] = []
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
        head: Any = None
        tail: Any = None
        left, right = a + size, b + size
        while left < right:
            if left & 1:
                node = tree[left]
                head = node if head is None else merge(head, node)
                left += 1
            if right & 1:
                right -= 1
                node = tree[right]
                tail = node if tail is None else merge(node, tail)
            left >>= 1
            right >>= 1
        if head is None:
            states.append(aggregation.zero() if tail is None else tail)
        else:
            states.append(head if tail is None else merge(head, tail))
    return states


NOTHING_CARRIED = ("wisp: no state carried",)
"""`running_results`'s `state` when the first segment starts afresh (a user's state may
be None)."""


def running_results(aggregation: Mergeable, state: Any, values: npt.NDArray[Any],
                    times: npt.NDArray[Any], valid: BoolArray, starts: IntArray,
                    ) -> tuple[list[Any], Any]:
    """`finish` of the running state at every row, a segment restarting at each of
    `starts` (strictly increasing, the first 0; `state`: the first segment's carried
    state, `NOTHING_CARRIED` for `zero()`), and the state after the last row."""
    results: list[Any] = []
    restarts = set(starts.tolist())
    current = aggregation.zero() if state is NOTHING_CARRIED else state
    for j in range(len(values)):
        if j in restarts and j:
            current = aggregation.zero()
        if valid[j]:  # `add` to a fresh state: `current`'s result may share its parts
            current = aggregation.merge(current, aggregation.add(
                aggregation.zero(), values[j:j + 1], times[j:j + 1]))
        results.append(aggregation.finish(current))
    return results, current
