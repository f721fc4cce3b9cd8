"""Catalyst-only strategies: Spark's own window operator where it is already cheap."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation, Window, WindowSpec
from pyspark.sql import functions as F

from ..plan.nodes import Plan, ResolvedAggregation, RowsFrame
from .columns import col, guarded, output_time_type


def _aggregate(resolved: ResolvedAggregation, frame: WindowSpec) -> Column:
    agg = resolved.aggregation
    value = col(agg.col) if agg.col is not None else F.lit(1)
    fn = agg.fn
    if fn == "count":
        expr = F.count(value)
    elif fn == "sum":
        expr = F.coalesce(F.sum(value).over(frame), F.lit(0).cast(resolved.output_type))
        return expr.cast(resolved.output_type).alias(resolved.name)
    elif fn == "mean":
        expr = F.avg(value)
    elif fn == "min":
        expr = F.min(value)
    elif fn == "max":
        expr = F.max(value)
    elif fn == "first":
        expr = F.first(value, ignorenulls=True)
    elif fn == "last":
        expr = F.last(value, ignorenulls=True)
    elif fn == "stddev":
        expr = F.stddev_samp(value)
    elif fn == "variance":
        expr = F.var_samp(value)
    elif fn == "collect":
        expr = F.collect_list(value)
    else:  # the planner never sends other aggregations here
        raise AssertionError(f"no native form for {fn}")
    return expr.over(frame).cast(resolved.output_type).alias(resolved.name)


def running(plan: Plan, observation: Observation) -> DataFrame:
    """Cumulative aggregation with a ROWS UNBOUNDED PRECEDING frame ordered by time and
    the tie-break columns: one output per input row."""
    events = plan.events
    df = guarded(events, observation)
    time = col(events.time.name)
    ordering = [time.asc_nulls_first()] + [col(c).asc_nulls_first() for c in plan.tie_break]
    spec = Window.partitionBy(*[col(k) for k in events.key]) if events.key else Window
    frame = spec.orderBy(*ordering).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    time_type = output_time_type(events.time)
    return df.select(
        *[col(k) for k in events.key],
        F.first(time).over(frame).cast(time_type).alias("window_start"),
        time.cast(time_type).alias("window_end"),
        time.cast(time_type).alias("time"),
        *[_aggregate(r, frame) for r in plan.aggregations],
    )


def frames(plan: Plan, observation: Observation) -> DataFrame:
    """A narrow `Rows` window that contains its anchor (`first <= 0 <= last`) with
    Spark's own sliding ROWS frame, ordered by time and the tie-break columns: one output
    per anchor (only complete windows unless partial). `window_start`/`window_end` are
    the times of the frame's first and last events: the time `-first` rows back (or the
    key's first time when the frame is clipped) and `last` rows ahead (or the key's last
    time)."""
    events = plan.events
    frame = plan.details
    assert isinstance(frame, RowsFrame) and frame.first <= 0 <= frame.last
    df = guarded(events, observation)
    time = col(events.time.name)
    ordering = [time.asc_nulls_first()] + [col(c).asc_nulls_first() for c in plan.tie_break]
    spec = (Window.partitionBy(*[col(k) for k in events.key]) if events.key else Window
            ).orderBy(*ordering)
    sliding = spec.rowsBetween(frame.first, frame.last)
    whole = spec.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    time_type = output_time_type(events.time)
    before = F.lag(time, -frame.first).over(spec) if frame.first < 0 else time
    after = F.lead(time, frame.last).over(spec) if frame.last > 0 else time
    start = F.coalesce(before, F.min(time).over(whole)) if frame.first < 0 else before
    end = F.coalesce(after, F.max(time).over(whole)) if frame.last > 0 else after
    out = df.select(
        *[col(k) for k in events.key],
        start.cast(time_type).alias("window_start"),
        end.cast(time_type).alias("window_end"),
        time.cast(time_type).alias("time"),
        *[_aggregate(r, sliding) for r in plan.aggregations],
        *([] if frame.partial else [before.isNotNull().alias("__wisp_before"),
                                     after.isNotNull().alias("__wisp_after")]),
    )
    if frame.partial:
        return out
    return out.filter(col("__wisp_before") & col("__wisp_after")).drop(
        "__wisp_before", "__wisp_after")
