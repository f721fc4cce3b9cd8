"""Compiling a plan: every compiler module is imported here, so that each has registered
its compiler (`compiler.compiles`) before `build` looks one up by the plan's class."""

from __future__ import annotations

from pyspark.sql import DataFrame

from ..plan.nodes import Plan
from . import (
    arrow,
    calendar_windows,
    dynamic,
    intervals,
    native,
    panes,
    periods,
    policies,
    running,
    sessions,
    streaming,
)
from .compiler import Query, compiler_for

COMPILER_MODULES = (native, arrow, calendar_windows, intervals, panes, policies, periods,
                    dynamic, sessions, running, streaming)
"""The modules whose import registers every compiler."""


def build(plan: Plan, query: Query) -> DataFrame:
    """The Spark plan of `plan`, bound to `query`'s DataFrames and expressions (lazy:
    nothing runs until an action)."""
    return compiler_for(plan)(plan, query)
