"""The planner: the only place that knows both the window specs and the strategies.

Each window family has its own rule module (`frames`, `intervals`, `policies`,
`periods`, `dynamic`, `sessions`); each rule is registered for its spec class
(`registry.rule`), resolves its window against the input's description and chooses a
strategy, returning that strategy's plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import WispUnsupportedError
from ..spec.aggregates import Aggregation
from . import (
    calendar_windows,
    dynamic,
    features,
    frames,
    intervals,
    periods,
    policies,
    sessions,
)
from .aggregations import (
    refuse_ewm,
    refuse_interval_events,
    refuse_min_count_on_changes,
    resolve,
)
from .nodes import Plan
from .registry import NoWindow, rule_for
from .source import Inputs
from .streaming import plan_stream

RULE_MODULES = (frames, intervals, policies, periods, dynamic, sessions, calendar_windows,
                features)
"""The modules whose import registers every planning rule."""


def plan(inputs: Inputs, window: object | None, aggregations: Sequence[Aggregation],
         strategy: str | None = None) -> Plan:
    """Resolve `window` (None: cumulative) and `aggregations` against `inputs` and choose
    a strategy (over a stream, the stream plan: `streaming.plan_stream`)."""
    spec = NoWindow() if window is None else window
    rule = rule_for(spec)
    if rule is None:
        raise WispUnsupportedError(f"`window` must be a window kind this version of wisp "
                                   f"executes, found {type(spec).__name__}")
    resolved = resolve(inputs.source, aggregations)
    if isinstance(spec, NoWindow):  # a stream's accumulators too read point events only
        refuse_interval_events(inputs.source, frames.CUMULATIVE)
    refuse_ewm(spec, resolved)
    refuse_min_count_on_changes(spec, resolved)
    if inputs.source.lateness is not None:
        return plan_stream(inputs, spec, resolved, strategy)
    return rule(inputs, spec, resolved, strategy)
