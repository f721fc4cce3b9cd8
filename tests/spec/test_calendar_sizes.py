"""Calendar sizes of `Tumbling`/`Hopping` (`wisp.spec.sizes`): what is accepted, and
each bad argument by its text."""

from __future__ import annotations

import datetime as dt

import pytest

import wisp as ws
from wisp.errors import WispInputError
from wisp.spec.sizes import CalendarSize


def test_calendar_sizes_are_months_or_local_days() -> None:
    assert ws.Tumbling("1mo").calendar == CalendarSize("month", 1)
    assert ws.Tumbling("3mo", tz="Europe/Berlin").calendar == CalendarSize("month", 3)
    assert ws.Tumbling("1y").calendar == CalendarSize("month", 12)
    assert ws.Tumbling("1d", tz="Europe/Berlin").calendar == CalendarSize("day", 1)
    assert ws.Tumbling(dt.timedelta(days=2), tz="UTC").calendar == CalendarSize("day", 2)
    assert ws.Hopping("1y", "3mo").calendar == (CalendarSize("month", 12),
                                                CalendarSize("month", 3))
    assert ws.Hopping("2d", "1d", tz="Asia/Tokyo").calendar == (CalendarSize("day", 2),
                                                                 CalendarSize("day", 1))


def test_durations_stay_durations() -> None:
    assert ws.Tumbling("1d").calendar is None  # 24 hours without tz
    assert ws.Hopping("2h", "1h").calendar is None
    assert ws.Tumbling(ws.Count(3)).calendar is None


@pytest.mark.parametrize(("build", "message"), [
    (lambda: ws.Tumbling("1w"),
     "`size` must be a duration such as '250ms', '2s', '1h30m', a calendar size such as "
     "'1mo', '3mo', '1y' (or whole days such as '1d' with `tz`), or a number, found '1w'"),
    (lambda: ws.Tumbling("0mo"), "`size` must be a positive calendar size, found '0mo'"),
    (lambda: ws.Tumbling("1h", tz="Europe/Berlin"),
     "`size` must be a calendar size ('1mo', '3mo', '1y', or whole local days such as "
     "'1d') when `tz` is given, found '1h'"),
    (lambda: ws.Tumbling("1mo", tz="Mars/Olympus"),
     "`tz` must be an IANA time zone name such as 'Europe/Berlin', found 'Mars/Olympus'"),
    (lambda: ws.Tumbling("1mo", tz=3),
     "`tz` must be an IANA time zone name such as 'Europe/Berlin', found 3"),
    (lambda: ws.Hopping("3mo", "1d"),
     "`hop` must be a calendar size in months ('1mo', '3mo', '1y') like `size` ('3mo'), "
     "found '1d'"),
    (lambda: ws.Hopping("3mo", "1h"),
     "`hop` must be a calendar size in months ('1mo', '3mo', '1y') like `size` ('3mo'), "
     "found '1h'"),
    (lambda: ws.Hopping("2d", "1mo", tz="UTC"),
     "`hop` must be a calendar size in local days ('1d') like `size` ('2d'), found '1mo'"),
    (lambda: ws.Hopping("1h", "1mo"),
     "`size` must be a calendar size like `hop` (both in months, or both in local days "
     "with `tz`), found '1h'"),
    (lambda: ws.Tumbling("1mo", align=dt.date(2024, 1, 15)),
     "`align` must be a date (the first local day of a window, the 1st of a month for "
     "month sizes) or None, found datetime.date(2024, 1, 15)"),
    (lambda: ws.Tumbling("1d", tz="UTC", align=dt.datetime(2024, 1, 1, 12)),
     "`align` must be a date (the first local day of a window) or None, found "
     "datetime.datetime(2024, 1, 1, 12, 0)"),
    (lambda: ws.Tumbling(ws.Count(2), tz="UTC"),
     "`tz` must be None for a tumbling window sized by a policy, found 'UTC'"),
])
def test_bad_calendar_arguments(build: object, message: str) -> None:
    with pytest.raises(WispInputError) as error:
        build()  # type: ignore[operator]
    assert str(error.value).startswith(message)
