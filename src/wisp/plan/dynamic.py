"""Rules of windows driven by another event table (`Dynamic`, `clock`) and of sessions.

Dynamic windows: each anchor (a row of the anchor table, or a clock tick) opens a
window `[start, end]` over the source events of its key, found by binary search in the
key's sorted event times (a sort-based sweep: no join, no cross product). Sessions: one
pass over each key's sorted events.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from decimal import Decimal

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import WispUnsupportedError, bad_value
from ..events import Events, TimeColumn, time_kind
from ..spec.time import instant_to_micros
from ..spec.windows import Clock, Dynamic, Session
from .aggregations import refuse_lifetimes
from .durations import resolve_duration
from .nodes import Plan, ResolvedAggregation
from .planner import kernel_shape, tie_break_columns

DYNAMIC_STRATEGY = "arrow-dynamic"
SESSION_STRATEGY = "arrow-sessions"


@dataclass(frozen=True)
class Bound:
    """A window bound or obsolete time: "none" (start/end: the anchor's time; obsolete:
    no bound), "offset" (anchor time + `offset` ticks) or "column" (an absolute time,
    `expression` evaluated on the anchor row)."""

    kind: str
    offset: int | float = 0
    expression: Column | None = None


@dataclass(frozen=True)
class ClockTicks:
    """A clock in ticks of the source's time column; None = the key's first/last time."""

    every: int | float
    align: int | float | None
    start: int | float | None
    end: int | float | None


@dataclass(frozen=True)
class DynamicDetails:
    anchors: Events | None
    clock: ClockTicks | None
    start: Bound
    end: Bound
    obsolete: Bound
    closed: str
    check_obsolete: bool
    anchor_tie_break: tuple[str, ...]


@dataclass(frozen=True)
class SessionDetails:
    gap: int | float
    max_duration: int | float | None


def _check(resolved: tuple[ResolvedAggregation, ...], strategy: str | None,
           name: str, kind: str) -> None:
    refuse_lifetimes(resolved)
    if strategy is not None and strategy != name:
        raise bad_value("strategy", f"{name!r} for {kind} windows or None", strategy)


def resolve_instant(value: object, time: TimeColumn, param: str) -> int | float:
    """An instant (`Clock`'s start, end, align) in ticks of `time`'s column."""
    if time.uses_time_units:
        if not isinstance(value, (_dt.datetime, _dt.date)):
            raise bad_value(param, f"a datetime or a date for {time.kind} time column "
                            f"{time.name!r}", value)
        return instant_to_micros(value, param)
    if not isinstance(value, (int, float, Decimal)) or isinstance(value, bool):
        raise bad_value(param, f"a number for {time.kind} time column {time.name!r}", value)
    if value == 0:
        return 0.0 if time.kind == "float" else 0
    return resolve_duration(value, time, param)


def _bound(window: Dynamic, param: str, events: Events) -> Bound:
    kind = window.bound_kind(param)
    value = getattr(window, param)
    if kind == "none":
        return Bound("none")
    if kind == "offset":
        return Bound("offset", resolve_duration(value, events.time, param))
    anchors: Events = window.anchors
    expression = F.col("`" + value.replace("`", "``") + "`") if kind == "column" else value
    if kind == "column" and value not in anchors.df.columns:
        raise bad_value(param, f"a duration or a column of the anchor table (columns: "
                        f"{', '.join(anchors.df.columns)})", value)
    try:
        data_type = anchors.df.select(expression.alias("b")).schema["b"].dataType
    except Exception as error:  # an expression Spark cannot resolve on the anchor table
        raise bad_value(param, "a Column over the anchor table's columns",
                        str(expression)) from error
    if not _same_time_type(data_type, events.time):
        raise bad_value(param, f"a time of the same type as the source's `time` "
                        f"({events.time.data_type.simpleString()})",
                        f"{data_type.simpleString()} {value if kind == 'column' else 'Column'}")
    return Bound("column", expression=expression)


def _same_time_type(data_type: T.DataType, time: TimeColumn) -> bool:
    kind = time_kind(data_type)
    if kind != time.kind:
        return False
    return not isinstance(data_type, T.DecimalType) or data_type.scale == time.scale


def _check_anchor_table(anchors: object, events: Events) -> Events:
    if not isinstance(anchors, Events):
        raise bad_value("anchors", "an event table (wisp.events(...)) or wisp.clock(...)",
                        type(anchors).__name__)
    if anchors.is_interval:
        raise WispUnsupportedError("anchor tables of interval events are not supported: "
                                   "give the anchors as point events (wisp.events without "
                                   "`end`) and the window bounds as columns")
    if not _same_time_type(anchors.time.data_type, events.time):
        raise bad_value("anchors", f"an event table whose `time` has the type of the "
                        f"source's ({events.time.data_type.simpleString()})",
                        f"{anchors.time.data_type.simpleString()} column "
                        f"{anchors.time.name!r}")
    if list(anchors.key) != list(events.key):
        raise bad_value("anchors", f"an event table with the source's key columns "
                        f"{list(events.key)!r}", list(anchors.key))
    source_types = {f.name: f.dataType for f in events.df.schema.fields}
    for f in anchors.df.schema.fields:
        if f.name in anchors.key and f.dataType != source_types[f.name]:
            raise bad_value("anchors", f"key column {f.name!r} of type "
                            f"{source_types[f.name].simpleString()} (as in the source)",
                            f.dataType.simpleString())
    return anchors


def _clock(clock: Clock, time: TimeColumn) -> ClockTicks:
    every = resolve_duration(clock.every, time, "every")
    start = None if clock.start is None else resolve_instant(clock.start, time, "start")
    end = None if clock.end is None else resolve_instant(clock.end, time, "end")
    align = None if clock.align is None else resolve_instant(clock.align, time, "align")
    if align is None and start is not None:
        align = start
    return ClockTicks(every, align, start, end)


def plan_dynamic(events: Events, window: Dynamic, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    _check(resolved, strategy, DYNAMIC_STRATEGY, "Dynamic")
    if events.is_interval:
        raise WispUnsupportedError("Dynamic windows over interval events are not executed "
                                   "yet: bind the source as point events")
    clock = window.anchors if isinstance(window.anchors, Clock) else None
    anchors = None if clock is not None else _check_anchor_table(window.anchors, events)
    start = _bound(window, "start", events)
    end = _bound(window, "end", events)
    obsolete = _bound(window, "obsolete", events)
    # Offsets only: obsolete times rise with the anchors' times, and a start offset at or
    # after the obsolete offset can never start before an earlier anchor's obsolete.
    static_ok = obsolete.kind == "none" or (
        start.kind in ("none", "offset") and obsolete.kind == "offset"
        and start.offset >= obsolete.offset)
    details = DynamicDetails(
        anchors, None if clock is None else _clock(clock, events.time), start, end,
        obsolete, window.closed, not static_ok,
        () if anchors is None else tie_break_columns(anchors))
    source = "clock ticks generated in the kernel from each key's first to last event " \
        "(or the clock's start/end)" if clock is not None else \
        "the anchor rows, unioned with the events (a sort-based sweep, no join)"
    check = ("the obsolete rules checked per key in the same pass; a violation fails the "
             "query through raise_error naming the anchor's time" if details.check_obsolete
             else "the obsolete rules hold by construction (offsets only), so no check runs")
    how = (kernel_shape("key and time") + " takes each "
           f"key's run: anchors from {source}; each window's [lo, hi) found by binary "
           "search of its start and end in the key's sorted event times (windows may have "
           "any size and need not move monotonically: O((n + m) log n)); aggregates over "
           f"all frames at once (prefix sums and a disjoint sparse table); {check}.")
    return Plan(events, window, resolved, DYNAMIC_STRATEGY,
                "the windows come from another stream, so no frame of Spark's window "
                "operator fits; a join of anchors and events would copy every event into "
                "every window, the sweep touches each event once", how, "dynamic:dynamic",
                tie_break_columns(events), details)


def plan_session(events: Events, window: Session, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    _check(resolved, strategy, SESSION_STRATEGY, "Session")
    gap = resolve_duration(window.gap, events.time, "gap")
    cap = None if window.max_duration is None else resolve_duration(
        window.max_duration, events.time, "max_duration")
    details = SessionDetails(gap, cap)
    if cap is None:
        split = ("sessions found vectorised (a running maximum of the events' reach and a "
                 "comparison with each event's time)")
    elif events.is_interval:
        split = ("sessions split at max_duration found vectorised within each uncapped "
                 "session (each event's last earlier covering event and each start's first "
                 "break by binary lifting, then the chain of session starts); an uncapped "
                 "session longer than the kernel's block (32,768 events) is walked one "
                 "capped session at a time")
    else:
        split = ("sessions split at max_duration found vectorised (the uncapped gaps, then "
                 "within each uncapped session the chain of starts first -> first event at "
                 "or after first + max_duration -> ... by pointer doubling)")
    lifetimes = " (interval events reach to their end)" if events.is_interval else ""
    how = (kernel_shape("key, time and tie-break") +
           f" walks each key's run of events{lifetimes}: {split}; aggregates over all "
           "sessions at once.")
    return Plan(events, window, resolved, SESSION_STRATEGY,
                "a session's extent depends on every earlier event of the key (a running "
                "reach, and with max_duration where the session began), which no frame of "
                "Spark's window operator expresses; the kernel finds them in the same pass "
                "as the aggregates, O(n log n) per key",
                how, "sessions:sessions", tie_break_columns(events), details)
