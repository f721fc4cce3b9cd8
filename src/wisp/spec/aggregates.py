"""Aggregation specs and their algebraic traits.

Semantics shared by every window kind: nulls are ignored; over a window with no non-null
input `count` and `sum` are 0 and every other aggregate is null; `count()` counts rows,
`count(col)` non-null values. `stddev` and `variance` are the sample statistics (n - 1),
null below two values. `first`/`last` are the first/last non-null value in window order.
`collect` is the window's non-null values in window order. NaN follows Spark: it
propagates through `sum`/`mean`/`stddev`/`variance` and is the greatest value for
`min`/`max`.

Beyond those: `quantile`/`median` (exact, numpy's interpolation methods, NaN sorting
greatest as in Spark), `count_distinct` (nulls not counted, NaN equal to NaN),
`max_by`/`min_by` (the value on the row where `by` is largest/smallest; ties go to the
earliest such row in window order) and `ewm_mean` (time-decayed mean over the rows so
far; running windows only). Every constructor takes `min_count=`: the result is null
unless the window holds at least that many non-null values of the aggregation's
column (`by` for max_by/min_by; rows for `count()`), `count` included.
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
    "quantile": Traits(invertible=False, associative=False, idempotent=False,
                       needs_values=True),
    "median": Traits(invertible=False, associative=False, idempotent=False,
                     needs_values=True),
    "count_distinct": Traits(invertible=False, associative=False, idempotent=False,
                             needs_values=True),
    "max_by": Traits(invertible=False, associative=True, idempotent=True),
    "min_by": Traits(invertible=False, associative=True, idempotent=True),
    "ewm_mean": Traits(invertible=False, associative=False, idempotent=False),
}

INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")
"""numpy's quantile methods of the same names: with `h = (n - 1) * q` over the `n`
sorted values, `lower` takes value `floor(h)`, `higher` `ceil(h)`, `nearest` `h`
rounded half to even, `midpoint` halfway between floor and ceil, `linear` interpolates."""


@dataclass(frozen=True)
class Aggregation:
    """One aggregation: a function `fn` over column `col` (None for `count()`)."""

    fn: str
    col: str | None
    name: str | None = None
    returns: str | None = None
    func: Callable[..., Any] | None = None
    lifetimes: bool = False
    by: str | None = None
    """max_by/min_by: the column whose extreme row is picked."""
    q: float | None = None
    """quantile: the probability in [0, 1]."""
    interpolation: str = "linear"
    half_life: Any = None
    """ewm_mean: the half-life, a duration (or a number for numeric time)."""
    min_count: int = 0
    """The result is null unless the window holds at least this many non-null values."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The input columns the aggregation reads."""
        return tuple(c for c in (self.col, self.by) if c is not None)

    @property
    def counted(self) -> str | None:
        """The column whose non-null values `min_count` counts (None: rows)."""
        return self.by if self.by is not None else self.col

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
        if self.fn == "quantile" and self.q is not None:
            label = "q" + format(self.q * 100, ".10g").replace(".", "_").replace("-", "m")
        if self.func is not None:
            label = getattr(self.func, "__name__", "udaf")
            label = "udaf" if not label.isidentifier() else label
        return f"{label}_{self.col}"

    @property
    def traits(self) -> Traits:
        return TRAITS[self.fn]


def _column(fn: str, col: object, param: str = "col") -> str:
    if not isinstance(col, str) or not col:
        raise bad_value(param, f"a column name for {fn}()", col)
    return col


def _min_count(value: object) -> int:
    """`min_count`: None or a whole number >= 0 (0 and None: no threshold)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad_value("min_count", "a whole number >= 0 or None", value)
    return value


def count(col: str | None = None, *, min_count: int | None = None) -> Aggregation:
    """`count()` counts rows; `count(col)` counts non-null values. 0 over an empty window."""
    return Aggregation("count", None if col is None else _column("count", col),
                       min_count=_min_count(min_count))


def sum(col: str, *, min_count: int | None = None) -> Aggregation:
    """Sum of the non-null values (0 over an empty window): long for integers, double for
    floating point, decimal(p + 10, s) for decimal(p, s)."""
    return Aggregation("sum", _column("sum", col), min_count=_min_count(min_count))


def mean(col: str, *, min_count: int | None = None) -> Aggregation:
    """Arithmetic mean of the non-null values as a double; null over an empty window."""
    return Aggregation("mean", _column("mean", col), min_count=_min_count(min_count))


def min(col: str, *, min_count: int | None = None) -> Aggregation:
    """Smallest non-null value (NaN only when all values are NaN); null when empty."""
    return Aggregation("min", _column("min", col), min_count=_min_count(min_count))


def max(col: str, *, min_count: int | None = None) -> Aggregation:
    """Largest non-null value (NaN is the greatest, as in Spark); null when empty."""
    return Aggregation("max", _column("max", col), min_count=_min_count(min_count))


def first(col: str, *, min_count: int | None = None) -> Aggregation:
    """First non-null value in window order; null when there is none."""
    return Aggregation("first", _column("first", col), min_count=_min_count(min_count))


def last(col: str, *, min_count: int | None = None) -> Aggregation:
    """Last non-null value in window order; null when there is none."""
    return Aggregation("last", _column("last", col), min_count=_min_count(min_count))


def stddev(col: str, *, min_count: int | None = None) -> Aggregation:
    """Sample standard deviation (n - 1) as a double; null below two non-null values."""
    return Aggregation("stddev", _column("stddev", col), min_count=_min_count(min_count))


def variance(col: str, *, min_count: int | None = None) -> Aggregation:
    """Sample variance (n - 1) as a double; null below two non-null values."""
    return Aggregation("variance", _column("variance", col), min_count=_min_count(min_count))


def collect(col: str, *, min_count: int | None = None) -> Aggregation:
    """The window's non-null values in window order, as an array (empty when none)."""
    return Aggregation("collect", _column("collect", col), min_count=_min_count(min_count))


def time_weighted_mean(col: str, *, min_count: int | None = None) -> Aggregation:
    """Mean weighted by each interval event's lifetime clipped to the window."""
    return Aggregation("time_weighted_mean", _column("time_weighted_mean", col),
                       min_count=_min_count(min_count))


def udaf(func: Callable[..., Any], col: str, *, returns: str = "double",
         lifetimes: bool = False, min_count: int | None = None) -> Aggregation:
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
                       lifetimes=lifetimes, min_count=_min_count(min_count))


def quantile(col: str, q: float, interpolation: str = "linear", *,
             min_count: int | None = None) -> Aggregation:
    """The exact `q`-quantile of the window's non-null numeric values, as a double, by
    numpy's method `interpolation` (`INTERPOLATIONS`); NaN sorts greatest, as in Spark
    (a NaN picked or interpolated with gives NaN). Null over a window without values.
    Output name `q<100*q>_<col>` (`q90_v`, `q99_9_v`)."""
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
        raise bad_value("q", "a number in [0, 1]", q)
    if interpolation not in INTERPOLATIONS:
        raise bad_value("interpolation", f"one of {', '.join(INTERPOLATIONS)}",
                        interpolation)
    return Aggregation("quantile", _column("quantile", col), q=float(q),
                       interpolation=interpolation, min_count=_min_count(min_count))


def median(col: str, *, min_count: int | None = None) -> Aggregation:
    """`quantile(col, 0.5, "linear")`, named `median_<col>`."""
    return Aggregation("median", _column("median", col), q=0.5,
                       min_count=_min_count(min_count))


def count_distinct(col: str, *, min_count: int | None = None) -> Aggregation:
    """The number of distinct non-null values in the window (0 when none); NaN equals
    NaN, as in Spark."""
    return Aggregation("count_distinct", _column("count_distinct", col),
                       min_count=_min_count(min_count))


def max_by(col: str, by: str, *, min_count: int | None = None) -> Aggregation:
    """The value of `col` on the window's row where `by` is largest (NaN the greatest,
    nulls skipped); among equal `by`, the earliest such row in window order. Null when
    `by` is null on every row (and where `col` is null on the row picked)."""
    return Aggregation("max_by", _column("max_by", col), by=_column("max_by", by, "by"),
                       min_count=_min_count(min_count))


def min_by(col: str, by: str, *, min_count: int | None = None) -> Aggregation:
    """The value of `col` on the window's row where `by` is smallest; ties, NaN and
    nulls as `max_by`."""
    return Aggregation("min_by", _column("min_by", col), by=_column("min_by", by, "by"),
                       min_count=_min_count(min_count))


def ewm_mean(col: str, *, half_life: Any, min_count: int | None = None) -> Aggregation:
    """Time-decayed mean of the non-null values so far, at each row time `t`:
    `sum(w_i * x_i) / sum(w_i)` with `w_i = 0.5 ** ((t - t_i) / half_life)` over the
    non-null rows `i` up to and including the row (rows at the same time weigh alike).
    `half_life` is a duration ("10s", timedelta) or, for numeric time, a number > 0.
    Only running windows: the cumulative one (`ev.agg`) and `Since` periods. NaN
    propagates; null before the first non-null value."""
    if half_life is None or isinstance(half_life, bool):
        raise bad_value("half_life", "a duration > 0 such as '10s'", half_life)
    if isinstance(half_life, (int, float)) and not half_life > 0:
        raise bad_value("half_life", "a duration > 0 such as '10s'", half_life)
    return Aggregation("ewm_mean", _column("ewm_mean", col), half_life=half_life,
                       min_count=_min_count(min_count))
