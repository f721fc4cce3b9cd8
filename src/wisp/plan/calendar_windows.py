"""Rule of `Tumbling` and `Hopping` windows of calendar size (`"1mo"`, `"3mo"`, `"1y"`,
local days with `tz=`; `wisp.spec.sizes`).

A calendar window is a hopping window on the axis of local units: each instant lies in
exactly one unit (a month or a local day of `tz`), numbered from January 1970, and the
unit bounds are increasing instants. An event's lifetime `[s, e)` overlaps the window of
units `[a, b)` exactly when its unit lifetime `[unit(s), unit(e - 1) + 1)` overlaps
`[a, b)` (a point event: `[unit(t), unit(t) + 1)`). So the engine numbers each event's
units with Spark's own time-zone functions, any strategy of the duration windows runs
unchanged on those integers (one groupBy for tumbling point events, panes, or the
interval kernel, by the same choice), and the output bounds are turned back into the
units' first instants.

Choices: `align` names a unit (January 1970 by default: '3mo' windows are quarters,
'1y' windows years); timestamp time in any zone, timestamp_ntz and date time only in
UTC (their values carry no zone); numeric time is refused; aggregations that read
event times or lifetimes (udaf, a user's aggregator, time_weighted_mean, ewm_mean)
are refused, as the
windows' lengths differ; on a stream calendar windows are refused
(`refuse_on_stream`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value
from ..spec.sizes import CalendarSize, CalendarUnit, calendar_align
from ..spec.windows import Hopping, Tumbling
from . import intervals
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import ColumnType, Field, Inputs, Source, TimeColumn, tie_break_columns
from .streaming import Streamed, stream_rule

UNIT = "__wisp_unit"
UNIT_END = "__wisp_unit_end"
"""Aggregations that read the events' times or lifetimes, which the unit axis hides."""
LONG = ColumnType("bigint", "integer")


@dataclass(frozen=True)
class Units:
    """The calendar of a window: its unit, time zone, and size, hop and align in units."""

    unit: CalendarUnit
    tz: str
    size: int
    hop: int
    align: int

    def words(self) -> str:
        what = "month" if self.unit == "month" else "local day"
        return f"{what}s of {self.tz}"


def is_calendar(window: Tumbling | Hopping) -> bool:
    return window.calendar is not None


@dataclass(frozen=True, kw_only=True)
class CalendarPlan(Plan):
    """A duration-window plan (`inner`) run on the unit numbers of the events, whose
    output bounds are turned back into instants."""

    inner: Plan
    units: Units

    def how(self) -> str:
        return (f"Spark numbers each event's {self.units.words()} (from_utc_timestamp to "
                "the local wall clock, the unit it shows, corrected by the unit bounds' "
                "instants from to_utc_timestamp, which put a skipped midnight at the clock "
                "change and a repeated one at its first instant), then, on those numbers: "
                f"{self.inner.how()} Each window's bounds become its units' first "
                "instants.")


@dataclass(frozen=True, kw_only=True)
class CalendarBucketsPlan(CalendarPlan):
    strategy = intervals.BUCKETS
    python = False


@dataclass(frozen=True, kw_only=True)
class CalendarPanesPlan(CalendarPlan):
    strategy = intervals.PANES


@dataclass(frozen=True, kw_only=True)
class CalendarIntervalsPlan(CalendarPlan):
    strategy = intervals.STRATEGY


PLAN_CLASSES: dict[str, type[CalendarPlan]] = {
    intervals.BUCKETS: CalendarBucketsPlan, intervals.PANES: CalendarPanesPlan,
    intervals.STRATEGY: CalendarIntervalsPlan}


@stream_rule(Tumbling, when=is_calendar, label=None, edges=True)
@stream_rule(Hopping, when=is_calendar, label=None, edges=True)
def refuse_on_stream(inputs: Inputs, window: Tumbling | Hopping,
                     resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    """Calendar windows run on batch tables only."""
    raise WispUnsupportedError(
        f"`window` must be a {type(window).__name__} of duration size on a stream "
        f"(calendar sizes run on batch tables only), found {window!r}")


def _units(source: Source, size: CalendarSize, hop: CalendarSize, window: Tumbling | Hopping,
           resolved: tuple[ResolvedAggregation, ...]) -> Units:
    time = source.time
    tz = window.tz or "UTC"
    where = f"{time.kind} time column {time.name!r}"
    if not time.uses_time_units:
        raise bad_value("size", f"a number (calendar sizes need a timestamp or date time "
                        f"column; {where} is numeric)", window.size)
    if time.kind != "timestamp" and tz != "UTC":
        raise bad_value("tz", f"'UTC' or None for {where} (its wall-clock times carry no "
                        "zone)", window.tz)
    for r in resolved:
        definition = r.aggregation.definition
        if definition.reads_times or definition.lifetimes or r.aggregation.lifetimes:
            raise WispUnsupportedError(
                f"`window` must be of duration size for {r.name} (it reads event times, "
                f"which calendar windows of unequal lengths do not share), found "
                f"{window!r}")
    return Units(size.unit, tz, size.count, hop.count, calendar_align(window.align,
                                                                         size.unit))


def unit_source(source: Source) -> Source:
    """The events as the inner plan sees them: integer unit numbers for time (and end)."""
    fields = (*source.columns, Field(UNIT, LONG, False),
              *([Field(UNIT_END, LONG, True)] if source.end is not None else []))
    return dataclasses.replace(source, columns=fields, time=TimeColumn(UNIT, "integer", LONG),
                               end=None if source.end is None else UNIT_END)


def _plan(inputs: Inputs, window: Tumbling | Hopping, resolved: tuple[ResolvedAggregation, ...],
          strategy: str | None, units: Units, inner_window: Tumbling | Hopping) -> Plan:
    source = inputs.source
    inner_inputs = dataclasses.replace(inputs, source=unit_source(source))
    if isinstance(inner_window, Tumbling):
        inner = intervals.plan_tumbling(inner_inputs, inner_window, resolved, strategy)
    else:
        inner = intervals.plan_hopping(inner_inputs, inner_window, resolved, strategy)
    # events of one unit keep their order in time, then by the tie-break columns
    inner = dataclasses.replace(inner, tie_break=(source.time.name,
                                                  *tie_break_columns(source)))
    plan_class = PLAN_CLASSES[inner.strategy]
    return plan_class(source=source, window=repr(window), aggregations=resolved,
                      tie_break=tie_break_columns(source), reason=inner.reason,
                      inner=inner, units=units)


@rule(Tumbling, when=is_calendar)
def plan_calendar_tumbling(inputs: Inputs, window: Tumbling,
                           resolved: tuple[ResolvedAggregation, ...],
                           strategy: str | None) -> Plan:
    """Tumbling of calendar size: tumbling windows of `size` units."""
    calendar = window.calendar
    assert calendar is not None
    units = _units(inputs.source, calendar, calendar, window, resolved)
    inner = Tumbling(units.size, align=units.align)
    return _plan(inputs, window, resolved, strategy, units, inner)


@rule(Hopping, when=is_calendar)
def plan_calendar_hopping(inputs: Inputs, window: Hopping,
                          resolved: tuple[ResolvedAggregation, ...],
                          strategy: str | None) -> Plan:
    """Hopping of calendar size: hopping windows of `size` units every `hop` units."""
    found = window.calendar
    assert found is not None
    units = _units(inputs.source, found[0], found[1], window, resolved)
    inner = Hopping(units.size, units.hop, align=units.align, output=window.output)
    return _plan(inputs, window, resolved, strategy, units, inner)
