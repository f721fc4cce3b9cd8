"""Catalyst-only strategies: Spark's own window operator where it is already cheap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from ..binding import Events, TimeColumn
from ..plan.frames import NativeFramesPlan, RunningPlan
from ..plan.intervals import BucketsPlan
from ..plan.nodes import ResolvedAggregation
from ..plan.periods import PeriodsPlan
from ..plan.policies import BatchesPlan
from ..runtime.codecs.arrays import DAY, tick_range_message
from ..spec.calendar import CALENDAR_MAX_US, CALENDAR_MIN_US, OUTSIDE_YEARS
from .columns import (
    col,
    data_error,
    fail_where,
    grid_floor,
    guarded,
    ntz_from_micros,
    ntz_micros,
    or_fail,
    output_time_type,
    whole_input,
)
from .compiler import Query, compiles

BUCKET = "__wisp_window_start"
BATCH = "__wisp_batch"
TICK = "__wisp_tick"
NEXT = "__wisp_next_tick"
FIRST = "__wisp_first_time"
LAST = "__wisp_last_time"
BEFORE = "__wisp_time_before"
AFTER = "__wisp_time_after"


@dataclass(frozen=True)
class NativeForm:
    """Spark's own form of an aggregation: `spark` over its value column. `zero`: its
    value over no non-null input is 0, not null (counts, sums); `fill_zero`: Spark's
    aggregate is null there (a sum), so the result fills in the 0."""

    spark: Callable[[Column], Column]
    zero: bool = False
    fill_zero: bool = False


NATIVE_FORMS: dict[str, NativeForm] = {
    "count": NativeForm(F.count, zero=True),
    "sum": NativeForm(F.sum, zero=True, fill_zero=True),
    "mean": NativeForm(F.avg),
    "min": NativeForm(F.min),
    "max": NativeForm(F.max),
    "first": NativeForm(lambda c: F.first(c, ignorenulls=True)),
    "last": NativeForm(lambda c: F.last(c, ignorenulls=True)),
    "stddev": NativeForm(F.stddev_samp),
    "variance": NativeForm(F.var_samp),
    "collect": NativeForm(F.collect_list),
}
"""Spark's own form of each aggregation the planner sends to a native strategy, by its
algebra (`Definition.algebra`)."""


def native_form(resolved: ResolvedAggregation) -> NativeForm:
    """The aggregation's `NativeForm` (the planner never sends others here)."""
    found = NATIVE_FORMS.get(resolved.aggregation.definition.algebra)
    if found is None:
        raise AssertionError(f"no native form for {resolved.aggregation.label}")
    return found


def _aggregate(resolved: ResolvedAggregation, frame: WindowSpec | None, query: Query) -> Column:
    """The aggregation as Spark's own, over `frame` (None: a grouped aggregate). A sum
    over no non-null value is 0, as wisp's sums are."""
    agg = resolved.aggregation
    value = col(agg.col) if agg.col is not None else F.lit(1)
    form = native_form(resolved)
    expr = form.spark(value)
    if frame is not None:
        expr = expr.over(frame)
    output_type = query.output_type(resolved)
    if form.fill_zero:
        expr = F.coalesce(expr, F.lit(0).cast(output_type))
    return expr.cast(output_type).alias(resolved.name)


def _over_events(df: DataFrame, events: Events, windowed: dict[str, Column],
                 outputs: list[Column]) -> DataFrame:
    """`windowed` (window expressions, by hidden name) computed next to the key and time
    columns alone, then `outputs` over those. In one select, Spark would compute every
    plain output expression (even `time AS time`) below its window operator, and the
    copy of the time column would go through the shuffle and the sort."""
    keys = [col(k) for k in events.key]
    computed = df.select(*keys, col(events.time.name),
                         *[expr.alias(name) for name, expr in windowed.items()])
    return computed.select(*outputs)


def _hidden(index: int) -> str:
    return f"__wisp_value_{index}"


@compiles(RunningPlan)
def running(plan: RunningPlan, query: Query) -> DataFrame:
    """Cumulative aggregation with a ROWS UNBOUNDED PRECEDING frame ordered by time and
    the tie-break columns: one output per input row."""
    events = query.events
    df = guarded(events, query.observation)
    time = col(events.time.name)
    ordering = [time.asc_nulls_first()] + [col(c).asc_nulls_first() for c in plan.tie_break]
    spec = Window.partitionBy(*[col(k) for k in events.key]) if events.key else Window
    frame = spec.orderBy(*ordering).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    time_type = output_time_type(events.time)
    windowed = {FIRST: F.first(time).over(frame),
                **{_hidden(i): _aggregate(r, frame, query)
                   for i, r in enumerate(plan.aggregations)}}
    return _over_events(df, events, windowed, [
        *[col(k) for k in events.key],
        col(FIRST).cast(time_type).alias("window_start"),
        time.cast(time_type).alias("window_end"),
        time.cast(time_type).alias("time"),
        *[col(_hidden(i)).alias(r.name) for i, r in enumerate(plan.aggregations)],
    ])


@compiles(NativeFramesPlan)
def frames(plan: NativeFramesPlan, query: Query) -> DataFrame:
    """A narrow `Rows` window that contains its anchor (`first <= 0 <= last`) with
    Spark's own sliding ROWS frame, ordered by time and the tie-break columns: one output
    per anchor (only complete windows unless partial). `window_start`/`window_end` are
    the times of the frame's first and last events: the time `-first` rows back (or the
    key's first time when the frame is clipped) and `last` rows ahead (or the key's last
    time)."""
    events = query.events
    frame = plan.frame
    assert frame.first <= 0 <= frame.last
    df = guarded(events, query.observation)
    time = col(events.time.name)
    ordering = [time.asc_nulls_first()] + [col(c).asc_nulls_first() for c in plan.tie_break]
    spec = (Window.partitionBy(*[col(k) for k in events.key]) if events.key else Window
            ).orderBy(*ordering)
    sliding = spec.rowsBetween(frame.first, frame.last)
    time_type = output_time_type(events.time)
    windowed: dict[str, Column] = {}
    if frame.first < 0:
        windowed[BEFORE] = F.lag(time, -frame.first).over(spec)
    if frame.last > 0:
        windowed[AFTER] = F.lead(time, frame.last).over(spec)
    # a clipped frame (partial only; complete frames never are) ends at the key's first
    # time: a running frame (O(1) a row), cheaper than a whole one; or at its last
    clip_start = frame.partial and frame.first < 0
    clip_end = frame.partial and frame.last > 0
    if clip_start:
        windowed[FIRST] = F.first(time).over(
            spec.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    if clip_end:
        windowed[LAST] = F.max(time).over(
            spec.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))
    windowed.update({_hidden(i): _aggregate(r, sliding, query)
                     for i, r in enumerate(plan.aggregations)})
    before = col(BEFORE) if frame.first < 0 else time
    after = col(AFTER) if frame.last > 0 else time
    start = F.coalesce(before, col(FIRST)) if clip_start else before
    end = F.coalesce(after, col(LAST)) if clip_end else after
    out = _over_events(df, events, windowed, [
        *[col(k) for k in events.key],
        start.cast(time_type).alias("window_start"),
        end.cast(time_type).alias("window_end"),
        time.cast(time_type).alias("time"),
        *[col(_hidden(i)).alias(r.name) for i, r in enumerate(plan.aggregations)],
        *([] if frame.partial else [before.isNotNull().alias("__wisp_before"),
                                     after.isNotNull().alias("__wisp_after")]),
    ])
    if frame.partial:
        return out
    return out.filter(col("__wisp_before") & col("__wisp_after")).drop(
        "__wisp_before", "__wisp_after")


@compiles(BatchesPlan)
def batches(plan: BatchesPlan, query: Query) -> DataFrame:
    """`Tumbling(Count(n))` over tuples arriving in time order (ties by the tie-break
    columns): each key's tuples numbered by row_number, then one hash aggregation by
    (key, (number - 1) div n), on the partitioning the numbering left (no second
    shuffle). `window_start` = the batch's first time, `window_end` = `time` = its last
    (both inclusive; the n-th tuple fires the window); a last batch of fewer than n
    tuples is kept only when `partial`."""
    events = query.events
    n = plan.n
    keys = [col(k) for k in events.key]
    time = col(events.time.name)
    ordering = [time.asc_nulls_first()] + [col(c).asc_nulls_first() for c in plan.tie_break]
    arrival = (Window.partitionBy(*keys) if keys else Window).orderBy(*ordering)
    number = F.row_number().over(arrival) - F.lit(1)
    numbered = guarded(events, query.observation).withColumn(BATCH, F.floor(number / F.lit(n)))
    grouped = numbered.groupBy(*keys, col(BATCH)).agg(
        F.min(time).alias("__wisp_first"), F.max(time).alias("__wisp_last"),
        F.count(F.lit(1)).alias("__wisp_tuples"),
        *[_aggregate(r, None, query) for r in plan.aggregations])
    if not plan.partial:
        grouped = grouped.filter(col("__wisp_tuples") == F.lit(n))
    time_type = output_time_type(events.time)
    last = col("__wisp_last").cast(time_type)
    return grouped.select(*keys, col("__wisp_first").cast(time_type).alias("window_start"),
                          last.alias("window_end"), last.alias("time"),
                          *[col(r.name) for r in plan.aggregations])


def time_ticks(time: TimeColumn) -> Column:
    """The time column as ticks: microseconds (of the wall clock for timestamp_ntz, in
    any session time zone), days for date time, or the integer."""
    return kind_ticks(col(time.name), time.kind)


def kind_ticks(value: Column, kind: str) -> Column:
    """A column holding a time of `kind` as long ticks (see `time_ticks`)."""
    if kind == "timestamp":
        return F.unix_micros(value)
    if kind == "timestamp_ntz":
        return ntz_micros(value)
    if kind == "date":
        return F.unix_date(value).cast("long")
    return value.cast("long")


def time_from_ticks(ticks: Column, time: TimeColumn) -> Column:
    """Ticks (µs; days for date time) as a value of the time column's type, whatever
    the session's time zone (timestamp_ntz: `ntz_from_micros`)."""
    if time.kind == "timestamp":
        return F.timestamp_micros(ticks)
    if time.kind == "timestamp_ntz":
        return ntz_from_micros(ticks)
    if time.kind == "date":
        return F.date_from_unix_date(ticks.cast("int"))
    return ticks


@compiles(BucketsPlan)
def buckets(plan: BucketsPlan, query: Query) -> DataFrame:
    """Tumbling windows `[align + k*size, align + (k+1)*size)` over point events: each
    event's window start by floor-mod (correct before 1970), then one hash aggregation by
    (key, window start); `window_end` = `time` = start + size. Empty windows have no
    row. A window whose start or end would leave the 64-bit tick range (integer time
    within a window of its limits) fails the query with wisp's message."""
    events = query.events
    window = plan
    df = guarded(events, query.observation)
    beyond = data_error(tick_range_message(events.time.name))
    start = or_fail(grid_floor(time_ticks(events.time), window.align % window.size,
                               window.size), beyond).alias(BUCKET)
    grouped = df.groupBy(*[col(k) for k in events.key], start).agg(
        *[_aggregate(r, None, query) for r in plan.aggregations])
    time_type = output_time_type(events.time)
    begin = col(BUCKET)
    end = time_from_ticks(or_fail(F.try_add(begin, F.lit(window.size)), beyond),
                          events.time).cast(time_type)
    return grouped.select(
        *[col(k) for k in events.key],
        time_from_ticks(begin, events.time).cast(time_type).alias("window_start"),
        end.alias("window_end"), end.alias("time"),
        *[col(r.name) for r in plan.aggregations])


def _calendar_guarded(query: Query) -> DataFrame:
    """`guarded`, and a time outside the years the calendar covers fails the query with
    the calendar's own message."""
    events = query.events
    ticks = time_ticks(events.time)
    micros = ticks * F.lit(DAY) if events.time.kind == "date" else ticks
    outside = (micros < F.lit(CALENDAR_MIN_US)) | (micros > F.lit(CALENDAR_MAX_US))
    message = F.concat(F.lit("WispError: " + OUTSIDE_YEARS),
                       col(events.time.name).cast("string"))
    return fail_where(guarded(events, query.observation), outside, message)


def _empty(resolved: ResolvedAggregation, query: Query) -> Column:
    """An aggregation's value over a period without events: 0 for count and sum, else
    null."""
    if native_form(resolved).zero:
        return F.lit(0).cast(query.output_type(resolved))
    return F.lit(None).cast(query.output_type(resolved))


@compiles(PeriodsPlan)
def periods(plan: PeriodsPlan, query: Query) -> DataFrame:
    """`Since` a fixed-length calendar tick, one row per tick: each event's closing tick
    `time + pmod(align - time, length)` (a time on a tick closes its own period), one
    hash aggregation by (key, tick), then the empty periods of each key up to the tick
    closing the newest event of the whole input, generated next to each non-empty
    period (sequence + explode, on one row per key and period). `window_start` = tick -
    length (exclusive), `window_end` = `time` = tick."""
    events = query.events
    period = plan
    keys = [col(k) for k in events.key]
    ticks = time_ticks(events.time)
    closing = ticks + F.pmod(F.lit(period.align) - ticks, F.lit(period.length))
    grouped = _calendar_guarded(query).groupBy(*keys, closing.alias(TICK)).agg(
        *[_aggregate(r, None, query) for r in plan.aggregations])
    by_tick = (Window.partitionBy(*keys) if keys else Window).orderBy(col(TICK))
    length = F.lit(period.length)
    # the tick closing the newest time of the whole input
    newest_time = whole_input(events.df, F.max(ticks))
    newest = newest_time + F.pmod(F.lit(period.align) - newest_time, length)
    following = F.coalesce(F.lead(col(TICK)).over(by_tick), newest + length)
    spread = grouped.withColumn(NEXT, following).select(
        *keys, col(TICK), *[col(r.name) for r in plan.aggregations],
        F.explode(F.sequence(col(TICK), col(NEXT) - length, length)).alias(NEXT))
    own = col(NEXT) == col(TICK)
    time_type = output_time_type(events.time)
    end = time_from_ticks(col(NEXT), events.time).cast(time_type)
    return spread.select(
        *keys,
        time_from_ticks(col(NEXT) - length, events.time).cast(time_type).alias(
            "window_start"),
        end.alias("window_end"), end.alias("time"),
        *[F.when(own, col(r.name)).otherwise(_empty(r, query)).alias(r.name)
          for r in plan.aggregations])
