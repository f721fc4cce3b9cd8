"""Aggregation specs and their algebraic traits.

Semantics shared by every window kind: nulls are ignored; over a window with no non-null
input `count` and `sum` are 0 and every other aggregate is null; `count()` counts rows,
`count(col)` non-null values. `stddev` and `variance` are the sample statistics (n - 1),
null below two values. `first`/`last` are the first/last non-null value in window order.
`collect` is the window's non-null values in window order. NaN follows Spark: it
propagates through `sum`/`mean`/`stddev`/`variance` and is the greatest value for
`min`/`max`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import bad_value


@dataclass(frozen=True)
class Traits:
    """What a planner may exploit: `invertible` (a group: add and remove, e.g. sum),
    `associative` (partial results combine: panes, trees), `idempotent` (overlaps are
    harmless: max), `needs_values` (must see every value: collect, udaf)."""

    invertible: bool
    associative: bool
    idempotent: bool
    needs_values: bool = False


TRAITS: dict[str, Traits] = {
    "count": Traits(invertible=True, associative=True, idempotent=False),
    "sum": Traits(invertible=True, associative=True, idempotent=False),
    "mean": Traits(invertible=True, associative=True, idempotent=False),
    "variance": Traits(invertible=True, associative=True, idempotent=False),
    "stddev": Traits(invertible=True, associative=True, idempotent=False),
    "min": Traits(invertible=False, associative=True, idempotent=True),
    "max": Traits(invertible=False, associative=True, idempotent=True),
    "first": Traits(invertible=False, associative=True, idempotent=True),
    "last": Traits(invertible=False, associative=True, idempotent=True),
    "collect": Traits(invertible=False, associative=True, idempotent=False,
                      needs_values=True),
    "time_weighted_mean": Traits(invertible=True, associative=True, idempotent=False),
    "udaf": Traits(invertible=False, associative=False, idempotent=False,
                   needs_values=True),
}


@dataclass(frozen=True)
class Aggregation:
    """One aggregation: a function `fn` over column `col` (None for `count()`)."""

    fn: str
    col: str | None
    name: str | None = None
    returns: str | None = None
    func: Callable[..., Any] | None = None
    lifetimes: bool = False

    def alias(self, name: str) -> Aggregation:
        """The same aggregation with output column `name`."""
        if not isinstance(name, str) or not name:
            raise bad_value("name", "a non-empty column name", name)
        return replace(self, name=name)

    @property
    def output_name(self) -> str:
        """The output column: the alias, else `<fn>_<col>`, else `count`."""
        if self.name:
            return self.name
        if self.col is None:
            return self.fn
        label = self.fn
        if self.func is not None:
            label = getattr(self.func, "__name__", "udaf")
            label = "udaf" if not label.isidentifier() else label
        return f"{label}_{self.col}"

    @property
    def traits(self) -> Traits:
        return TRAITS[self.fn]


def _column(fn: str, col: object) -> str:
    if not isinstance(col, str) or not col:
        raise bad_value("col", f"a column name for {fn}()", col)
    return col


def count(col: str | None = None) -> Aggregation:
    """`count()` counts rows; `count(col)` counts non-null values. 0 over an empty window."""
    return Aggregation("count", None if col is None else _column("count", col))


def sum(col: str) -> Aggregation:
    """Sum of the non-null values (0 over an empty window): long for integers, double for
    floating point, decimal(p + 10, s) for decimal(p, s)."""
    return Aggregation("sum", _column("sum", col))


def mean(col: str) -> Aggregation:
    """Arithmetic mean of the non-null values as a double; null over an empty window."""
    return Aggregation("mean", _column("mean", col))


def min(col: str) -> Aggregation:
    """Smallest non-null value (NaN only when all values are NaN); null when empty."""
    return Aggregation("min", _column("min", col))


def max(col: str) -> Aggregation:
    """Largest non-null value (NaN is the greatest, as in Spark); null when empty."""
    return Aggregation("max", _column("max", col))


def first(col: str) -> Aggregation:
    """First non-null value in window order; null when there is none."""
    return Aggregation("first", _column("first", col))


def last(col: str) -> Aggregation:
    """Last non-null value in window order; null when there is none."""
    return Aggregation("last", _column("last", col))


def stddev(col: str) -> Aggregation:
    """Sample standard deviation (n - 1) as a double; null below two non-null values."""
    return Aggregation("stddev", _column("stddev", col))


def variance(col: str) -> Aggregation:
    """Sample variance (n - 1) as a double; null below two non-null values."""
    return Aggregation("variance", _column("variance", col))


def collect(col: str) -> Aggregation:
    """The window's non-null values in window order, as an array (empty when none)."""
    return Aggregation("collect", _column("collect", col))


def time_weighted_mean(col: str) -> Aggregation:
    """Mean weighted by each interval event's lifetime clipped to the window."""
    return Aggregation("time_weighted_mean", _column("time_weighted_mean", col))


def udaf(func: Callable[..., Any], col: str, *, returns: str = "double",
         lifetimes: bool = False) -> Aggregation:
    """A user-defined aggregate: `func(values, times)` receives one window's non-null
    values and their times as numpy arrays (window order; times in ticks) and returns one
    value of Spark type `returns` (a DDL string such as "double" or "array<long>").
    It runs vectorized on the executors, once per window, never per row on the driver.

    `lifetimes=True` (interval-event windows: Hopping, Tumbling, Snapshot,
    CountByStartTime): `func(values, starts, ends)` receives instead each value's
    lifetime clipped to the window, `[starts[i], ends[i])` in ticks, for time-sensitive
    aggregates; where the window reaches the end of time, an open-ended lifetime's end
    is the largest int64 (`numpy.iinfo(numpy.int64).max`)."""
    if not callable(func):
        raise bad_value("func", "a callable f(values, times)", func)
    if not isinstance(returns, str) or not returns:
        raise bad_value("returns", "a Spark type as a DDL string such as 'double'", returns)
    if not isinstance(lifetimes, bool):
        raise bad_value("lifetimes", "True or False", lifetimes)
    return Aggregation("udaf", _column("udaf", col), returns=returns, func=func,
                       lifetimes=lifetimes)
