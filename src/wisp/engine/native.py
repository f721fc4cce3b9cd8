"""Catalyst-only strategies: Spark's own window operator where it is already cheap."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation, Window, WindowSpec
from pyspark.sql import functions as F

from ..plan.nodes import Plan, ResolvedAggregation
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
