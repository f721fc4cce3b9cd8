"""Brute-force reference (the oracle) of dynamic windows, clock anchors and sessions.

Pure Python, a literal reading of the semantics (docs/windows/dynamic-clock-session.md):
every window is built by scanning all events of its key; sessions are grown one event
at a time. Same data model as `oracle.py`: rows are dicts, `time` holds plain numbers
(int ticks or floats, never None), `key` lists the key columns, `order` optionally names
the tie-break column, `columns` lists all column names in schema order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from oracle import aggregate, spark_sort_key

from wisp.spec.aggregates import Aggregation

Row = dict[str, Any]
Bound = Callable[[Row], Any]  # an anchor row -> an absolute time, None = unbounded


class ObsoleteViolation(Exception):
    """Anchors broke an obsolete rule: `found` holds, for each key with a violation, the
    rule ("decrease" or "start") and the time of its first violating anchor."""

    def __init__(self, found: list[tuple[str, Any]]) -> None:
        super().__init__(f"obsolete rules broken: {found!r}")
        self.found = found


def group_sorted(rows: list[Row], *, time: str, key: list[str], order: str | None,
                 columns: list[str], end: str | None = None
                 ) -> dict[tuple[Any, ...], list[Row]]:
    """Rows by key (null is a key of its own), each group sorted by time, ties by
    `order` or else by the columns other than key, time and end, in schema order
    (Spark's order of values)."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(spark_sort_key(row[k]) for k in key), []).append(row)
    tie_break = [order] if order is not None else [c for c in columns
                                                   if c not in key and c not in (time, end)]
    for members in groups.values():
        members.sort(key=lambda r: (r[time], *(spark_sort_key(r[c]) for c in tie_break)))
    return groups


def _inside(u: Any, lo: Any, hi: Any, closed: str) -> bool:
    after = lo is None or (lo <= u if closed in ("both", "left") else lo < u)
    before = hi is None or (u <= hi if closed in ("both", "right") else u < hi)
    return after and before


def first_violation(anchors: list[Row], anchor_time: str, start: Bound,
                    obsolete: Bound | None) -> tuple[str, Any] | None:
    """In anchor order: obsolete never decreases; no start before an earlier obsolete.
    None (a null obsolete or start) is the start of time. The first broken rule and
    its anchor's time, or None."""
    if obsolete is None:
        return None
    earlier: list[Any] = []  # the obsolete times of the anchors so far (None = -inf)
    for anchor in anchors:
        mine, begin = obsolete(anchor), start(anchor)
        if earlier:
            previous = earlier[-1]
            if previous is not None and (mine is None or mine < previous):
                return ("decrease", anchor[anchor_time])
            bounded = [o for o in earlier if o is not None]
            if bounded and (begin is None or begin < max(bounded)):
                return ("start", anchor[anchor_time])
        earlier.append(mine)
    return None


def dynamic_window(rows: list[Row], anchors: list[Row], *, time: str, key: list[str],
                   order: str | None, columns: list[str], anchor_time: str,
                   anchor_order: str | None, anchor_columns: list[str], start: Bound,
                   end: Bound, obsolete: Bound | None, closed: str,
                   aggs: Sequence[Aggregation]) -> list[Row]:
    """One output row per anchor: the events of the anchor's key with time u in
    [start(anchor), end(anchor)] (sides per `closed`). Raises `ObsoleteViolation` when
    the anchors of any key break an obsolete rule."""
    events = group_sorted(rows, time=time, key=key, order=order, columns=columns)
    by_key = group_sorted(anchors, time=anchor_time, key=key, order=anchor_order,
                          columns=anchor_columns)
    broken = [found for members in by_key.values()
              if (found := first_violation(members, anchor_time, start, obsolete))]
    if broken:
        raise ObsoleteViolation(broken)
    out: list[Row] = []
    for group_key, members in by_key.items():
        source = events.get(group_key, [])
        for anchor in members:
            lo, hi = start(anchor), end(anchor)
            window = [r for r in source if _inside(r[time], lo, hi, closed)]
            row: Row = {k: anchor[k] for k in key}
            row.update(window_start=lo, window_end=hi, time=anchor[anchor_time])
            for agg in aggs:
                row[agg.output_name] = aggregate(agg, window, time)
            out.append(row)
    return out


def clock_times(first: Any, last: Any, every: Any, align: Any) -> list[Any]:
    """Every align + k*every with first <= tick <= last, by walking k upwards (exact for
    integers however large)."""
    if all(isinstance(v, int) for v in (first, align, every)):
        k = (first - align) // every - 1
    else:
        k = math.floor((first - align) / every) - 1
    ticks = []
    while align + k * every <= last:
        if align + k * every >= first:
            ticks.append(align + k * every)
        k += 1
    return ticks


def clock_anchors(rows: list[Row], *, time: str, key: list[str], every: Any,
                  align: Any = 0, start: Any = None, end: Any = None) -> list[Row]:
    """Clock anchors as rows (key columns and `time`): for each key of `rows`, every tick
    in [start, end], which default to the key's first and last time."""
    anchors: list[Row] = []
    groups = group_sorted(rows, time=time, key=key, order=None, columns=[time, *key])
    for members in groups.values():
        first = min(r[time] for r in members) if start is None else start
        last = max(r[time] for r in members) if end is None else end
        for tick in clock_times(first, last, every, align):
            anchors.append({**{k: members[0][k] for k in key}, time: tick})
    return anchors


def sessions(rows: list[Row], *, time: str, key: list[str], order: str | None,
             columns: list[str], gap: Any, max_duration: Any = None,
             end: str | None = None, aggs: Sequence[Aggregation] = ()) -> list[Row]:
    """Per key, in time order: an event joins the open session when its time is at most
    the session's last reach + gap and (with max_duration) before first + max_duration;
    otherwise it opens a new session. A point event reaches to its time, an interval
    event to its end (None: forever). The window is [first, min(last + gap, first +
    max_duration)); `time` = window_end; None = the end of time."""
    found: list[tuple[list[Row], Any]] = []  # (the session's events, last reach)
    groups = group_sorted(rows, time=time, key=key, order=order, columns=columns, end=end)
    for members in groups.values():
        current: list[Row] = []
        reach: Any = None  # None = forever
        for event in members:
            t = event[time]
            if current:
                first = current[0][time]
                joins = (reach is None or t <= reach + gap) and (
                    max_duration is None or t < first + max_duration)
                if not joins:
                    found.append((current, reach))
                    current = []
            if not current:
                reach = t
            current.append(event)
            mine = t if end is None else event[end]
            if mine is None:
                reach = None
            elif reach is not None:
                reach = max(reach, mine)
        if current:
            found.append((current, reach))
    out: list[Row] = []
    for members, last in found:
        first = members[0][time]
        stop = None if last is None else last + gap
        if max_duration is not None:
            cap = first + max_duration
            stop = cap if stop is None else min(stop, cap)
        row: Row = {k: members[0][k] for k in key}
        row.update(window_start=first, window_end=stop, time=stop)
        for agg in aggs:
            row[agg.output_name] = aggregate(agg, members, time)
        out.append(row)
    return out
