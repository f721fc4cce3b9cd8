"""Arrays holding several keys' runs one after another.

`runs` describes them as in `runtime.codecs.batches.key_groups`: where each run begins, then the
total length (`[0, n]` for one run). The primitives here restart at every run, so that
a kernel computes many short keys in one vectorised pass instead of one call per key.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def one_run(n: int) -> IntArray:
    """The runs of an array that holds one key's run."""
    return np.array([0, n], dtype=np.int64)


def offsets(counts: IntArray) -> IntArray:
    """`0..c-1` for each count `c`, one after another."""
    total = int(counts.sum())
    firsts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total, dtype=np.int64) - firsts


def owners(counts: IntArray) -> IntArray:
    """`i`, `counts[i]` times, for each `i` in turn: the owner of each of the items."""
    return np.repeat(np.arange(len(counts), dtype=np.int64), counts)


def run_index(runs: IntArray) -> IntArray:
    """The run each position belongs to."""
    return owners(np.diff(runs))


def running_max(values: npt.NDArray[Any], runs: IntArray) -> npt.NDArray[Any]:
    """The running maximum of `values` restarting at each run: each run's values are
    lifted above all earlier runs' (integers into a range of their own, others by their
    ranks), so one running maximum restarts per run."""
    n = len(values)
    if len(runs) <= 2:
        whole: npt.NDArray[Any] = np.maximum.accumulate(values) if n else values
        return whole
    run_of = run_index(runs)
    if values.dtype.kind == "i":
        low, high = _extents(values, runs, ordered=False)
        placed = _placement(low, high, margin=0)
        if placed is not None:
            floor, base = placed[0][run_of], placed[1][run_of]
            best = np.maximum.accumulate((values - floor) + base)
            result: npt.NDArray[Any] = (best - base) + floor
            return result.astype(values.dtype)
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    lift = run_of * n
    best = np.maximum.accumulate(rank + lift) - lift
    ranked: npt.NDArray[Any] = values[order[best]]
    return ranked


def counts_at_most(values: IntArray, m: int) -> IntArray:
    """For each `i` in `0..m-1`, how many of the integer `values` are at most `i`: what
    `searchsorted(sorted(values), arange(m), side="right")` gives, by counting (O(n + m),
    no search, no sort)."""
    counted = np.bincount(np.clip(values, 0, m), minlength=m + 1)[:m]
    result: IntArray = np.cumsum(counted).astype(np.int64)
    return result


def chain(nxt: IntArray) -> IntArray:
    """The positions `0, nxt[0], nxt[nxt[0]], ...` below `n`, by pointer doubling
    (O(n log n), vectorised)."""
    n = len(nxt)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    jump = np.append(nxt, n).astype(np.int64)
    path = np.zeros(1, dtype=np.int64)
    while path[-1] != n:
        path = np.concatenate([path, jump[path]])
        jump = jump[jump]
    return path[path < n]


def run_chains(nxt: IntArray, runs: IntArray) -> tuple[IntArray, IntArray]:
    """Per run, the positions after its first one along `nxt` (which never leaves a
    run: a run's last pointers lead to its end, the next run's start), and the run of
    each."""
    path = chain(nxt)
    starts = np.zeros(int(runs[-1]), dtype=bool)
    starts[runs[:-1]] = True
    later = path[~starts[path]]
    return later, run_index(runs)[later]


class RunSearch:
    """`searchsorted` within each run of `values` (sorted within each run), answered as
    positions in the whole array: the run's start when every value of the run is above
    the query (`side="left"`: at or above), its end when none is. Integer runs are moved
    once into ranges of their own (each query first clipped to just outside its run's
    values, which keeps its answer); other values are lifted run by run by their joint
    ranks with the queries. Either way one `searchsorted` serves all runs."""

    def __init__(self, values: npt.NDArray[Any], runs: IntArray) -> None:
        self.values, self.runs = values, runs
        self.single = len(runs) <= 2
        self.run_of = run_index(runs)
        self.placed: tuple[IntArray, IntArray, IntArray, IntArray] | None = None
        if not self.single and values.dtype.kind == "i":
            low, high = _extents(values, runs, ordered=True)
            placement = _placement(low, high, margin=1)
            if placement is not None:
                floor, base = placement
                self.placed = (low, high, floor, base)
                self.keys = (values - floor[self.run_of]) + base[self.run_of]

    def __call__(self, queries: npt.NDArray[Any], query_runs: IntArray,
                 side: Literal["left", "right"]) -> IntArray:
        if self.single:
            found: IntArray = np.searchsorted(self.values, queries, side=side).astype(
                np.int64)
            return found
        if self.placed is not None and queries.dtype.kind == "i":
            low, high, floor, base = self.placed
            clipped = np.clip(queries, low[query_runs] - 1, high[query_runs] + 1)
            wanted = (clipped - floor[query_runs]) + base[query_runs]
            result: IntArray = np.searchsorted(self.keys, wanted, side=side).astype(np.int64)
            return result
        n = len(self.values)
        _, ranks = np.unique(np.concatenate([self.values, queries]), return_inverse=True)
        width = np.int64(n + len(queries))
        lifted = self.run_of * width + ranks[:n]
        asked = query_runs * width + ranks[n:]
        ranked: IntArray = np.searchsorted(lifted, asked, side=side).astype(np.int64)
        return ranked


def run_search(values: npt.NDArray[Any], runs: IntArray, queries: npt.NDArray[Any],
               query_runs: IntArray, side: Literal["left", "right"]) -> IntArray:
    """One `RunSearch` of `queries` (each in run `query_runs`) in `values`."""
    return RunSearch(values, runs)(queries, query_runs, side)


def _extents(values: IntArray, runs: IntArray, ordered: bool) -> tuple[IntArray, IntArray]:
    """Each run's smallest and largest value (`ordered`: values sorted within each run);
    an empty run gets `(0, -1)`."""
    count = len(runs) - 1
    low = np.zeros(count, dtype=np.int64)
    high = np.full(count, -1, dtype=np.int64)
    full = np.nonzero(np.diff(runs) > 0)[0]
    if len(full):
        begins = runs[:-1][full]
        if ordered:
            low[full], high[full] = values[begins], values[runs[1:][full] - 1]
        else:
            low[full] = np.minimum.reduceat(values, begins)
            high[full] = np.maximum.reduceat(values, begins)
    return low, high


def _placement(low: IntArray, high: IntArray, margin: int
               ) -> tuple[IntArray, IntArray] | None:
    """Per run, a floor and a base that lay the runs' value ranges (widened by `margin`
    on each side) one after another, in order, from 0: `(x - floor) + base` lies in
    `[base, base + width)`, and no step leaves int64. None when the ranges would leave
    2^62 or a widened range would leave int64."""
    info = np.iinfo(np.int64)
    if margin and (int(low.min()) - margin < info.min or int(high.max()) + margin > info.max):
        return None
    widths = high.astype(np.float64) - low.astype(np.float64) + 1 + 2 * margin
    if float(widths.sum()) >= float(1 << 62):
        return None
    sizes = (high - low) + np.int64(1 + 2 * margin)
    bases = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return low - np.int64(margin), bases
