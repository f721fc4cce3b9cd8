"""Compiling a plan: every compiler module is imported here, so that each has registered
its compiler (`compiler.compiles`) before `build` looks one up by the plan's class."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..plan.aggregations import MIN_COUNT_PREFIX, is_hidden
from ..plan.nodes import Plan
from . import (
    arrow,
    calendar_windows,
    dynamic,
    features,
    intervals,
    native,
    panes,
    periods,
    policies,
    running,
    sessions,
    streaming,
)
from .columns import col
from .compiler import Query, compiler_for

COMPILER_MODULES = (native, arrow, calendar_windows, intervals, panes, policies, periods,
                    dynamic, sessions, running, streaming, features)
"""The modules whose import registers every compiler."""


def build(plan: Plan, query: Query) -> DataFrame:
    """The Spark plan of `plan`, bound to `query`'s DataFrames and expressions (lazy:
    nothing runs until an action)."""
    return with_min_counts(plan, compiler_for(plan)(plan, query))


def with_min_counts(plan: Plan, result: DataFrame) -> DataFrame:
    """Each aggregation with `min_count` nulled where its hidden count (the non-null
    values of its column in the window, `plan.aggregations.with_min_counts`) is below
    it, and the hidden counts dropped: a projection after any strategy, batch or
    stream."""
    hidden = [r for r in plan.aggregations if is_hidden(r)]
    if not hidden:
        return result
    limits = {r.name + suffix: (r.aggregation.min_count,
                                f"{MIN_COUNT_PREFIX}{i}{suffix}")
              for i, r in enumerate(plan.aggregations) if r.aggregation.min_count > 0
              for suffix in plan.suffixes}
    dropped = {r.name + suffix for r in hidden for suffix in plan.suffixes}
    shown: list[Column] = []
    for name in result.columns:
        if name in limits:
            least, counter = limits[name]
            shown.append(F.when(col(counter) >= least, col(name)).alias(name))
        elif name not in dropped:
            shown.append(col(name))
    return result.select(*shown)

