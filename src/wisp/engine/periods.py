"""Reset (`Since`) and trailing-period (`Trailing`) windows: Spark partitions by key, each
partition is sorted, an Arrow kernel (`runtime.windows.periods.TickKernel`) walks each key's
events with its ticks.

Shape: [the newest event time as a scalar subquery, for calendar tick rows] +
`repartition(key)` + each partition sorted by (key, time, tie-break) + `mapInArrow`.
Predicate ticks are evaluated by Spark as a column next to each row; calendar ticks are
computed on the executors (`wisp.spec.calendar`), never on the driver.

Output bounds: for predicate ticks `window_start`/`window_end` are the times of the
window's first and last events (both inclusive); for calendar ticks the window is
`(window_start, window_end]`: `window_start` is the tick before the window's first
period, `window_end` the row's time (event rows) or the tick (tick rows).

On a stream (`engine/streaming.py`) the same kernel runs per key in Spark's stateful
operator (`ticks_kernel`), without the newest event time: the watermark bounds the tick
rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events
from ..errors import WispUnsupportedError
from ..plan.periods import TicksPlan
from ..runtime.windows.periods import HIDDEN_NEWEST, TickKernel
from ..runtime.windows.running import HIDDEN_TICK
from .columns import col, guarded, whole_input
from .compiler import (
    EXPRESSION_IN_SQL,
    WHOLE_INPUT_IN_SQL,
    KeyedKernel,
    Query,
    TableKernel,
    compiles,
    keyed_kernel,
    table_kernel,
)
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped,
    output_fields,
)


def tick_kernel(plan: TicksPlan, events: Events, hidden: list[str], tick_column: str,
                newest_column: str) -> tuple[list[str], TickKernel, list[T.StructField]]:
    """The tick kernel, the columns it reads (`hidden`: the predicate's and the newest
    time's columns, where the input has them) and its output fields."""
    details = plan.ticks
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *hidden,
                                 *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = TickKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, calendar=details.calendar, n=details.n,
        partial=details.partial, emit=details.emit, trailing=details.trailing,
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields),
        tick_column=tick_column, newest_column=newest_column)
    return needed, kernel, fields


def needs_newest(plan: TicksPlan, events: Events) -> bool:
    """Whether calendar tick rows are bounded by the whole input's newest time (batch
    `Since` over calendar ticks emitting tick rows)."""
    details = plan.ticks
    return (details.calendar is not None and details.emit != "events" and not details.trailing
            and not events.streaming)


@keyed_kernel(TicksPlan)
def ticks_kernel(plan: TicksPlan, query: Query) -> KeyedKernel:
    """The tick kernel and its input. On a stream there is no whole input, so no newest
    event time: the watermark bounds each key's tick rows (`runtime.windows.periods`)."""
    events = query.events
    details = plan.ticks
    df = guarded(events, query.observation)
    hidden: list[str] = []
    tick_column = unused(HIDDEN_TICK, df.columns)
    newest_column = unused(HIDDEN_NEWEST, df.columns)
    if details.predicate is not None:
        df = df.withColumn(tick_column, query.expression(details.predicate))
        hidden.append(tick_column)
    if needs_newest(plan, events):
        df = df.withColumn(newest_column, whole_input(events.df, F.max(col(events.time.name))))
        hidden.append(newest_column)
    needed, kernel, fields = tick_kernel(plan, events, hidden, tick_column, newest_column)
    return KeyedKernel(df, list(events.key), [events.time.name, *plan.tie_break], needed,
                       kernel, fields)


@table_kernel(TicksPlan)
def ticks_table(plan: TicksPlan, events: Events) -> TableKernel:
    """The tick kernel for a table function: refused for a predicate (a Spark
    expression) and where tick rows are bounded by the whole input's newest time."""
    if plan.ticks.predicate is not None:
        raise WispUnsupportedError(EXPRESSION_IN_SQL.format(param="tick"))
    if needs_newest(plan, events):
        raise WispUnsupportedError(WHOLE_INPUT_IN_SQL.format(
            what="Since over calendar ticks emitting tick rows ends them at the newest "
                 "time of all the events"))
    names = list(events.df.schema.names)
    needed, kernel, fields = tick_kernel(plan, events, [], unused(HIDDEN_TICK, names),
                                         unused(HIDDEN_NEWEST, names))
    return TableKernel(list(events.key), [events.time.name, *plan.tie_break], needed, kernel,
                       fields)


@compiles(TicksPlan)
def ticks(plan: TicksPlan, query: Query) -> DataFrame:
    """The Spark plan of `Since` and `Trailing` windows."""
    return mapped(ticks_kernel(plan, query))


def unused(name: str, taken: list[str]) -> str:
    """`name`, suffixed until no column of the input has it."""
    candidate, number = name, 0
    while candidate in taken:
        number += 1
        candidate = f"{name}{number}"
    return candidate
