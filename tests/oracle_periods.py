"""Brute-force reference of the reset (`Since`) and trailing-period (`Trailing`) windows
and of calendar ticks, against which the Spark engine and `wisp.spec.calendar` are judged.

Pure Python, a literal reading of the semantics (docs/windows/since-trailing-calendar.md):

- Predicate ticks: the rows of a key, in order, are cut into periods; a row whose flag is
  true ends its period (it belongs to it). A null flag ends nothing.
- Calendar ticks are found without the library's tick arithmetic: daily and longer
  ticks by bisection for the first instant of each local day/week/month/year; hourly
  and cron ticks by scanning every minute (hourly: every 15 minutes) for a wall clock
  that shows a matching time, or that jumps forward over one.
- A key's tick rows: every tick at or after its first event whose previous tick lies
  before the newest event of the whole input.

Rows are dicts; `time` holds int microseconds; see tests/oracle.py for the data model.
"""

from __future__ import annotations

import datetime as dt
import itertools
import zoneinfo
from collections.abc import Callable, Sequence
from typing import Any

from oracle import _sorted_by_key, aggregate

from wisp.spec.aggregates import Aggregation
from wisp.spec.windows import CalendarTick

Row = dict[str, Any]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MINUTE = 60_000_000
DAY = 86_400_000_000


# --------------------------------------------------------------- calendar ticks


def local(us: int, tz: str) -> dt.datetime:
    return (EPOCH + dt.timedelta(microseconds=us)).astimezone(zoneinfo.ZoneInfo(tz)) \
        .replace(tzinfo=None)


def _label(unit: str, moment: dt.datetime) -> tuple[int, ...]:
    day = moment.date()
    if unit == "daily":
        return (day.toordinal(),)
    if unit == "weekly":
        return (day.toordinal() - day.weekday(),)
    if unit == "monthly":
        return (day.year, day.month)
    return (day.year,)


def _first_instant(unit: str, tz: str, label: tuple[int, ...], guess: int) -> int:
    """The first instant whose local label is >= `label` (bisection in microseconds)."""
    lo, hi = guess - 2 * DAY, guess + 2 * DAY
    assert _label(unit, local(lo, tz)) < label <= _label(unit, local(hi, tz))
    while hi - lo > 1:
        middle = (lo + hi) // 2
        if _label(unit, local(middle, tz)) >= label:
            hi = middle
        else:
            lo = middle
    return hi


def _long_ticks(unit: str, tz: str, lo: int, hi: int) -> list[int]:
    day = local(lo, tz).date() - dt.timedelta(days=1)
    stop = local(hi, tz).date() + dt.timedelta(days=1)
    found = []
    seen: set[tuple[int, ...]] = set()
    while day <= stop:
        moment = dt.datetime(day.year, day.month, day.day)
        label = _label(unit, moment)
        if label not in seen:
            seen.add(label)
            start = {"daily": moment, "weekly": moment - dt.timedelta(days=day.weekday()),
                     "monthly": moment.replace(day=1),
                     "yearly": moment.replace(month=1, day=1)}[unit]
            guess = (start.replace(tzinfo=dt.UTC) - EPOCH) // dt.timedelta(microseconds=1)
            found.append(_first_instant(unit, tz, label, guess))
        day += dt.timedelta(days=1)
    # A day the clock skips whole (Apia, 30 December 2011) starts at the instant the next
    # one does: one tick.
    return sorted({u for u in found if lo <= u <= hi})


def _cron_set(text: str, low: int, high: int) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        base, _, step = part.partition("/")
        if base == "*":
            a, b = low, high
        elif "-" in base:
            a, b = (int(x) for x in base.split("-"))
        else:
            a = int(base)
            b = high if step else a
        out.update(range(a, b + 1, int(step or 1)))
    return out


def matcher(tick: CalendarTick) -> Callable[[dt.datetime], bool]:
    """Does a local wall-clock minute match the tick (seconds are always 0)?"""
    if tick.unit == "hourly":
        return lambda m: m.minute == 0
    assert tick.expr is not None
    minute, hour, dom, month, dow = tick.expr.split()
    sets = (_cron_set(minute, 0, 59), _cron_set(hour, 0, 23), _cron_set(dom, 1, 31),
            _cron_set(month, 1, 12), {d % 7 for d in _cron_set(dow, 0, 7)})

    def matches(m: dt.datetime) -> bool:
        dom_ok, dow_ok = m.day in sets[2], (m.isoweekday() % 7) in sets[4]
        day_ok = (dom_ok or dow_ok) if not dom.startswith("*") and not dow.startswith("*") \
            else (dom_ok and dow_ok)
        return m.minute in sets[0] and m.hour in sets[1] and m.month in sets[3] and day_ok

    return matches


def _scanned_ticks(tick: CalendarTick, lo: int, hi: int) -> list[int]:
    step = 15 * MINUTE if tick.unit == "hourly" else MINUTE
    matches = matcher(tick)
    found = []
    u = (lo // step) * step
    while u <= hi:
        now, before = local(u, tick.tz), local(u - 1, tick.tz)
        if now.second == 0 and now.microsecond == 0 and matches(now):
            found.append(u)
        elif now > before + dt.timedelta(microseconds=1):  # the clock jumped forward
            probe = before.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
            while probe < now:
                if matches(probe):
                    found.append(u)
                    break
                probe += dt.timedelta(minutes=1)
        u += step
    return [u for u in found if lo <= u <= hi]


def calendar_ticks(tick: CalendarTick, lo: int, hi: int) -> list[int]:
    """Every tick in `[lo, hi]`, ascending (offsets and clock changes on whole quarter
    hours are assumed for hourly and cron ticks, true of every zone since 1980)."""
    if tick.unit in ("hourly", "cron"):
        return _scanned_ticks(tick, lo, hi)
    return _long_ticks(tick.unit, tick.tz, lo, hi)


# ---------------------------------------------------------------------- windows


def _out(key_values: Row, start: Any, end: Any, time: Any, window: list[Row],
         aggs: Sequence[Aggregation], time_col: str, valid: bool = True) -> Row:
    row: Row = dict(key_values)
    row.update(window_start=start, window_end=end, time=time)
    for agg in aggs:
        row[agg.output_name] = aggregate(agg, window, time_col) if valid else None
    return row


def _predicate_periods(members: list[Row], flag: str) -> list[int]:
    """The period number of each row: how many true flags come strictly before it."""
    periods, count = [], 0
    for row in members:
        periods.append(count)
        if row[flag] is True:
            count += 1
    return periods


def since_predicate(rows: list[Row], *, time: str, key: list[str], order: str | None,
                    columns: list[str], flag: str, emit: str,
                    aggs: Sequence[Aggregation]) -> list[Row]:
    """Each row: its period's rows up to itself. emit="ticks": only rows whose flag is
    true; "events" and "both": every row."""
    out = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        periods = _predicate_periods(members, flag)
        for i, row in enumerate(members):
            if emit == "ticks" and row[flag] is not True:
                continue
            window = [members[j] for j in range(i + 1) if periods[j] == periods[i]]
            out.append(_out(key_values, window[0][time], row[time], row[time], window, aggs,
                            time))
    return out


def trailing_predicate(rows: list[Row], *, time: str, key: list[str], order: str | None,
                       columns: list[str], flag: str, n: int, partial: bool,
                       aggs: Sequence[Aggregation]) -> list[Row]:
    """Each row: the rows of its period and the n-1 periods before, up to itself; null
    while fewer than n-1 true flags precede the row, unless partial."""
    out = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        periods = _predicate_periods(members, flag)
        for i, row in enumerate(members):
            window = [members[j] for j in range(i + 1) if periods[i] - periods[j] < n]
            valid = partial or periods[i] >= n - 1
            out.append(_out(key_values, window[0][time], row[time], row[time], window, aggs,
                            time, valid))
    return out


def _key_ticks(tick: CalendarTick, members: list[Row], time: str, newest: int,
               before: int) -> list[int]:
    """All ticks from `before` µs before the key's first event to `before` µs past the
    newest event (`before` must span the periods a window reaches back)."""
    lo = members[0][time] - before
    hi = max(newest, members[-1][time]) + before
    return calendar_ticks(tick, lo, hi)


def since_calendar(rows: list[Row], *, time: str, key: list[str], order: str | None,
                   columns: list[str], tick: CalendarTick, emit: str,
                   aggs: Sequence[Aggregation], span_before: int) -> list[Row]:
    """Tick rows: for every tick T >= the key's first event whose previous tick P lies
    before the newest event of the input, the key's events in (P, T]. Event rows: the
    events in (P, t] of the row's period (P < t <= T), up to the row."""
    out: list[Row] = []
    if not rows:
        return out
    newest = max(r[time] for r in rows)
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        ticks = _key_ticks(tick, members, time, newest, span_before)
        first = members[0][time]
        if emit in ("events", "both"):
            for i, row in enumerate(members):
                previous = max(u for u in ticks if u < row[time])
                window = [m for m in members[:i + 1] if m[time] > previous]
                out.append(_out(key_values, previous, row[time], row[time], window, aggs,
                                time))
        if emit in ("ticks", "both"):
            for p, t in itertools.pairwise(ticks):
                if t >= first and p < newest:
                    window = [m for m in members if p < m[time] <= t]
                    out.append(_out(key_values, p, t, t, window, aggs, time))
    return out


def trailing_calendar(rows: list[Row], *, time: str, key: list[str], order: str | None,
                      columns: list[str], tick: CalendarTick, n: int, partial: bool,
                      aggs: Sequence[Aggregation], span_before: int) -> list[Row]:
    """Each row at t: the events of its period (P, T] (P < t <= T) and of the n-1
    periods before, up to the row; null while fewer than n-1 ticks T' with
    first event <= T' < t exist, unless partial."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        ticks = _key_ticks(tick, members, time, members[-1][time], span_before)
        first = members[0][time]
        for i, row in enumerate(members):
            earlier = [u for u in ticks if u < row[time]]
            start = earlier[-n]
            window = [m for m in members[:i + 1] if m[time] > start]
            valid = partial or len([u for u in earlier if u >= first]) >= n - 1
            out.append(_out(key_values, start, row[time], row[time], window, aggs, time,
                            valid))
    return out
