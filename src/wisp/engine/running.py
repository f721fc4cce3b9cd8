"""Running aggregates kept as accumulators (`plan.periods.AccumulatorsPlan`): the
kernel (`runtime.windows.running.RunningKernel`) of the cumulative window and of
`Since(predicate)` on a stream, and in batch where every aggregation is held by
accumulators, where carrying a key's rows would grow with its history. The predicate
is evaluated by Spark as a column next to each row."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ..binding import Events
from ..errors import WispUnsupportedError
from ..plan.periods import AccumulatorsPlan
from ..runtime.windows.running import HIDDEN_TICK, RunningKernel
from .columns import guarded
from .compiler import (
    EXPRESSION_IN_SQL,
    KeyedKernel,
    Query,
    TableKernel,
    compiles,
    keyed_kernel,
    table_kernel,
)
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, mapped, output_fields
from .periods import unused


def running_kernel(plan: AccumulatorsPlan, events: Events, tick_column: str,
                   hidden: list[str]) -> tuple[list[str], RunningKernel, list[T.StructField]]:
    """The accumulator kernel, the columns it reads (`hidden`: the predicate's column,
    named `tick_column`, when there is one) and its output fields."""
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *hidden,
                                 *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = RunningKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, aggregates=aggregate_jobs(plan, events),
        schema=arrow_schema(fields), since=plan.ticks is not None,
        emit="events" if plan.ticks is None else plan.ticks.emit, tick_column=tick_column)
    return needed, kernel, fields


@keyed_kernel(AccumulatorsPlan)
def accumulators_kernel(plan: AccumulatorsPlan, query: Query) -> KeyedKernel:
    """The accumulator kernel and its input."""
    events = query.events
    df = guarded(events, query.observation)
    tick_column = unused(HIDDEN_TICK, df.columns)
    hidden: list[str] = []
    if plan.ticks is not None and plan.ticks.predicate is not None:
        df = df.withColumn(tick_column, query.expression(plan.ticks.predicate))
        hidden.append(tick_column)
    needed, kernel, fields = running_kernel(plan, events, tick_column, hidden)
    return KeyedKernel(df, list(events.key), [events.time.name, *plan.tie_break], needed,
                       kernel, fields)


@table_kernel(AccumulatorsPlan)
def accumulators_table(plan: AccumulatorsPlan, events: Events) -> TableKernel:
    """The accumulator kernel of the cumulative window for a table function (a
    `Since(predicate)` needs its predicate evaluated by Spark: refused)."""
    if plan.ticks is not None and plan.ticks.predicate is not None:
        raise WispUnsupportedError(EXPRESSION_IN_SQL.format(param="tick"))
    needed, kernel, fields = running_kernel(
        plan, events, unused(HIDDEN_TICK, list(events.df.schema.names)), [])
    return TableKernel(list(events.key), [events.time.name, *plan.tie_break], needed, kernel,
                       fields)


@compiles(AccumulatorsPlan)
def accumulators(plan: AccumulatorsPlan, query: Query) -> DataFrame:
    """The Spark plan of running aggregates kept as accumulators (batch)."""
    return mapped(accumulators_kernel(plan, query))
