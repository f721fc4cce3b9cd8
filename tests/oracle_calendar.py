"""Brute-force reference (the oracle) of `Tumbling`/`Hopping` windows of calendar size,
and of sessions with a per-row gap.

Calendar windows, read literally: units are months (`"1mo"`, `"3mo"`, `"1y"` = 12) or
local days (`"1d"` with `tz`) numbered from January 1970; window `k` covers the units
`[align + k*hop, align + k*hop + size)` and spans, in instants, from the first instant
of its first unit to the first instant of the unit after its last. The first instant of
a unit is computed here with Python's zoneinfo alone (not with wisp's calendar code):
the earliest instant whose local wall clock shows the unit's midnight, or, when no
instant shows it (a clock jump skips it), the instant of the jump. An event belongs to
every window its lifetime `[t, max(end, t + 1))` overlaps (a point event lives on
`[t, t + 1)`). Every window is checked against every event; windows with no member
give no row. Times are integer microseconds since the epoch; open-ended events are not
taken.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Sequence
from typing import Any

from oracle import Row, _sorted_by_key, aggregate

from wisp.spec.aggregates import Aggregation

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def instant(moment: dt.datetime) -> int:
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def wall(us: int, tz: str) -> dt.datetime:
    return (EPOCH + dt.timedelta(microseconds=us)).astimezone(
        zoneinfo.ZoneInfo(tz)).replace(tzinfo=None)


def local_midnight(unit: int, kind: str) -> dt.datetime:
    """The local midnight that begins unit number `unit` ("month" or "day")."""
    if kind == "month":
        return dt.datetime(1970 + unit // 12, unit % 12 + 1, 1)
    return dt.datetime(1970, 1, 1) + dt.timedelta(days=unit)


def first_instant(local: dt.datetime, tz: str) -> int:
    """The earliest instant whose wall clock in `tz` shows `local`; when none does (a
    jump forward skips it), the instant of the jump."""
    zone = zoneinfo.ZoneInfo(tz)
    shown = []
    for fold in (0, 1):
        us = instant(local.replace(tzinfo=zone, fold=fold).astimezone(UTC))
        if wall(us, tz) == local:
            shown.append(us)
    if shown:
        return min(shown)
    # skipped: search the first instant whose wall clock is past `local`
    lo = instant(local.replace(tzinfo=UTC)) - 2 * 86_400_000_000
    hi = lo + 4 * 86_400_000_000
    while hi - lo > 1:
        middle = (lo + hi) // 2
        if wall(middle, tz) > local:
            hi = middle
        else:
            lo = middle
    return hi


def unit_start(unit: int, kind: str, tz: str) -> int:
    return first_instant(local_midnight(unit, kind), tz)


def rough_unit(us: int, kind: str, tz: str) -> int:
    """The unit the wall clock shows at `us` (only to bound the windows searched)."""
    local = wall(us, tz)
    if kind == "month":
        return (local.year - 1970) * 12 + local.month - 1
    return (local.date() - dt.date(1970, 1, 1)).days


def calendar_windows(rows: list[Row], *, time: str, end: str | None, key: list[str],
                     order: str | None, columns: list[str], kind: str, tz: str,
                     size: int, hop: int, align: int,
                     aggs: Sequence[Aggregation]) -> list[Row]:
    """One row per non-empty window per key; `time` = `window_end`."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        spans = []
        for row in members:
            t = row[time]
            e = t + 1 if end is None else max(row[end], t + 1)
            assert row[end if end else time] is not None
            spans.append((t, e))
        lowest = min(rough_unit(t, kind, tz) for t, _ in spans) - size - 2
        highest = max(rough_unit(e, kind, tz) for _, e in spans) + 2
        k = (lowest - align) // hop
        while align + k * hop <= highest:
            first = align + k * hop
            start, stop = unit_start(first, kind, tz), unit_start(first + size, kind, tz)
            window = [row for row, (t, e) in zip(members, spans, strict=True)
                      if t < stop and e > start]
            if window:
                result: Row = dict(key_values)
                result.update(window_start=start, window_end=stop, time=stop)
                for agg in aggs:
                    result[agg.output_name] = aggregate(agg, window, time)
                out.append(result)
            k += 1
    return out


def gap_sessions(rows: list[Row], *, time: str, gap: str, key: list[str], order: str | None,
                 columns: list[str], max_duration: int | None,
                 aggs: Sequence[Aggregation]) -> list[Row]:
    """Sessions with a per-row gap, read literally: events in time order; an event joins
    the open session when its time is at most the session's reach (the largest
    `time + gap` of its events so far) and, with `max_duration`, before the session's
    first time + max_duration; otherwise it opens a new session. A session spans
    `[first time, min(reach, first + max_duration))`; `time` = its end."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        sessions: list[list[Row]] = []
        reach: Any = None
        for row in members:
            t = row[time]
            joins = sessions and t <= reach and (
                max_duration is None or t < sessions[-1][0][time] + max_duration)
            if joins:
                sessions[-1].append(row)
                reach = max(reach, t + row[gap])
            else:
                sessions.append([row])
                reach = t + row[gap]
        for session in sessions:
            first = session[0][time]
            last = max(r[time] + r[gap] for r in session)
            if max_duration is not None:
                last = min(last, first + max_duration)
            result: Row = dict(key_values)
            result.update(window_start=first, window_end=last, time=last)
            for agg in aggs:
                result[agg.output_name] = aggregate(agg, session, time)
            out.append(result)
    return out
