"""Hopping windows as panes: Spark pre-aggregates each key's events per pane with its
own hash aggregation, then the interval kernel (`runtime/windows/hopping.py`) merges the partial
results of the panes each window holds.

Shape: `repartition(key)` (the one shuffle) + `groupBy(key, pane)` (partial counts,
sums and extremes; Spark keeps the key partitioning) + a sort of each partition by
(key, pane) + `mapInArrow(kernel)` + one projection (a mean is sum / count).

Point events: the panes are `[align + k*width, align + (k+1)*width)` with `width` =
gcd(size, hop), so every window is a whole number of panes and a pane start lies in
exactly the windows its events lie in: the kernel, seeing each pane as one point event
at its start, finds the same windows as it would from the events themselves
(output="windows" and output="changes" alike).

Interval events `[time, end)`: an event belongs to the windows from the first one
whose end is after its start to the last one that begins at or before its last tick
(`max(end, time + 1) - 1`). Both depend only on which cell of the hop grid each falls
in (the start's cells are phased at `align + size`, the last tick's at `align`), so the
events of a key with the same two cells, and the same openness, belong to the same
windows: a "pane" is such a class. Its partials go to the kernel as one interval event,
`[min(time), max(end))`, which lies in the same two cells (a null end stays null).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events
from ..plan.intervals import HoppingWindows, PanesPlan
from ..plan.nodes import ResolvedAggregation
from ..runtime.aggregates.aggregate import AggregateJob
from ..runtime.codecs.arrays import tick_range_message
from ..runtime.windows.hopping import HORIZON_END, HORIZON_START
from ..runtime.windows.interval_kernels import interval_kernel
from ..spec import aggregates as agg
from ..spec.aggregates import Aggregation
from .columns import col, data_error, grid_floor, interval_guarded, or_fail
from .compiler import Query, compiles
from .intervals import needs_horizon, with_horizon
from .layout import arrow_schema, arrow_type, bound_fields, mapped_by_key
from .native import time_from_ticks, time_ticks

PANE = "__wisp_pane"
START_CELL, LAST_CELL, OPEN = "__wisp_start_cell", "__wisp_last_cell", "__wisp_open"
EXACT = T.DecimalType(20, 0)
"""Integer values are summed per pane as decimals: a pane's sum never overflows, and
the kernel sums the partials exactly (a window's sum that leaves 64 bits fails)."""


@dataclass(frozen=True)
class Partial:
    """One per-pane partial result: Spark's aggregate per pane, and how the kernel
    merges the partials of a window's panes (`merge`: the constructor of the
    aggregation that merges them, over the partial's column: `sum` for counts and
    sums, `min`, `max`)."""

    name: str
    per_pane: Column
    merge: Callable[[str], Aggregation]
    value_class: str
    merged_type: T.DataType

    @property
    def job(self) -> AggregateJob:
        return AggregateJob(self.merge(self.name).definition, self.name, self.value_class,
                            arrow_type(self.merged_type), None)


PartialOf = Callable[[str, ResolvedAggregation, set[str], T.DataType], Partial]
"""A partial kind: its `Partial` of an aggregation's input column, given its hidden
name, the names taken and the aggregation's output type."""


def _value(r: ResolvedAggregation) -> Column:
    return col(r.aggregation.col) if r.aggregation.col is not None else F.lit(1)


def _count_partial(name: str, r: ResolvedAggregation, taken: set[str],
                   output_type: T.DataType) -> Partial:
    return Partial(name, F.count(_value(r)), agg.sum, "integer", T.LongType())


def _sum_partial(name: str, r: ResolvedAggregation, taken: set[str],
                 output_type: T.DataType) -> Partial:
    """A sum keeps its column's name where no key, time or bound column has it, so
    that an overflowing sum is reported as `sum(column)`."""
    column = r.aggregation.col
    if column is not None and column not in taken:
        name = column
    if r.value_class == "integer":
        return Partial(name, F.sum(_value(r).cast(EXACT)), agg.sum, "decimal", T.LongType())
    return Partial(name, F.sum(_value(r)), agg.sum, "float", T.DoubleType())


def _extreme_partial(merge: Callable[[str], Aggregation],
                     per_pane: Callable[[Column], Column], name: str,
                     r: ResolvedAggregation, taken: set[str],
                     output_type: T.DataType) -> Partial:
    return Partial(name, per_pane(_value(r)), merge, r.value_class, output_type)


PARTIALS: dict[str, PartialOf] = {
    "count": _count_partial,
    "sum": _sum_partial,
    "min": partial(_extreme_partial, agg.min, F.min),
    "max": partial(_extreme_partial, agg.max, F.max),
}
"""The partial kinds, each named by the algebra whose partial it is: Spark's aggregate
per pane and how the kernel merges a window's panes (counts by summing them)."""


Merged = Callable[[str, ResolvedAggregation], Column]
"""The merged partial of a kind (`PARTIALS`) of an aggregation's input column."""


def _mean_result(merged: Merged, r: ResolvedAggregation) -> Column:
    count = merged("count", r)
    return F.when(count > 0, merged("sum", r).cast("double") / count)


RESULTS: dict[str, Callable[[Merged, ResolvedAggregation], Column]] = {
    "count": lambda merged, r: merged("count", r),
    "sum": lambda merged, r: merged("sum", r),
    "mean": _mean_result,
    "min": lambda merged, r: merged("min", r),
    "max": lambda merged, r: merged("max", r),
}
"""Each aggregation with pane partials (`Definition.panes`), by its algebra: its result
from the merged partials (a mean is sum / count)."""


def _partials(plan: PanesPlan, query: Query) -> tuple[list[Partial], list[Column]]:
    """The partials every aggregation needs (each (kind, column) once), and each
    aggregation's result as a projection of the merged partials."""
    partials: dict[tuple[str, str | None], Partial] = {}
    events = query.events
    taken = {*events.key, events.time.name, "window_start", "window_end", "time",
             *([events.end, HORIZON_START, HORIZON_END] if events.end else [])}

    def merged(kind: str, r: ResolvedAggregation) -> Column:
        key = (kind, r.aggregation.col)
        if key not in partials:
            partials[key] = PARTIALS[kind](f"__wisp_p{len(partials)}", r, taken,
                                           query.output_type(r))
        return col(partials[key].name)

    results = []
    for r in plan.aggregations:
        result = RESULTS[r.aggregation.definition.algebra](merged, r)
        results.append(result.cast(query.output_type(r)).alias(r.name))
    return list(partials.values()), results


@compiles(PanesPlan)
def panes(plan: PanesPlan, query: Query) -> DataFrame:
    """Build the Spark plan of the panes strategy."""
    events = query.events
    window = plan.windows
    keys = [col(k) for k in events.key]
    partials, results = _partials(plan, query)
    # partitioned by key first: the aggregation by (key, pane) and the kernel's sort
    # then share one shuffle (pre-aggregating before a shuffle by (key, pane) would add
    # a second one, which costs more than it saves when panes hold about one event)
    source = interval_guarded(events, query.observation)
    source = source.repartition(*keys) if keys else source.repartition(1)
    per_pane = [p.per_pane.alias(p.name) for p in partials]
    if events.end is None:
        # a pane starting below the tick range starts windows that do too
        pane = or_fail(grid_floor(time_ticks(events.time), window.align % plan.width,
                                  plan.width), data_error(tick_range_message(events.time.name)))
        grouped = source.groupBy(*keys, pane.alias(PANE)).agg(*per_pane)
        bounds = [time_from_ticks(col(PANE), events.time).alias(events.time.name)]
        order = [events.time.name]
    else:
        grouped = source.groupBy(*keys, *lifetime_class(events, window)).agg(
            *representative(events), *per_pane)
        bounds = [col(events.time.name), col(events.end)]
        if needs_horizon(events, window, per_window=False):
            grouped = with_horizon(grouped, events)
            bounds += [col(HORIZON_START), col(HORIZON_END)]
        order = [events.time.name, events.end]
    merged_input = grouped.select(*keys, *bounds, *[col(p.name) for p in partials])
    fields = bound_fields(events) + [T.StructField(p.name, p.merged_type)
                                     for p in partials]
    kernel = interval_kernel(
        keys=tuple(events.key), time=events.time.name, end=events.end,
        time_kind=events.time.kind, time_scale=events.time.scale, window=window,
        aggregates=tuple(p.job for p in partials), schema=arrow_schema(fields))
    merged_windows = mapped_by_key(merged_input, events.key, order,
                                   merged_input.columns, kernel, fields)
    return merged_windows.select(*keys, col("window_start"), col("window_end"), col("time"),
                                 *results)


def lifetime_class(events: Events, window: HoppingWindows) -> list[Column]:
    """The grouping columns of interval events that belong to the same windows: the cell
    of the hop grid (phase `align + size`) holding the start, the cell (phase `align`)
    holding the last tick, and whether the end is open. A cell is named by its grid
    point (`grid_floor`): the one cell whose grid point is below the tick range is null
    instead of failing, and no other cell is null."""
    assert events.end is not None
    start = time_ticks(events.time)
    end = time_ticks(replace(events.time, name=events.end))
    last = F.when(end > start, end - F.lit(1)).otherwise(start)
    return [grid_floor(start, (window.size + window.align) % window.hop, window.hop)
            .alias(START_CELL),
            grid_floor(last, window.align % window.hop, window.hop).alias(LAST_CELL),
            end.isNull().alias(OPEN)]


def representative(events: Events) -> list[Column]:
    """A class's interval: the earliest start and the latest end of its events (null
    for an open class)."""
    assert events.end is not None
    return [F.min(col(events.time.name)).alias(events.time.name),
            F.max(col(events.end)).alias(events.end)]
