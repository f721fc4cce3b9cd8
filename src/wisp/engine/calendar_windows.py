"""`Tumbling`/`Hopping` of calendar size (`plan.calendar_windows`): each event's local
units numbered with Spark's own time-zone functions, the duration-window strategy of the
plan run on those numbers, and the output bounds turned back into instants.

An instant's unit is found from the local wall clock (`from_utc_timestamp`), then
checked against the instants at which that unit and the next begin
(`to_utc_timestamp` of their local midnights, which puts a skipped midnight at the
clock change and a repeated one at its first instant, as `wisp.spec.calendar` does):
one step back or forward corrects the rare instant whose wall clock shows another unit
than the one the instants bound (a clock set back across midnight). All arithmetic is on
integer microseconds (days for date time) and independent of the session time zone.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events, TimeColumn
from ..plan.calendar_windows import (
    UNIT,
    UNIT_END,
    CalendarBucketsPlan,
    CalendarIntervalsPlan,
    CalendarPanesPlan,
    CalendarPlan,
    Units,
)
from ..runtime.codecs.arrays import DAY
from ..spec.calendar import CALENDAR_MAX_US, CALENDAR_MIN_US, OUTSIDE_YEARS
from .columns import col, fail_where, interval_guarded, output_time_type
from .compiler import Query, compiler_for, compiles
from .native import kind_ticks, time_from_ticks

GUESS = "__wisp_unit_guess"
LAST = "__wisp_last_tick"


def _converts(units: Units, kind: str) -> bool:
    """Whether the wall clock differs from UTC (timestamp time in another zone)."""
    return kind == "timestamp" and units.tz != "UTC"


def _wall_micros(ticks: Column, units: Units, kind: str) -> Column:
    """The local wall-clock microseconds of instant `ticks` (µs)."""
    if not _converts(units, kind):
        return ticks
    return F.unix_micros(F.from_utc_timestamp(F.timestamp_micros(ticks), units.tz))


def _days_of_micros(micros: Column) -> Column:
    """floor(micros / DAY), exactly: the remainder by pmod, then an exact quotient."""
    whole = micros - F.pmod(micros, F.lit(DAY))
    return F.round(whole / F.lit(DAY)).cast("long")


def _unit_of_days(days: Column, units: Units) -> Column:
    """The unit number of a local day (days since 1970-01-01)."""
    if units.unit == "day":
        return days
    date = F.date_from_unix_date(days.cast("int"))
    return ((F.year(date) - F.lit(1970)) * F.lit(12) + F.month(date) - F.lit(1)).cast("long")


def _first_day(unit: Column, units: Units) -> Column:
    """The local day (days since 1970-01-01) a unit begins on."""
    if units.unit == "day":
        return unit
    year = (F.floor(unit / F.lit(12)) + F.lit(1970)).cast("int")
    month = (F.pmod(unit, F.lit(12)) + F.lit(1)).cast("int")
    return F.unix_date(F.make_date(year, month, F.lit(1))).cast("long")


def first_tick(unit: Column, units: Units, kind: str) -> Column:
    """The first instant of a unit, in ticks of the time kind (days for date time)."""
    day = _first_day(unit, units)
    if kind == "date":
        return day
    wall = day * F.lit(DAY)
    if not _converts(units, kind):
        return wall
    return F.unix_micros(F.to_utc_timestamp(F.timestamp_micros(wall), units.tz))


def with_unit(df: DataFrame, ticks: Column, name: str, units: Units, kind: str) -> DataFrame:
    """`df` with column `name`: the unit holding instant `ticks`."""
    if kind == "date":
        return df.withColumn(name, _unit_of_days(ticks, units))
    wall = _wall_micros(ticks, units, kind)
    guess = _unit_of_days(_days_of_micros(wall), units)
    if not _converts(units, kind):
        return df.withColumn(name, guess)
    hidden = f"{GUESS}_{name}"
    df = df.withColumn(hidden, guess)
    before = F.when(first_tick(col(hidden), units, kind) > ticks, col(hidden) - F.lit(1)
                    ).otherwise(col(hidden))
    df = df.withColumn(hidden, before)
    after = F.when(first_tick(col(hidden) + F.lit(1), units, kind) <= ticks,
                   col(hidden) + F.lit(1)).otherwise(col(hidden))
    return df.withColumn(name, after).drop(hidden)


def unit_events(events: Events, query: Query, units: Units) -> Events:
    """The events with their unit numbers (`UNIT`, and `UNIT_END` for interval events:
    the unit after the one holding the last tick), after the input's own checks (null
    time, end before time, a time outside the calendar's years)."""
    df = interval_guarded(events, query.observation)
    kind = events.time.kind
    ticks = kind_ticks(col(events.time.name), kind)
    micros = ticks * F.lit(DAY) if kind == "date" else ticks
    outside = (micros < F.lit(CALENDAR_MIN_US)) | (micros > F.lit(CALENDAR_MAX_US))
    df = fail_where(df, outside, F.concat(F.lit("WispError: " + OUTSIDE_YEARS),
                                          col(events.time.name).cast("string")))
    df = with_unit(df, ticks, UNIT, units, kind)
    if events.end is not None:
        end = kind_ticks(col(events.end), kind)
        last = F.greatest(end, ticks + F.lit(1)) - F.lit(1)
        df = df.withColumn(LAST, F.when(end.isNotNull(), last))
        df = with_unit(df, col(LAST), UNIT_END, units, kind)
        df = df.withColumn(UNIT_END, col(UNIT_END) + F.lit(1)).drop(LAST)
    return Events(df, TimeColumn(UNIT, "integer", T.LongType()),
                  None if events.end is None else UNIT_END, events.key, events.order,
                  "error")


def calendar_windows(plan: CalendarPlan, query: Query) -> DataFrame:
    """The inner plan over the unit numbers, its bounds turned back into instants."""
    events = query.events
    inner_query = Query(unit_events(events, query, plan.units), None, query.observation)
    out = compiler_for(plan.inner)(plan.inner, inner_query)
    time_type = output_time_type(events.time)
    kind = events.time.kind
    return out.withColumns({
        name: time_from_ticks(first_tick(col(name), plan.units, kind), events.time).cast(time_type)
        for name in ("window_start", "window_end", "time")})


compiles(CalendarBucketsPlan)(calendar_windows)
compiles(CalendarPanesPlan)(calendar_windows)
compiles(CalendarIntervalsPlan)(calendar_windows)
