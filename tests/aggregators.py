"""User aggregators defined outside the package, as a user would write them: the tests
run them on every window kind against a brute-force oracle (`finish(add(zero(), all
of a window's values))`) and against the built-ins they imitate. This module is on the
Python workers' path (`conftest.py`), as a user's module must be for Spark to run it."""

from __future__ import annotations

from typing import Any

import numpy as np

import wisp as ws


class Spread(ws.Aggregator):
    """max - min of the values, null over a window without values (NaN: as max - min
    gives, NaN the greatest value)."""

    returns = "double"
    commutative = True  # extremes: the values' order does not matter

    def zero(self) -> Any:
        return None

    def add(self, state: Any, values: Any, times: Any) -> Any:
        if len(values) == 0:
            return state
        numbers = np.asarray(values, dtype=np.float64)
        nan = bool(np.isnan(numbers).any())
        clean = numbers[~np.isnan(numbers)]
        low = float(clean.min()) if len(clean) else None
        high = float(clean.max()) if len(clean) else None
        return self.merge(state, (low, high, nan))

    def merge(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        low = b[0] if a[0] is None else a[0] if b[0] is None else min(a[0], b[0])
        high = b[1] if a[1] is None else a[1] if b[1] is None else max(a[1], b[1])
        return (low, high, a[2] or b[2])

    def finish(self, state: Any) -> Any:
        if state is None:
            return None
        low, high, nan = state
        if nan:  # NaN is the greatest value: max is NaN, so is max - min
            return float("nan")
        return high - low


class Trajectory(ws.Aggregator):
    """The last value minus the first in window order, and the time between them: an
    order-sensitive state, so a merge out of order shows."""

    returns = "struct<change:double,span:bigint>"

    def zero(self) -> Any:
        return None

    def add(self, state: Any, values: Any, times: Any) -> Any:
        if len(values) == 0:
            return state
        part = (float(values[0]), int(times[0]), float(values[-1]), int(times[-1]))
        return self.merge(state, part)

    def merge(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return (a[0], a[1], b[2], b[3])

    def finish(self, state: Any) -> Any:
        if state is None:
            return None
        return {"change": state[2] - state[0], "span": state[3] - state[1]}


class Total(ws.Aggregator):
    """An exact integer sum with `remove` (invertible), 0 over an empty window."""

    returns = "bigint"
    commutative = True

    def zero(self) -> Any:
        return 0

    def add(self, state: Any, values: Any, times: Any) -> Any:
        return state + sum(int(v) for v in values)

    def merge(self, a: Any, b: Any) -> Any:
        return a + b

    def remove(self, state: Any, values: Any, times: Any) -> Any:
        return state - sum(int(v) for v in values)

    def finish(self, state: Any) -> Any:
        return state


class Positives(ws.Aggregator):
    """The positive values in window order: `add` extends its state in place, `merge`
    returns an argument when the other is empty and `finish` the state itself, all as
    the contract allows (wisp only gives `add` fresh states, and never changes a state
    once given as a result)."""

    returns = "array<double>"

    def zero(self) -> Any:
        return []

    def add(self, state: Any, values: Any, times: Any) -> Any:
        state.extend(float(v) for v in values if v > 0)
        return state

    def merge(self, a: Any, b: Any) -> Any:
        return b if not a else a if not b else [*a, *b]

    def finish(self, state: Any) -> Any:
        return state


def brute_force(aggregator: ws.Aggregator, values: list[Any], times: list[Any]) -> Any:
    """The oracle: one `add` of all of a window's non-null values, then `finish`."""
    kept = [(v, t) for v, t in zip(values, times, strict=True) if v is not None]
    state = aggregator.add(aggregator.zero(), np.array([v for v, _ in kept]),
                           np.array([t for _, t in kept], dtype=np.int64))
    return aggregator.finish(state)
