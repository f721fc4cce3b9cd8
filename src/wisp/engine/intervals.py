"""Hopping, tumbling, snapshot and count-by-start-time windows over point and interval
events: one Arrow kernel per key (`runtime/windows/intervals.py`, one subclass per window kind,
picked by `runtime.windows.interval_kernels.interval_kernel`).

Shape: `repartition(key)` + each partition sorted by (key, time, tie-break) +
`mapInArrow(kernel)`, as the frames strategy. The kernel groups windows whose member
sets are equal and aggregates each member set once, so no Spark row and no kernel row is
made per (event, window) pair.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events
from ..errors import WispUnsupportedError
from ..plan.intervals import HoppingWindows, IntervalsPlan, IntervalWindow, StreamPanesPlan
from ..runtime.aggregates.partials import partial_of
from ..runtime.streaming.panes import PaneKernel
from ..runtime.windows.hopping import HORIZON_END, HORIZON_START
from ..runtime.windows.interval_kernels import interval_kernel
from .columns import col, interval_guarded, whole_input
from .compiler import (
    WHOLE_INPUT_IN_SQL,
    KeyedKernel,
    Query,
    TableKernel,
    compiles,
    keyed_kernel,
    table_kernel,
)
from .layout import aggregate_jobs, arrow_schema, mapped, output_fields


def needs_horizon(events: Events, window: IntervalWindow, per_window: bool) -> bool:
    """Hopping windows over interval events find where only open-ended events remain for
    output="windows" (to bound the output) and for per-window groups; not where the
    schema says the end column is never null (no event is open-ended, and without one
    the horizon changes nothing), which saves its pass over the whole input."""
    return (events.end is not None and isinstance(window, HoppingWindows)
            and (window.output == "windows" or per_window)
            and events.df.schema[events.end].nullable)


def with_horizon(df: DataFrame, events: Events) -> DataFrame:
    """`df` with the newest start and the newest end of all the events in every row
    (`HORIZON_START`, `HORIZON_END`), from one scalar subquery (`whole_input`)."""
    assert events.end is not None
    newest = whole_input(events.df, F.struct(
        F.max(col(events.time.name)).alias(HORIZON_START),
        F.max(col(events.end)).alias(HORIZON_END)))
    return df.withColumns({HORIZON_START: newest.getField(HORIZON_START),
                           HORIZON_END: newest.getField(HORIZON_END)})


def intervals_parts(plan: IntervalsPlan, events: Events, horizon: bool
                    ) -> tuple[list[str], Any, list[T.StructField]]:
    """The interval-windows kernel, the columns it reads (with the newest start and end
    of the whole input where `horizon`) and its output fields."""
    keys = list(events.key)
    needed = list(dict.fromkeys(
        [*keys, events.time.name, *([events.end] if events.end else []),
         *[c for r in plan.aggregations for c in r.aggregation.columns]]))
    if horizon:
        needed += [HORIZON_START, HORIZON_END]
    fields = output_fields(events, plan.aggregations)
    kernel = interval_kernel(
        keys=tuple(keys), time=events.time.name, end=events.end, time_kind=events.time.kind,
        time_scale=events.time.scale, window=plan.windows,
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields))
    return needed, kernel, fields


def horizon_needed(plan: IntervalsPlan, events: Events) -> bool:
    """Whether the batch plan gives each row the whole input's newest start and end
    (`needs_horizon`; a stream never writes the shared row)."""
    return not events.streaming and needs_horizon(
        events, plan.windows, any(r.aggregation.lifetimes for r in plan.aggregations))


@keyed_kernel(IntervalsPlan)
def intervals_kernel(plan: IntervalsPlan, query: Query) -> KeyedKernel:
    """The interval-windows kernel and its input."""
    events = query.events
    df = interval_guarded(events, query.observation)
    horizon = horizon_needed(plan, events)
    if horizon:
        df = with_horizon(df, events)
    needed, kernel, fields = intervals_parts(plan, events, horizon)
    return KeyedKernel(df, list(events.key), [events.time.name, *plan.tie_break], needed,
                       kernel, fields)


@table_kernel(IntervalsPlan)
def intervals_table(plan: IntervalsPlan, events: Events) -> TableKernel:
    """The interval-windows kernel for a table function; refused where the batch plan
    reads the whole input's newest start and end (`Hopping` over interval events whose
    end column may be null)."""
    if horizon_needed(plan, events):
        raise WispUnsupportedError(WHOLE_INPUT_IN_SQL.format(
            what="Hopping over interval events whose end column may be null bounds its "
                 "windows by the newest start and end of all the events"))
    needed, kernel, fields = intervals_parts(plan, events, False)
    return TableKernel(list(events.key), [events.time.name, *plan.tie_break], needed, kernel,
                       fields, end=events.end)


@keyed_kernel(StreamPanesPlan)
def panes_kernel(plan: StreamPanesPlan, query: Query) -> KeyedKernel:
    """The pane kernel of tumbling and hopping windows over point events on a stream,
    and its input: the tie-break columns too where an aggregation picks a row by window
    order (its partial keeps them), not otherwise."""
    events = query.events
    keys = list(events.key)
    jobs = aggregate_jobs(plan, events)
    ordered = any(job.column is not None and partial_of(job).ordered for job in jobs)
    order = tuple(plan.tie_break) if ordered else ()
    read = [c for r in plan.aggregations for c in r.aggregation.columns]
    needed = list(dict.fromkeys([*keys, events.time.name, *read, *order]))
    fields = output_fields(events, plan.aggregations)
    schema = events.df.schema
    kernel = PaneKernel(keys=tuple(keys), time=events.time.name,
                        time_kind=events.time.kind, time_scale=events.time.scale,
                        window=plan.windows, aggregates=jobs,
                        schema=arrow_schema(fields),
                        inputs=arrow_schema([schema[c] for c in dict.fromkeys(
                            [*read, *order])]), order=order)
    df = interval_guarded(events, query.observation)  # rows come in any order
    return KeyedKernel(df, keys, [events.time.name], needed, kernel, fields)


@compiles(IntervalsPlan)
def intervals(plan: IntervalsPlan, query: Query) -> DataFrame:
    """Build the Spark plan of the interval-windows strategy."""
    return mapped(intervals_kernel(plan, query))
