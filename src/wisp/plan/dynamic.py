"""Rule of windows driven by another event table (`Dynamic`, `clock`).

Each anchor (a row of the anchor table, or a clock tick) opens a window `[start, end]`
over the source events of its key, found by binary search in the key's sorted event
times (a sort-based sweep: no join, no cross product).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value
from ..spec.limits import MAX_TICKS, too_many_ticks
from ..spec.windows import Clock, Dynamic
from .aggregations import check_strategy, refuse_interval_events
from .durations import resolve_duration, resolve_instant
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import (
    ColumnType,
    ExprRef,
    Inputs,
    Source,
    TimeColumn,
    kernel_shape,
    same_time_type,
    tie_break_columns,
)
from .streaming import Streamed, stream_rule

DYNAMIC_STRATEGY = "arrow-dynamic"


@dataclass(frozen=True)
class Bound:
    """A window bound or obsolete time: "none" (start/end: the anchor's time; obsolete:
    no bound), "offset" (anchor time + `offset` ticks) or "column" (an absolute time,
    the anchor table's column or expression `expression`, resolved by the engine)."""

    kind: str
    offset: int | float = 0
    expression: ExprRef | None = None


@dataclass(frozen=True)
class ClockTicks:
    """A clock in ticks of the source's time column; None = the key's first/last time;
    `max_ticks`: the most ticks one key may generate."""

    every: int | float
    align: int | float | None
    start: int | float | None
    end: int | float | None
    max_ticks: int = MAX_TICKS


@dataclass(frozen=True, kw_only=True)
class DynamicPlan(Plan):
    """`arrow-dynamic`: anchors (the `anchors` table, or `clock` ticks made in the
    kernel) and events of each key swept together; `anchor_tie_break` orders anchors
    with equal time; `check_obsolete` says whether the obsolete rules need a check."""

    anchors: Source | None
    clock: ClockTicks | None
    start: Bound
    end: Bound
    obsolete: Bound
    closed: str
    check_obsolete: bool
    anchor_tie_break: tuple[str, ...]

    strategy = DYNAMIC_STRATEGY

    def how(self) -> str:
        anchors = ("clock ticks generated in the kernel from each key's first to last event "
                   "(or the clock's start/end)" if self.clock is not None else
                   "the anchor rows, unioned with the events (a sort-based sweep, no join)")
        check = ("the obsolete rules checked per key in the same pass; a violation fails "
                 "the query through raise_error naming the anchor's time"
                 if self.check_obsolete else
                 "the obsolete rules hold by construction (offsets only), so no check runs")
        return (kernel_shape("key and time") + " takes each "
                f"key's run: anchors from {anchors}; each window's [lo, hi) found by binary "
                "search of its start and end in the key's sorted event times (windows may "
                "have any size and need not move monotonically: O((n + m) log n)); "
                "aggregates over all frames at once (prefix sums and a disjoint sparse "
                f"table); {check}.")


def _bound(inputs: Inputs, window: Dynamic, param: str, anchors: Source | None) -> Bound:
    source = inputs.source
    kind = window.bound_kind(param)
    value = getattr(window, param)
    if kind == "none":
        return Bound("none")
    if kind == "offset":
        return Bound("offset", resolve_duration(value, source.time, param))
    assert anchors is not None  # a clock's bounds are offsets (checked by the spec)
    column_type: ColumnType | None
    if kind == "column":
        if anchors.field(value) is None:
            raise bad_value(param, f"a duration or a column of the anchor table (columns: "
                            f"{', '.join(anchors.names)})", value)
        column_type = anchors.types()[value]
        shown = value
    else:
        info = inputs.expressions[param]
        if info.type is None:  # an expression Spark cannot resolve on the anchor table
            raise bad_value(param, "a Column over the anchor table's columns", info.text)
        column_type = info.type
        shown = "Column"
    if not same_time_type(column_type, source.time):
        raise bad_value(param, f"a time of the same type as the source's `time` "
                        f"({source.time.type.text})", f"{column_type.text} {shown}")
    return Bound("column", expression=ExprRef(param))


def _check_anchor_table(inputs: Inputs, window: Dynamic) -> Source:
    source = inputs.source
    anchors = inputs.tables.get("anchors")
    if anchors is None:
        raise bad_value("anchors", "an event table (wisp.events(...)) or wisp.clock(...)",
                        type(window.anchors).__name__)
    if anchors.is_interval:
        raise WispUnsupportedError(
            "`anchors` must be point events (wisp.events without `end`), with the window "
            f"bounds as columns, found interval events (`end` column {anchors.end!r})")
    if not same_time_type(anchors.time.type, source.time):
        raise bad_value("anchors", f"an event table whose `time` has the type of the "
                        f"source's ({source.time.type.text})",
                        f"{anchors.time.type.text} column {anchors.time.name!r}")
    if list(anchors.key) != list(source.key):
        raise bad_value("anchors", f"an event table with the source's key columns "
                        f"{list(source.key)!r}", list(anchors.key))
    source_types = source.types()
    for c in anchors.columns:
        if c.name in anchors.key and c.type != source_types[c.name]:
            raise bad_value("anchors", f"key column {c.name!r} of type "
                            f"{source_types[c.name].text} (as in the source)", c.type.text)
    return anchors


def _check_same_mode(source: Source, anchors: Source) -> None:
    """Anchors and events both streams or both batch tables: on a stream they are one
    stateful operator over the union of the two inputs, each with its own watermark;
    a batch table has no watermark to say when its rows are complete, and a stream
    never ends for a batch query to read it whole."""
    if (anchors.lateness is None) == (source.lateness is None):
        return
    if source.lateness is not None:
        raise WispUnsupportedError(
            "`anchors` must be a streaming event table (wisp.events over a streaming "
            "DataFrame, with its lateness) when the source is a stream, found a batch "
            "table: a batch table's rows cannot join the stream's watermark")
    raise WispUnsupportedError(
        "`anchors` must be a batch event table when the source is a batch table, found "
        "a streaming event table (lateness "
        f"{anchors.lateness} ticks): make the source a stream too, with its lateness")


def _ticks_between(first: int | float, last: int | float, every: int | float,
                   align: int | float) -> int:
    """How many `align + k*every` lie in `[first, last]` (exact for integer ticks)."""
    if isinstance(every, int) and isinstance(align, int) and isinstance(first, int) \
            and isinstance(last, int):
        return max(0, (last - align) // every + (align - first) // every + 1)
    return max(0, math.floor((last - align) / every) - math.ceil((first - align) / every)
               + 1)


def _clock(clock: Clock, time: TimeColumn) -> ClockTicks:
    every = resolve_duration(clock.every, time, "every")
    start = None if clock.start is None else resolve_instant(clock.start, time, "start")
    end = None if clock.end is None else resolve_instant(clock.end, time, "end")
    align = None if clock.align is None else resolve_instant(clock.align, time, "align")
    if align is None and start is not None:
        align = start
    if start is not None and end is not None:
        count = _ticks_between(start, end, every, 0 if align is None else align)
        if count > clock.max_ticks:
            raise too_many_ticks("every", count, clock.max_ticks, "clock",
                                 f"between the clock's start {clock.start!r} and end "
                                 f"{clock.end!r}")
    return ClockTicks(every, align, start, end, clock.max_ticks)


@rule(Dynamic)
def plan_dynamic(inputs: Inputs, window: Dynamic, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    source = inputs.source
    check_strategy(resolved, strategy, DYNAMIC_STRATEGY, "Dynamic")
    refuse_interval_events(source, "Dynamic")
    clock = window.anchors if isinstance(window.anchors, Clock) else None
    anchors = None if clock is not None else _check_anchor_table(inputs, window)
    if anchors is not None:
        _check_same_mode(source, anchors)
    start = _bound(inputs, window, "start", anchors)
    end = _bound(inputs, window, "end", anchors)
    obsolete = _bound(inputs, window, "obsolete", anchors)
    # Offsets only: obsolete times rise with the anchors' times, and a start offset at or
    # after the obsolete offset can never start before an earlier anchor's obsolete.
    static_ok = obsolete.kind == "none" or (
        start.kind in ("none", "offset") and obsolete.kind == "offset"
        and start.offset >= obsolete.offset)
    return DynamicPlan(
        source=source, window=repr(window), aggregations=resolved,
        tie_break=tie_break_columns(source),
        reason="the windows come from another stream, so no frame of Spark's window "
        "operator fits; a join of anchors and events would copy every event into "
        "every window, the sweep touches each event once",
        anchors=anchors, clock=None if clock is None else _clock(clock, source.time),
        start=start, end=end, obsolete=obsolete, closed=window.closed,
        check_obsolete=not static_ok,
        anchor_tie_break=() if anchors is None else tie_break_columns(anchors))


@stream_rule(Dynamic, label="Dynamic (anchors from a stream, or a clock)")
def stream_dynamic(inputs: Inputs, window: Dynamic,
                   resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """Dynamic windows on a stream: anchors from a second stream (one operator over the
    union of both, whose watermark is the smaller of the two), or a clock."""
    if inputs.source.on_late != "count":
        raise WispUnsupportedError(
            "`on_late` must be 'count' for Dynamic windows on a stream, found "
            f"{inputs.source.on_late!r}: their late anchors and events are counted "
            "(wisp.stream_report), not output as rows")
    inner = plan_dynamic(inputs, window, resolved, DYNAMIC_STRATEGY)
    assert isinstance(inner, DynamicPlan)
    closed = ("the window's end" if window.closed in ("both", "right") else
              "one tick before the window's end (open on the right)")
    if inner.clock is not None:
        until = ("the clock's end" if inner.clock.end is not None else
                 "the watermark, for ever (a stream has no last event)")
        return Streamed(inner, "the next tick and the events from its window's start on",
                "the ticks from the key's first event (or the clock's start) up to "
                f"{until}: a tick's window once the watermark is at or past the tick and "
                f"{closed}; a watermark jump over many ticks emits them "
                "all in one step (at most max_ticks)")
    return Streamed(inner, "the anchors whose windows are not final yet (an anchor without an "
            "end waits for ever) and the events such a window or a later anchor's can "
            "reach: none older than the largest obsolete so far",
            "an anchor's window once the watermark (the smaller of the anchors' and the "
            f"events' watermarks) is at or past the anchor and {closed}; an "
            "obsolete promise broken fails the query when its anchor arrives")
