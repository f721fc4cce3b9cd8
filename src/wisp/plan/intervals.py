"""Rules of the hopping, tumbling, snapshot and count-by-start-time family.

Tumbling windows over point events with aggregations Spark computes exactly run as
"native-buckets": one `groupBy(key, window start)`, no sort. Hopping windows with
mergeable aggregations run as "panes": Spark pre-aggregates each key's events per pane
(point events: the gcd of size and hop; interval events: the hop-grid cells of the
start and the last tick) with its hash aggregation, and the interval kernel combines
the panes of each window. Every other window of the family runs as the
"arrow-intervals" strategy: Spark partitions by key, each partition is sorted by start
time; a kernel turns each key's lifetimes into windows, groups windows whose member sets
are equal, and aggregates each member set once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..errors import WispUnsupportedError, bad_value
from ..spec.windows import CountByStartTime, Hopping, Snapshot, Tumbling
from .aggregations import grouped_blocker
from .durations import DAY, resolve_duration, resolve_instant
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import (
    Inputs,
    Source,
    TimeColumn,
    kernel_shape,
    native_time_blocker,
    tie_break_columns,
)
from .streaming import (
    PANE_TIME_KINDS,
    PANES_STRATEGY,
    PARTIALS,
    Streamed,
    carried_by_panes,
    crosses_as_json,
    stream_rule,
    unsupported_on_stream,
)

STRATEGY = "arrow-intervals"
BUCKETS = "native-buckets"
BUCKET_TIMES = ("timestamp", "timestamp_ntz", "date", "integer")
PANES = "panes"
SWEEP = kernel_shape("key, start time and tie-break") + " walks each key's lifetimes"
AGGREGATES = ("; counts and integer and decimal sums come from a difference array over "
              "the runs, float sums, means, extremes, first/last and moments from a "
              "stabbing query on a segment tree over the runs (no member lists); collect, "
              "udafs and time-weighted means over hopping and count windows list each "
              "distinct member set once.")


@dataclass(frozen=True)
class IntervalWindow:
    """What the interval kernel needs to know about the window, in ticks of the time
    column (days for date time). One subclass per kind; `kind` names it."""

    kind: ClassVar[str] = ""

    def sweep_words(self) -> str:
        """How the kernel finds this kind's windows and members, for `explain`."""
        raise NotImplementedError(type(self).__name__)


@dataclass(frozen=True)
class HoppingWindows(IntervalWindow):
    """Windows `[origin + k*hop, origin + k*hop + size)` (tumbling: `hop = size`);
    `output` "windows" (one row per non-empty window) or "changes" (one row per interval
    over which the result is constant)."""

    size: int
    hop: int
    align: int = 0
    output: str = "windows"

    kind: ClassVar[str] = "hopping"

    @property
    def origin(self) -> int:
        """`align` reduced modulo the hop: the same grid of hopping windows, from which
        their indices (`(start - origin) / hop`) fit in 64 bits."""
        return self.align % self.hop

    def sweep_words(self) -> str:
        if self.output == "changes":
            return ("lifetimes are cut into runs of windows with the same members; each "
                    "run's result is valid from the end of its first window to one hop "
                    "after the end of its last; equal consecutive results merge")
        return ("lifetimes are cut into runs of windows with the same members; each run is "
                "aggregated once and written out once per window, up to the newest finite "
                "time, then once for all later windows")


@dataclass(frozen=True)
class SnapshotWindows(IntervalWindow):
    """One window per interval between consecutive distinct start/end points."""

    kind: ClassVar[str] = "snapshot"

    def sweep_words(self) -> str:
        return ("the distinct start and end points cut the timeline into snapshots; each "
                "event is a member of the snapshots between its start and end")


@dataclass(frozen=True)
class CountWindows(IntervalWindow):
    """Window i holds the events starting from the i-th to the (i+n-1)-th distinct start
    time."""

    n: int

    kind: ClassVar[str] = "count"

    def sweep_words(self) -> str:
        return (f"window i holds the events starting from the i-th to the (i+{self.n}-1)-th "
                "distinct start time")


@dataclass(frozen=True, kw_only=True)
class IntervalsPlan(Plan):
    """`arrow-intervals`: the interval kernel over each key's lifetimes."""

    windows: IntervalWindow

    strategy = STRATEGY

    def how(self) -> str:
        return f"{SWEEP}: {self.windows.sweep_words()}{AGGREGATES}"


@dataclass(frozen=True, kw_only=True)
class BucketsPlan(Plan):
    """`native-buckets`: a tumbling window over point events as one groupBy, windows
    `[align + k*size, align + (k+1)*size)` in ticks of the time column (days for date
    time)."""

    size: int
    align: int

    strategy = BUCKETS
    python = False

    def how(self) -> str:
        return ("Spark computes each event's window start (time - pmod(time - align, "
                "size)) and aggregates by (key, window start) with its own hash "
                "aggregation: no sort, no Python; window_end = time = window start + size.")


@dataclass(frozen=True, kw_only=True)
class PanesPlan(Plan):
    """`panes`: hopping windows from per-pane partial aggregates. For point events the
    panes `[align + k*width, align + (k+1)*width)` (`width` = gcd(size, hop)) tile every
    window; interval events are grouped by the cells of the hop grid instead."""

    windows: HoppingWindows
    width: int

    strategy = PANES

    def how(self) -> str:
        if self.source.end is None:
            panes = (f"computes each event's pane start (time - pmod(time - align, "
                     f"{self.width}): panes of gcd(size, hop) ticks)")
            seen = "treats each pane as one point event"
        else:
            panes = (f"computes the cells of the {self.windows.hop}-tick hop grid holding "
                     "each event's start and its last tick (max(end, time + 1) - 1), which "
                     "decide its windows: a pane is the events of a key with the same two "
                     "cells and the same openness")
            seen = "treats each pane as one interval event [min(time), max(end))"
        return (f"Spark partitions the events by key (one shuffle), {panes}, and aggregates "
                "by (key, pane) with its own hash aggregation (partial counts, sums and "
                "extremes); the panes are sorted (see Sorting), and the interval kernel "
                f"{seen} and merges the partials of the panes each window holds (exact sums "
                "of counts and integers, float sums, extremes of extremes; a mean is sum / "
                "count).")


ALSO = {"Tumbling": (BUCKETS, PANES), "Hopping": (PANES,)}
"""The strategies each kind may run on besides the interval kernel."""


def _check(source: Source, strategy: str | None, kind: str) -> None:
    choices = (STRATEGY, *ALSO.get(kind, ()))
    if strategy is not None and strategy not in choices:
        raise bad_value("strategy", f"{', '.join(repr(s) for s in choices)} for {kind} "
                        "windows or None", strategy)
    if source.time.kind == "float":
        raise WispUnsupportedError(
            f"`time` must be a timestamp, date, integer or decimal column for {kind} "
            f"windows (they need exact ticks), found float column {source.time.name!r}")


def resolve_align(value: object, time: TimeColumn) -> int:
    """The alignment instant in ticks of `time`'s column (the epoch / 0 by default)."""
    return 0 if value is None else int(resolve_instant(value, time, "align"))


def _positive(value: object, time: TimeColumn, param: str) -> int:
    ticks = int(resolve_duration(value, time, param))
    if ticks <= 0:
        raise bad_value(param, "a positive duration", value)
    return ticks


def snap_grid(source: Source, size: object, hop: object, align: object
              ) -> tuple[int, int, int]:
    """The hopping grid `snap_to_hops` snaps lifetimes to: `size`, `hop` and `align` in
    ticks of the time column, checked as for `Hopping(..., output="changes")`."""
    _check(source, None, "snap_to_hops")
    size_ticks = _positive(size, source.time, "size")
    hop_ticks = _positive(hop, source.time, "hop")
    if hop_ticks > size_ticks:
        raise bad_value("hop", f"at most `size` ({size!r}) to snap lifetimes to windows "
                        "without gaps", hop)
    return size_ticks, hop_ticks, resolve_align(align, source.time)


def _kernel_plan(source: Source, window: object, resolved: tuple[ResolvedAggregation, ...],
                 windows: IntervalWindow, reason: str) -> IntervalsPlan:
    return IntervalsPlan(source=source, window=repr(window), aggregations=resolved,
                         tie_break=tie_break_columns(source), reason=reason, windows=windows)


HOPPING_REASON = ("windows whose member sets are equal share one aggregation, so an event "
                  "spanning many windows, or an open-ended one, costs O(1) groups instead "
                  "of one row per (event, window) pair")


def _hopping(source: Source, size: int, hop: int, align: int, output: str) -> HoppingWindows:
    unit = DAY if source.time.kind == "date" else 1  # date time runs in whole days
    return HoppingWindows(size // unit, hop // unit, align // unit, output)


def bucket_blocker(source: Source, resolved: tuple[ResolvedAggregation, ...]) -> str | None:
    """Why a tumbling window cannot run as one groupBy, or None when it can."""
    if source.end is not None:
        return "interval events span several windows"
    return native_time_blocker(source.time, BUCKET_TIMES) or grouped_blocker(resolved)


@rule(Tumbling)
def plan_tumbling(inputs: Inputs, window: Tumbling, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    """Tumbling by duration: one groupBy on the window start when every aggregation has
    an exact order-free Spark form and the events are points; else hopping windows with
    `hop = size`, as panes when every aggregation merges per-pane partials (interval
    events), else on the interval kernel. (A policy-sized Tumbling is planned by the
    policy family's rule.)"""
    source = inputs.source
    _check(source, strategy, "Tumbling")
    size = _positive(window.size, source.time, "size")
    align = resolve_align(window.align, source.time)
    blocker = bucket_blocker(source, resolved)
    if strategy == BUCKETS and blocker is not None:
        raise bad_value("strategy", f"{STRATEGY!r} or None here ({blocker})", strategy)
    if (blocker is None and strategy is None) or strategy == BUCKETS:
        unit = DAY if source.time.kind == "date" else 1
        return BucketsPlan(source=source, window=repr(window), aggregations=resolved,
                           tie_break=tie_break_columns(source),
                           reason="point events in tumbling windows each belong to one "
                           "window, so one groupBy computes them, and every aggregation "
                           "has an exact Spark form", size=size // unit, align=align // unit)
    windows = _hopping(source, size, size, align, "windows")
    return _panes_or_kernel(source, window, windows, resolved, strategy)


def pane_blocker(source: Source, resolved: tuple[ResolvedAggregation, ...]) -> str | None:
    """Why hopping windows cannot merge per-pane partial aggregates, or None when they
    can."""
    blocker = native_time_blocker(source.time, BUCKET_TIMES)
    if blocker is not None:
        return blocker
    for r in resolved:
        if r.value_class not in r.aggregation.definition.panes:
            return f"{r.aggregation.output_name} is not a merge of per-pane partial results"
    return None


@rule(Hopping)
def plan_hopping(inputs: Inputs, window: Hopping, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    """Hopping windows: "panes" when every aggregation merges per-pane partials (point
    or interval events), else the interval kernel over the events themselves."""
    source = inputs.source
    _check(source, strategy, "Hopping")
    size = _positive(window.size, source.time, "size")
    hop = _positive(window.hop, source.time, "hop")
    if window.output == "changes" and hop > size:
        raise bad_value("hop", f"at most `size` ({window.size!r}) for output='changes' "
                        "(snapped lifetimes need windows without gaps)", window.hop)
    align = resolve_align(window.align, source.time)
    windows = _hopping(source, size, hop, align, window.output)
    return _panes_or_kernel(source, window, windows, resolved, strategy)


def _panes_or_kernel(source: Source, window: object, windows: HoppingWindows,
                     resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
    """Hopping windows as panes when every aggregation merges per-pane partials and no
    other strategy is asked for, else on the interval kernel."""
    blocker = pane_blocker(source, resolved)
    if strategy == PANES and blocker is not None:
        raise bad_value("strategy", f"{STRATEGY!r} or None here ({blocker})", strategy)
    if blocker is not None or strategy == STRATEGY:
        return _kernel_plan(source, window, resolved, windows, HOPPING_REASON)
    why = ("every window is a whole number of panes" if source.end is None
           else "events with the same pane belong to the same windows")
    return PanesPlan(source=source, window=repr(window), aggregations=resolved,
                     tie_break=tie_break_columns(source), windows=windows,
                     width=math.gcd(windows.size, windows.hop),
                     reason=f"{why} and every aggregation merges per-pane partial results, "
                     "so the sort and the kernel see one row per pane instead of one per "
                     "event; when panes hold about one event each, the aggregation costs "
                     "more than it saves (strategy='arrow-intervals' runs the kernel on the "
                     "events)")


@rule(Snapshot)
def plan_snapshot(inputs: Inputs, window: Snapshot, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    _check(inputs.source, strategy, "Snapshot")
    return _kernel_plan(inputs.source, window, resolved, SnapshotWindows(),
                        "each snapshot's live events are found from sorted start/end points")


@rule(CountByStartTime)
def plan_count_by_start_time(inputs: Inputs, window: CountByStartTime,
                             resolved: tuple[ResolvedAggregation, ...],
                             strategy: str | None) -> Plan:
    _check(inputs.source, strategy, "CountByStartTime")
    return _kernel_plan(inputs.source, window, resolved, CountWindows(window.n),
                        "members of a count window are contiguous in start order, so every "
                        "window is an index range found by binary search")


BY_DURATION = "Tumbling and Hopping by duration (output='windows')"
"""The duration-sized kinds of this family on a stream, in words."""


@dataclass(frozen=True, kw_only=True)
class StreamPanesPlan(Plan):
    """`stream-panes`: tumbling and hopping windows over point events on a stream, from
    partial aggregates per pane (`runtime/streaming/panes.py`): `windows` as in batch."""

    windows: HoppingWindows

    strategy = PANES_STRATEGY

    def how(self) -> str:
        return ("the timeline is cut into panes of gcd(size, hop); a kernel per key adds "
                f"each row to its pane's partial aggregates ({PARTIALS}) as it arrives, "
                "and writes a window from its panes' partials once no later row can fall "
                "in it.")


@stream_rule(Tumbling, label=BY_DURATION, edges=True)
def stream_tumbling(inputs: Inputs, window: Tumbling,
                    resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    return _stream_hopping(inputs, plan_tumbling(inputs, window, resolved, STRATEGY),
                           resolved)


@stream_rule(Hopping, label=BY_DURATION, edges=True)
def stream_hopping(inputs: Inputs, window: Hopping,
                   resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    if window.output != "windows":
        raise unsupported_on_stream(f"Hopping(output={window.output!r})", " (its rows can "
                                    "wait for ever for the result to change)")
    return _stream_hopping(inputs, plan_hopping(inputs, window, resolved, STRATEGY),
                           resolved)


def _stream_hopping(inputs: Inputs, inner: Plan, resolved: tuple[ResolvedAggregation, ...]
                    ) -> Streamed:
    """Tumbling and hopping windows on a stream (`inner`: their interval kernel's plan):
    over point events on pane partials where every aggregation has partials a pane can
    carry, else the interval kernel carrying the rows of the windows not yet final."""
    source = inputs.source
    if source.is_interval:
        return Streamed(inner, "the events alive in the windows not yet final (an event "
                        "stays while it is alive: open-ended events for ever)",
                        "a window once the watermark passes its end",
                        revisable=isinstance(inner, IntervalsPlan)
                        and isinstance(inner.windows, HoppingWindows)
                        and inner.windows.output == "windows")
    assert isinstance(inner, IntervalsPlan) and isinstance(inner.windows, HoppingWindows)
    if source.time.kind in PANE_TIME_KINDS and all(
            carried_by_panes(r) and crosses_as_json(r) for r in resolved):
        panes = StreamPanesPlan(source=source, window=inner.window, aggregations=resolved,
                                tie_break=inner.tie_break, windows=inner.windows,
                                reason="every aggregation has partials a pane can carry")
        return Streamed(panes, "one row of partial aggregates per non-empty pane of the "
                        "windows not yet final (at most size / gcd(size, hop) + the panes "
                        "the lateness spans), not the rows", "a window once the watermark "
                        "passes its end", panes=True)
    return Streamed(inner, "the rows of the windows not yet final (at most size / hop "
                    "windows)", "a window once the watermark passes its end",
                    revisable=inner.windows.output == "windows")


@stream_rule(Snapshot, edges=True)
def stream_snapshot(inputs: Inputs, window: Snapshot,
                    resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    return Streamed(plan_snapshot(inputs, window, resolved, STRATEGY),
                    "the events alive at the frontier (an event stays while it is alive: "
                    "open-ended events for ever)", "a window once the watermark passes its "
                    "end (the next start or end point)", revisable=True)


@stream_rule(CountByStartTime, edges=True)
def stream_count_by_start_time(inputs: Inputs, window: CountByStartTime,
                               resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    return Streamed(plan_count_by_start_time(inputs, window, resolved, STRATEGY),
                    f"the events of the last {window.n} distinct start times",
                    "a window once the watermark passes its last start time",
                    revisable=True)
