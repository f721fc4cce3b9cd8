"""Rules of the reset (`Since`) and trailing-period (`Trailing`) family.

A tick is either a boolean column (a column name or a PySpark Column expression over the
events' DataFrame: the row where it is true closes its period, a null closes nothing) or
a calendar tick (`wisp.daily()`, ...; periods `(previous tick, tick]`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import WispUnsupportedError, bad_value, did_you_mean
from ..events import Events
from ..spec.calendar import check_cron_matches
from ..spec.windows import CalendarTick, Since, Trailing
from .aggregations import grouped_blocker, refuse_lifetimes
from .durations import DAY
from .nodes import Plan, ResolvedAggregation
from .planner import kernel_shape, tie_break_columns

PERIODS = "native-periods"
STRATEGIES = {"Since": ("arrow-ticks", PERIODS), "Trailing": ("arrow-ticks",)}
HOUR = 3_600_000_000
FIXED_PERIODS = {"hourly": (HOUR, 0), "daily": (24 * HOUR, 0), "weekly": (168 * HOUR, 96 * HOUR)}
"""UTC ticks every `length` µs from `align` µs (Monday 1970-01-05 for weekly): these
periods are all the same length, so plain arithmetic finds each event's tick."""
TICK_EXPECTED = ("a boolean column (a column name or a PySpark Column expression) or a "
                 "calendar tick such as wisp.daily()")
Emit = Literal["ticks", "events", "both"]


@dataclass(frozen=True, eq=False)
class TickDetails:
    """What the builder needs: the window's tick (a boolean Column, or a calendar tick),
    how many periods it spans (`n`; 1 for `Since`), whether incomplete trailing windows
    give values (`partial`), and which rows are emitted (`emit`)."""

    predicate: Column | None
    calendar: CalendarTick | None
    n: int
    partial: bool
    emit: Emit
    trailing: bool


def _predicate(events: Events, tick: object) -> Column:
    """A boolean tick column, checked against the events' schema (analysis only)."""
    fields = {f.name: f.dataType for f in events.df.schema.fields}
    if isinstance(tick, str):
        if tick not in fields:
            hint = did_you_mean(tick, fields).strip(" ()")
            raise bad_value("tick", f"a boolean column of the DataFrame (columns: "
                            f"{', '.join(fields)}) or a calendar tick", tick, hint=hint)
        data_type = fields[tick]
        expression = F.col("`" + tick.replace("`", "``") + "`")
        shown = f"{data_type.simpleString()} column {tick!r}"
    else:
        assert isinstance(tick, Column)
        expression = tick
        try:
            data_type = events.df.select(tick).schema.fields[0].dataType
        except Exception as error:  # an expression Spark cannot resolve against the df
            raise bad_value("tick", "a boolean Column expression over the DataFrame's "
                            "columns", str(tick)) from error
        shown = f"{data_type.simpleString()} expression {str(tick)!r}"
    if not isinstance(data_type, T.BooleanType):
        raise bad_value("tick", "a boolean column or expression", shown)
    return expression


def _calendar(events: Events, tick: CalendarTick) -> CalendarTick:
    time = events.time
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


def _details(events: Events, tick: object, n: int, partial: bool, emit: Emit | None,
             trailing: bool) -> TickDetails:
    if isinstance(tick, CalendarTick):
        return TickDetails(None, _calendar(events, tick), n, partial, emit or "ticks",
                           trailing)
    if isinstance(tick, (str, Column)):
        return TickDetails(_predicate(events, tick), None, n, partial, emit or "events",
                           trailing)
    raise bad_value("tick", TICK_EXPECTED, tick)


def _check(events: Events, resolved: tuple[ResolvedAggregation, ...],
           strategy: str | None, kind: str) -> None:
    if strategy is not None and strategy not in STRATEGIES[kind]:
        raise bad_value("strategy", f"one of {', '.join(STRATEGIES[kind])} for {kind} "
                        "windows or None", strategy)
    if events.is_interval:
        raise WispUnsupportedError(f"{kind} windows take point events; these events have "
                                   f"an end column ({events.end!r})")
    refuse_lifetimes(resolved)


HOW = (kernel_shape("key, time and tie-break") +
       " walks each key's run of events: {ticks}; frames [lo, hi) by cumulative counts of "
       "ticks and binary search; aggregates over all frames at once (prefix differences, "
       "sparse tables).")
CALENDAR_TICKS = ("calendar ticks computed on the executors from the time zone's rules "
                  "(cached per ~400-day chunk, shared by all keys){newest}")
NEWEST = (", with the newest event time of the whole input read by every row from one "
          "scalar subquery to bound each key's ticks")


def _plan(events: Events, window: Since | Trailing, details: TickDetails,
          resolved: tuple[ResolvedAggregation, ...]) -> Plan:
    if details.calendar is not None:
        newest = NEWEST if details.emit != "events" else ""
        ticks = CALENDAR_TICKS.format(newest=newest)
    else:
        ticks = "the boolean tick column evaluated by Spark next to each row"
    return Plan(events, window, resolved, "arrow-ticks",
                "a reset or trailing-period window is a sequential reading of each key's "
                "events in order; the kernel costs O(n log n) per key whatever the "
                "periods' lengths, and ticks never leave the executors",
                HOW.format(ticks=ticks), "periods:build", tie_break_columns(events), details)


@dataclass(frozen=True)
class Periods:
    """Periods `(tick - length, tick]` with ticks at `align + k*length`, in ticks of the
    time column (µs, or days for date time), for `native-periods`."""

    length: int
    align: int


def periods_blocker(events: Events, details: TickDetails,
                    resolved: tuple[ResolvedAggregation, ...]) -> str | None:
    """Why `Since` cannot run as one groupBy on each event's tick, or None when it can."""
    tick = details.calendar
    if tick is None or details.emit != "ticks":
        return "only calendar ticks emitted at the ticks are groups of events"
    if tick.unit not in FIXED_PERIODS or tick.tz != "UTC":
        return "only hourly, daily and weekly ticks in UTC have periods of one length"
    if events.time.kind not in ("timestamp", "date"):
        return f"{events.time.kind} time runs on the kernel"
    if events.time.kind == "date" and tick.unit == "hourly":
        return "hourly ticks need a timestamp time"
    return grouped_blocker(resolved)


def plan_since(events: Events, window: Since, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    """`Since(tick, emit)`: the aggregate resets after each tick. Hourly, daily and
    weekly UTC ticks emitted at the ticks with order-free aggregations run as
    `native-periods` (one groupBy on each event's tick); everything else on the kernel."""
    _check(events, resolved, strategy, "Since")
    details = _details(events, window.tick, 1, True, window.emit, trailing=False)
    blocker = periods_blocker(events, details, resolved)
    if strategy == PERIODS and blocker is not None:
        raise bad_value("strategy", f"'arrow-ticks' or None here ({blocker})", strategy)
    if blocker is not None or strategy == "arrow-ticks":
        return _plan(events, window, details, resolved)
    assert details.calendar is not None
    length, align = FIXED_PERIODS[details.calendar.unit]
    if events.time.kind == "date":
        length, align = length // DAY, align // DAY
    how = ("Spark computes each event's tick (time + pmod(align - time, length): the tick "
           "closing its period) and aggregates by (key, tick) with its own hash "
           "aggregation; on the per-period rows (one per key and non-empty period) a "
           "window by key ordered by tick finds the next non-empty period, or the tick "
           "closing the newest event of the whole input (one scalar subquery), "
           "and the periods between are generated (sequence + explode) with count and "
           "sum 0 and every other aggregate null; window_start = tick - length, "
           "window_end = time = tick.")
    return Plan(events, window, resolved, PERIODS,
                "ticks of one fixed length in UTC put each event in exactly one period, "
                "so one groupBy computes the periods' aggregates without a sort of the "
                "events, and every aggregation has an exact Spark form",
                how, "native:periods", tie_break_columns(events), Periods(length, align))


def plan_trailing(events: Events, window: Trailing, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    """`Trailing(n, tick, partial)`: the current period and the `n - 1` before it."""
    _check(events, resolved, strategy, "Trailing")
    details = _details(events, window.tick, window.n, window.partial, "events",
                       trailing=True)
    return _plan(events, window, details, resolved)

