"""Rule of gap-based sessions: one pass over each key's sorted events finds the
sessions and aggregates them."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.windows import Session
from .aggregations import check_strategy
from .durations import resolve_duration
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import Inputs, kernel_shape, tie_break_columns

SESSION_STRATEGY = "arrow-sessions"


@dataclass(frozen=True, kw_only=True)
class SessionsPlan(Plan):
    """`arrow-sessions`: sessions `[first, last + gap)` per key, split at `max_duration`
    (None: no cap), in ticks of the time column."""

    gap: int | float
    max_duration: int | float | None

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
        return (kernel_shape("key, time and tie-break") +
                f" walks each key's run of events{lifetimes}: {split}; aggregates over all "
                "sessions at once.")


@rule(Session)
def plan_session(inputs: Inputs, window: Session, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    source = inputs.source
    check_strategy(resolved, strategy, SESSION_STRATEGY, "Session")
    gap = resolve_duration(window.gap, source.time, "gap")
    cap = None if window.max_duration is None else resolve_duration(
        window.max_duration, source.time, "max_duration")
    return SessionsPlan(source=source, window=repr(window), aggregations=resolved,
                        tie_break=tie_break_columns(source), gap=gap, max_duration=cap,
                        reason="a session's extent depends on every earlier event of the "
                        "key (a running reach, and with max_duration where the session "
                        "began), which no frame of Spark's window operator expresses; the "
                        "kernel finds them in the same pass as the aggregates, O(n log n) "
                        "per key")
