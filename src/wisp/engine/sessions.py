"""Sessions: `repartition(key)` + each partition sorted by (key, time, tie-break)
(`layout.mapped_by_key`) + `mapInArrow(kernel)`; the kernel (`runtime.windows.sessions`) finds
each key's sessions (kernels/sessions.py) and aggregates over all of them at once."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..binding import Events
from ..errors import WispUnsupportedError
from ..plan.sessions import SessionsPlan
from ..runtime.windows.sessions import SessionKernel
from .columns import col, fail_where, interval_guarded, ntz_micros
from .compiler import (
    EXPRESSION_IN_SQL,
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

END = "__wisp_end"
GAP = "__wisp_gap"


def gap_ticks(gap: Column, events: Events) -> Column:
    """A per-row gap in ticks of the time column: an interval as the microseconds from
    the event's time to its time + the interval (Spark's own addition, as
    `session_window` does it: exact for day-time intervals; a calendar interval's days
    and months are the session time zone's), a number as itself."""
    if events.time.kind == "timestamp":
        time = col(events.time.name)
        return F.timestamp_diff("MICROSECOND", time, time + gap)
    if events.time.kind == "timestamp_ntz":  # wall clocks: no zone (timestamp_diff would
        # cast both through the session's, moving a wall time a daylight-saving change skips)
        time = col(events.time.name)
        return ntz_micros(time + gap) - ntz_micros(time)
    if events.time.kind == "float":
        return gap.cast("double")
    return gap.cast("long")


def gap_message(events: Events, shown: str) -> Column:
    """The error of a row whose gap is null, zero or negative, showing its time."""
    return F.concat(
        F.lit(f"WispError: `gap` must be positive in every row (a per-row gap: {shown}), "
              "found a null, zero or negative gap at time "),
        col(events.time.name).cast("string"))


def session_kernel(plan: SessionsPlan, events: Events, end: str | None,
                   gap_column: str | None) -> SessionKernel:
    """The session kernel, reading the end time from the column `end` and the per-row
    gap in ticks from `gap_column` (None: none)."""
    fields = output_fields(events, plan.aggregations)
    return SessionKernel(
        keys=tuple(events.key), time=events.time.name, end=end,
        time_kind=events.time.kind, time_scale=events.time.scale, gap=plan.gap,
        max_duration=plan.max_duration, gap_column=gap_column,
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields))


@keyed_kernel(SessionsPlan)
def sessions_kernel(plan: SessionsPlan, query: Query) -> KeyedKernel:
    """The session kernel and its input."""
    events = query.events
    keys = list(events.key)
    df = interval_guarded(events, query.observation)
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan)]))
    if events.end is not None:
        df = df.withColumn(END, col(events.end))
        needed.append(END)
    if plan.gap_column is not None:
        gap = gap_ticks(query.expression(plan.gap_column), events)
        df = df.withColumn(GAP, gap)
        window_gap = getattr(query.window, "gap", None)
        shown = window_gap if isinstance(window_gap, str) else str(window_gap)
        df = fail_where(df, col(GAP).isNull() | (col(GAP) <= F.lit(0)),
                        gap_message(events, shown))
        needed.append(GAP)
    kernel = session_kernel(plan, events, None if events.end is None else END,
                            None if plan.gap_column is None else GAP)
    return KeyedKernel(df, keys, [events.time.name, *plan.tie_break], needed, kernel,
                       output_fields(events, plan.aggregations))


@table_kernel(SessionsPlan)
def sessions_table(plan: SessionsPlan, events: Events) -> TableKernel:
    """The session kernel for a table function, reading the end column under its own
    name; a per-row gap (a Spark expression) is refused."""
    if plan.gap_column is not None:
        raise WispUnsupportedError(EXPRESSION_IN_SQL.format(param="gap"))
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan),
                                 *([events.end] if events.end else [])]))
    return TableKernel(keys, [events.time.name, *plan.tie_break], needed,
                       session_kernel(plan, events, events.end, None),
                       output_fields(events, plan.aggregations), end=events.end)


@compiles(SessionsPlan)
def sessions(plan: SessionsPlan, query: Query) -> DataFrame:
    """Build the Spark plan of session windows."""
    return mapped(sessions_kernel(plan, query))
