"""Rules of the reset (`Since`) and trailing-period (`Trailing`) family.

A tick is either a boolean column (a column name or a PySpark Column expression over the
events' DataFrame: the row where it is true closes its period, a null closes nothing) or
a calendar tick (`wisp.daily()`, ...; periods `(previous tick, tick]`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import bad_value, did_you_mean
from ..spec.calendar import check_cron_matches
from ..spec.windows import CalendarTick, Since, Trailing
from .aggregations import accumulated, grouped_blocker, refuse_interval_events, refuse_lifetimes
from .durations import DAY
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import (
    ExprRef,
    Inputs,
    Source,
    kernel_shape,
    native_time_blocker,
    tie_break_columns,
)
from .streaming import Streamed, refuse_values_of_unclosed, stream_rule

PERIODS = "native-periods"
TICKS = "arrow-ticks"
RUNNING = "arrow-running"
STRATEGIES = {"Since": (TICKS, PERIODS), "Trailing": (TICKS,)}
HOUR = 3_600_000_000
FIXED_PERIODS = {"hourly": (HOUR, 0), "daily": (24 * HOUR, 0), "weekly": (168 * HOUR, 96 * HOUR)}
"""UTC ticks every `length` µs from `align` µs (Monday 1970-01-05 for weekly): these
periods are all the same length, so plain arithmetic finds each event's tick."""
TICK_EXPECTED = ("a boolean column (a column name or a PySpark Column expression) or a "
                 "calendar tick such as wisp.daily()")
Emit = Literal["ticks", "events", "both"]

HOW = (kernel_shape("key, time and tie-break") +
       " walks each key's run of events: {ticks}; frames [lo, hi) by cumulative counts of "
       "ticks and binary search; aggregates over all frames at once (prefix differences, "
       "sparse tables).")
CALENDAR_TICKS = ("calendar ticks computed on the executors from the time zone's rules "
                  "(cached per ~400-day chunk, shared by all keys){newest}")
NEWEST = (", with the newest event time of the whole input read by every row from one "
          "scalar subquery to bound each key's ticks")


@dataclass(frozen=True)
class Ticks:
    """A window's tick: a boolean column or expression (`predicate`, resolved by the
    engine) or a calendar tick; how many periods the window spans (`n`; 1 for `Since`),
    whether incomplete trailing windows give values (`partial`), which rows are emitted
    (`emit`), and whether the window trails (`Trailing`) or resets (`Since`)."""

    predicate: ExprRef | None
    calendar: CalendarTick | None
    n: int
    partial: bool
    emit: Emit
    trailing: bool


@dataclass(frozen=True, kw_only=True)
class TicksPlan(Plan):
    """`arrow-ticks`: the tick kernel over each key's sorted events."""

    ticks: Ticks

    strategy = TICKS

    def how(self) -> str:
        if self.ticks.calendar is not None:
            ticks = CALENDAR_TICKS.format(newest=NEWEST if self.ticks.emit != "events"
                                          else "")
        else:
            ticks = "the boolean tick column evaluated by Spark next to each row"
        if self.accumulated:
            return (HOW.split(": {ticks}")[0] + f": {ticks}; each period's aggregates "
                    "running scans (accumulators: counts, sums, extremes, first/last, "
                    "moments, max_by/min_by, a user aggregator's state) restarting at "
                    "each tick and read at each row and tick, so a long key's open period "
                    "is carried from one piece to the next as its accumulators, not its "
                    "rows.")
        return HOW.format(ticks=ticks)

    @property
    def accumulated(self) -> bool:
        """Whether the kernel keeps `Since` over calendar ticks as accumulators (every
        aggregation held by them; `runtime.windows.periods.TickKernel.accumulates` applies the
        same rule)."""
        return (self.ticks.calendar is not None and not self.ticks.trailing
                and accumulated(self.aggregations))


@dataclass(frozen=True, kw_only=True)
class PeriodsPlan(Plan):
    """`native-periods`: periods `(tick - length, tick]` with ticks at `align +
    k*length`, in ticks of the time column (µs, or days for date time), as one groupBy."""

    length: int
    align: int

    strategy = PERIODS
    python = False

    def how(self) -> str:
        return ("Spark computes each event's tick (time + pmod(align - time, length): the "
                "tick closing its period) and aggregates by (key, tick) with its own hash "
                "aggregation; on the per-period rows (one per key and non-empty period) a "
                "window by key ordered by tick finds the next non-empty period, or the tick "
                "closing the newest event of the whole input (one scalar subquery), "
                "and the periods between are generated (sequence + explode) with count and "
                "sum 0 and every other aggregate null; window_start = tick - length, "
                "window_end = time = tick.")


def _predicate(inputs: Inputs, tick: object) -> ExprRef:
    """A boolean tick column or expression, checked against the events' columns."""
    fields = inputs.source.types()
    if isinstance(tick, str):
        if tick not in fields:
            hint = did_you_mean(tick, fields).strip(" ()")
            raise bad_value("tick", f"a boolean column of the DataFrame (columns: "
                            f"{', '.join(fields)}) or a calendar tick", tick, hint=hint)
        column_type = fields[tick]
        shown = f"{column_type.text} column {tick!r}"
    else:
        info = inputs.expressions["tick"]
        if info.type is None:  # an expression Spark cannot resolve against the df
            raise bad_value("tick", "a boolean Column expression over the DataFrame's "
                            "columns", info.text)
        column_type = info.type
        shown = f"{column_type.text} expression {info.text!r}"
    if column_type.family != "boolean":
        raise bad_value("tick", "a boolean column or expression", shown)
    return ExprRef("tick")


def checked_calendar(source: Source, tick: CalendarTick) -> CalendarTick:
    """`tick` checked against the events' time column (a timestamp or date; a zone
    only for `timestamp`; no hourly or cron tick for dates; a cron that matches)."""
    time = source.time
    where = f"{time.kind} time column {time.name!r}"
    if time.kind not in ("timestamp", "timestamp_ntz", "date"):
        raise bad_value("tick", f"a boolean column (calendar ticks need a timestamp or date "
                        f"time column; {where} is numeric)", tick)
    if time.kind != "timestamp" and tick.tz != "UTC":
        raise bad_value("tz", f"'UTC' for {where} (its wall-clock times carry no zone)",
                        tick.tz)
    if time.kind == "date" and tick.unit in ("hourly", "cron"):
        raise bad_value("tick", f"a daily, weekly, monthly or yearly tick for {where}",
                        tick)
    if tick.unit == "cron":
        assert tick.expr is not None
        check_cron_matches(tick.expr)
    return tick


def _ticks(inputs: Inputs, tick: object, n: int, partial: bool, emit: Emit | None,
           trailing: bool) -> Ticks:
    if isinstance(tick, CalendarTick):
        return Ticks(None, checked_calendar(inputs.source, tick), n, partial, emit or "ticks",
                     trailing)
    if isinstance(tick, str) or "tick" in inputs.expressions:
        return Ticks(_predicate(inputs, tick), None, n, partial, emit or "events", trailing)
    raise bad_value("tick", TICK_EXPECTED, tick)


def _check(source: Source, resolved: tuple[ResolvedAggregation, ...],
           strategy: str | None, kind: str) -> None:
    if strategy is not None and strategy not in STRATEGIES[kind]:
        raise bad_value("strategy", f"one of {', '.join(STRATEGIES[kind])} for {kind} "
                        "windows or None", strategy)
    refuse_interval_events(source, kind)
    refuse_lifetimes(resolved, kind)


@dataclass(frozen=True, kw_only=True)
class AccumulatorsPlan(Plan):
    """`arrow-running`: running aggregates carried as accumulators per key (count, sums,
    extremes, first/last, moments, max_by/min_by, a user aggregator's state), reset
    after each row whose tick column is true (`ticks`: `Since(predicate)`; None: the
    cumulative window). The plan of those windows on a stream, and in batch wherever
    every aggregation is held by accumulators (`accumulated`) and a kernel runs."""

    ticks: Ticks | None

    strategy = RUNNING

    def how(self) -> str:
        reset = ("reset after each row whose tick column is true" if self.ticks is not None
                 else "over everything of the key so far")
        return (kernel_shape("key, time and tie-break") + " keeps one accumulator per "
                "aggregation and key (count, sum, minimum, maximum, first, last, mean and "
                "variance moments, the row of max_by/min_by, ewm_mean's decayed sums, a "
                "sketch, a k-collection's k values, a "
                f"user aggregator's state), {reset}; each row's output is the "
                "accumulators after it, and a long key's run is read in pieces carrying "
                "only them.")


def accumulators_plan(source: Source, window: object, ticks: Ticks | None,
                      resolved: tuple[ResolvedAggregation, ...], reason: str
                      ) -> AccumulatorsPlan:
    return AccumulatorsPlan(source=source, window=repr(window), aggregations=resolved,
                            tie_break=tie_break_columns(source), ticks=ticks, reason=reason)


def _ticks_plan(source: Source, window: object, ticks: Ticks,
                resolved: tuple[ResolvedAggregation, ...]) -> TicksPlan:
    return TicksPlan(source=source, window=repr(window), aggregations=resolved,
                     tie_break=tie_break_columns(source), ticks=ticks,
                     reason="a reset or trailing-period window is a sequential reading of "
                     "each key's events in order; the kernel costs O(n log n) per key "
                     "whatever the periods' lengths, and ticks never leave the executors")


def periods_blocker(source: Source, ticks: Ticks, resolved: tuple[ResolvedAggregation, ...]
                    ) -> str | None:
    """Why `Since` cannot run as one groupBy on each event's tick, or None when it can."""
    tick = ticks.calendar
    if tick is None or ticks.emit != "ticks":
        return "only calendar ticks emitted at the ticks are groups of events"
    if tick.unit not in FIXED_PERIODS or tick.tz != "UTC":
        return "only hourly, daily and weekly ticks in UTC have periods of one length"
    blocker = native_time_blocker(source.time, ("timestamp", "timestamp_ntz", "date"))
    if blocker is not None:
        return blocker
    if source.time.kind == "date" and tick.unit == "hourly":
        return "hourly ticks need a timestamp time"
    return grouped_blocker(resolved)


@rule(Since)
def plan_since(inputs: Inputs, window: Since, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    """`Since(tick, emit)`: the aggregate resets after each tick. Hourly, daily and
    weekly UTC ticks emitted at the ticks with order-free aggregations run as
    `native-periods` (one groupBy on each event's tick); everything else on the kernel."""
    source = inputs.source
    _check(source, resolved, strategy, "Since")
    ticks = _ticks(inputs, window.tick, 1, True, window.emit, trailing=False)
    blocker = periods_blocker(source, ticks, resolved)
    if strategy == PERIODS and blocker is not None:
        raise bad_value("strategy", f"'arrow-ticks' or None here ({blocker})", strategy)
    if strategy is None and ticks.predicate is not None and accumulated(resolved):
        return accumulators_plan(source, window, ticks, resolved, (
            "a predicate's periods can be as long as a key's history; every aggregation "
            "is held by a few accumulators, carried from row to row instead of the "
            "period's rows"))
    if blocker is not None or strategy == TICKS:
        return _ticks_plan(source, window, ticks, resolved)
    assert ticks.calendar is not None
    length, align = FIXED_PERIODS[ticks.calendar.unit]
    if source.time.kind == "date":
        length, align = length // DAY, align // DAY
    return PeriodsPlan(source=source, window=repr(window), aggregations=resolved,
                       tie_break=tie_break_columns(source), length=length, align=align,
                       reason="ticks of one fixed length in UTC put each event in exactly "
                       "one period, so one groupBy computes the periods' aggregates without "
                       "a sort of the events, and every aggregation has an exact Spark form")


@rule(Trailing)
def plan_trailing(inputs: Inputs, window: Trailing, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    """`Trailing(n, tick, partial)`: the current period and the `n - 1` before it."""
    _check(inputs.source, resolved, strategy, "Trailing")
    ticks = _ticks(inputs, window.tick, window.n, window.partial, "events", trailing=True)
    return _ticks_plan(inputs.source, window, ticks, resolved)


@stream_rule(Since)
def stream_since(inputs: Inputs, window: Since,
                 resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """`Since` on a stream: the tick kernel, or over a predicate with every aggregation
    held by accumulators, the accumulators since the last tick row."""
    _refuse_values_of_predicate_periods(window, resolved)
    inner = plan_since(inputs, window, resolved, TICKS)
    assert isinstance(inner, TicksPlan)
    ticks = inner.ticks
    if ticks.predicate is not None:
        source = inputs.source
        return Streamed(accumulators_plan(source, window, ticks, resolved, "a stream"),
                        "one accumulator set since the last tick row",
                        "each row's output once the watermark passes its time")
    return Streamed(inner, *_ticks_kept(ticks))


@stream_rule(Trailing)
def stream_trailing(inputs: Inputs, window: Trailing,
                    resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """`Trailing` on a stream: the tick kernel."""
    _refuse_values_of_predicate_periods(window, resolved)
    inner = plan_trailing(inputs, window, resolved, TICKS)
    assert isinstance(inner, TicksPlan)
    return Streamed(inner, *_ticks_kept(inner.ticks))


def _refuse_values_of_predicate_periods(window: Since | Trailing,
                                        resolved: tuple[ResolvedAggregation, ...]) -> None:
    """Periods over a boolean tick column close only where it is true (perhaps never)."""
    if not isinstance(window.tick, CalendarTick):
        refuse_values_of_unclosed(resolved, type(window).__name__)


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
