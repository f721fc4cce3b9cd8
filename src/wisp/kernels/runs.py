"""Arrays holding several keys' runs one after another.

`runs` describes them as in `engine.arrow.key_groups`: where each run begins, then the
total length (`[0, n]` for one run). The primitives here restart at every run, so that
a kernel computes many short keys in one vectorised pass instead of one call per key.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def one_run(n: int) -> IntArray:
    """The runs of an array that holds one key's run."""
    return np.array([0, n], dtype=np.int64)


def run_index(runs: IntArray) -> IntArray:
    """The run each position belongs to."""
    return np.repeat(np.arange(len(runs) - 1, dtype=np.int64), np.diff(runs))


def running_max(values: npt.NDArray[Any], runs: IntArray) -> npt.NDArray[Any]:
    """The running maximum of `values` restarting at each run: values are replaced by
    their ranks, and each run's ranks are lifted above all earlier runs', so one running
    maximum restarts per run."""
    n = len(values)
    if len(runs) <= 2:
        whole: npt.NDArray[Any] = np.maximum.accumulate(values) if n else values
        return whole
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    lift = np.repeat(np.arange(len(runs) - 1, dtype=np.int64) * n, np.diff(runs))
    best = np.maximum.accumulate(rank + lift) - lift
    result: npt.NDArray[Any] = values[order[best]]
    return result


def run_search(values: npt.NDArray[Any], runs: IntArray, queries: npt.NDArray[Any],
               query_runs: IntArray, side: str) -> IntArray:
    """`searchsorted` of each query within its own run of `values` (sorted within each
    run), as a position in the whole array: the run's start when every value of the run
    is above the query (`side="left"`: at or above), its end when none is. Values and
    queries are replaced by their joint ranks, lifted run by run, so that one search
    serves all runs."""
    if len(runs) <= 2:
        return np.searchsorted(values, queries, side=side).astype(np.int64)  # type: ignore[call-overload]
    n = len(values)
    _, ranks = np.unique(np.concatenate([values, queries]), return_inverse=True)
    width = np.int64(n + len(queries))
    lifted = run_index(runs) * width + ranks[:n]
    wanted = query_runs * width + ranks[n:]
    return np.searchsorted(lifted, wanted, side=side).astype(np.int64)  # type: ignore[call-overload]
