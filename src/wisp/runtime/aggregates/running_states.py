"""Bounded states carried row to row by the running windows (the cumulative window,
`Since`, a session's open window): the k-collections and the sketches, whose state
does not grow with the key's history, so a running window holds them as it holds
accumulators (`Definition.accumulators`).

`running_scan` gives the result at every row, restarting at each segment and resuming
the state a step carried (pickled, in the step's scalars).

- `first_k`/`last_k`: the first / last `k` values in window order (rows arrive in it);
- `top_k`/`bottom_k`: the `k` largest / smallest by value, largest (smallest) first,
  NaN the greatest, values that compare equal (`0.0` and `-0.0`) in window order;
- sketches: one sketch per segment (`runtime.aggregates.sketches`), its bytes between steps.
"""

from __future__ import annotations

import base64
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import merging
from ..codecs.arrays import validity
from ..limits import check_blob
from .aggregate import AggregateJob
from .sketches import FAMILIES, finisher

IntArray = npt.NDArray[np.int64]


def order_key(value: Any) -> Any:
    """How the k-collections compare values: NaN the greatest float, `-0.0` equal to
    `0.0`; other values by Python's order, which is Spark's for numbers, strings (code
    points: their UTF-8 bytes' order), dates, times and decimals."""
    if isinstance(value, float):
        return (1, 0.0) if math.isnan(value) else (0, value)
    return value


@dataclass(frozen=True)
class KList:
    """A k-collection's state: at most `k` values, as a tuple in the result's order."""

    k: int
    pick: str
    """"first", "last", "top" or "bottom"."""

    def zero(self) -> tuple[Any, ...]:
        return ()

    def add(self, state: tuple[Any, ...], values: Any, times: Any) -> tuple[Any, ...]:
        return self.merge(state, tuple(values))

    def merge(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
        """`a`'s values then `b`'s (`a` earlier in window order), kept to `k`."""
        both = a + b
        if self.pick == "first":
            return both[:self.k]
        if self.pick == "last":
            return both[-self.k:]
        ranked = sorted(both, key=order_key, reverse=self.pick == "top")
        return tuple(ranked[:self.k])

    def finish(self, state: tuple[Any, ...]) -> list[Any]:
        return list(state)


K_LIST_PICKS = {"first_k": "first", "last_k": "last", "top_k": "top", "bottom_k": "bottom"}
"""The k-collections' algebras and what each keeps."""


def k_list_of(job: AggregateJob) -> KList:
    return KList(job.k, K_LIST_PICKS[job.definition.algebra])


def k_list_scan(job: AggregateJob, column: pa.Array, starts: IntArray, state: Any,
                virtual: bool) -> tuple[pa.Array, Any]:
    """A k-collection at every row: its state merged with each row's value in turn."""
    mergeable = k_list_of(job)
    values = python_values(column)
    valid = validity(column)
    if virtual:
        values = np.concatenate([np.empty(1, dtype=object), values])
        valid = np.concatenate([[False], valid])
    times = np.zeros(len(values), dtype=np.int64)
    results, last = merging.running_results(mergeable, state, values, times, valid, starts)
    return pa.array(results, type=job.output_type), last


def sketch_scan(job: AggregateJob, column: pa.Array, starts: IntArray, state: Any,
                virtual: bool) -> tuple[pa.Array, Any]:
    """A sketch at every row: one sketch per segment, each valid row's value added once;
    the result (the canonical sketch, or what is read from it) made again only where a
    value was added. The state is the sketch's bytes."""
    family = FAMILIES[job.definition.algebra]
    finish, output = finisher(family, job)
    valid = validity(column)
    values = family.values(job, column, valid)
    taken = np.r_[0, np.cumsum(valid, dtype=np.int64)]
    if virtual:
        valid = np.concatenate([[False], valid])
        taken = np.r_[0, taken]
    restarts = set(starts.tolist())
    sketch = family.new(job) if state is merging.NOTHING_CARRIED else family.load(job, state)
    results: list[Any] = []
    current: Any = None
    stale = True
    for j in range(len(valid)):
        if j in restarts and j:
            sketch, stale = family.new(job), True
        if valid[j]:
            family.update(sketch, values[int(taken[j]):int(taken[j]) + 1])
            stale = True
        if stale:
            current, stale = finish([sketch]), False
        results.append(current)
    return output(results), family.blob(sketch)


RUNNING_SCANS: dict[str, Callable[[AggregateJob, pa.Array, IntArray, Any, bool],
                                  tuple[pa.Array, Any]]] = {
    **dict.fromkeys(K_LIST_PICKS, k_list_scan), **dict.fromkeys(FAMILIES, sketch_scan)}
"""The scan of each algebra a running window carries as a bounded state."""


def python_values(column: pa.Array) -> npt.NDArray[Any]:
    """A column's values as Python objects in a numpy array (their own types: decimals
    stay exact, times stay times)."""
    # one by one: a slice assignment would spread equal-length lists into a 2-D array
    values: npt.NDArray[Any] = np.fromiter(column.to_pylist(), dtype=object,
                                           count=len(column))
    return values


def running_scan(job: AggregateJob, column: pa.Array, starts: IntArray, carried: str | None,
                 virtual: bool) -> tuple[pa.Array, str]:
    """`job`'s result at every row of `column` (a virtual carried row 0 first when
    `virtual`), restarting at each of `starts`; the first segment resumes the state
    `carried` (`dump`'s text, None for none). Returns the results and the state after
    the last row, as text."""
    state = merging.NOTHING_CARRIED if carried is None else load(carried)
    results, last = RUNNING_SCANS[job.definition.algebra](job, column, starts, state,
                                                          virtual)
    return results, dump(job, last)


def dump(job: AggregateJob, state: Any) -> str:
    """A carried state as text for a step's scalars (pickled, base64); one past its
    share of the worker's memory cap is a `WispMemoryError`."""
    blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    check_blob(job.label, len(blob))
    return base64.b64encode(blob).decode("ascii")


def load(text: str) -> Any:
    """The state `dump` wrote (wisp's own stream state, never input data)."""
    return pickle.loads(base64.b64decode(text.encode("ascii")))
