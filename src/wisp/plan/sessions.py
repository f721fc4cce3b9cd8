"""Rule of gap-based sessions: one pass over each key's sorted events finds the
sessions and aggregates them.

A per-row gap (`Session(gap=<column or Column>)`) is added to each event's reach
(`time + gap`, or `end + gap` for an interval event) before the same kernel runs with
a gap of zero: an event joins while its time is at most the largest reach so far, and
the session ends there, which is `session_window`'s rule with a gap column."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value, did_you_mean
from ..spec.windows import Session
from .aggregations import accumulated, check_strategy
from .durations import resolve_duration
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import ColumnType, ExprRef, Inputs, Source, kernel_shape, tie_break_columns
from .streaming import Streamed, stream_rule

SESSION_STRATEGY = "arrow-sessions"


@dataclass(frozen=True, kw_only=True)
class SessionsPlan(Plan):
    """`arrow-sessions`: sessions `[first, last + gap)` per key, split at `max_duration`
    (None: no cap), in ticks of the time column. With a per-row gap (`gap_column`, the
    window parameter holding it) `gap` is 0 and each row's gap is added to its reach."""

    gap: int | float
    max_duration: int | float | None
    gap_column: ExprRef | None = None

    strategy = SESSION_STRATEGY

    def how(self) -> str:
        interval = self.source.is_interval
        if self.max_duration is None:
            split = ("sessions found vectorised (a running maximum of the events' reach and "
                     "a comparison with each event's time)")
        elif interval:
            split = ("sessions split at max_duration found vectorised within each uncapped "
                     "session (each event's last earlier covering event and each start's "
                     "first break by binary lifting, then the chain of session starts); an "
                     "uncapped session longer than the kernel's block (32,768 events) is "
                     "walked one capped session at a time")
        else:
            split = ("sessions split at max_duration found vectorised (the uncapped gaps, "
                     "then within each uncapped session the chain of starts first -> first "
                     "event at or after first + max_duration -> ... by pointer doubling)")
        lifetimes = " (interval events reach to their end)" if interval else ""
        if self.gap_column is not None:
            lifetimes += (" (each event's reach extended by its own gap, which Spark "
                          "computes next to it and checks positive)")
        if self.accumulated:
            aggregates = ("each aggregate a running scan over each session's events read at "
                          "its last one (accumulators: counts, sums, extremes, first/last, "
                          "moments, max_by/min_by, a user aggregator's state), so a long "
                          "key's open session is carried from one piece to the next as its "
                          "accumulators, not its rows")
        else:
            aggregates = "aggregates over all sessions at once"
        return (kernel_shape("key, time and tie-break") +
                f" walks each key's run of events{lifetimes}: {split}; {aggregates}.")

    @property
    def accumulated(self) -> bool:
        """Whether the kernel keeps each session's aggregates as accumulators (and a long
        key's open session as them, not its rows): when every
        aggregation is held by accumulators, with or without `max_duration`
        (`runtime.windows.sessions.SessionKernel.accumulates` applies the same rule)."""
        return accumulated(self.aggregations)


INTERVAL_GAP = ("an interval column or expression (a day-time interval such as "
                "F.make_dt_interval(secs=...), or a calendar interval such as "
                "F.make_interval(secs=...))")
GAP_TYPES = {"timestamp": INTERVAL_GAP, "timestamp_ntz": INTERVAL_GAP,
             "integer": "an integer column or expression",
             "float": "a numeric column or expression"}


def is_gap_interval(column_type: ColumnType) -> bool:
    """A day-time interval or a calendar interval (not a year-month interval)."""
    text = column_type.text
    return (text == "interval" or (text.startswith("interval ")
            and "year" not in text and "month" not in text))


def _gap_column(inputs: Inputs, window: Session) -> ExprRef:
    """A per-row gap, checked against the events' columns and time type."""
    source: Source = inputs.source
    time = source.time
    expected = GAP_TYPES.get(time.kind)
    if expected is None:
        raise bad_value("gap", f"a duration (a per-row gap needs a timestamp, integer or "
                        f"float time column; {time.kind} time column {time.name!r} has "
                        "none)", window.gap)
    fields = source.types()
    if window.gap_kind == "column":
        assert isinstance(window.gap, str)
        if window.gap not in fields:
            hint = did_you_mean(window.gap, fields).strip(" ()")
            raise bad_value("gap", f"a duration or a column of the DataFrame (columns: "
                            f"{', '.join(fields)})", window.gap, hint=hint)
        column_type = fields[window.gap]
        shown = f"{column_type.text} column {window.gap!r}"
    else:
        info = inputs.expressions["gap"]
        if info.type is None:
            raise bad_value("gap", "a Column expression over the DataFrame's columns",
                            info.text)
        column_type = info.type
        shown = f"{column_type.text} expression {info.text!r}"
    if time.kind in ("timestamp", "timestamp_ntz"):
        fits = is_gap_interval(column_type)
    elif time.kind == "integer":
        fits = column_type.family == "integer"
    else:
        fits = column_type.family in ("integer", "float", "decimal")
    if not fits:
        raise bad_value("gap", f"{expected} for {time.kind} time column {time.name!r}",
                        shown)
    return ExprRef("gap")


@rule(Session)
def plan_session(inputs: Inputs, window: Session, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    source = inputs.source
    check_strategy(resolved, strategy, SESSION_STRATEGY, "Session")
    gap_column = None if window.gap_kind == "duration" else _gap_column(inputs, window)
    gap = 0 if gap_column is not None else resolve_duration(window.gap, source.time, "gap")
    cap = None if window.max_duration is None else resolve_duration(
        window.max_duration, source.time, "max_duration")
    return SessionsPlan(source=source, window=repr(window), aggregations=resolved,
                        tie_break=tie_break_columns(source), gap=gap, max_duration=cap,
                        gap_column=gap_column,
                        reason="a session's extent depends on every earlier event of the "
                        "key (a running reach, and with max_duration where the session "
                        "began), which no frame of Spark's window operator expresses; the "
                        "kernel finds them in the same pass as the aggregates, O(n log n) "
                        "per key")


@stream_rule(Session)
def stream_session(inputs: Inputs, window: Session,
                   resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """Sessions by a duration gap on a stream (a per-row gap runs on batch tables only):
    the session kernel carrying the open session."""
    if window.gap_kind != "duration":
        raise WispUnsupportedError(
            "`gap` must be a duration on a stream (a per-row gap runs on batch tables "
            f"only), found {window.gap!r}")
    inner = plan_session(inputs, window, resolved, SESSION_STRATEGY)
    assert isinstance(inner, SessionsPlan)
    carried = ("the open session's start, largest reach and accumulators (one row, "
               "however long the session)" if inner.accumulated
               else "the open session's rows (bounded by max_duration when given)")
    return Streamed(inner, carried, "a session once the watermark passes its last event + gap",
                    revisable=True)
