"""Rules of the relative-index (`Rows`), relative-time (`Range`) and running (no
window) families: frames around every anchor event."""

from __future__ import annotations

from ..errors import bad_value
from ..events import Events
from ..spec.windows import Range, Rows, Window
from .aggregations import refuse_lifetimes
from .nodes import Frame, Plan, RangeFrame, ResolvedAggregation, RowsFrame, RunningFrame
from .planner import kernel_shape, tie_break_columns
from .ticks import resolve_duration

FRAME_STRATEGIES = ("native-running", "arrow-frames")
NATIVE_ROWS_MAX = 32
"""The widest `Rows` window Spark's own sliding frame runs (it re-aggregates every
frame: O(n*w)); wider ones, or with other aggregations, run the Arrow kernel."""
NATIVE_FNS = {"count": ("none", "integer", "float", "boolean", "decimal", "ordered", "other"),
              "sum": ("float",), "mean": ("float",),
              "min": ("integer", "float"), "max": ("integer", "float")}


def _check(resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> None:
    refuse_lifetimes(resolved)
    if strategy is not None and strategy not in FRAME_STRATEGIES:
        raise bad_value("strategy", f"one of {', '.join(FRAME_STRATEGIES)} or None",
                        strategy)


def _frames_plan(events: Events, window: Rows | Range | None, frame: Frame,
                 resolved: tuple[ResolvedAggregation, ...], reason: str) -> Plan:
    if isinstance(frame, RowsFrame):
        bounds = (f"positions i{frame.first:+d}..i{frame.last:+d}, by index arithmetic"
                  f"{'' if frame.partial else ', complete windows only'}")
    elif isinstance(frame, RangeFrame):
        bounds = "by binary search of t+start and t+end in the sorted times"
    else:
        bounds = "from the key's first event to the anchor"
    streamed = ("each key's run streamed in chunks that keep only the events later "
                "windows need" if frame is not None and not isinstance(frame, RunningFrame)
                else "one key's run at a time")
    how = (kernel_shape("key, time and tie-break") +
           f" walks the sorted events, {streamed}: window bounds "
           f"{bounds}; counts and integer sums by prefix differences; float sums and "
           "means by prefix differences with their rounding errors recovered, each "
           "frame's result kept when certified within 8 ulps; min/max, variance, stddev "
           "and the uncertified sums by blocked prefix/suffix scans (O(n) for "
           "fixed-width frames), which only add values inside each window.")
    return Plan(events, window, resolved, "arrow-frames", reason, how, "arrow:frames",
                tie_break_columns(events), frame)


def plan_rows(events: Events, window: Rows, resolved: tuple[ResolvedAggregation, ...],
              strategy: str | None) -> Plan:
    _check(resolved, strategy)
    if strategy == "native-running":
        raise bad_value("strategy", "'arrow-frames' for Rows windows", strategy)
    frame = RowsFrame(window.first_index, window.last_index, window.partial)
    width = frame.last - frame.first + 1
    if strategy is None and native_rows(frame, resolved):
        return native_frames_plan(events, window, frame, resolved)
    reason = ("Spark's sliding frames re-aggregate every frame (O(n*w)); the kernel costs "
              "O(n) per key for fixed-width frames whatever the window's width")
    if strategy is None and width <= NATIVE_ROWS_MAX:
        reason = ("an aggregation or the window's position (not containing its anchor) has "
                  "no exact native sliding form here, so the kernel runs it")
    return _frames_plan(events, window, frame, resolved,
                        "requested" if strategy == "arrow-frames" else reason)


def native_frames_plan(events: Events, window: Window, frame: RowsFrame,
                       resolved: tuple[ResolvedAggregation, ...]) -> Plan:
    """Spark's own sliding ROWS frame, for a frame where `native_rows` holds."""
    width = frame.last - frame.first + 1
    how = (f"Spark's window operator with a ROWS BETWEEN {-frame.first} PRECEDING AND "
           f"{frame.last} FOLLOWING frame, partitioned by key and ordered by time and "
           "the tie-break columns (one shuffle and sort); window bounds by lag/lead"
           f"{'' if frame.partial else ', complete windows kept by a filter'}.")
    return Plan(events, window, resolved, "native-frames",
                f"the window holds at most {width} events (<= {NATIVE_ROWS_MAX}) and "
                "every aggregation has a native form: re-aggregating so few values per "
                "row in Spark's own operator is cheaper than the round trip to an Arrow "
                "kernel", how, "native:frames", tie_break_columns(events), frame)


def native_rows(frame: RowsFrame, resolved: tuple[ResolvedAggregation, ...]) -> bool:
    """A narrow `Rows` frame containing its anchor, with aggregations whose native sliding
    form gives wisp's results exactly: counts, float sums and means (each frame summed on
    its own, no running differences), integer and float min/max."""
    if not frame.first <= 0 <= frame.last or frame.last - frame.first + 1 > NATIVE_ROWS_MAX:
        return False
    return all(r.value_class in NATIVE_FNS.get(r.aggregation.fn, ()) for r in resolved)


def plan_range(events: Events, window: Range, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    _check(resolved, strategy)
    if strategy == "native-running":
        raise bad_value("strategy", "'arrow-frames' for Range windows", strategy)
    frame = RangeFrame(resolve_duration(window.start, events.time, "start"),
                       resolve_duration(window.end, events.time, "end"), window.closed)
    return _frames_plan(events, window, frame, resolved,
                        "Spark's sliding frames re-aggregate every frame (O(n*w)) and a "
                        "time frame's width in events is not known when planning; the "
                        "kernel costs O(n) to O(n log w) per key whatever the width")


def plan_cumulative(events: Events, window: None, resolved: tuple[ResolvedAggregation, ...],
                    strategy: str | None) -> Plan:
    _check(resolved, strategy)
    native_possible = all(r.aggregation.fn != "udaf" for r in resolved)
    if strategy == "native-running" and not native_possible:
        raise bad_value("strategy", "'arrow-frames' for a user-defined aggregate", strategy)
    if strategy == "arrow-frames" or not native_possible:
        return _frames_plan(events, None, RunningFrame(), resolved,
                            "a user-defined aggregate must see the values, so a kernel "
                            "runs it" if not native_possible else "requested")
    how = ("Spark's window operator with a ROWS UNBOUNDED PRECEDING frame, partitioned by "
           "key and ordered by time and the tie-break columns.")
    return Plan(events, None, resolved, "native-running",
                "a running frame is incremental in Spark's own window operator: one shuffle "
                "and sort by key and time, O(1) work per row", how, "native:running",
                tie_break_columns(events), RunningFrame())
