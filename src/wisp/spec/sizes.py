"""Calendar sizes of `Tumbling` and `Hopping` windows: months, years, and local days.

A calendar size counts units of the local calendar of a time zone instead of
microseconds:

- `"<n>mo"`: n months; `"<n>y"`: n years (12n months). Always calendar sizes (UTC unless
  the window's `tz` says otherwise).
- `"<n>d"` (or a `timedelta` of whole days) with `tz=` given: n local days, 23, 24 or 25
  hours long across a daylight-saving change. Without `tz`, `"1d"` stays a duration of
  exactly 24 hours (the same windows as local days in UTC).

Units are numbered from the epoch: month `m` is the `m`-th month after January 1970
(`(year - 1970) * 12 + month - 1`), day `d` the `d`-th local day after 1970-01-01. A
window of calendar size covers the units `[align + k*hop, align + k*hop + size)`; its
bounds are the first instants of those local units (`wisp.spec.calendar`'s rule: local
midnight, or the instant of the clock change when midnight is skipped; the first
instant when it is shown twice).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Literal

from ..errors import WispInputError, bad_value
from .time import MICROS_PER_UNIT, timedelta_to_micros

CalendarUnit = Literal["month", "day"]
_SIZE = re.compile(r"^\+?([0-9]+)(mo|y|d)$")
SIZE_EXPECTED = ("a duration such as '250ms', '2s', '1h30m', a calendar size such as "
                 "'1mo', '3mo', '1y' (or whole days such as '1d' with `tz`), or a number")
DAY_US = MICROS_PER_UNIT["d"]


@dataclass(frozen=True)
class CalendarSize:
    """`count` units (`"month"` or local `"day"`) of the calendar."""

    unit: CalendarUnit
    count: int

    def __str__(self) -> str:
        if self.unit == "day":
            return f"{self.count}d"
        return f"{self.count // 12}y" if self.count % 12 == 0 else f"{self.count}mo"


def calendar_size(value: object, param: str, tz: str | None) -> CalendarSize | None:
    """The calendar size `value` stands for, or None when it is an ordinary duration
    (checked by the caller). With `tz` given, only calendar sizes are accepted."""
    found: CalendarSize | None = None
    if isinstance(value, str):
        match = _SIZE.match(value.strip().replace(" ", ""))
        if match is not None:
            amount, unit = int(match.group(1)), match.group(2)
            if unit == "d" and tz is None:
                return None  # a duration of 24-hour days
            if amount <= 0:
                raise bad_value(param, "a positive calendar size", value)
            found = CalendarSize("day", amount) if unit == "d" else \
                CalendarSize("month", amount * (12 if unit == "y" else 1))
    elif isinstance(value, _dt.timedelta) and tz is not None:
        micros = timedelta_to_micros(value)
        if micros > 0 and micros % DAY_US == 0:
            found = CalendarSize("day", micros // DAY_US)
    if found is None and tz is not None:
        raise bad_value(param, "a calendar size ('1mo', '3mo', '1y', or whole local days "
                        "such as '1d') when `tz` is given", value)
    return found


def hop_size(size: CalendarSize, hop: object, tz: str | None) -> CalendarSize:
    """The calendar hop of a window whose size is `size`: in the same unit."""
    try:
        found = calendar_size(hop, "hop", tz)
    except WispInputError:
        found = None
    units = "months ('1mo', '3mo', '1y')" if size.unit == "month" else "local days ('1d')"
    if found is None or found.unit != size.unit:
        raise bad_value("hop", f"a calendar size in {units} like `size` "
                        f"({str(size)!r})", hop)
    return found


def unit_index(day: _dt.date, unit: CalendarUnit) -> int:
    """The number of the local unit holding `day`, counted from January 1970."""
    if unit == "month":
        return (day.year - 1970) * 12 + day.month - 1
    return (day - _dt.date(1970, 1, 1)).days


def calendar_align(align: object, unit: CalendarUnit) -> int:
    """The unit number a calendar window's `align` names: None for January 1970 (so
    that '3mo' windows are calendar quarters and '1y' windows calendar years), else a
    local date (a `datetime.date`, or a naive `datetime` at midnight) that begins a unit
    (the 1st of a month for month sizes)."""
    if align is None:
        return 0
    expected = ("a date (the first local day of a window, the 1st of a month for month "
                "sizes) or None" if unit == "month" else
                "a date (the first local day of a window) or None")
    if isinstance(align, _dt.datetime):
        if align.tzinfo is not None or align.time() != _dt.time(0):
            raise bad_value("align", expected, align)
        align = align.date()
    if not isinstance(align, _dt.date):
        raise bad_value("align", expected, align)
    if unit == "month" and align.day != 1:
        raise bad_value("align", expected, align)
    return unit_index(align, unit)
