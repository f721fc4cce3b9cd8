"""Running aggregates kept as accumulators (`plan.periods.AccumulatorsPlan`): the
kernel (`runtime.windows.running.RunningKernel`) of the cumulative window and of
`Since(predicate)` on a stream, and in batch where every aggregation is held by
accumulators, where carrying a key's rows would grow with its history. The predicate
is evaluated by Spark as a column next to each row."""

from __future__ import annotations

from pyspark.sql import DataFrame

from ..plan.periods import AccumulatorsPlan
from ..runtime.windows.running import HIDDEN_TICK, RunningKernel
from .columns import guarded
from .compiler import KeyedKernel, Query, compiles, keyed_kernel
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, mapped, output_fields
from .periods import unused


@keyed_kernel(AccumulatorsPlan)
def accumulators_kernel(plan: AccumulatorsPlan, query: Query) -> KeyedKernel:
    """The accumulator kernel and its input."""
    events = query.events
    df = guarded(events, query.observation)
    keys = list(events.key)
    tick_column = unused(HIDDEN_TICK, df.columns)
    hidden: list[str] = []
    if plan.ticks is not None and plan.ticks.predicate is not None:
        df = df.withColumn(tick_column, query.expression(plan.ticks.predicate))
        hidden.append(tick_column)
    needed = list(dict.fromkeys([*keys, events.time.name, *hidden,
                                 *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = RunningKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, aggregates=aggregate_jobs(plan, events),
        schema=arrow_schema(fields), since=plan.ticks is not None,
        emit="events" if plan.ticks is None else plan.ticks.emit, tick_column=tick_column)
    return KeyedKernel(df, keys, [events.time.name, *plan.tie_break], needed, kernel, fields)


@compiles(AccumulatorsPlan)
def accumulators(plan: AccumulatorsPlan, query: Query) -> DataFrame:
    """The Spark plan of running aggregates kept as accumulators (batch)."""
    return mapped(accumulators_kernel(plan, query))
