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

Each aggregation has one `Definition` (the registry `DEFINITIONS`): what it needs and
offers, which the planner and the strategies ask instead of its name. A user's own
mergeable aggregation subclasses `Aggregator` and becomes an aggregation through
`aggregate`.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import WispInputError, bad_value
from .time import Duration

ValueClasses = tuple[str, ...]
"""Value classes of input columns (`plan.source.value_class`): "none" (no column),
"integer", "float", "boolean", "decimal", "ordered" (strings, dates, ...), "other"."""
ALL_CLASSES: ValueClasses = ("none", "integer", "float", "boolean", "decimal", "ordered",
                             "other")


@dataclass(frozen=True)
class Definition:
    """What one aggregation is, as the planner and the strategies see it: they ask these
    capabilities, never the aggregation's name. The registry `DEFINITIONS` holds the
    built-ins'; a user's `Aggregator` gets `USER_DEFINITION` (with `invertible` when it
    defines `remove`, and `stream_panes` when it is `commutative`).

    - `mergeable`: partial states merge (panes, trees, streams of partials);
      `invertible`: `remove` undoes `add` exactly (prefix differences), for the value
      classes whose state is exact (counts; sums and means of integers and decimals,
      not of floats, whose rounding a subtraction does not undo: the partial states'
      `runtime.aggregates.partials.inverse_of` says which; moments, float states, are not);
      `idempotent`: merging overlapping parts is harmless (max); `needs_values`: its
      state holds every value of the window, so it grows with the window (collect,
      exact quantiles, udaf).
    - `reads_times`: it sees each value's time, so windows moved in time change it;
      `lifetimes`: it weighs values by their lifetimes clipped to the window (lengths
      only: a move in time keeps them);
      `running_only`: defined over running windows only (the cumulative one, `Since`);
      `user_code`: the user's code computes it (a udaf, an `Aggregator`).
    - `takes`: the input columns it accepts: "any", "numeric", "orderable",
      "atomic" (orderable or boolean: distinct counts) or "hashable" (integers, floats
      and strings: what a hashing sketch reads); `output`: its output type rule
      ("long", "double", "sum": the input's sum type, "input", "array": of the input's
      values, "map": from the input's values to longs, "binary": a sketch's bytes,
      "quantiles": a double, or an array of doubles for a list of probabilities,
      "declared").
    - Where Spark's own operators give exactly wisp's result, by input value class:
      `spark_grouped` (an order-free aggregate over a group), `spark_sliding` (a sliding
      ROWS frame, each frame aggregated on its own), `spark_running` (a running frame,
      any class); `panes` (batch panes: a window's result merged from its panes'
      Spark partials), `stream_panes` (the stream pane kernel's partials);
      `accumulators`: a few accumulators per key hold it over a running window.
    - `algebra`: the key of its executable algebra on the executors (the vectorised
      kernels of `runtime`: partial states with `add`, `merge`, `finish`, and the frame
      kernels), which the runtime's registries look up; aggregations sharing a state
      share a key's family there, never a comparison of names.
    - `arguments`: its constructor's arguments by name, in call order (`col` the
      column; `min_count` aside, which every one takes); `required`: those a call must
      give. A query file's aggregations follow them (`quantile(v, 0.9)`).
    - `name`: how labels and messages name it (`sum`, `aggregate` for a user's
      aggregator), its key in `DEFINITIONS`; shown, never compared nor looked up."""

    mergeable: bool
    invertible: bool
    idempotent: bool
    needs_values: bool = False
    reads_times: bool = False
    lifetimes: bool = False
    running_only: bool = False
    user_code: bool = False
    takes: str = "any"
    output: str = "input"
    spark_grouped: ValueClasses = ()
    spark_sliding: ValueClasses = ()
    spark_running: bool = True
    panes: ValueClasses = ()
    stream_panes: ValueClasses = ()
    accumulators: bool = True
    algebra: str = ""
    arguments: tuple[str, ...] = ("col",)
    required: tuple[str, ...] = ("col",)
    name: str = ""


_ORDERABLE: ValueClasses = ("integer", "float", "decimal", "ordered")
_ATOMIC: ValueClasses = ("integer", "float", "boolean", "decimal", "ordered")
_NUMBERS: ValueClasses = ("integer", "float", "decimal")
_SKETCHED: ValueClasses = ("integer", "float", "ordered")
"""The value classes a hashing sketch takes (of "ordered", strings only: the planner
checks the family, `HASHED_FAMILIES`)."""


def _moments(algebra: str) -> Definition:
    return Definition(mergeable=True, invertible=False, idempotent=False, takes="numeric",
                      output="double", spark_grouped=("integer", "float"),
                      stream_panes=_NUMBERS, algebra=algebra)


def _picks(algebra: str, spark_running: bool = True) -> Definition:
    return Definition(mergeable=True, invertible=False, idempotent=True,
                      spark_running=spark_running, stream_panes=_ATOMIC, algebra=algebra)


def _sketch(algebra: str, takes: str, output: str, arguments: tuple[str, ...],
            required: tuple[str, ...] = ("col",)) -> Definition:
    """A sketch (`algebra`: "hll", "theta", "kll"): its bytes (`output="binary"`) or a
    value read from it; a state of bounded size whatever the window's length."""
    classes = _SKETCHED if takes == "hashable" else _NUMBERS
    return Definition(mergeable=True, invertible=False, idempotent=False, takes=takes,
                      output=output, spark_running=False,
                      stream_panes=classes, algebra=algebra, arguments=arguments,
                      required=required)


def _k_list(algebra: str, takes: str) -> Definition:
    """A bounded list of `k` values picked by window order or by value."""
    return Definition(mergeable=True, invertible=False, idempotent=False, takes=takes,
                      output="array", spark_running=False,
                      stream_panes=_ATOMIC if takes == "any" else _ORDERABLE,
                      algebra=algebra, arguments=("col", "k"), required=("col", "k"))


_BUILT_INS: dict[str, Definition] = {
    "count": Definition(mergeable=True, invertible=True, idempotent=False, output="long",
                        spark_grouped=ALL_CLASSES, spark_sliding=ALL_CLASSES,
                        panes=ALL_CLASSES, stream_panes=ALL_CLASSES, algebra="count",
                        required=()),
    "sum": Definition(mergeable=True, invertible=True, idempotent=False, takes="numeric",
                      output="sum", spark_grouped=_NUMBERS, spark_sliding=("float",),
                      panes=("integer", "float"), stream_panes=_NUMBERS, algebra="sum"),
    "mean": Definition(mergeable=True, invertible=True, idempotent=False, takes="numeric",
                       output="double", spark_grouped=_NUMBERS, spark_sliding=("float",),
                       panes=("integer", "float"), stream_panes=_NUMBERS, algebra="mean"),
    "variance": _moments("variance"),
    "stddev": _moments("stddev"),
    "min": Definition(mergeable=True, invertible=False, idempotent=True, takes="orderable",
                      spark_grouped=_ORDERABLE, spark_sliding=("integer", "float"),
                      panes=_ORDERABLE, stream_panes=_ORDERABLE, algebra="min"),
    "max": Definition(mergeable=True, invertible=False, idempotent=True, takes="orderable",
                      spark_grouped=_ORDERABLE, spark_sliding=("integer", "float"),
                      panes=_ORDERABLE, stream_panes=_ORDERABLE, algebra="max"),
    "first": _picks("first"),
    "last": _picks("last"),
    "collect": Definition(mergeable=True, invertible=False, idempotent=False,
                          needs_values=True, output="array", accumulators=False,
                          algebra="collect"),
    "time_weighted_mean": Definition(mergeable=True, invertible=True, idempotent=False,
                                     lifetimes=True, takes="numeric",
                                     output="double", accumulators=False,
                                     algebra="time_weighted_mean"),
    "udaf": Definition(mergeable=False, invertible=False, idempotent=False,
                       needs_values=True, reads_times=True, user_code=True,
                       output="declared", spark_running=False, accumulators=False,
                       algebra="udaf", arguments=("func", "col", "returns", "lifetimes"),
                       required=("func", "col")),
    "quantile": Definition(mergeable=False, invertible=False, idempotent=False,
                           needs_values=True, takes="numeric", output="double",
                           spark_running=False, accumulators=False, algebra="quantile",
                           arguments=("col", "q", "interpolation"), required=("col", "q")),
    "median": Definition(mergeable=False, invertible=False, idempotent=False,
                         needs_values=True, takes="numeric", output="double",
                         spark_running=False, accumulators=False, algebra="quantile"),
    "count_distinct": Definition(mergeable=True, invertible=False, idempotent=True,
                                 needs_values=True, takes="atomic", output="long",
                                 spark_running=False, accumulators=False,
                                 stream_panes=_ATOMIC, algebra="count_distinct"),
    "max_by": replace(_picks("max_by", spark_running=False), arguments=("col", "by"),
                      required=("col", "by")),
    "min_by": replace(_picks("min_by", spark_running=False), arguments=("col", "by"),
                      required=("col", "by")),
    "ewm_mean": Definition(mergeable=False, invertible=False, idempotent=False,
                           reads_times=True, running_only=True, takes="numeric",
                           output="double", spark_running=False, algebra="ewm_mean",
                           arguments=("col", "half_life"), required=("col", "half_life")),
    "hll_sketch": _sketch("hll", "hashable", "binary", ("col", "lg_k")),
    "theta_sketch": _sketch("theta", "hashable", "binary", ("col", "lg_k")),
    "kll_sketch": _sketch("kll", "numeric", "binary", ("col", "k")),
    "approx_count_distinct": _sketch("hll", "hashable", "long", ("col", "lg_k")),
    "approx_quantile": _sketch("kll", "numeric", "quantiles", ("col", "q", "k"),
                               required=("col", "q")),
    "first_k": _k_list("first_k", "any"),
    "last_k": _k_list("last_k", "any"),
    "top_k": _k_list("top_k", "orderable"),
    "bottom_k": _k_list("bottom_k", "orderable"),
    "histogram": Definition(mergeable=True, invertible=False, idempotent=False,
                            needs_values=True, takes="atomic", output="map",
                            spark_running=False, accumulators=False,
                            stream_panes=_ATOMIC, algebra="histogram"),
}
DEFINITIONS: dict[str, Definition] = {fn: replace(definition, name=fn)
                                      for fn, definition in _BUILT_INS.items()}
"""The built-in aggregations, by the name their constructor gives (`Aggregation.fn`,
`Definition.name`)."""


USER_DEFINITION = Definition(mergeable=True, invertible=False, idempotent=False,
                             reads_times=True, user_code=True, output="declared",
                             spark_running=False, algebra="aggregator",
                             arguments=("aggregator", "col"), required=("aggregator", "col"),
                             name="aggregate")
"""A user's `Aggregator`: mergeable by its `merge`, invertible when it defines
`remove`; it sees the values' times, and no Spark operator computes it."""


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
    half_life: Duration | None = None
    """ewm_mean: the half-life, a duration (or a number for numeric time)."""
    min_count: int = 0
    """The result is null unless the window holds at least this many non-null values."""
    aggregator: Aggregator | None = None
    """`aggregate`: the user's mergeable aggregation (`fn` is "aggregate")."""
    k: int = 0
    """first_k/last_k/top_k/bottom_k: how many values; kll_sketch/approx_quantile: the
    KLL sketch's `k` (its accuracy)."""
    lg_k: int = 0
    """hll_sketch/theta_sketch/approx_count_distinct: log2 of the sketch's buckets
    (HLL) or nominal entries (theta)."""
    qs: tuple[float, ...] | None = None
    """approx_quantile given a list of probabilities: them, in order (`q` is None)."""

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
            label = percent_label(self.q)
        if self.fn == "approx_quantile":
            label = ("approx_quantiles" if self.q is None
                     else "approx_" + percent_label(self.q))
        if self.fn in K_LISTS:
            label = f"{self.fn[:-2]}_{self.k}"
        if self.func is not None:
            label = getattr(self.func, "__name__", "udaf")
            label = "udaf" if not label.isidentifier() else label
        if self.aggregator is not None:
            label = snake_case(self.aggregator)
        return f"{label}_{self.col}"

    @property
    def definition(self) -> Definition:
        """What the aggregation is, as strategies see it (`Definition`)."""
        if self.aggregator is not None:
            commutative = getattr(self.aggregator, "commutative", False) is True
            return replace(USER_DEFINITION, invertible=has_method(self.aggregator, "remove"),
                           stream_panes=ALL_CLASSES if commutative else ())
        return DEFINITIONS[self.fn]

    @property
    def user(self) -> bool:
        """Whether a user's `Aggregator` computes it (merged states, not Spark's)."""
        return self.aggregator is not None

    @property
    def label(self) -> str:
        """How errors name it: `sum(v)`, `count()`, `spread(v)` (a user's aggregator by
        its snake-case class name)."""
        shown = self.fn if self.aggregator is None else snake_case(self.aggregator)
        return f"{shown}({self.col or ''})"


def percent_label(q: float) -> str:
    """A probability as an output name's prefix: 0.9 -> `q90`, 0.999 -> `q99_9`."""
    return "q" + format(q * 100, ".10g").replace(".", "_").replace("-", "m")


K_LISTS = ("first_k", "last_k", "top_k", "bottom_k")
"""The k-collections, named `first_5_v`, `top_3_v`, ... (`Aggregation.output_name`)."""


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


def ewm_mean(col: str, *, half_life: Duration, min_count: int | None = None) -> Aggregation:
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


HLL_LG_K = (4, 21)
"""The `lg_k` an HLL sketch takes, as Spark's `hll_sketch_agg` (inclusive bounds)."""
THETA_LG_K = (5, 26)
"""The `lg_k` a theta sketch takes (inclusive bounds): Spark's `theta_sketch_agg` takes
4 to 26, the sketch library wisp builds them with 5 to 26."""
KLL_K = (8, 65535)
"""The `k` a KLL sketch takes, as Spark's `kll_sketch_agg_double` (inclusive bounds)."""


def _whole(name: str, value: object, bounds: tuple[int, int | None], what: str) -> int:
    """A whole number within `bounds` (inclusive; None: unbounded above)."""
    low, high = bounds
    if (isinstance(value, bool) or not isinstance(value, int) or value < low
            or (high is not None and value > high)):
        shown = f"between {low} and {high}" if high is not None else f">= {low}"
        raise bad_value(name, f"a whole number {shown} ({what})", value)
    return value


def hll_sketch(col: str, lg_k: int = 12, *, min_count: int | None = None) -> Aggregation:
    """The window's HyperLogLog sketch of its non-null values, as bytes that Spark's
    `hll_sketch_estimate` and `hll_union_agg` read (an HLL_8 sketch with `2 ** lg_k`
    buckets, `lg_k` from 4 to 21 as Spark's `hll_sketch_agg`). Integers and strings
    are hashed as Spark's `hll_sketch_agg` hashes them, so a wisp sketch and a Spark
    sketch of the same values union exactly; floats are hashed as the sketch library
    hashes doubles, which Spark's function refuses (wisp-only). Empty windows give an
    empty sketch; the sketch's estimate does not depend on the rows' order."""
    return Aggregation("hll_sketch", _column("hll_sketch", col),
                       lg_k=_whole("lg_k", lg_k, HLL_LG_K, "log2 of the HLL buckets"),
                       min_count=_min_count(min_count))


def theta_sketch(col: str, lg_k: int = 12, *, min_count: int | None = None
                 ) -> Aggregation:
    """The window's theta sketch of its non-null values (`2 ** lg_k` nominal entries,
    `lg_k` from 5 to 26; Spark's `theta_sketch_agg` also takes 4), as compact bytes
    that Spark's `theta_sketch_estimate` and `theta_union_agg` read; values hashed as
    in `hll_sketch`."""
    return Aggregation("theta_sketch", _column("theta_sketch", col),
                       lg_k=_whole("lg_k", lg_k, THETA_LG_K,
                                   "log2 of the nominal entries"),
                       min_count=_min_count(min_count))


def kll_sketch(col: str, k: int = 200, *, min_count: int | None = None) -> Aggregation:
    """The window's KLL quantiles sketch of its non-null numeric values, as doubles,
    in bytes that Spark's `kll_sketch_get_quantile_double` and `kll_merge_agg_double`
    read (`k` from 8 to 65535, as Spark's `kll_sketch_agg_double`). Exact while the
    window holds at most `k` values; beyond, within the sketch's normalized rank error
    (about 1.65% at k = 200)."""
    return Aggregation("kll_sketch", _column("kll_sketch", col),
                       k=_whole("k", k, KLL_K, "the KLL sketch's accuracy"),
                       min_count=_min_count(min_count))


def approx_count_distinct(col: str, lg_k: int = 12, *, min_count: int | None = None
                          ) -> Aggregation:
    """The estimate of `hll_sketch(col, lg_k)` rounded to a long, as Spark's
    `hll_sketch_estimate` reads it: within about `1.04 / sqrt(2 ** lg_k)` relative
    error (1.6% at lg_k = 12, one standard error), exact for small counts. Its state
    is bounded, so it runs where `count_distinct` is refused for memory."""
    return Aggregation("approx_count_distinct", _column("approx_count_distinct", col),
                       lg_k=_whole("lg_k", lg_k, HLL_LG_K, "log2 of the HLL buckets"),
                       min_count=_min_count(min_count))


def approx_quantile(col: str, q: float | Sequence[float], k: int = 200, *,
                    min_count: int | None = None) -> Aggregation:
    """The `q`-quantile of the window's non-null numeric values read from
    `kll_sketch(col, k)` as Spark's `kll_sketch_get_quantile_double` reads it: a value
    of the window whose rank is within the sketch's normalized rank error of `q`.
    `q` a number in [0, 1] gives a double (output `approx_q90_v`); a list of them an
    array of doubles in the same order (`approx_quantiles_v`). Null over a window
    without values."""
    if isinstance(q, (list, tuple)):
        if not q:
            raise bad_value("q", "a number in [0, 1] or a non-empty list of them", q)
        for one in q:
            _probability(one, q)
        return Aggregation("approx_quantile", _column("approx_quantile", col),
                           qs=tuple(float(one) for one in q),
                           k=_whole("k", k, KLL_K, "the KLL sketch's accuracy"),
                           min_count=_min_count(min_count))
    _probability(q, q)
    assert not isinstance(q, Sequence)
    return Aggregation("approx_quantile", _column("approx_quantile", col), q=float(q),
                       k=_whole("k", k, KLL_K, "the KLL sketch's accuracy"),
                       min_count=_min_count(min_count))


def _probability(value: object, given: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise bad_value("q", "a number in [0, 1] or a non-empty list of them", given)


def first_k(col: str, k: int, *, min_count: int | None = None) -> Aggregation:
    """The window's first `k` non-null values in window order, as an array (fewer when
    the window holds fewer; empty when none). Output `first_<k>_<col>`."""
    return Aggregation("first_k", _column("first_k", col),
                       k=_whole("k", k, (1, None), "how many values"),
                       min_count=_min_count(min_count))


def last_k(col: str, k: int, *, min_count: int | None = None) -> Aggregation:
    """The window's last `k` non-null values, in window order (the newest last), as
    an array. Output `last_<k>_<col>`."""
    return Aggregation("last_k", _column("last_k", col),
                       k=_whole("k", k, (1, None), "how many values"),
                       min_count=_min_count(min_count))


def top_k(col: str, k: int, *, min_count: int | None = None) -> Aggregation:
    """The window's `k` largest non-null values, largest first (NaN the greatest, as
    in Spark); among equal values the earlier in window order first, which matters
    only for values that are equal but not the same (`0.0` and `-0.0`). Output
    `top_<k>_<col>`."""
    return Aggregation("top_k", _column("top_k", col),
                       k=_whole("k", k, (1, None), "how many values"),
                       min_count=_min_count(min_count))


def bottom_k(col: str, k: int, *, min_count: int | None = None) -> Aggregation:
    """The window's `k` smallest non-null values, smallest first; ties as `top_k`.
    Output `bottom_<k>_<col>`."""
    return Aggregation("bottom_k", _column("bottom_k", col),
                       k=_whole("k", k, (1, None), "how many values"),
                       min_count=_min_count(min_count))


def histogram(col: str, *, min_count: int | None = None) -> Aggregation:
    """A map from each distinct non-null value of the window to how many rows hold it
    (empty when none); NaN is one value and `-0.0` counts as `0.0`, as Spark groups
    them."""
    return Aggregation("histogram", _column("histogram", col),
                       min_count=_min_count(min_count))


class Aggregator:
    """A user's mergeable aggregation: subclass it, then `aggregate(MyAggregator(), col)`.

    The state is any picklable value, and the methods say what it is:

    - `zero()`: the state of no values.
    - `add(state, values, times)`: the state after also taking `values`, one chunk of a
      window's non-null values as a numpy array in window order (numbers as numpy
      numbers, decimals as float64, other types as objects), and their `times` in
      ticks (microseconds for timestamps and dates, a date at its midnight; the number
      for integer and float time; the unscaled integer for decimal time). wisp only
      passes it a fresh `zero()` state, so it may update `state` in place and return it.
    - `merge(a, b)`: the state of `a`'s values followed by `b`'s (`a` is earlier in
      window order). It must not change `a` or `b` (it may return one of them): wisp
      merges one state into many.
    - `finish(state)`: the window's result, a value of the Spark type `returns` (a DDL
      string such as "double" or "array<long>"), or None for null. It is called for
      every window, an empty window's state being `zero()`.
    - `remove(state, values, times)` (optional): the state without `values`, the
      oldest ones the state holds, when the aggregation is invertible.

    `merge` must be associative with `zero()` its identity, and `add` over any split of
    the values followed by `merge` must equal one `add` of them all: the strategies
    merge partial states (panes, sliding frames by two stacks of merged states,
    streams), so a result never depends on how the values were cut.

    `commutative = True` says more: the values' order does not matter (`merge(a, b)`
    equals `merge(b, a)`, as for sums, extremes, sets). A stream's `Tumbling`/`Hopping`
    then keeps one merged state per pane, whatever order the rows arrive in, instead of
    the open windows' rows.
    """

    returns: str = "double"
    commutative: bool = False

    def zero(self) -> Any:
        raise NotImplementedError

    def add(self, state: Any, values: Any, times: Any) -> Any:
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def finish(self, state: Any) -> Any:
        raise NotImplementedError


AGGREGATOR_METHODS = {"zero": "zero() (the state of no values)",
                      "add": "add(state, values, times)",
                      "merge": "merge(a, b)",
                      "finish": "finish(state)"}


def has_method(aggregator: Aggregator, name: str) -> bool:
    """Whether `aggregator`'s class defines `name` itself (not `Aggregator`'s stub)."""
    found = getattr(type(aggregator), name, None)
    return callable(found) and found is not getattr(Aggregator, name, None)


def snake_case(aggregator: Aggregator) -> str:
    """The aggregator's class name in snake case (`MaxMinusMin` -> `max_minus_min`)."""
    name = type(aggregator).__name__
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return name.lower().strip("_") or "aggregator"


def aggregator_error(aggregator: Aggregator, method: str, expected: str,
                     found: str) -> WispInputError:
    """A `WispInputError` naming the aggregator's class and the method at fault."""
    return WispInputError(f"`{method}` of aggregator {type(aggregator).__name__} must "
                          f"{expected}, found {found}")


def aggregate(aggregator: Aggregator | type[Aggregator], col: str, *,
              min_count: int | None = None) -> Aggregation:
    """A user's mergeable aggregation (`Aggregator`) of the non-null values of `col`,
    named `<class name in snake case>_<col>` and of Spark type `aggregator.returns`.
    It runs on every window kind, batch and stream, by merging partial states where the
    strategy merges (sliding frames, panes, streams), never re-adding a window's values
    per row. `aggregator` is an instance, or a class built without arguments.

    Checked here: the class defines `zero`, `add`, `merge` and `finish`, `returns` is a
    type name, and `zero()` gives a picklable state; each failure is a `WispInputError`
    naming the aggregator and the method."""
    if isinstance(aggregator, type) and issubclass(aggregator, Aggregator):
        try:
            aggregator = aggregator()
        except Exception as error:
            raise bad_value("aggregator", "an instance of a wisp.Aggregator subclass (its "
                            "class could not be built without arguments)",
                            aggregator) from error
    if not isinstance(aggregator, Aggregator):
        raise bad_value("aggregator", "an instance of a wisp.Aggregator subclass",
                        aggregator)
    for method, shown in AGGREGATOR_METHODS.items():
        if not has_method(aggregator, method):
            raise aggregator_error(aggregator, method, f"be defined as {shown}", "none")
    returns = getattr(aggregator, "returns", None)
    if not isinstance(returns, str) or not returns.strip():
        raise aggregator_error(aggregator, "returns", "be a Spark type as a DDL string "
                               "such as 'double'", repr(returns))
    commutative = getattr(aggregator, "commutative", False)
    if not isinstance(commutative, bool):
        raise aggregator_error(aggregator, "commutative", "be True or False",
                               repr(commutative))
    check_state(aggregator, "zero", _zero(aggregator))
    return Aggregation("aggregate", _column("aggregate", col), returns=returns,
                       aggregator=aggregator, min_count=_min_count(min_count))


def _zero(aggregator: Aggregator) -> Any:
    try:
        return aggregator.zero()
    except Exception as error:
        raise aggregator_error(aggregator, "zero", "return the state of no values",
                               f"{type(error).__name__}: {error}") from error


def check_state(aggregator: Aggregator, method: str, state: Any) -> bytes:
    """The pickled `state` that `method` returned, or a `WispInputError` naming both
    when it cannot be pickled (states travel between executors and in stream state)."""
    try:
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        raise aggregator_error(aggregator, method, "return a picklable state",
                               f"{type(state).__name__} ({type(error).__name__}: "
                               f"{error})") from error


def built_in(fn: str) -> tuple[Definition, Callable[..., Aggregation]] | None:
    """The built-in aggregation a query file names `fn`: its definition and the function
    that makes it (`sum`, `quantile`, ...); None for a name no built-in has. The one
    place, with `DEFINITIONS`, where an aggregation is found by its name."""
    found = DEFINITIONS.get(fn)
    if found is None:
        return None
    make: Callable[..., Aggregation] = globals()[fn]
    return found, make
