"""Sessions: `repartition(key)` + each partition sorted by (key, time, tie-break)
(`layout.mapped_by_key`) + `mapInArrow(kernel)`; the kernel (`runtime.sessions`) finds
each key's sessions (kernels/sessions.py) and aggregates over all of them at once."""

from __future__ import annotations

from pyspark.sql import DataFrame

from ..binding import Events
from ..plan.sessions import SessionsPlan
from ..runtime.sessions import SessionKernel
from .columns import col, interval_guarded
from .compiler import KeyedKernel, Query, compiles, keyed_kernel
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped,
    output_fields,
)

END = "__wisp_end"


def end_message(events: Events) -> str:
    return (f"WispError: `end` column {events.end!r} must not be before `time` column "
            f"{events.time.name!r}, found an event whose end is before its time")


@keyed_kernel(SessionsPlan)
def sessions_kernel(plan: SessionsPlan, query: Query) -> KeyedKernel:
    """The session kernel and its input."""
    events = query.events
    keys = list(events.key)
    df = interval_guarded(events, query.observation, end_message(events))
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan)]))
    if events.end is not None:
        df = df.withColumn(END, col(events.end))
        needed.append(END)
    fields = output_fields(events, plan.aggregations)
    kernel = SessionKernel(
        keys=tuple(keys), time=events.time.name,
        end=None if events.end is None else END, time_kind=events.time.kind,
        time_scale=events.time.scale, gap=plan.gap, max_duration=plan.max_duration,
        aggregates=aggregate_jobs(plan, events),
        schema=arrow_schema(fields))
    return KeyedKernel(df, keys, [events.time.name, *plan.tie_break], needed, kernel, fields)


@compiles(SessionsPlan)
def sessions(plan: SessionsPlan, query: Query) -> DataFrame:
    """Build the Spark plan of session windows."""
    return mapped(sessions_kernel(plan, query))
