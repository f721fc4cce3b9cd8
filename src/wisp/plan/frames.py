"""Rules of the relative-index (`Rows`), relative-time (`Range`) and running (no
window) families: frames around every anchor event."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import bad_value
from ..spec.windows import Range, Rows
from .aggregations import accumulated, refuse_interval_events, refuse_lifetimes, spark_blocker
from .durations import resolve_bound
from .nodes import Plan, ResolvedAggregation
from .periods import AccumulatorsPlan, accumulators_plan
from .registry import NoWindow, rule
from .source import ARROW_BATCH_BYTES, Inputs, Source, kernel_shape, tie_break_columns
from .streaming import Streamed, refuse_values_of_unclosed, stream_rule

FRAME_STRATEGIES = ("native-running", "arrow-frames")
NATIVE_ROWS_MAX = 32
"""The widest `Rows` window Spark's own sliding frame runs (it re-aggregates every
frame: O(n*w)), on a session that measures every Arrow batch row by row; wider ones,
other aggregations, or any `Rows` window on a session that does not, run the Arrow
kernel."""

@dataclass(frozen=True)
class RowsFrame:
    """Positions `i + first .. i + last` around anchor `i`."""

    first: int
    last: int
    partial: bool


@dataclass(frozen=True)
class RangeFrame:
    """Times `[t + start, t + end]` around anchor time `t`, sides per `closed`."""

    start: int | float
    end: int | float
    closed: str


@dataclass(frozen=True)
class RunningFrame:
    """Everything of the key up to and including the anchor."""


Frame = RowsFrame | RangeFrame | RunningFrame


@dataclass(frozen=True, kw_only=True)
class RunningPlan(Plan):
    """`native-running`: Spark's own window operator with a running frame."""

    strategy = "native-running"
    python = False

    def how(self) -> str:
        return ("Spark's window operator with a ROWS UNBOUNDED PRECEDING frame, "
                "partitioned by key and ordered by time and the tie-break columns.")


@dataclass(frozen=True, kw_only=True)
class NativeFramesPlan(Plan):
    """`native-frames`: Spark's own sliding ROWS frame, for narrow frames."""

    frame: RowsFrame

    strategy = "native-frames"
    python = False

    def how(self) -> str:
        frame = self.frame
        return (f"Spark's window operator with a ROWS BETWEEN {-frame.first} PRECEDING AND "
                f"{frame.last} FOLLOWING frame, partitioned by key and ordered by time and "
                "the tie-break columns (one shuffle and sort); window bounds by lag/lead"
                f"{'' if frame.partial else ', complete windows kept by a filter'}.")


@dataclass(frozen=True, kw_only=True)
class FramesPlan(Plan):
    """`arrow-frames`: the frame kernel over each key's sorted events."""

    frame: Frame

    strategy = "arrow-frames"

    def how(self) -> str:
        frame = self.frame
        if isinstance(frame, RowsFrame):
            bounds = (f"positions i{frame.first:+d}..i{frame.last:+d}, by index arithmetic"
                      f"{'' if frame.partial else ', complete windows only'}")
        elif isinstance(frame, RangeFrame):
            bounds = "by binary search of t+start and t+end in the sorted times"
        else:
            bounds = "from the key's first event to the anchor"
        streamed = ("one key's run at a time" if isinstance(frame, RunningFrame) else
                    "each key's run streamed in chunks that keep only the events later "
                    "windows need")
        return (kernel_shape("key, time and tie-break") +
                f" walks the sorted events, {streamed}: window bounds "
                f"{bounds}; counts and integer sums by prefix differences; float sums and "
                "means by prefix differences with their rounding errors recovered, each "
                "frame's result kept when certified within 8 ulps; min/max, variance, "
                "stddev and the uncertified sums by blocked prefix/suffix scans (O(n) for "
                "fixed-width frames), which only add values inside each window.")


CUMULATIVE = "cumulative aggregation (Events.agg)"


def _check(source: Source, resolved: tuple[ResolvedAggregation, ...], strategy: str | None,
           kind: str) -> None:
    refuse_interval_events(source, kind)
    refuse_lifetimes(resolved, kind)
    if kind != CUMULATIVE and strategy is not None and strategy != "arrow-frames":
        raise bad_value("strategy", f"'arrow-frames' for {kind} windows or None", strategy)
    if strategy is not None and strategy not in FRAME_STRATEGIES:
        raise bad_value("strategy", f"one of {', '.join(FRAME_STRATEGIES)} or None",
                        strategy)


def _frames_plan(source: Source, window: object, frame: Frame,
                 resolved: tuple[ResolvedAggregation, ...], reason: str) -> FramesPlan:
    return FramesPlan(source=source, window=repr(window), aggregations=resolved,
                      tie_break=tie_break_columns(source), reason=reason, frame=frame)


@rule(Rows)
def plan_rows(inputs: Inputs, window: Rows, resolved: tuple[ResolvedAggregation, ...],
              strategy: str | None) -> Plan:
    _check(inputs.source, resolved, strategy, "Rows")
    frame = RowsFrame(window.first_index, window.last_index, window.partial)
    if strategy is None and native_rows(inputs, frame, resolved):
        return native_frames_plan(inputs.source, window, frame, resolved)
    return _frames_plan(inputs.source, window, frame, resolved,
                        "requested" if strategy == "arrow-frames" else _kernel_reason(
                            frame, resolved))


def _kernel_reason(frame: RowsFrame, resolved: tuple[ResolvedAggregation, ...]) -> str:
    """Why a `Rows` frame (or the sliding window that is one) runs the kernel."""
    if frame.last - frame.first + 1 > NATIVE_ROWS_MAX:
        return ("Spark's sliding frames re-aggregate every frame (O(n*w)); the kernel "
                "costs O(n) per key for fixed-width frames whatever the window's width")
    if not _native_form(frame, resolved):
        return ("an aggregation or the window's position (not containing its anchor) "
                "has no exact native sliding form here, so the kernel runs it")
    return ("the session sends Arrow batches to the Python worker without measuring them "
            f"row by row ({ARROW_BATCH_BYTES} at its largest value), so the kernel's round "
            "trip costs less than Spark's own sliding frame even for a window this narrow")


def native_frames_plan(source: Source, window: object, frame: RowsFrame,
                       resolved: tuple[ResolvedAggregation, ...]) -> NativeFramesPlan:
    """Spark's own sliding ROWS frame, for a frame where `native_rows` holds."""
    width = frame.last - frame.first + 1
    return NativeFramesPlan(
        source=source, window=repr(window), aggregations=resolved,
        tie_break=tie_break_columns(source), frame=frame,
        reason=f"the window holds at most {width} events (<= {NATIVE_ROWS_MAX}), every "
        "aggregation has a native form, and the session measures every Arrow "
        f"batch row by row ({ARROW_BATCH_BYTES} below its largest value): "
        "re-aggregating so few values per row in Spark's own operator then costs "
        "less than the round trip to an Arrow kernel")


def native_rows(inputs: Inputs, frame: RowsFrame,
                resolved: tuple[ResolvedAggregation, ...]) -> bool:
    """Whether Spark's own sliding frame runs `frame`: a narrow frame with an exact
    native form (`_native_form`), on a session that measures every Arrow batch row by
    row. Without that measure the kernel costs less at every width measured
    (BENCHMARKS.md)."""
    return _native_form(frame, resolved) and inputs.settings.arrow_batches_measured


def _native_form(frame: RowsFrame, resolved: tuple[ResolvedAggregation, ...]) -> bool:
    """A narrow `Rows` frame containing its anchor, with aggregations whose native sliding
    form gives wisp's results exactly: counts, float sums and means (each frame summed on
    its own, no running differences), integer and float min/max."""
    if not frame.first <= 0 <= frame.last or frame.last - frame.first + 1 > NATIVE_ROWS_MAX:
        return False
    return all(r.value_class in r.aggregation.definition.spark_sliding for r in resolved)


@rule(Range)
def plan_range(inputs: Inputs, window: Range, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    _check(inputs.source, resolved, strategy, "Range")
    time = inputs.source.time
    frame = RangeFrame(resolve_bound(window.start, time, "start"),
                       resolve_bound(window.end, time, "end"), window.closed)
    return _frames_plan(inputs.source, window, frame, resolved,
                        "Spark's sliding frames re-aggregate every frame (O(n*w)) and a "
                        "time frame's width in events is not known when planning; the "
                        "kernel costs O(n) to O(n log w) per key whatever the width")


@rule(NoWindow)
def plan_cumulative(inputs: Inputs, window: NoWindow,
                    resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
    _check(inputs.source, resolved, strategy, CUMULATIVE)
    blocker = spark_blocker(resolved)
    user = blocker is not None and blocker.aggregation.definition.user_code
    if strategy == "native-running" and blocker is not None:
        raise bad_value("strategy", "'arrow-frames' for a user-defined aggregate" if user
                        else f"'arrow-frames' for {blocker.name} (no exact incremental "
                        "running form in Spark)", strategy)
    if strategy is None and blocker is not None and accumulated(resolved):
        return accumulators_plan(inputs.source, window, None, resolved, (
            f"{blocker.name} has no exact, incremental running form in Spark's window "
            "operator, and every aggregation is held by a few accumulators, carried from "
            "row to row instead of the key's rows"))
    if strategy == "arrow-frames" or blocker is not None:
        reason = ("requested" if strategy == "arrow-frames" or blocker is None else
                  "a user-defined aggregate must see the values, so a kernel runs it"
                  if user else f"{blocker.name} has no exact, incremental running form "
                  "in Spark's window operator, so the kernel runs it")
        return _frames_plan(inputs.source, window, RunningFrame(), resolved, reason)
    return RunningPlan(source=inputs.source, window=repr(window), aggregations=resolved,
                       tie_break=tie_break_columns(inputs.source),
                       reason="a running frame is incremental in Spark's own window "
                       "operator: one shuffle and sort by key and time, O(1) work per row")


@stream_rule(NoWindow, label="cumulative (ev.agg)")
def stream_cumulative(inputs: Inputs, window: NoWindow,
                      resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """The cumulative window on a stream: accumulators carried per key, never rows."""
    refuse_values_of_unclosed(resolved, repr(window))
    source = inputs.source
    return Streamed(AccumulatorsPlan(source=source, window=repr(window),
                                     aggregations=resolved,
                                     tie_break=tie_break_columns(source), reason="a stream",
                                     ticks=None),
                    "one accumulator set (a few numbers per aggregation; a user "
                    "aggregator's own state)",
                    "each row's output once the watermark passes its time")


@stream_rule(Rows)
def stream_rows(inputs: Inputs, window: Rows,
                resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """`Rows` on a stream: the frame kernel, fed each key's rows in order."""
    inner = plan_rows(inputs, window, resolved, "arrow-frames")
    assert isinstance(inner, FramesPlan) and isinstance(inner.frame, RowsFrame)
    frame = inner.frame
    return Streamed(inner, f"the last {max(0, -frame.first)} rows and the rows whose "
                    f"windows wait for {max(0, frame.last)} more rows",
                    "a row's window once its last row has arrived and the watermark "
                    "passed it")


@stream_rule(Range)
def stream_range(inputs: Inputs, window: Range,
                 resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """`Range` on a stream: the frame kernel, fed each key's rows in order."""
    inner = plan_range(inputs, window, resolved, "arrow-frames")
    return Streamed(inner, "the rows within the window's reach (end - start) of the newest "
                    "row, and the anchors not yet final",
                    "a row's window once the watermark passes its time + end (a forward "
                    "end adds its length to the latency)")
