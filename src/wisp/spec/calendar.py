"""Calendar tick arithmetic in a time zone, pure Python (standard library only).

Instants are integer microseconds since 1970-01-01T00:00:00Z. A calendar tick is an
instant at which the local wall clock of `tz` reaches a boundary:

- `hourly`: every local time HH:00 (both instants when the clock shows it twice, as in
  the hour repeated when daylight saving time ends: a 25-hour day has 25 hourly ticks);
- `daily`, `weekly` (Monday), `monthly` (the 1st), `yearly` (January 1st): the first
  instant of each local day, week, month or year (normally local midnight; a day whose
  midnight is skipped by a clock change starts at the change). Across a DST change a
  daily period therefore lasts 23 or 25 hours;
- `cron(expr)`: every local time (seconds 0) matching the five fields minute, hour,
  day of month, month, day of week (0 and 7 = Sunday; when both day fields are
  restricted, a day matches either, as in cron), at both instants when the clock shows
  it twice.

A boundary skipped by a clock jump forward ticks once, at the instant of the jump.
Periods are `(previous tick, tick]`. Supported local years: 2..9998.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import functools
import zoneinfo
from collections.abc import Iterator

from ..errors import WispInputError, bad_value
from .time import EPOCH, instant_to_micros, timedelta_to_micros
from .windows import CalendarTick, check_cron

CHUNK = 1 << 45  # about 407 days of microseconds: ticks are computed and cached per chunk
_MARGIN = _dt.timedelta(days=2)  # more than any UTC offset change
_SCAN = 3_600_000_000  # offsets are read hourly to find a chunk's clock changes
_SEARCH_CHUNKS = 12  # about 13 years: the longest gap between ticks of a valid expression
CALENDAR_MIN_US = -62_104_060_800_000_000  # 0002-01-01
CALENDAR_MAX_US = 253_370_764_800_000_000  # 9999-01-01 00:00 UTC: the end of 9998
_MIN_US, _MAX_US = CALENDAR_MIN_US, CALENDAR_MAX_US


def to_local(us: int, tz: str) -> _dt.datetime:
    """The local wall-clock time (naive) of instant `us` in `tz`."""
    return (EPOCH + _dt.timedelta(microseconds=us)).astimezone(_zone(tz)).replace(tzinfo=None)


@functools.lru_cache(maxsize=64)
def _zone(tz: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(tz)


def _offset(us: int, tz: str) -> _dt.timedelta | None:
    return (EPOCH + _dt.timedelta(microseconds=us)).astimezone(_zone(tz)).utcoffset()


def _offset_us(us: int, tz: str) -> int:
    offset = _offset(us, tz)
    return 0 if offset is None else timedelta_to_micros(offset)


def _change(before: int, after: int, tz: str) -> int:
    """The first instant in `(before, after]` whose UTC offset differs from `before`'s
    (one clock change between the two)."""
    was = _offset_us(before, tz)
    while after - before > 1:
        middle = (before + after) // 2
        if _offset_us(middle, tz) == was:
            before = middle
        else:
            after = middle
    return after


def offset_segments(lo: int, hi: int, tz: str) -> list[tuple[int, int]]:
    """The stretches of constant UTC offset over the instants `[lo, hi)`: `(first
    instant, offset in us)`, ascending, the first starting at `lo`. Offsets are read every
    `_SCAN` and each change found by bisection, so two changes less than an hour apart
    that cancel out would go unseen: in the tz database the closest two changes of any
    zone are four days apart (Africa/Freetown, 1940s). The tests compare whole chunks
    with an oracle that reads every quarter hour."""
    segments = [(lo, _offset_us(lo, tz))]
    before = lo
    while before < hi - 1:
        after = min(before + _SCAN, hi - 1)
        while _offset_us(after, tz) != segments[-1][1]:
            at = _change(before, after, tz)
            segments.append((at, _offset_us(at, tz)))
            before = at
        before = after
    return segments


def _instants(local: list[int], segments: list[tuple[int, int]], end: int) -> list[int]:
    """The instants at which the wall clock shows each of the ascending local times
    `local` (wall-clock microseconds from 1970-01-01 00:00), within the segments' span
    `[segments[0][0], end)`: one normally, both when the clock shows it twice, and for a
    time skipped by a jump forward the instant of the jump (as `resolve` with
    `repeats`). Strictly ascending: every segment's instants lie before the next's."""
    found: list[int] = []
    covered = segments[0][0] + segments[0][1]  # times before it: before the span
    for at, (first, offset) in enumerate(segments):
        stop = segments[at + 1][0] if at + 1 < len(segments) else end
        start_local, stop_local = first + offset, stop + offset
        i, j = bisect.bisect_left(local, start_local), bisect.bisect_left(local, stop_local)
        if start_local > covered and i > bisect.bisect_left(local, covered):
            # the clock jumped forward over [covered, start_local), where some time lies
            found.append(first)
            i += i < j and local[i] == start_local  # that time is the jump's instant
        found.extend(map((-offset).__add__, local[i:j]))
        covered = max(covered, stop_local)
    return found


def resolve(local: _dt.datetime, tz: str, repeats: bool) -> list[int]:
    """The instants at which the wall clock of `tz` shows `local`: one normally; two
    when the clock shows it twice (only the first unless `repeats`); for a time skipped
    by a jump forward, the instant of the jump."""
    zone = _zone(tz)
    first = instant_to_micros(local.replace(tzinfo=zone, fold=0), "tick")
    second = instant_to_micros(local.replace(tzinfo=zone, fold=1), "tick")
    if first == second:
        return [first]
    if first < second:  # shown twice: the clock went back
        return [first, second] if repeats else [first]
    return [_change(second, first, tz)]  # skipped: the clock jumped forward over it


# ------------------------------------------------------------------ boundaries


def _cron_values(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, slash, step = part.partition("/")
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-")
            first, last = int(a), int(b)
        else:
            first = int(base)
            last = high if slash else first
        values.update(range(first, last + 1, int(step) if slash else 1))
    return frozenset(values)


@functools.lru_cache(maxsize=256)
def cron_fields(expr: str) -> tuple[frozenset[int], ...]:
    """(minutes, hours, days of month, months, days of week (0 = Sunday), and two flags
    as sets {1}/{}: whether day of month and day of week are restricted)."""
    check_cron(expr)
    minute, hour, dom, month, dow = expr.split()
    days_of_week = {d % 7 for d in _cron_values(dow, 0, 7)}
    return (_cron_values(minute, 0, 59), _cron_values(hour, 0, 23),
            _cron_values(dom, 1, 31), _cron_values(month, 1, 12), frozenset(days_of_week),
            frozenset({1}) if not dom.startswith("*") else frozenset(),
            frozenset({1}) if not dow.startswith("*") else frozenset())


def _cron_day(day: _dt.date, fields: tuple[frozenset[int], ...]) -> bool:
    _, _, doms, months, dows, dom_restricted, dow_restricted = fields
    if day.month not in months:
        return False
    dom_ok = day.day in doms
    dow_ok = (day.isoweekday() % 7) in dows
    if dom_restricted and dow_restricted:
        return dom_ok or dow_ok
    return dom_ok and dow_ok


def check_cron_matches(expr: str) -> None:
    """Refuse a cron expression that matches no day at all (e.g. February 31st)."""
    fields = cron_fields(expr)
    leap = _dt.date(2024, 1, 1)
    if not any(_cron_day(leap + _dt.timedelta(days=d), fields) for d in range(366 + 365)):
        raise bad_value("expr", "a cron expression that matches some day", expr)


_DAY = 86_400_000_000
_LOCAL_EPOCH = _dt.date(1970, 1, 1)
_LOCAL_ZERO = _dt.datetime(1970, 1, 1)


def _day_us(day: _dt.date) -> int:
    """Local midnight of `day` in wall-clock microseconds from 1970-01-01 00:00."""
    return (day - _LOCAL_EPOCH).days * _DAY


def _local_boundaries(tick: CalendarTick, start: _dt.datetime, stop: _dt.datetime
                      ) -> list[int]:
    """Local boundary times of `tick` from (about) `start` to past `stop`, ascending, in
    wall-clock microseconds from 1970-01-01 00:00 (a minute's cron: half a million a
    chunk, so integers, not datetimes)."""
    if tick.unit in ("hourly", "cron"):
        if tick.unit == "hourly":
            in_day = [h * 3_600_000_000 for h in range(24)]
            fields = None
        else:
            assert tick.expr is not None
            fields = cron_fields(tick.expr)
            in_day = [h * 3_600_000_000 + m * 60_000_000
                      for h in sorted(fields[1]) for m in sorted(fields[0])]
        local: list[int] = []
        day = start.date()
        while True:
            if fields is None or _cron_day(day, fields):
                base = _day_us(day)
                local.extend(map(base.__add__, in_day))
            if _dt.datetime(day.year, day.month, day.day) > stop:
                return local
            day += _dt.timedelta(days=1)
    return [_day_us(moment.date()) for moment in _day_boundaries(tick, start, stop)]


def _day_boundaries(tick: CalendarTick, start: _dt.datetime, stop: _dt.datetime
                    ) -> Iterator[_dt.datetime]:
    """Local first days of `tick`'s periods (daily to yearly) from (about) `start` to
    past `stop`, ascending."""
    unit = tick.unit
    day = start.date()
    if unit == "weekly":
        day -= _dt.timedelta(days=day.weekday())
    elif unit == "monthly":
        day = day.replace(day=1)
    elif unit == "yearly":
        day = day.replace(month=1, day=1)
    while True:
        moment = _dt.datetime(day.year, day.month, day.day)
        yield moment
        if moment > stop:
            return
        if unit == "daily":
            day += _dt.timedelta(days=1)
        elif unit == "weekly":
            day += _dt.timedelta(days=7)
        elif unit == "monthly":
            day = _dt.date(day.year + day.month // 12, day.month % 12 + 1, 1)
        else:
            day = _dt.date(day.year + 1, 1, 1)


OUTSIDE_YEARS = "`time` must lie in the years 0002..9998 for calendar ticks, found "
"""The start of the error on an event time outside the calendar's years (the time, as
text, follows)."""


def check_range(us: int) -> None:
    """Fail on an instant outside the years the calendar covers."""
    if not _MIN_US <= us <= _MAX_US:
        raise WispInputError(OUTSIDE_YEARS + show_instant(us))


def show_instant(us: int) -> str:
    """An instant in microseconds from the epoch as UTC text, or as the number where
    Python's datetime does not reach."""
    try:
        moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=us)
    except OverflowError:
        return f"{us} µs from the epoch"
    return moment.isoformat(sep=" ") + " UTC"


@functools.lru_cache(maxsize=4096)
def chunk_ticks(tick: CalendarTick, chunk: int) -> tuple[int, ...]:
    """The ticks in `[chunk * CHUNK, (chunk + 1) * CHUNK)` that lie in the calendar's
    years, ascending, without repeats. A chunk wholly outside them fails: a search for
    the tick before or after an instant reaches it only when that tick is outside."""
    lo, hi = chunk * CHUNK, (chunk + 1) * CHUNK
    if hi <= _MIN_US or lo > _MAX_US:
        check_range(lo if lo > _MAX_US else hi - 1)
    lo, hi = max(lo, _MIN_US), min(hi, _MAX_US + 1)
    start = to_local(lo, tick.tz) - _MARGIN
    stop = to_local(hi, tick.tz) + _MARGIN
    local = _local_boundaries(tick, start, stop)
    repeats = tick.unit in ("hourly", "cron")
    if repeats and len(local) * 5 > 2 * (hi - lo) // _SCAN:
        # Many boundaries (a minute's cron: half a million): from the clock changes, read
        # at a fraction of the cost of resolving each boundary.
        return tuple(_instants(local, offset_segments(lo, hi, tick.tz), hi))
    found: set[int] = set()
    for value in local:
        for instant in resolve(_LOCAL_ZERO + _dt.timedelta(microseconds=value), tick.tz,
                               repeats):
            if lo <= instant < hi:
                found.add(instant)
    return tuple(sorted(found))


def ticks_in(tick: CalendarTick, lo: int, hi: int) -> list[int]:
    """Every tick `u` with `lo <= u <= hi`, ascending."""
    result: list[int] = []
    for chunk in range(lo // CHUNK, hi // CHUNK + 1):
        ticks = chunk_ticks(tick, chunk)
        result.extend(ticks[bisect.bisect_left(ticks, lo):bisect.bisect_right(ticks, hi)])
    return result


def next_tick(tick: CalendarTick, after: int) -> int:
    """The first tick strictly after instant `after`."""
    first = after // CHUNK
    for chunk in range(first, first + _SEARCH_CHUNKS):
        ticks = chunk_ticks(tick, chunk)  # ascending: a binary search, not a scan
        at = bisect.bisect_right(ticks, after)
        if at < len(ticks):
            return ticks[at]
    raise bad_value("tick", "a calendar tick that ticks at least every 13 years", tick)


def prev_tick(tick: CalendarTick, before: int) -> int:
    """The last tick strictly before instant `before`."""
    first = before // CHUNK
    for chunk in range(first, first - _SEARCH_CHUNKS, -1):
        ticks = chunk_ticks(tick, chunk)
        at = bisect.bisect_left(ticks, before)
        if at > 0:
            return ticks[at - 1]
    raise bad_value("tick", "a calendar tick that ticks at least every 13 years", tick)


def closing_tick(tick: CalendarTick, instant: int) -> int:
    """The tick that closes the period `(previous tick, tick]` holding `instant`."""
    return next_tick(tick, instant - 1)
