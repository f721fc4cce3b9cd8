"""Planning a query over a stream: which window kinds run on Structured Streaming, the
kernel plan each runs with, what the stream keeps and when it emits, and the shape of
the stateful operator that runs it.

Each kind says how it streams with a stream rule registered for its spec class beside
its batch rule (`@stream_rule(Kind)`, as `@rule(Kind)` registers the batch one): the
rule returns a `Streamed`, the kernel's plan (the batch rule's own plan with its kernel
strategy forced: `arrow-frames`, `arrow-intervals`, `arrow-sessions`, `arrow-spl`,
`arrow-ticks`, `arrow-dynamic`, `arrow-features`; `stream-panes` for `Tumbling`/`Hopping`
whose aggregations all have pane partials; or an `AccumulatorsPlan` for running
aggregates: accumulators carried per key instead of rows) with the state kept per key
and when a row is emitted, in words. `plan_stream` then chooses the operator's shape, a
`StreamPlan` subclass with its own compiler (`engine.streaming`): the rows carried per
key (`CarriedRowsStream`; with revisions, the rows of the windows a key still keeps,
`RevisedRowsStream`), pane partials reduced where the rows are read
(`PanePartialsStream`), or keys sharing a stored value per bucket
(`KeyBucketsStream`). A kind without a stream rule is refused on a stream, naming the
kinds that have one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import WispUnsupportedError
from .nodes import Plan, ResolvedAggregation
from .registry import NoWindow, add_entry, entry_for
from .source import Inputs, Source, tie_break_columns

W = TypeVar("W")

STREAM_STRATEGY = "stream"
PANES_STRATEGY = "stream-panes"
PARTIALS = ("row and value counts, exact sums, squared deviations, extremes, the row a "
            "first, last, max_by or min_by picks with its time and tie-break columns, "
            "the distinct values, a commutative user aggregator's state")
"""What a pane's partial aggregates hold, in words (`runtime.aggregates.partials`)."""
PANE_TIME_KINDS = ("timestamp", "timestamp_ntz", "date", "integer")


@dataclass(frozen=True)
class Streamed:
    """How a window kind runs on a stream: `inner`, the kernel's plan; in words, the
    state kept per key (`state`) and when an output row is emitted (`emits`); `panes`
    when the kernel keeps pane partials, which a task can reduce its rows to before
    they cross to the operator."""

    inner: Plan
    state: str
    emits: str
    panes: bool = False
    revisable: bool = False
    """Whether the rows-carrying operator can write its windows again
    (`on_late="update"`, `emit="changes"`): one row per window, recomputed from the rows
    a key keeps."""


StreamRule = Callable[[Inputs, Any, tuple[ResolvedAggregation, ...]], Streamed]


@dataclass(frozen=True)
class _StreamEntry:
    rule: StreamRule
    when: Callable[[Any], bool] | None
    label: str | None
    edges: bool


_STREAM_RULES: dict[type, list[_StreamEntry]] = {}


def stream_rule(spec_class: type[W], when: Callable[[W], bool] | None = None, *,
                label: str | None = "", edges: bool = False
                ) -> Callable[[StreamRule], StreamRule]:
    """Register the decorated function as the stream rule of `spec_class` (for the specs
    where `when` holds, if given; the first registered test that holds wins, a rule
    without `when` is the fallback). `label` names the kind in the refusal that lists
    what runs on a stream (by default the class's name; None: a rule that only
    refuses, listed nowhere); `edges` when it also runs over a stream of start and end
    edges (`wisp.from_edges`)."""
    name = spec_class.__name__ if label == "" else label

    def register(function: StreamRule) -> StreamRule:
        add_entry(_STREAM_RULES, spec_class, _StreamEntry(function, when, name, edges))
        return function
    return register


def _labels(edges: bool) -> list[str]:
    """The kinds that run on a stream (over edges: that read an interval's end), in
    words, sorted."""
    labels = {e.label for entries in _STREAM_RULES.values() for e in entries
              if e.label is not None and (e.edges or not edges)}
    return sorted(labels, key=str.lower)


def unsupported_on_stream(name: str, why: str = "") -> WispUnsupportedError:
    """The refusal of a kind (`name`) that does not run on a stream, listing those that
    do."""
    return WispUnsupportedError(
        f"`window` must be one of {', '.join(_labels(edges=False))} on a stream (the other "
        f"kinds do not run on a stream yet), found {name}{why}")


def refuse_values_of_unclosed(resolved: tuple[ResolvedAggregation, ...], name: str) -> None:
    """A window that never closes (`name`) cannot keep every value of a key."""
    unbounded = [r.name for r in resolved if r.aggregation.definition.needs_values]
    if unbounded:
        raise WispUnsupportedError(
            f"`aggregations` must not read every value of a window that never closes "
            f"({name}) on a stream, found {', '.join(unbounded)}: its state would keep "
            "every row of a key for ever; use a bounded window (Rows, Range, Tumbling, "
            "Session) for collect, udaf, quantile, median and count_distinct")


def carried_by_panes(resolved: ResolvedAggregation) -> bool:
    """Whether a pane carries the partials of `resolved` (`Definition.stream_panes`):
    and for a declared type (a user's aggregator), one of atomic values, which the pane
    path's output crosses as JSON text (`runtime.codecs.json_rows`)."""
    aggregation = resolved.aggregation
    if aggregation.returns is not None and nested_type(aggregation.returns):
        return False
    return resolved.value_class in aggregation.definition.stream_panes


def crosses_as_json(resolved: ResolvedAggregation) -> bool:
    """Whether the output of `resolved` crosses from the pane operator as JSON text
    (`runtime.codecs.json_rows`): atomic values do; arrays and maps (k-collections,
    histograms, a list of quantiles) are written by the rows-carrying operator."""
    return resolved.output.kind not in ("array", "map", "doubles")


def nested_type(ddl: str) -> bool:
    """Whether a Spark DDL type names an array, map or struct (`array<...>`,
    `a int, b string`)."""
    return any(mark in ddl for mark in ("<", ",", ":")) or ddl.strip().lower() in (
        "array", "map", "struct")


KEY_BUCKETS = 16
"""Keyed pane queries group their keys into this many buckets, one stored value each
(`runtime/streaming/buckets.py`); part of the state's layout, so a constant."""


@dataclass(frozen=True, kw_only=True)
class StreamPlan(Plan):
    """A query over a stream: `inner`, the kernel's plan; `lateness` in ticks; in words,
    the state kept per key (`state`) and when an output row is emitted (`emits`).
    Each subclass is one shape of Spark's stateful operator, with its own compiler."""

    inner: Plan
    lateness: int
    state: str
    emits: str

    strategy = STREAM_STRATEGY

    def late(self) -> str:
        """What happens to late rows, in words."""
        if self.source.on_late == "emit":
            return ("Late rows (on_late='emit'): Spark's late filter is off; a row below "
                    "the watermark its key was already fed up to comes out as a row with "
                    "late_reason and late_row set (wisp.stream_report counts them).")
        return ("Rows at or below the watermark of the batch before theirs are late: "
                "Spark drops and counts them (wisp.stream_report).")

    def edges(self) -> str:
        """How start and end edges become events, in words ("" without edges)."""
        if self.source.edges is None:
            return ""
        edge, ident = self.source.edges
        return (f"Start and end edges ({edge!r}) are paired per id ({ident!r}) in time "
                "order, a start before an end at the same time: each start edge goes in "
                "as an open-ended event, and its end edge, when it passes the watermark, "
                "sets its end on the event the kernel carries; an end edge without a "
                "start fails the query. ")


@dataclass(frozen=True, kw_only=True)
class CarriedRowsStream(StreamPlan):
    """Rows grouped by key into the stateful operator, which carries each key's rows
    ahead of the watermark and feeds those at or below it, sorted, to the kernel."""

    def how(self) -> str:
        grouped = ("rows grouped by key into" if self.source.key else
                   "every row in one group of")
        return (f"Structured Streaming: {grouped} Spark's stateful operator "
                "(transformWithStateInPandas, event time, RocksDB state store); per key, "
                "the rows ahead of the watermark wait in the state, and those at or "
                "below it are sorted by time and tie-break and fed to the resumable "
                f"kernel of the batch strategy {self.inner.strategy}, told that no later "
                f"row comes at or below the watermark. {self.edges()}State per key: "
                f"{self.state}. "
                f"Emitted: {self.emits}. {self.late()} One event-time timer per key "
                "wakes it when its next output can be final.")


@dataclass(frozen=True, kw_only=True)
class BucketedRowsStream(CarriedRowsStream):
    """Keyed rows grouped by a hash bucket of the key into the stateful operator: one
    stored value and one timer per bucket, holding each of its keys' rows ahead of the
    watermark and kernel state (Spark's operator costs about the same per group it
    visits, whatever the group holds)."""

    def how(self) -> str:
        return (f"Structured Streaming: rows grouped by a hash of the key into "
                f"{KEY_BUCKETS} buckets, in Spark's stateful operator "
                "(transformWithStateInPandas, event time, RocksDB state store); one "
                "stored value per bucket holds the state of each of its keys; per key, "
                "the rows ahead of the watermark wait in the state, and those at or "
                "below it are sorted by time and tie-break and fed to the resumable "
                f"kernel of the batch strategy {self.inner.strategy}, told that no later "
                f"row comes at or below the watermark. State per key: {self.state}. "
                f"Emitted: {self.emits}. {self.late()} One event-time timer per bucket, "
                "at its keys' earliest, wakes the keys whose next output can be final.")


@dataclass(frozen=True, kw_only=True)
class RevisedRowsStream(CarriedRowsStream):
    """Rows grouped by key into the stateful operator with revisions
    (`on_late="update"`, `emit="changes"`): each key keeps the rows of its windows not
    yet retired and recomputes them, writing each window whose rows changed."""

    def how(self) -> str:
        grouped = ("rows grouped by key into" if self.source.key else
                   "every row in one group of")
        source = self.source
        kept = (f"{source.allowed_lateness} ticks past its end's finality"
                if source.on_late == "update" else "until it is final")
        words = [f"per key, every row of a window not yet retired is kept (a window is "
                 f"kept {kept}), those ahead of the watermark too, and at each of the "
                 "key's micro-batches and timers its windows are recomputed over them by "
                 f"the batch kernel of {self.inner.strategy}; a window the watermark "
                 "makes final is written (revision 0), and written again, final true, "
                 "with the next revision, when a late row applied changes it"]
        if source.emit == "changes":
            words.append("every open window whose rows changed is written with final "
                         "false and the next revision")
        grid = getattr(getattr(self.inner, "windows", None), "kind", None) == "hopping"
        if not grid:  # a tumbling or hopping window's bounds never change
            words.append("a late row that changes a window's bounds (a session's start or "
                         "end, sessions merged, a new start time that shifts count "
                         "windows, a new start or end point that splits snapshot windows) "
                         "makes new windows whose rows list the windows written before "
                         "that they replace (column replaces), with a revision above "
                         "theirs")
        return (f"Structured Streaming: {grouped} Spark's stateful operator "
                "(transformWithStateInPandas, event time, RocksDB state store). "
                "Revisions: " + "; ".join(words) + (
                    " (columns revision and final after time; wisp.latest keeps each "
                    "window's last row)" if grid else
                    " (columns revision, final and replaces after time; wisp.latest "
                    "keeps each window's last row unless a later row replaces it)")
                + ". State per key: the rows of the windows not retired" + (
                    " (an interval event stays while a window it overlaps is kept: "
                    "open-ended events for ever)" if grid and source.is_interval else "")
                + ", and per window written its last revision. Emitted: "
                f"{self.emits}. {self.late()} One event-time timer per key wakes it when "
                "its next window can be final or its oldest window retires.")

    def late(self) -> str:
        if self.source.on_late != "update":
            return StreamPlan.late(self)
        return ("Late rows: Spark's late filter is off (the operator reads each row's "
                "time); a row is late when it could reach a window already retired, or "
                "when the window it alone would make ended more than the allowed "
                "lateness before the watermark, and wisp's operator drops and counts it "
                "(wisp.stream_report).")


class PaneRows:
    """What the operators that take pane partials row by row (late rows emitted) share:
    nothing sorted, and the pane kernels' late rule."""

    @property
    def sorts(self) -> bool:
        return False

    def late(self: StreamPlan) -> str:  # type: ignore[misc]
        return pane_late(self)


@dataclass(frozen=True, kw_only=True)
class CarriedPanesStream(PaneRows, CarriedRowsStream):
    """Pane partials without a key and with late rows emitted: every row in the one
    group of the stateful operator, added to its pane as it arrives."""

    def how(self) -> str:
        return (f"Structured Streaming on {PANES_STRATEGY}: every row in one group of "
                "Spark's stateful "
                "operator (transformWithStateInPandas, event time, RocksDB state "
                f"store); {self.inner.how()} State: {self.state}. Emitted: "
                f"{self.emits}. {self.late()} One event-time timer wakes it when its "
                "next window can be final.")


@dataclass(frozen=True, kw_only=True)
class KeyBucketsStream(PaneRows, StreamPlan):
    """Pane partials by key with late rows emitted: the rows grouped by a hash bucket
    of the key, one stored value per bucket holding the panes of each of its keys."""

    def how(self) -> str:
        return (f"Structured Streaming on {PANES_STRATEGY}: rows grouped by a hash of "
                "the key into "
                f"{KEY_BUCKETS} buckets, in Spark's stateful operator "
                "(transformWithStateInPandas, event time, RocksDB state store); one "
                "stored value per bucket holds the state of each of its keys; per key, "
                f"{self.inner.how()} State per key: {self.state}. Emitted: "
                f"{self.emits}. {self.late()} One event-time timer per bucket, at its "
                "keys' earliest, wakes the keys whose next window can be final.")


@dataclass(frozen=True, kw_only=True)
class PanePartialsStream(StreamPlan):
    """Pane partials with late rows counted: each task reduces its rows to partials per
    key and pane where they are read, and the operator adds them to the panes."""

    @property
    def sorts(self) -> bool:
        return False

    def how(self) -> str:
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
                + " when a window can be final." + revisions_words(self.source))


def revisions_words(source: Source) -> str:
    """What a stream with revisions writes besides each final window, in words."""
    words = []
    if source.on_late == "update":
        words.append(f"a window's panes are kept {source.allowed_lateness} ticks past its "
                     "end's finality; a late row within that is added to them (counted as "
                     "late_applied) and each closed window it falls in is written again "
                     "with the next revision; a row later than that is counted late")
    if source.emit == "changes":
        words.append("in each micro-batch, every open window its rows changed is written "
                     "with final false and the next revision")
    if not words:
        return ""
    return (" Revisions: " + "; ".join(words) + " (columns revision and final after time; "
            "wisp.latest keeps each window's last).")


def pane_late(plan: StreamPlan) -> str:
    """Late rows on pane partials, in words."""
    if plan.source.on_late == "emit":
        return ("Late rows (on_late='emit'): Spark's late filter is off; a row in a "
                "window already closed for its key comes out as a row with "
                "late_reason and late_row set (wisp.stream_report counts them).")
    return StreamPlan.late(plan)


def operator_for(streamed: Streamed, inputs: Inputs) -> type[StreamPlan]:
    """The shape of the stateful operator that runs `streamed`: pane partials are
    reduced where the rows are read unless late rows come out as rows (those need each
    row in the operator), then keyed ones share a stored value per bucket of keys; the
    rows of the other kinds are carried per bucket of keys too when keyed (not over
    edges), else in one group."""
    if not streamed.panes:
        bucketed = inputs.source.key and inputs.source.edges is None
        return BucketedRowsStream if bucketed else CarriedRowsStream
    if inputs.source.on_late != "emit":
        return PanePartialsStream
    return KeyBucketsStream if inputs.source.key else CarriedPanesStream


def plan_stream(inputs: Inputs, window: object, resolved: tuple[ResolvedAggregation, ...],
                strategy: str | None) -> StreamPlan:
    """The stream plan of `window` over the streaming source of `inputs`, from the stream
    rule of its class, or a `WispUnsupportedError` saying which kinds run on a stream."""
    source = inputs.source
    assert source.lateness is not None
    if strategy not in (None, STREAM_STRATEGY):
        raise WispUnsupportedError(f"`strategy` must be '{STREAM_STRATEGY}' or None for a "
                                   f"query over a stream, found {strategy!r}")
    name = repr(window) if isinstance(window, NoWindow) else type(window).__name__
    entry = entry_for(_STREAM_RULES, window)
    if entry is None:
        raise unsupported_on_stream(name)
    if source.edges is not None and not entry.edges:
        raise WispUnsupportedError(
            f"`window` must be one of {', '.join(_labels(edges=True))} over "
            f"wisp.from_edges on a stream, found {name}: the other kinds do not read an "
            "interval's end, which the stream knows only once its end edge passes the "
            "watermark")
    streamed = entry.rule(inputs, window, resolved)
    state, emits = streamed.state, streamed.emits
    if source.edges is not None:
        state += ("; and per id whose last edge was a start, that start's time (an id "
                  "whose start never gets an end edge stays for ever)")
        emits += ("; a start edge is an open-ended event until its end edge passes the "
                  "watermark, which then sets its end")
    reason = ("the source is a streaming DataFrame: each key's rows go through the "
              "kernel's resumable steps as the watermark passes them")
    if streamed.panes:
        reason = ("the source is a streaming DataFrame, and every aggregation has a "
                  "partial state: each row goes into its pane's partials as it arrives, "
                  "and a window is written once the watermark passes its end")
    operator = operator_for(streamed, inputs)
    if source.revisions and source.on_late == "emit":
        raise WispUnsupportedError(
            "`emit` must be 'final' with on_late='emit' (late rows then come out as rows "
            "of their own; early rows take on_late='count' or 'update'), found "
            "'changes'")
    if source.revisions and operator in (CarriedRowsStream, BucketedRowsStream) \
            and streamed.revisable and source.edges is None:
        operator = RevisedRowsStream
        reason = ("the source is a streaming DataFrame whose windows may be written more "
                  "than once: each key keeps the rows of its windows not retired and "
                  "recomputes them when its rows or its timer come")
    if source.revisions and operator not in (PanePartialsStream, RevisedRowsStream):
        raise WispUnsupportedError(
            f"`{'on_late' if source.on_late == 'update' else 'emit'}` must be "
            f"{'count' if source.on_late == 'update' else 'final'!r} for {name} here: "
            "revisions (on_late='update', emit='changes') run on Tumbling and Hopping by "
            "duration (over point or interval events), Session, Snapshot and "
            "CountByStartTime (not "
            f"over wisp.from_edges); this query runs {streamed.inner.strategy}")
    return operator(source=source, window=streamed.inner.window, aggregations=resolved,
                    tie_break=tie_break_columns(source), reason=reason,
                    inner=streamed.inner, lateness=source.lateness, state=state,
                    emits=emits)
