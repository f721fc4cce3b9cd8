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

import datetime as _dt
import math
from dataclasses import dataclass, replace
from decimal import Decimal

from ..errors import WispUnsupportedError, bad_value
from ..events import Events, TimeColumn
from ..spec.time import instant_to_micros
from ..spec.windows import CountByStartTime, Hopping, Snapshot, Tumbling, Window
from .aggregations import GROUPED_FNS, grouped_blocker
from .durations import DAY, resolve_duration
from .nodes import Plan, ResolvedAggregation
from .planner import kernel_shape, tie_break_columns

STRATEGY = "arrow-intervals"
BUCKETS = "native-buckets"
BUCKET_TIMES = ("timestamp", "date", "integer")
PANES = "panes"
PANE_FNS = {"count": GROUPED_FNS["count"], "sum": ("integer", "float"),
            "mean": ("integer", "float"), "min": GROUPED_FNS["min"], "max": GROUPED_FNS["max"]}
"""Aggregations whose window result is exactly a merge of per-pane partial results:
counts and sums add up (integer sums exactly), a mean is their quotient, extremes are
extremes of extremes."""
SWEEP = kernel_shape("key, start time and tie-break") + " walks each key's lifetimes"
AGGREGATES = ("; counts and integer and decimal sums come from a difference array over "
              "the runs, float sums, means, extremes, first/last and moments from a "
              "stabbing query on a segment tree over the runs (no member lists); collect, "
              "udafs and time-weighted means over hopping and count windows list each "
              "distinct member set once.")


@dataclass(frozen=True)
class IntervalWindow:
    """What the kernel needs to know about the window, in ticks of the time column.

    kind: "hopping" (tumbling is hopping with `hop = size`), "snapshot" or "count"."""

    kind: str
    size: int = 0
    hop: int = 0
    align: int = 0
    output: str = "windows"
    n: int = 1

    @property
    def origin(self) -> int:
        """`align` reduced modulo the hop: the same grid of hopping windows, from which
        their indices (`(start - origin) / hop`) fit in 64 bits."""
        return self.align % self.hop


ALSO = {"Tumbling": (BUCKETS, PANES), "Hopping": (PANES,)}
"""The strategies each kind may run on besides the interval kernel."""


def _check(events: Events, strategy: str | None, kind: str) -> None:
    choices = (STRATEGY, *ALSO.get(kind, ()))
    if strategy is not None and strategy not in choices:
        raise bad_value("strategy", f"{', '.join(repr(s) for s in choices)} for {kind} "
                        "windows or None", strategy)
    if events.time.kind == "float":
        raise WispUnsupportedError(
            f"{kind} windows need exact ticks: `time` must be a timestamp, date, integer or "
            f"decimal column, found float time column {events.time.name!r}")


def resolve_align(value: object, time: TimeColumn) -> int:
    """The alignment instant in ticks of `time`'s column (the epoch / 0 by default)."""
    if value is None:
        return 0
    if time.uses_time_units:
        if not isinstance(value, (_dt.datetime, _dt.date)):
            raise bad_value("align", f"a datetime or a date for {time.kind} time column "
                            f"{time.name!r}", value)
        ticks = instant_to_micros(value, "align")
        if time.kind == "date" and ticks % DAY:
            raise bad_value("align", f"a midnight for date time column {time.name!r}", value)
        return ticks
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise bad_value("align", f"a number for {time.kind} time column {time.name!r}",
                        value)
    if value == 0:
        return 0
    return int(resolve_duration(value, time, "align"))


def _positive(value: object, time: TimeColumn, param: str) -> int:
    ticks = int(resolve_duration(value, time, param))
    if ticks <= 0:
        raise bad_value(param, "a positive duration", value)
    return ticks


def _plan(events: Events, window: Window, resolved: tuple[ResolvedAggregation, ...],
          details: IntervalWindow, reason: str, how: str) -> Plan:
    return Plan(events, window, resolved, STRATEGY, reason, f"{SWEEP}: {how}{AGGREGATES}",
                "intervals:intervals", tie_break_columns(events), details)


HOPPING_REASON = ("windows whose member sets are equal share one aggregation, so an event "
                  "spanning many windows, or an open-ended one, costs O(1) groups instead "
                  "of one row per (event, window) pair")


def _hopping(events: Events, window: Tumbling | Hopping, size: int, hop: int, align: int,
             output: str, resolved: tuple[ResolvedAggregation, ...]) -> Plan:
    unit = DAY if events.time.kind == "date" else 1  # date time runs in whole days
    details = IntervalWindow("hopping", size=size // unit, hop=hop // unit,
                             align=align // unit, output=output)
    if output == "changes":
        how = ("lifetimes are cut into runs of windows with the same members; each run's "
               "result is valid from the end of its first window to one hop after the end "
               "of its last; equal consecutive results merge")
    else:
        how = ("lifetimes are cut into runs of windows with the same members; each run is "
               "aggregated once and written out once per window, up to the newest finite "
               "time, then once for all later windows")
    return _plan(events, window, resolved, details, HOPPING_REASON, how)


@dataclass(frozen=True)
class Buckets:
    """A tumbling window for `native-buckets`, in ticks of the time column (days for
    date time): windows `[align + k*size, align + (k+1)*size)`."""

    size: int
    align: int


def bucket_blocker(events: Events, resolved: tuple[ResolvedAggregation, ...]) -> str | None:
    """Why a tumbling window cannot run as one groupBy, or None when it can."""
    if events.end is not None:
        return "interval events span several windows"
    if events.time.kind not in BUCKET_TIMES:
        return f"{events.time.kind} time runs on the kernel"
    return grouped_blocker(resolved)


def plan_tumbling(events: Events, window: Tumbling, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    """Tumbling by duration: one groupBy on the window start when every aggregation has
    an exact order-free Spark form and the events are points; else hopping windows with
    `hop = size`, as panes when every aggregation merges per-pane partials (interval
    events), else on the interval kernel."""
    _check(events, strategy, "Tumbling")
    size = _positive(window.size, events.time, "size")
    align = resolve_align(window.align, events.time)
    blocker = bucket_blocker(events, resolved)
    if strategy == BUCKETS and blocker is not None:
        raise bad_value("strategy", f"{STRATEGY!r} or None here ({blocker})", strategy)
    if (blocker is None and strategy is None) or strategy == BUCKETS:
        unit = DAY if events.time.kind == "date" else 1
        how = ("Spark computes each event's window start (time - pmod(time - align, size)) "
               "and aggregates by (key, window start) with its own hash aggregation: no "
               "sort, no Python; window_end = time = window start + size.")
        return Plan(events, window, resolved, BUCKETS,
                    "point events in tumbling windows each belong to one window, so one "
                    "groupBy computes them, and every aggregation has an exact Spark form",
                    how, "native:buckets", tie_break_columns(events),
                    Buckets(size // unit, align // unit))
    return _panes_or_kernel(events, _hopping(events, window, size, size, align, "windows",
                                             resolved), resolved, strategy)


@dataclass(frozen=True)
class Panes:
    """Hopping windows for `panes`: `window` for the kernel, and for point events the
    panes `[align + k*width, align + (k+1)*width)` (`width` = gcd(size, hop)) that tile
    every window, in ticks of the time column (days for date time). Interval events are
    grouped by the cells of the hop grid instead (`engine/panes.py`)."""

    window: IntervalWindow
    width: int


def pane_blocker(events: Events, resolved: tuple[ResolvedAggregation, ...]) -> str | None:
    """Why hopping windows cannot merge per-pane partial aggregates, or None when they
    can."""
    if events.time.kind not in BUCKET_TIMES:
        return f"{events.time.kind} time runs on the kernel"
    for r in resolved:
        if r.value_class not in PANE_FNS.get(r.aggregation.fn, ()):
            return f"{r.aggregation.output_name} is not a merge of per-pane partial results"
    return None


def plan_hopping(events: Events, window: Hopping, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    """Hopping windows: "panes" when every aggregation merges per-pane partials (point
    or interval events), else the interval kernel over the events themselves."""
    _check(events, strategy, "Hopping")
    size = _positive(window.size, events.time, "size")
    hop = _positive(window.hop, events.time, "hop")
    if window.output == "changes" and hop > size:
        raise bad_value("hop", f"at most `size` ({window.size!r}) for output='changes' "
                        "(snapped lifetimes need windows without gaps)", window.hop)
    align = resolve_align(window.align, events.time)
    return _panes_or_kernel(events, _hopping(events, window, size, hop, align, window.output,
                                             resolved), resolved, strategy)


def _panes_or_kernel(events: Events, kernel_plan: Plan,
                     resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
    """`kernel_plan` (hopping windows on the interval kernel) as panes when every
    aggregation merges per-pane partials and no other strategy is asked for."""
    blocker = pane_blocker(events, resolved)
    if strategy == PANES and blocker is not None:
        raise bad_value("strategy", f"{STRATEGY!r} or None here ({blocker})", strategy)
    if blocker is not None or strategy == STRATEGY:
        return kernel_plan
    details: IntervalWindow = kernel_plan.details
    width = math.gcd(details.size, details.hop)
    if events.end is None:
        panes = (f"computes each event's pane start (time - pmod(time - align, {width}): "
                 "panes of gcd(size, hop) ticks)")
        seen = "treats each pane as one point event"
        why = "every window is a whole number of panes"
    else:
        panes = (f"computes the cells of the {details.hop}-tick hop grid holding each "
                 "event's start and its last tick (max(end, time + 1) - 1), which decide "
                 "its windows: a pane is the events of a key with the same two cells and "
                 "the same openness")
        seen = "treats each pane as one interval event [min(time), max(end))"
        why = "events with the same pane belong to the same windows"
    how = (f"Spark partitions the events by key (one shuffle), {panes}, and aggregates by "
           "(key, pane) with its own hash aggregation (partial counts, sums and extremes); "
           f"the panes are sorted (see Sorting), and the interval kernel {seen} and merges "
           "the partials of the panes each window holds (exact sums of counts and "
           "integers, float sums, extremes of extremes; a mean is sum / count).")
    return replace(kernel_plan, strategy=PANES, builder="panes:panes",
                   reason=f"{why} and every aggregation merges per-pane partial results, "
                   "so the sort and the kernel see one row per pane instead of one per "
                   "event; when panes hold about one event each, the aggregation costs "
                   "more than it saves (strategy='arrow-intervals' runs the kernel on the "
                   "events)",
                   how=how, details=Panes(details, width))


def plan_snapshot(events: Events, window: Snapshot, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    _check(events, strategy, "Snapshot")
    return _plan(events, window, resolved, IntervalWindow("snapshot"),
                 "each snapshot's live events are found from sorted start/end points",
                 "the distinct start and end points cut the timeline into snapshots; each "
                 "event is a member of the snapshots between its start and end")


def plan_count_by_start_time(events: Events, window: CountByStartTime,
                             resolved: tuple[ResolvedAggregation, ...],
                             strategy: str | None) -> Plan:
    _check(events, strategy, "CountByStartTime")
    return _plan(events, window, resolved, IntervalWindow("count", n=window.n),
                 "members of a count window are contiguous in start order, so every window "
                 "is an index range found by binary search",
                 f"window i holds the events starting from the i-th to the (i+{window.n}-1)-th "
                 "distinct start time")
