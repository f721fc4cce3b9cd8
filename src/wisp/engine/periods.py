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

from ..plan.periods import TicksPlan
from ..runtime.windows.periods import HIDDEN_NEWEST, TickKernel
from ..runtime.windows.running import HIDDEN_TICK
from .columns import col, guarded, whole_input
from .compiler import KeyedKernel, Query, compiles, keyed_kernel
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped,
    output_fields,
)


@keyed_kernel(TicksPlan)
def ticks_kernel(plan: TicksPlan, query: Query) -> KeyedKernel:
    """The tick kernel and its input. On a stream there is no whole input, so no newest
    event time: the watermark bounds each key's tick rows (`runtime.windows.periods`)."""
    events = query.events
    details = plan.ticks
    df = guarded(events, query.observation)
    keys = list(events.key)
    hidden: list[str] = []
    tick_column = unused(HIDDEN_TICK, df.columns)
    newest_column = unused(HIDDEN_NEWEST, df.columns)
    if details.predicate is not None:
        df = df.withColumn(tick_column, query.expression(details.predicate))
        hidden.append(tick_column)
    if (details.calendar is not None and details.emit != "events" and not details.trailing
            and not events.streaming):
        df = df.withColumn(newest_column, whole_input(events.df, F.max(col(events.time.name))))
        hidden.append(newest_column)
    needed = list(dict.fromkeys([*keys, events.time.name, *hidden,
                                 *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = TickKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, calendar=details.calendar, n=details.n,
        partial=details.partial, emit=details.emit, trailing=details.trailing,
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields),
        tick_column=tick_column, newest_column=newest_column)
    return KeyedKernel(df, keys, [events.time.name, *plan.tie_break], needed, kernel, fields)


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
