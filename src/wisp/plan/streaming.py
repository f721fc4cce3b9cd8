"""Planning a query over a stream: which window kinds run on Structured Streaming, the
kernel plan each runs with, and what the stream keeps and when it emits.

A stream runs a resumable kernel per key inside Spark's stateful operator
(`engine/streaming.py`): the key's state between micro-batches is the kernel's state plus
the rows that arrived ahead of the watermark. The kernel plan is the batch rule's own
plan with its kernel strategy forced (`arrow-frames`, `arrow-intervals`,
`arrow-sessions`, `arrow-spl`, `arrow-ticks` for `Since` over calendar ticks and
`Trailing`, `arrow-dynamic`: anchors from a second stream, each input with its
own watermark, or a clock that ticks with the watermark; `stream-panes` for
`Tumbling`/`Hopping` whose aggregations all have pane partials), or, for running
aggregates (`ev.agg`, `Since(predicate)`), an `AccumulatorsPlan`: accumulators
carried per key instead of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import WispUnsupportedError
from ..spec.features import FeatureSet
from ..spec.policies import Count, Delta, Punctuation, Time
from ..spec.windows import (
    CalendarTick,
    CountByStartTime,
    Dynamic,
    Hopping,
    Range,
    Rows,
    Session,
    Since,
    Sliding,
    Snapshot,
    Trailing,
    Tumbling,
)
from .dynamic import DynamicPlan
from .frames import RangeFrame, RowsFrame
from .intervals import HoppingWindows
from .nodes import Plan, ResolvedAggregation
from .periods import AccumulatorsPlan, Ticks, TicksPlan
from .registry import NoWindow, rule_for
from .source import Inputs, tie_break_columns

STREAM_STRATEGY = "stream"
PANES_STRATEGY = "stream-panes"
PARTIALS = ("row and value counts, exact sums, squared deviations, extremes, the row a "
            "first, last, max_by or min_by picks with its time and tie-break columns, "
            "the distinct values, a commutative user aggregator's state")
"""What a pane's partial aggregates hold, in words (`runtime.partials`)."""
PANE_TIME_KINDS = ("timestamp", "timestamp_ntz", "date", "integer")
EDGE_KINDS = ("Tumbling and Hopping by duration (output='windows')", "Snapshot",
              "CountByStartTime")
"""The kinds that run over a stream of start/end edges (`wisp.from_edges`)."""
STREAM_KINDS = ("cumulative (ev.agg)", "Since", "Trailing", "Rows", "Range",
                "Tumbling and Hopping by duration (output='windows')", "Snapshot",
                "CountByStartTime", "Session", "Sliding", "Tumbling by policy",
                "Dynamic (anchors from a stream, or a clock)",
                "feature sets (Events.features; label rows from a second stream)")


def carried_by_panes(resolved: ResolvedAggregation) -> bool:
    """Whether a pane carries the partials of `resolved` (`Definition.stream_panes`):
    and for a declared type (a user's aggregator), one of atomic values, which the pane
    path's output crosses as JSON text (`runtime.json_rows`)."""
    aggregation = resolved.aggregation
    if aggregation.returns is not None and nested_type(aggregation.returns):
        return False
    return resolved.value_class in aggregation.definition.stream_panes


def crosses_as_json(resolved: ResolvedAggregation) -> bool:
    """Whether the output of `resolved` crosses from the pane operator as JSON text
    (`runtime.json_rows`): atomic values do; arrays and maps (k-collections,
    histograms, a list of quantiles) are written by the rows-carrying operator."""
    return resolved.output.kind not in ("array", "map", "doubles")


def nested_type(ddl: str) -> bool:
    """Whether a Spark DDL type names an array, map or struct (`array<...>`,
    `a int, b string`)."""
    return any(mark in ddl for mark in ("<", ",", ":")) or ddl.strip().lower() in (
        "array", "map", "struct")


KEY_BUCKETS = 16
"""Keyed pane queries group their keys into this many buckets, one stored value each
(`runtime/stream_buckets.py`); part of the state's layout, so a constant."""


@dataclass(frozen=True, kw_only=True)
class PanesPlan(Plan):
    """`stream-panes`: tumbling and hopping windows over point events on a stream, from
    partial aggregates per pane (`runtime/stream_panes.py`): `windows` as in batch."""

    windows: HoppingWindows

    strategy = PANES_STRATEGY

    def how(self) -> str:
        return ("the timeline is cut into panes of gcd(size, hop); a kernel per key adds "
                f"each row to its pane's partial aggregates ({PARTIALS}) as it arrives, "
                "and writes a window from its panes' partials once no later row can fall "
                "in it.")


@dataclass(frozen=True, kw_only=True)
class StreamPlan(Plan):
    """A query over a stream: `inner`, the kernel's plan; `lateness` in ticks; in words,
    the state kept per key (`state`) and when an output row is emitted (`emits`)."""

    inner: Plan
    lateness: int
    state: str
    emits: str

    strategy = STREAM_STRATEGY

    @property
    def sorts(self) -> bool:
        """Pane partials take rows in any order: nothing is sorted."""
        return not isinstance(self.inner, PanesPlan)

    def how(self) -> str:
        if isinstance(self.inner, PanesPlan) and self.source.on_late != "emit":
            keyed = bool(self.source.key)
            sent = (f"sent as one Arrow payload per bucket of keys (a hash of the key into "
                    f"{KEY_BUCKETS} buckets)" if keyed else "sent as one Arrow payload")
            return (f"Structured Streaming on {PANES_STRATEGY}: where the rows are read, "
                    "each task reduces its rows to one row of partial aggregates per "
                    f"{'key and ' * keyed}pane (panes of gcd(size, hop); {PARTIALS}), "
                    f"{sent}, to Spark's stateful operator (transformWithStateInPandas, "
                    "event time, RocksDB state store), which adds them to the panes"
                    + (" of their keys (one stored value per bucket holds the state of "
                       "each of its keys)" if keyed else "")
                    + "; a window is written from its panes' partials once no later row "
                    "can fall in it (the operator writes the windows as JSON text, which "
                    f"Spark reads back in the JVM). State per key: {self.state}. "
                    f"Emitted: {self.emits}. "
                    "Late rows: Spark's late filter is off (it reads each row's time); a "
                    "row is late when a window holding it was already closed for its key, "
                    "and wisp's operator drops and counts it (wisp.stream_report). One "
                    "event-time timer " + ("per bucket, at its keys' earliest, wakes the "
                                           "keys" if keyed else "wakes the operator")
                    + " when a window can be final.")
        if isinstance(self.inner, PanesPlan) and self.source.key:
            return (f"Structured Streaming on {PANES_STRATEGY}: rows grouped by a hash of "
                    "the key into "
                    f"{KEY_BUCKETS} buckets, in Spark's stateful operator "
                    "(transformWithStateInPandas, event time, RocksDB state store); one "
                    "stored value per bucket holds the state of each of its keys; per key, "
                    f"{self.inner.how()} State per key: {self.state}. Emitted: "
                    f"{self.emits}. {self.late()} One event-time timer per bucket, at its "
                    "keys' earliest, wakes the keys whose next window can be final.")
        if isinstance(self.inner, PanesPlan):
            return (f"Structured Streaming on {PANES_STRATEGY}: every row in one group of "
                    "Spark's stateful "
                    "operator (transformWithStateInPandas, event time, RocksDB state "
                    f"store); {self.inner.how()} State: {self.state}. Emitted: "
                    f"{self.emits}. {self.late()} One event-time timer wakes it when its "
                    "next window can be final.")
        edges = ""
        if self.source.edges is not None:
            edge, ident = self.source.edges
            edges = (f"Start and end edges ({edge!r}) are paired per id ({ident!r}) in "
                     "time order, a start before an end at the same time: each start "
                     "edge goes in as an open-ended event, and its end edge, when it "
                     "passes the watermark, sets its end on the event the kernel carries; "
                     "an end edge without a start fails the query. ")
        grouped = ("rows grouped by key into" if self.source.key else
                   "every row in one group of")
        return (f"Structured Streaming: {grouped} Spark's stateful operator "
                "(transformWithStateInPandas, event time, RocksDB state store); per key, "
                "the rows ahead of the watermark wait in the state, and those at or "
                "below it are sorted by time and tie-break and fed to the resumable "
                f"kernel of the batch strategy {self.inner.strategy}, told that no later "
                f"row comes at or below the watermark. {edges}State per key: "
                f"{self.state}. "
                f"Emitted: {self.emits}. {self.late()} One event-time timer per key "
                "wakes it when its next output can be final.")

    def late(self) -> str:
        if self.source.on_late == "emit" and isinstance(self.inner, PanesPlan):
            return ("Late rows (on_late='emit'): Spark's late filter is off; a row in a "
                    "window already closed for its key comes out as a row with "
                    "late_reason and late_row set (wisp.stream_report counts them).")
        if self.source.on_late == "emit":
            return ("Late rows (on_late='emit'): Spark's late filter is off; a row below "
                    "the watermark its key was already fed up to comes out as a row with "
                    "late_reason and late_row set (wisp.stream_report counts them).")
        return ("Rows at or below the watermark of the batch before theirs are late: "
                "Spark drops and counts them (wisp.stream_report).")


def plan_stream(inputs: Inputs, window: object, resolved: tuple[ResolvedAggregation, ...],
                strategy: str | None) -> StreamPlan:
    """The stream plan of `window` over the streaming source of `inputs`, or a
    `WispUnsupportedError` saying which kinds run on a stream."""
    source = inputs.source
    assert source.lateness is not None
    if strategy not in (None, STREAM_STRATEGY):
        raise WispUnsupportedError(f"`strategy` must be '{STREAM_STRATEGY}' or None for a "
                                   f"query over a stream, found {strategy!r}")
    name = "cumulative aggregation" if isinstance(window, NoWindow) else \
        type(window).__name__
    unbounded = [r.name for r in resolved if r.aggregation.definition.needs_values]
    if unbounded and (isinstance(window, NoWindow) or _predicate_ticks(window)):
        raise WispUnsupportedError(
            f"`aggregations` must not read every value of a window that never closes "
            f"({name}) on a stream, found {', '.join(unbounded)}: its state would keep "
            "every row of a key for ever; use a bounded window (Rows, Range, Tumbling, "
            "Session) for collect, udaf, quantile, median and count_distinct")
    if source.edges is not None:
        _check_edge_kind(window, name)
    inner, state, emits = _inner(inputs, window, resolved, name)
    if source.edges is not None:
        state += ("; and per id whose last edge was a start, that start's time (an id "
                  "whose start never gets an end edge stays for ever)")
        emits += ("; a start edge is an open-ended event until its end edge passes the "
                  "watermark, which then sets its end")
    reason = ("the source is a streaming DataFrame: each key's rows go through the "
              "kernel's resumable steps as the watermark passes them")
    if isinstance(inner, PanesPlan):
        reason = ("the source is a streaming DataFrame, and every aggregation has a "
                  "partial state: each row goes into its pane's partials as it arrives, "
                  "and a window is written once the watermark passes its end")
    return StreamPlan(source=source, window=inner.window, aggregations=resolved,
                      tie_break=tie_break_columns(source), reason=reason,
                      inner=inner, lateness=source.lateness, state=state, emits=emits)


def _unsupported(name: str, why: str = "") -> WispUnsupportedError:
    return WispUnsupportedError(
        f"`window` must be one of {', '.join(STREAM_KINDS)} on a stream (the other kinds "
        f"do not run on a stream yet), found {name}{why}")


def _batch_rule_plan(inputs: Inputs, window: object,
                     resolved: tuple[ResolvedAggregation, ...], strategy: str) -> Plan:
    rule = rule_for(window)
    assert rule is not None
    return rule(inputs, window, resolved, strategy)


def _inner(inputs: Inputs, window: object, resolved: tuple[ResolvedAggregation, ...],
           name: str) -> tuple[Plan, str, str]:
    """The kernel plan of `window`, the state it keeps per key, and when it emits."""
    source = inputs.source
    if isinstance(window, NoWindow):
        return (AccumulatorsPlan(source=source, window=repr(window), aggregations=resolved,
                                 tie_break=tie_break_columns(source), reason="a stream",
                                 ticks=None),
                "one accumulator set (a few numbers per aggregation; a user aggregator's "
                "own state)",
                "each row's output once the watermark passes its time")
    if isinstance(window, (Since, Trailing)):
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-ticks")
        assert isinstance(inner, TicksPlan)
        ticks = inner.ticks
        if ticks.predicate is not None and not ticks.trailing:
            return (AccumulatorsPlan(source=source, window=repr(window),
                                     aggregations=resolved,
                                     tie_break=tie_break_columns(source),
                                     reason="a stream", ticks=ticks),
                    "one accumulator set since the last tick row",
                    "each row's output once the watermark passes its time")
        return (inner, *_ticks_kept(ticks))
    if isinstance(window, (Rows, Range)):
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-frames")
        frame = getattr(inner, "frame", None)
        if isinstance(frame, RowsFrame):
            return (inner, f"the last {max(0, -frame.first)} rows and the rows whose "
                    f"windows wait for {max(0, frame.last)} more rows",
                    "a row's window once its last row has arrived and the watermark "
                    "passed it")
        assert isinstance(frame, RangeFrame)
        return (inner, "the rows within the window's reach (end - start) of the newest "
                "row, and the anchors not yet final",
                "a row's window once the watermark passes its time + end (a forward "
                "end adds its length to the latency)")
    if isinstance(window, Sliding) or (isinstance(window, Tumbling)
                                       and _policy_sized(window)):
        return _policies(inputs, window, resolved, name)
    if isinstance(window, (Tumbling, Hopping)):
        if getattr(window, "output", "windows") != "windows":
            raise _unsupported(f"{name}(output='changes')", " (its rows can wait for "
                               "ever for the result to change)")
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-intervals")
        if source.is_interval:
            return (inner, "the events alive in the windows not yet final (an event "
                    "stays while it is alive: open-ended events for ever)",
                    "a window once the watermark passes its end")
        windows = getattr(inner, "windows", None)
        if isinstance(windows, HoppingWindows) and source.time.kind in PANE_TIME_KINDS \
                and all(carried_by_panes(r) and crosses_as_json(r) for r in resolved):
            panes = PanesPlan(source=source, window=inner.window, aggregations=resolved,
                              tie_break=inner.tie_break, reason=(
                                  "every aggregation has partials a pane can carry"),
                              windows=windows)
            return (panes, "one row of partial aggregates per non-empty pane of the "
                    "windows not yet final (at most size / gcd(size, hop) + the panes "
                    "the lateness spans), not the rows", "a window once the watermark "
                    "passes its end")
        return (inner, "the rows of the windows not yet final (at most size / hop "
                "windows)", "a window once the watermark passes its end")
    if isinstance(window, Snapshot):
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-intervals")
        return (inner, "the events alive at the frontier (an event stays while it is "
                "alive: open-ended events for ever)", "a window once the watermark "
                "passes its end (the next start or end point)")
    if isinstance(window, CountByStartTime):
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-intervals")
        return (inner, f"the events of the last {window.n} distinct start times",
                "a window once the watermark passes its last start time")
    if isinstance(window, Session):
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-sessions")
        carried = ("the open session's start, largest reach and accumulators (one row, "
                   "however long the session)" if getattr(inner, "accumulated", False)
                   else "the open session's rows (bounded by max_duration when given)")
        return (inner, carried, "a session once the watermark passes its last event + gap")
    if isinstance(window, Dynamic):
        return _dynamic(inputs, window, resolved)
    if isinstance(window, FeatureSet):
        return _features(inputs, window, resolved)
    raise _unsupported(name)


def _features(inputs: Inputs, window: FeatureSet, resolved: tuple[ResolvedAggregation, ...]
              ) -> tuple[Plan, str, str]:
    """A feature set over a stream: the feature kernel's resumable steps, each event's
    row once every window of it is final, or, with label rows (`at`, a second stream),
    each label row's once the watermark passes it; a cumulative window needs every
    aggregation carried as a partial state."""
    if any(spec is None for _, spec in window.windows):
        held = [r.name for r in resolved if not carried_by_panes(r)]
        if held:
            raise WispUnsupportedError(
                "`aggregations` must each have a partial state for a feature set with a "
                f"cumulative window (None) over a stream, found {', '.join(held)}: the "
                "window never closes, so its state would keep every row of a key")
    if window.at is not None:
        if inputs.source.on_late != "count":
            raise WispUnsupportedError(
                "`on_late` must be 'count' for a feature set at label rows on a stream, "
                f"found {inputs.source.on_late!r}: its late label rows and events are "
                "counted (wisp.stream_report), not output as rows")
        inner = _batch_rule_plan(inputs, window, resolved, "arrow-features")
        return (inner, "the events later label rows can reach (the widest bounded "
                "window's, the last n tick periods', the cumulative window as one partial "
                "state)", "a label row's features once the watermark (the smaller of the "
                "label rows' and the events' watermarks) is at or past its time: every "
                "event before it has been read by then")
    inner = _batch_rule_plan(inputs, window, resolved, "arrow-features")
    return (inner, "the events the widest bounded window still reaches, the events "
            "whose windows wait for later rows or the watermark, and the cumulative "
            "window's partial state (one row)",
            "an event's row once every window of it is final: a Range window once the "
            "watermark passes the event's time + end, a Rows window once its last row "
            "has arrived, the cumulative window at once")


def _check_edge_kind(window: object, name: str) -> None:
    """Over a stream of edges only the interval kinds run: their kernels carry the
    events alive in windows not yet written, where an end edge sets its start's end."""
    by_duration = isinstance(window, (Tumbling, Hopping)) and not (
        isinstance(window, Tumbling) and _policy_sized(window))
    if by_duration or isinstance(window, (Snapshot, CountByStartTime)):
        return
    raise WispUnsupportedError(
        f"`window` must be one of {', '.join(EDGE_KINDS)} over wisp.from_edges on a "
        f"stream, found {name}: the other kinds do not read an interval's end, which "
        "the stream knows only once its end edge passes the watermark")


def _predicate_ticks(window: object) -> bool:
    """Whether `window` is a `Since` or `Trailing` over a boolean tick column, whose
    periods close only where the column is true (perhaps never)."""
    return isinstance(window, (Since, Trailing)) and not isinstance(window.tick,
                                                                    CalendarTick)


def _ticks_kept(ticks: Ticks) -> tuple[str, str]:
    """What a `Since` or `Trailing` window over the tick kernel keeps per key on a
    stream, and when it emits."""
    row = "each row's output (over its window up to the row) once the watermark passes its time"
    if ticks.calendar is None:
        return (f"the rows of the current period and the {ticks.n - 1} before it (a "
                "period ends at a row whose tick column is true: not bounded while it "
                "stays false)", row)
    if ticks.trailing:
        return (f"the rows of the current period and the {ticks.n - 1} before it, the "
                "key's first tick", row)
    tick = ("a tick's row (its period (previous tick, tick]) once the watermark reaches "
            "the tick: every tick from the key's first event's period on, empty periods "
            "included, all at once when the watermark jumps over several")
    emits = {"ticks": tick, "events": row, "both": f"{tick}; and {row}"}[ticks.emit]
    return ("the rows of the open period (after the last tick row written), the key's "
            "first tick and the last tick written (the open period's accumulators "
            "instead of its rows where every aggregation has them)", emits)


def _policy_sized(window: Tumbling) -> bool:
    return isinstance(window.size, (Count, Time, Delta, Punctuation))


def _policies(inputs: Inputs, window: Sliding | Tumbling,
              resolved: tuple[ResolvedAggregation, ...], name: str) -> tuple[Plan, str, str]:
    """Sliding and policy-sized tumbling windows: tuples enter in time order (then the
    tie-break columns) once the watermark passes them, so `order` (an arrival order
    other than time) is refused: a stream could not know that no tuple earlier in it
    is still to come."""
    source = inputs.source
    if source.order is not None:
        raise WispUnsupportedError(
            f"`order` must be None for {name} on a stream (tuples enter in time order "
            "once the watermark passes them; an arrival order other than time has no "
            f"watermark to wait for), found {source.order!r}")
    inner = _batch_rule_plan(inputs, window, resolved, "arrow-spl")
    timed = isinstance(window.trigger if isinstance(window, Sliding) else window.size,
                       Time)
    if isinstance(window, Sliding):
        state = ("the window's contents (count eviction: the last n tuples; time: the "
                 "tuples within t of the newest; delta: the tuples no later one exceeded "
                 "by more than d, not bounded for falling values)")
    elif getattr(inner, "accumulated", False):
        state = ("the open window's accumulators, its first tuple's time and attributes "
                 "and its last tuple's time (one row, however long the window)")
    else:
        state = ("the tuples since the last firing (a delta- or punctuation-sized "
                 "window: not bounded while it does not fire)")
    emits = ("every time firing once the watermark passes it, also with no new tuple "
             "and after the key's newest tuple (one per period; a jump over many "
             "periods emits them all at once)" if timed else
             "a firing once the tuple that fires it has entered (the watermark passed "
             "its time)")
    return inner, state, emits + "; a stream has no end: no flushed tail (partial)"


def _dynamic(inputs: Inputs, window: Dynamic, resolved: tuple[ResolvedAggregation, ...]
             ) -> tuple[Plan, str, str]:
    """Dynamic windows on a stream: anchors from a second stream (one operator over the
    union of both, whose watermark is the smaller of the two), or a clock."""
    if inputs.source.on_late != "count":
        raise WispUnsupportedError(
            "`on_late` must be 'count' for Dynamic windows on a stream, found "
            f"{inputs.source.on_late!r}: their late anchors and events are counted "
            "(wisp.stream_report), not output as rows")
    inner = _batch_rule_plan(inputs, window, resolved, "arrow-dynamic")
    assert isinstance(inner, DynamicPlan)
    closed = ("the window's end" if window.closed in ("both", "right") else
              "one tick before the window's end (open on the right)")
    if inner.clock is not None:
        until = ("the clock's end" if inner.clock.end is not None else
                 "the watermark, for ever (a stream has no last event)")
        return (inner, "the next tick and the events from its window's start on",
                "the ticks from the key's first event (or the clock's start) up to "
                f"{until}: a tick's window once the watermark is at or past the tick and "
                f"{closed}; a watermark jump over many ticks emits them "
                "all in one step (at most max_ticks)")
    return (inner, "the anchors whose windows are not final yet (an anchor without an "
            "end waits for ever) and the events such a window or a later anchor's can "
            "reach: none older than the largest obsolete so far",
            "an anchor's window once the watermark (the smaller of the anchors' and the "
            f"events' watermarks) is at or past the anchor and {closed}; an "
            "obsolete promise broken fails the query when its anchor arrives")
