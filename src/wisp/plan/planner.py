"""The planner: the only place that knows both the window specs and the strategies."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from ..errors import WispUnsupportedError, bad_value
from ..events import Events
from ..spec.aggregates import Aggregation
from ..spec.windows import Range, Rows, Window
from .aggregations import resolve
from .nodes import Frame, Plan, RangeFrame, RowsFrame, RunningFrame, Strategy
from .ticks import resolve_duration

STRATEGIES: tuple[Strategy, ...] = ("native-running", "arrow-frames")


def tie_break_columns(events: Events) -> tuple[str, ...]:
    """Columns that order events with equal time: `order` if given, else every other
    atomic column in schema order (ascending, nulls first, NaN last), so that results do
    not depend on how Spark partitioned the input."""
    if events.order is not None:
        return (events.order,)
    skip = {*events.key, events.time.name}
    return tuple(f.name for f in events.df.schema.fields
                 if f.name not in skip and isinstance(f.dataType, T.AtomicType))


def frame_of(events: Events, window: Window | None) -> Frame:
    if window is None:
        return RunningFrame()
    if isinstance(window, Rows):
        return RowsFrame(window.first_index, window.last_index, window.partial)
    if isinstance(window, Range):
        return RangeFrame(resolve_duration(window.start, events.time, "start"),
                          resolve_duration(window.end, events.time, "end"), window.closed)
    raise WispUnsupportedError(f"{window.kind} windows are not executed yet; this release "
                               "runs Rows, Range and cumulative aggregation")


def plan(events: Events, window: Window | None, aggregations: Sequence[Aggregation],
         strategy: Strategy | None = None) -> Plan:
    """Resolve `window` and `aggregations` against `events` and choose a strategy."""
    frame = frame_of(events, window)
    resolved = resolve(events, aggregations)
    if strategy is not None and strategy not in STRATEGIES:
        raise bad_value("strategy", f"one of {', '.join(STRATEGIES)} or None", strategy)
    natively_possible = isinstance(frame, RunningFrame) and all(
        r.aggregation.fn != "udaf" for r in resolved)
    if strategy == "native-running" and not natively_possible:
        raise bad_value("strategy", "'arrow-frames' for this window and these aggregations",
                        strategy)
    if strategy is None:
        strategy = "native-running" if natively_possible else "arrow-frames"
    if strategy == "native-running":
        reason = ("a running frame is incremental in Spark's own window operator: one "
                  "shuffle and sort by key and time, O(1) work per row")
    elif isinstance(frame, RunningFrame):
        reason = "a user-defined aggregate must see the values, so a kernel runs it"
    else:
        reason = ("Spark's sliding frames re-aggregate every frame (O(n*w)); the kernel "
                  "costs O(n log n) per key whatever the window's width")
    return Plan(events, window, frame, resolved, strategy, reason, tie_break_columns(events))
