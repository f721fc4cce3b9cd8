"""Compilers, registered per plan class: each turns one strategy's plan into a Spark plan.

A compiler module registers its function with `@compiles(PlanClass)`; `build.build`
finds it by the plan's class. A compiler reads the plan (plain data) and binds it to
the `Query`: the DataFrames, the user's Spark expressions the plan refers to by
parameter, and the observation that counts rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import types as T

from ..binding import Events, TimeColumn
from ..plan.nodes import Plan, ResolvedAggregation
from ..plan.source import ExprRef
from ..spec.windows import Window
from .columns import col
from .describe import spark_output_type

P = TypeVar("P", bound=Plan)
Compiler = Callable[[Any, "Query"], DataFrame]

_COMPILERS: dict[type[Plan], Compiler] = {}


def compiles(plan_class: type[P]) -> Callable[[Callable[[P, Query], DataFrame]],
                                              Callable[[P, Query], DataFrame]]:
    """Register the decorated function as the compiler of `plan_class`."""
    def register(function: Callable[[P, Query], DataFrame]) -> Callable[[P, Query], DataFrame]:
        _COMPILERS[plan_class] = function
        return function
    return register


def compiler_for(plan: Plan) -> Compiler:
    """The compiler registered for `plan`'s class."""
    try:
        return _COMPILERS[type(plan)]
    except KeyError:
        raise TypeError(f"no compiler is registered for {type(plan).__name__}") from None


@dataclass(frozen=True)
class Query:
    """What a plan is bound to: the events, the window spec (which holds the user's
    expressions), the window's own event tables by parameter, and the observation that
    counts rows under on_null_time="drop"."""

    events: Events
    window: object | None
    observation: Observation
    tables: Mapping[str, Events] = field(default_factory=dict)

    def expression(self, ref: ExprRef) -> Column:
        """The Spark Column the window parameter `ref.param` holds (a column name or a
        Column expression)."""
        assert isinstance(self.window, Window)
        value = self.window.parameters()[ref.param]
        return col(value) if isinstance(value, str) else cast(Column, value)

    def table(self, name: str) -> Events:
        return self.tables[name]

    def output_type(self, resolved: ResolvedAggregation) -> T.DataType:
        """The Spark type of an aggregation's output column."""
        return spark_output_type(resolved, self.events.df.schema)



@dataclass(frozen=True)
class StreamInput:
    """One input of a stream's stateful operator: its rows (in the columns of the
    kernel's input), the time column its watermark reads, and its lateness in ticks."""

    df: DataFrame
    time: TimeColumn
    lateness: int


@dataclass(frozen=True)
class KeyedKernel:
    """A kernel strategy before Spark runs it: the guarded input `df`, the key columns,
    the order within a key (time, then tie-break columns), the columns the kernel reads,
    the kernel (a picklable executor-side object) and the output fields. The batch
    compiler maps it over key-partitioned, sorted partitions (`layout.mapped`); a
    stream drives the same kernel per key in Spark's stateful operator
    (`engine.streaming`)."""

    df: DataFrame
    keys: list[str]
    order: list[str]
    needed: list[str]
    kernel: Any
    fields: list[T.StructField]
    inputs: tuple[StreamInput, ...] = ()
    """On a stream, the inputs whose union is `df` when they are not just the source
    (Dynamic's anchors and events, each with its own watermark; a clock's events with
    the kernel's time column): empty for the source alone."""


KernelBuilder = Callable[[Any, Query], KeyedKernel]
_KERNELS: dict[type[Plan], KernelBuilder] = {}


def keyed_kernel(plan_class: type[P]) -> Callable[[Callable[[P, Query], KeyedKernel]],
                                                  Callable[[P, Query], KeyedKernel]]:
    """Register the decorated function as the kernel builder of `plan_class`."""
    def register(function: Callable[[P, Query], KeyedKernel]
                 ) -> Callable[[P, Query], KeyedKernel]:
        _KERNELS[plan_class] = function
        return function
    return register


def kernel_for(plan: Plan, query: Query) -> KeyedKernel:
    """The kernel of `plan`'s strategy, built for `query`."""
    try:
        builder = _KERNELS[type(plan)]
    except KeyError:
        raise TypeError(f"no kernel builder is registered for {type(plan).__name__}") \
            from None
    return builder(plan, query)


@dataclass(frozen=True)
class TableKernel:
    """A kernel strategy as a table function runs it (`wisp.sql`): no DataFrame, no
    Spark expression, only the kernel and what its input must be. Spark partitions the
    table by `keys` and sorts each key's rows by `order` for it; the table function
    passes the columns `needed` and checks, in Python, what the batch plan checks with
    Spark expressions: a null (or NaN) time, an `end` before its time, a null or NaN
    Delta attribute (`attributes`: name and time kind of each)."""

    keys: list[str]
    order: list[str]
    needed: list[str]
    kernel: Any
    fields: list[T.StructField]
    end: str | None = None
    attributes: tuple[tuple[str, str], ...] = ()
    parameters: tuple[tuple[str, str], ...] = ()
    """Hidden input columns of `needed` that hold a window parameter (by its path, as
    `ExprRef.param`): the table function fills each from the column the parameter
    names, and refuses a parameter that is a Spark expression."""


EXPRESSION_IN_SQL = (
    "`window.{param}` must not be a {{col: ...}} or {{expr: ...}} value in SQL (wisp_window "
    "runs no Spark expression inside the table function), found one; compute the column "
    "in the table first, or run the query with the Python API or wisp run")
"""The refusal of a window parameter that is a Spark column, in a table function."""
WHOLE_INPUT_IN_SQL = (
    "`window` must not need the whole input in SQL ({what}: wisp_window sees one key's "
    "rows at a time), found one; run the query with the Python API or wisp run")
"""The refusal of a window whose batch plan reads a value of the whole input."""


TableKernelBuilder = Callable[[Any, Events], TableKernel]
_TABLE_KERNELS: dict[type[Plan], TableKernelBuilder] = {}


def table_kernel(plan_class: type[P]) -> Callable[[Callable[[P, Events], TableKernel]],
                                                  Callable[[P, Events], TableKernel]]:
    """Register the decorated function as the table-function kernel builder of
    `plan_class`: it builds the kernel from the events' schema and roles alone (their
    `df` may be a `binding.TableSchema`), and raises a `WispUnsupportedError` for a
    plan whose input needs a Spark expression or the whole input."""
    def register(function: Callable[[P, Events], TableKernel]
                 ) -> Callable[[P, Events], TableKernel]:
        _TABLE_KERNELS[plan_class] = function
        return function
    return register


def table_kernel_for(plan: Plan, events: Events) -> TableKernel | None:
    """The table-function kernel of `plan`'s strategy over `events` (None: the strategy
    has none, e.g. a native one)."""
    builder = _TABLE_KERNELS.get(type(plan))
    return None if builder is None else builder(plan, events)


def has_table_kernel(plan: Plan) -> bool:
    """Whether `plan`'s strategy has a table-function kernel builder."""
    return type(plan) in _TABLE_KERNELS
