"""The rule of feature sets (`Events.features`): several frames over the same sorted
events, every frame's aggregations in one walk of each key's run."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value, did_you_mean
from ..spec.features import FeatureSet, column_names
from ..spec.windows import CalendarTick, Range, Rows, Since, Trailing
from .aggregations import refuse_interval_events, refuse_lifetimes
from .durations import resolve_bound
from .frames import Frame, RangeFrame, RowsFrame, RunningFrame
from .nodes import Plan, ResolvedAggregation
from .periods import checked_calendar
from .registry import rule
from .source import (
    ExprRef,
    Inputs,
    Source,
    kernel_shape,
    same_time_type,
    tie_break_columns,
)
from .streaming import Streamed, carried_by_panes, stream_rule

STRATEGY = "arrow-features"


@dataclass(frozen=True)
class PeriodsFrame:
    """The event's tick period and the `n - 1` before it (`Since`: n = 1): the events
    after the `n`-th last tick row before the event, through the event; the boolean
    tick of each event in the hidden column `column`."""

    n: int
    column: str


@dataclass(frozen=True)
class CalendarFrame:
    """The event's calendar period and the `n - 1` before it (`Since`: n = 1): the
    events after the tick `n` periods back, `(tick, t]`, periods `(previous tick,
    tick]`."""

    n: int
    tick: CalendarTick


FeatureFrame = Frame | PeriodsFrame | CalendarFrame


@dataclass(frozen=True, kw_only=True)
class FeaturesPlan(Plan):
    """`arrow-features`: the frames of every window of the set, over each key's sorted
    events, in one kernel walk."""

    frames: tuple[tuple[str, FeatureFrame], ...]
    ticks: tuple[tuple[str, ExprRef], ...] = ()
    """The hidden tick columns of `PeriodsFrame`s and the expressions they hold."""
    labels_table: Source | None = None
    """Point-in-time: the label rows (`at`), one output row each."""
    include_current: bool = False
    carried: tuple[str, ...] = ()
    """The label table's columns besides its key and time, carried to the output."""

    strategy = STRATEGY

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.frames)

    @property
    def suffixes(self) -> tuple[str, ...]:
        """`_<label>` of each window: its columns are `<aggregation's name>_<label>`."""
        return tuple(f"_{label}" for label in self.labels)

    def how(self) -> str:
        folds = ("; the cumulative window carried as one partial state where every "
                 "aggregation has one" if any(isinstance(f, RunningFrame)
                                              for _, f in self.frames) else "")
        if self.labels_table is not None:
            before = "at or before" if self.include_current else "strictly before"
            return (kernel_shape("key, time, then label rows " + (
                        "after" if self.include_current else "before") + " events of their "
                        "time, then tie-break") +
                    " walks each key's label rows and events together (the union of the "
                    "two tables: one shuffle and one sort, no join): each label row's "
                    f"{len(self.frames)} windows ({', '.join(self.labels)}) over the key's "
                    f"events {before} its time, found in the sorted times or by index "
                    "arithmetic, aggregated by the frame kernels; a long key streamed in "
                    "chunks that keep the events later label rows can reach" + folds + ".")
        return (kernel_shape("key, time and tie-break") +
                f" walks each key's events once for the {len(self.frames)} windows of the "
                f"set ({', '.join(self.labels)}): one shuffle and one sort of the events "
                "whatever the number of windows; each window's bounds found in the sorted "
                "times or by index arithmetic, and its aggregations by the frame kernels "
                "(prefix differences, blocked scans), each column converted once for all "
                "the windows; a long key streamed in chunks that keep the events the "
                f"widest bounded window still needs{folds}.")


@rule(FeatureSet)
def plan_features(inputs: Inputs, window: FeatureSet,
                  resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
    source = inputs.source
    refuse_interval_events(source, "a feature set")
    refuse_lifetimes(resolved, "a feature set")
    if strategy is not None and strategy != STRATEGY:
        raise bad_value("strategy", f"{STRATEGY!r} for a feature set or None", strategy)
    names = column_names(tuple(r.name for r in resolved), window.labels)
    taken = {*source.key, "time"}
    for name in names:
        if name in taken:
            raise bad_value("windows", "labels whose feature columns are unique and "
                            "differ from the key columns and `time`", name)
        taken.add(name)
    labels_table = None if window.at is None else _labels(inputs)
    carried: tuple[str, ...] = ()
    if labels_table is not None:
        skip = {*labels_table.key, labels_table.time.name}
        carried = tuple(c for c in labels_table.names if c not in skip)
        for name in carried:
            if name in taken:
                raise bad_value("at", "label rows whose other columns differ from the key "
                                "columns, `time` and the feature columns", name)
            taken.add(name)
    frames: list[tuple[str, FeatureFrame]] = []
    ticks: list[tuple[str, ExprRef]] = []
    for label, spec in window.windows:
        frame: FeatureFrame
        if isinstance(spec, (Since, Trailing)) and isinstance(spec.tick, CalendarTick):
            frame = CalendarFrame(spec.n if isinstance(spec, Trailing) else 1,
                                  checked_calendar(source, spec.tick))
        elif isinstance(spec, (Since, Trailing)):
            column = f"__wisp_tick_{len(ticks)}"
            ticks.append((column, _tick(inputs, label, spec.tick)))
            frame = PeriodsFrame(spec.n if isinstance(spec, Trailing) else 1, column)
        elif isinstance(spec, Range):
            frame = RangeFrame(resolve_bound(spec.start, source.time, "start"),
                               resolve_bound(spec.end, source.time, "end"), spec.closed)
        elif isinstance(spec, Rows):
            frame = RowsFrame(spec.first_index, spec.last_index, True)
        else:
            frame = RunningFrame()
        frames.append((label, frame))
    reason = ("a feature set's windows share one shuffle and sort of the events, and one "
              "kernel walk computes them all")
    if labels_table is not None:
        reason = ("label rows and events sorted together by key and time: each label "
                  "row's windows are read off the events before it in one walk, without "
                  "a range join or a query per window")
    return FeaturesPlan(source=source, window=repr(window), aggregations=resolved,
                        tie_break=tie_break_columns(source), frames=tuple(frames),
                        reason=reason, labels_table=labels_table, ticks=tuple(ticks),
                        include_current=window.include_current, carried=carried)


def _tick(inputs: Inputs, label: str, tick: object) -> ExprRef:
    """A `Since`/`Trailing` window's boolean tick column or expression over the events."""
    path = f"windows.{label}.tick"
    fields = inputs.source.types()
    if isinstance(tick, str):
        if tick not in fields:
            hint = did_you_mean(tick, fields).strip(" ()")
            raise bad_value("windows", f"a boolean tick column of the events for {label!r} "
                            f"(columns: {', '.join(fields)})", tick, hint=hint)
        column_type = fields[tick]
        shown = f"{column_type.text} column {tick!r}"
    else:
        info = inputs.expressions.get(path)
        if info is None or info.type is None:
            raise bad_value("windows", f"a boolean tick Column over the events' columns for "
                            f"{label!r}", tick if info is None else info.text)
        column_type = info.type
        shown = f"{column_type.text} expression {info.text!r}"
    if column_type.family != "boolean":
        raise bad_value("windows", f"a boolean tick column or expression for {label!r}",
                        shown)
    return ExprRef(path)


def _labels(inputs: Inputs) -> Source:
    """The label table, checked against the events: point rows, the same time type,
    the same key columns of the same types."""
    source = inputs.source
    labels = inputs.tables.get("at")
    if labels is None:
        raise bad_value("at", "an event table (wisp.events(...)) or a DataFrame with the "
                        "events' key and time columns", "another value")
    if (labels.lateness is None) != (source.lateness is None):
        raise WispUnsupportedError(
            "`at` must be a streaming event table (wisp.events over a streaming DataFrame, "
            "with its lateness) when the events are a stream, and a batch table when they "
            "are a batch table: one operator reads both under one watermark"
            if source.lateness is not None else
            "`at` must be a batch table when the events are a batch table, found a "
            "streaming event table")
    if labels.is_interval:
        raise WispUnsupportedError(
            "`at` must be point rows (wisp.events without `end`), found interval events "
            f"(`end` column {labels.end!r})")
    if not same_time_type(labels.time.type, source.time):
        raise bad_value("at", f"label rows whose `time` has the type of the events' "
                        f"({source.time.type.text})",
                        f"{labels.time.type.text} column {labels.time.name!r}")
    if list(labels.key) != list(source.key):
        raise bad_value("at", f"label rows with the events' key columns "
                        f"{list(source.key)!r}", list(labels.key))
    types = source.types()
    for c in labels.columns:
        if c.name in labels.key and c.type != types[c.name]:
            raise bad_value("at", f"key column {c.name!r} of type {types[c.name].text} "
                            "(as in the events)", c.type.text)
    return labels


@stream_rule(FeatureSet,
             label="feature sets (Events.features; label rows from a second stream)")
def stream_features(inputs: Inputs, window: FeatureSet,
                    resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
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
        inner = plan_features(inputs, window, resolved, STRATEGY)
        return Streamed(inner, "the events later label rows can reach (the widest bounded "
                "window's, the last n tick periods', the cumulative window as one partial "
                "state)", "a label row's features once the watermark (the smaller of the "
                "label rows' and the events' watermarks) is at or past its time: every "
                "event before it has been read by then")
    inner = plan_features(inputs, window, resolved, STRATEGY)
    return Streamed(inner, "the events the widest bounded window still reaches, the events "
            "whose windows wait for later rows or the watermark, and the cumulative "
            "window's partial state (one row)",
            "an event's row once every window of it is final: a Range window once the "
            "watermark passes the event's time + end, a Rows window once its last row "
            "has arrived, the cumulative window at once")
