"""Durations and instants as integer ticks, with one grammar and floor-mod alignment.

A tick is one microsecond for timestamp and date time, and one unit of the column for
numeric time. There is no float-seconds arithmetic: a duration string is parsed into an
exact integer number of microseconds.

Grammar of a duration string: an optional sign, then one or more `<integer><unit>`
groups, units `d`, `h`, `m` (also `min`), `s`, `ms`, `us` (also `µs`), largest first, each at most
once, for example `"250ms"`, `"2s"`, `"1h30m"`, `"-2s"`, `"1d12h"`.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal
from typing import TypeAlias

from ..errors import bad_value

MICROS_PER_UNIT: dict[str, int] = {
    "d": 86_400_000_000,
    "h": 3_600_000_000,
    "m": 60_000_000,
    "min": 60_000_000,
    "s": 1_000_000,
    "ms": 1_000,
    "us": 1,
    "µs": 1,
    "μs": 1,
}
_UNIT_ORDER = ["d", "h", "m", "s", "ms", "us"]
_ALIASES = {"µs": "us", "μs": "us", "min": "m"}
_GROUP = re.compile(r"([0-9]+)(min|ms|us|µs|μs|d|h|m|s)")
_WHOLE = re.compile(r"^[+-]?([0-9]+(min|ms|us|µs|μs|d|h|m|s))+$")

Duration: TypeAlias = "str | _dt.timedelta | int | float | Decimal"
"""What a user may pass as a duration: a string, a timedelta, or a number for numeric time."""
Instant: TypeAlias = "_dt.datetime | _dt.date | int | float | Decimal"
"""What a user may pass as an instant (an `align`, a clock's `start` and `end`): a
datetime, a date, or a number for numeric time."""

GRAMMAR = "a duration such as '250ms', '2s', '1h30m', a datetime.timedelta, or a number"


def parse_duration_string(text: str, param: str) -> int:
    """Parse a duration string into integer microseconds."""
    compact = text.strip().replace(" ", "")
    if not _WHOLE.match(compact):
        raise bad_value(param, GRAMMAR, text)
    sign = -1 if compact.startswith("-") else 1
    body = compact.lstrip("+-")
    total = 0
    last_rank = -1
    for amount, unit in _GROUP.findall(body):
        rank = _UNIT_ORDER.index(_ALIASES.get(unit, unit))
        if rank <= last_rank:
            raise bad_value(param, GRAMMAR + " with each unit once, largest first", text)
        last_rank = rank
        total += int(amount) * MICROS_PER_UNIT[unit]
    return sign * total


def timedelta_to_micros(value: _dt.timedelta) -> int:
    """A timedelta as exact integer microseconds."""
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


def duration_to_ticks(value: object, param: str) -> int | float | Decimal:
    """A duration as ticks, without knowing the time column's type yet.

    Strings and timedeltas become integer microseconds. Numbers stay numbers: they are
    durations for numeric time and are checked against the column type at execution.
    """
    if isinstance(value, bool):
        raise bad_value(param, GRAMMAR, value)
    if isinstance(value, str):
        return parse_duration_string(value, param)
    if isinstance(value, _dt.timedelta):
        return timedelta_to_micros(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise bad_value(param, "a finite duration", value)
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise bad_value(param, "a finite duration", value)
        return value
    raise bad_value(param, GRAMMAR, value)


TICK_LIMIT = (1 << 63) - 1
"""The largest magnitude of a tick count: windows are computed on 64-bit ticks."""
TICK_RANGE = ("a duration within the 64-bit tick range (at most 2^63 - 1 ticks; a tick of "
              "a time duration is a microsecond, so at most about 106,751,991 days)")


def check_tick_range(ticks: int | float | Decimal, value: object, param: str) -> None:
    """Refuse an exact duration (`value`, `ticks` as `duration_to_ticks` gives them)
    whose ticks leave the 64-bit range: a window bound there would have to be clamped
    or wrap around. Fractional numbers are checked once the time column is known."""
    if isinstance(ticks, int) and abs(ticks) > TICK_LIMIT:
        raise bad_value(param, TICK_RANGE, value)


def format_duration(value: object) -> str:
    """A duration as the user would write it: timedeltas in the string grammar."""
    if not isinstance(value, _dt.timedelta):
        return repr(value)
    micros = timedelta_to_micros(value)
    if micros == 0:
        return "'0s'"
    sign, rest, parts = ("-" if micros < 0 else ""), abs(micros), []
    for unit in _UNIT_ORDER:
        amount, rest = divmod(rest, MICROS_PER_UNIT[unit])
        if amount:
            parts.append(f"{amount}{unit}")
    return f"'{sign}{''.join(parts)}'"


def is_time_duration(value: object) -> bool:
    """True when a raw duration was given as a string or a timedelta (a time unit)."""
    return isinstance(value, (str, _dt.timedelta))


def floor_div(value: int, step: int) -> int:
    """Floor division on integers: correct for negative values (before 1970)."""
    return value // step


def align_floor(value: int, step: int, align: int = 0) -> int:
    """The largest `align + n*step` that is <= `value` (floor-mod, correct before 1970)."""
    if step <= 0:
        raise bad_value("step", "a positive number of ticks", step)
    return value - (value - align) % step


EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def instant_to_micros(value: object, param: str) -> int:
    """An instant (datetime or date) as integer microseconds since the epoch.

    A naive datetime is read as UTC wall time; a date as its midnight.
    """
    if isinstance(value, _dt.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.UTC)
        return timedelta_to_micros(aware - EPOCH)
    if isinstance(value, _dt.date):
        return timedelta_to_micros(_dt.datetime(value.year, value.month, value.day,
                                                tzinfo=_dt.UTC) - EPOCH)
    raise bad_value(param, "a datetime.datetime or datetime.date", value)
