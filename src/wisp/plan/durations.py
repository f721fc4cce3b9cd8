"""Durations resolved against the time column: integer ticks (or floats for float time)."""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal

from ..errors import bad_value
from ..spec.time import (
    MICROS_PER_UNIT,
    TICK_LIMIT,
    duration_to_ticks,
    instant_to_micros,
    is_time_duration,
)
from .source import TimeColumn

DAY = MICROS_PER_UNIT["d"]


def resolve_duration(value: object, time: TimeColumn, param: str) -> int | float:
    """`value` in ticks of `time`'s column, checked against its kind.

    Timestamp and date time take durations ('2s', timedelta; whole days for dates);
    numeric time takes numbers (integers for integer time; at most `scale` decimal
    places for decimal time). Zero is zero in any kind.
    """
    raw = duration_to_ticks(value, param)
    if raw == 0:
        return 0
    column = f"{time.kind} time column {time.name!r}"
    if time.uses_time_units:
        if not is_time_duration(value):
            raise bad_value(param, f"a duration such as '2s' or a timedelta for {column}",
                            value)
        ticks = int(raw)
        if time.kind == "date" and ticks % DAY:
            raise bad_value(param, f"a whole number of days for {column}", value)
        return ticks
    if is_time_duration(value):
        raise bad_value(param, f"a number (durations are plain numbers for {column})", value)
    if time.kind == "integer":
        if isinstance(raw, int) or (isinstance(raw, (float, Decimal)) and raw == int(raw)):
            return int(raw)
        raise bad_value(param, f"a whole number for {column}", value)
    if time.kind == "decimal":
        scaled = Decimal(str(raw)) * (Decimal(10) ** time.scale)
        if scaled != scaled.to_integral_value():
            raise bad_value(param, f"a number with at most {time.scale} decimal places for "
                            f"{column}", value)
        return int(scaled)
    return float(raw)


def resolve_bound(value: object, time: TimeColumn, param: str) -> int | float:
    """A window bound (`resolve_duration`) that must stay within the 64-bit tick range
    (checked here for numbers, whose ticks depend on the column: a decimal bound is in
    units of 10^-scale; `spec.time.check_tick_range` has checked the exact durations)."""
    ticks = resolve_duration(value, time, param)
    if isinstance(ticks, int) and abs(ticks) > TICK_LIMIT:
        unit = (f" of 10^-{time.scale}, the unit of decimal time column {time.name!r}"
                if time.kind == "decimal" else "")
        raise bad_value(param, f"a duration within the 64-bit tick range (at most 2^63 - 1 "
                        f"ticks{unit})", value)
    return ticks


def resolve_instant(value: object, time: TimeColumn, param: str) -> int | float:
    """An instant (a window's or a policy's `align`, a clock's `start` and `end`) in
    ticks of `time`'s column: a datetime or a date for timestamp and date time (a date or
    a midnight for date time), a number for numeric time (checked as `resolve_duration`
    checks a duration: whole for integer time, at most `scale` decimal places for
    decimal time; a float for float time)."""
    column = f"{time.kind} time column {time.name!r}"
    if time.uses_time_units:
        if not isinstance(value, (_dt.datetime, _dt.date)):
            raise bad_value(param, f"a datetime or a date for {column}", value)
        micros = instant_to_micros(value, param)
        if time.kind == "date" and micros % DAY:
            raise bad_value(param, f"a date or a midnight for {column}", value)
        return micros
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise bad_value(param, f"a number for {column}", value)
    ticks = resolve_duration(value, time, param)
    return float(ticks) if time.kind == "float" else ticks
