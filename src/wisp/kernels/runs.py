"""Arrays holding several keys' runs one after another.

`runs` describes them as in `engine.arrow.key_groups`: where each run begins, then the
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
    lifted above all earlier runs' (integers by a whole span, others by their ranks),
    so one running maximum restarts per run."""
    n = len(values)
    if len(runs) <= 2:
        whole: npt.NDArray[Any] = np.maximum.accumulate(values) if n else values
        return whole
    run_of = run_index(runs)
    lifted = _lifted([values], [run_of])
    if lifted is not None:
        (shifted, lift), = lifted
        result: npt.NDArray[Any] = (np.maximum.accumulate(shifted) - lift) + values.min()
        return result.astype(values.dtype)
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    lift = run_of * n
    best = np.maximum.accumulate(rank + lift) - lift
    ranked: npt.NDArray[Any] = values[order[best]]
    return ranked


def run_search(values: npt.NDArray[Any], runs: IntArray, queries: npt.NDArray[Any],
               query_runs: IntArray, side: Literal["left", "right"]) -> IntArray:
    """`searchsorted` of each query within its own run of `values` (sorted within each
    run), as a position in the whole array: the run's start when every value of the run
    is above the query (`side="left"`: at or above), its end when none is. Values and
    queries are lifted run by run (integers by a whole span, others by their joint
    ranks), so that one search serves all runs."""
    if len(runs) <= 2:
        found: IntArray = np.searchsorted(values, queries, side=side).astype(np.int64)
        return found
    run_of = run_index(runs)
    lifted = _lifted([values, queries], [run_of, query_runs])
    if lifted is not None:
        (keys, _), (wanted, _) = lifted
    else:
        n = len(values)
        _, ranks = np.unique(np.concatenate([values, queries]), return_inverse=True)
        width = np.int64(n + len(queries))
        keys = run_of * width + ranks[:n]
        wanted = query_runs * width + ranks[n:]
    result: IntArray = np.searchsorted(keys, wanted, side=side).astype(np.int64)
    return result


def _lifted(arrays: list[npt.NDArray[Any]], run_ids: list[IntArray]
            ) -> list[tuple[IntArray, IntArray]] | None:
    """Integer arrays less the smallest of all their values, lifted by their run times
    the span of all their values, with each lift; None for floats or when the lifted
    values would leave 2^62 (no step overflows: each difference lies in the span)."""
    if any(a.dtype.kind != "i" for a in arrays) or not any(len(a) for a in arrays):
        return None
    low = min(int(a.min()) for a in arrays if len(a))
    high = max(int(a.max()) for a in arrays if len(a))
    span = high - low + 1
    runs = max(int(r.max()) for r in run_ids if len(r)) + 1
    if runs * span >= 1 << 62:
        return None
    out = []
    for values, run_of in zip(arrays, run_ids, strict=True):
        lift = run_of * np.int64(span)
        out.append(((values.astype(np.int64) - np.int64(low)) + lift, lift))
    return out
