"""Brute-force reference (the oracle) of the hopping, tumbling, snapshot and
count-by-start-time windows over point and interval events.

Pure Python, a literal reading of the semantics: windows are enumerated one by one,
membership is tested event by event, every aggregate is computed from scratch.

Data model as `oracle.py`: `rows` are dicts; `time` names a column of integer ticks
(never None); `end` optionally names the end column (None = open to the end of time;
without `end` the events are points living on [t, t + 1)); `key`, `order`, `columns` (the end column
is no tie-break column).
A lifetime is [s, max(e, s + 1)): a zero-length interval lasts one tick.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from oracle import _sorted_by_key, aggregate

from wisp.spec.aggregates import Aggregation

Row = dict[str, Any]
INF = math.inf
END_OF_TIME = 2**63 - 1


def lifetime(row: Row, time: str, end: str | None) -> tuple[int, float]:
    s = row[time]
    if end is None:
        return s, s + 1
    e = row[end]
    return (s, INF) if e is None else (s, max(e, s + 1))


def time_weighted_mean(members: list[Row], col: str, clip: tuple[Any, Any],
                       lifetimes: list[tuple[int, float]]) -> float | None:
    """sum(w*v)/sum(w) over non-null values, w = lifetime clipped to `clip`; when the
    clip reaches the end of time every member lives to it: equal weights."""
    pairs = [(lt, row[col]) for lt, row in zip(lifetimes, members, strict=True)
             if row[col] is not None]
    if not pairs:
        return None
    lo, hi = clip
    weights = []
    for (s, e), _ in pairs:
        top = min(e, hi)
        weights.append(1.0 if top == INF else float(top - max(s, lo)))
    values = [float(v) for _, v in pairs]
    if any(v != v for v in values):
        return math.nan
    return math.fsum(w * v for w, v in zip(weights, values, strict=True)) / math.fsum(weights)


def udaf_over_lifetimes(members: list[Row], agg: Aggregation, clip: tuple[Any, Any],
                        lifetimes: list[tuple[int, float]]) -> Any:
    """`func(values, starts, ends)` over the non-null values, each lifetime clipped to
    `clip` (an end at the end of time is the largest 64-bit integer)."""
    assert agg.func is not None and agg.col is not None
    lo, hi = clip
    kept = [(row[agg.col], max(s, lo), min(e, hi))
            for (s, e), row in zip(lifetimes, members, strict=True) if row[agg.col] is not None]
    return agg.func([v for v, _, _ in kept], [s for _, s, _ in kept],
                    [END_OF_TIME if e == INF else e for _, _, e in kept])


def _result(members: list[Row], clip: tuple[Any, Any], *, time: str, end: str | None,
            aggs: Sequence[Aggregation]) -> list[Any]:
    out = []
    for agg in aggs:
        if agg.fn == "time_weighted_mean":
            assert agg.col is not None
            out.append(time_weighted_mean(members, agg.col, clip,
                                          [lifetime(r, time, end) for r in members]))
        elif agg.fn == "udaf" and agg.lifetimes:
            out.append(udaf_over_lifetimes(members, agg, clip,
                                           [lifetime(r, time, end) for r in members]))
        else:
            out.append(aggregate(agg, members, time))
    return out


def horizon(rows: list[Row], time: str, end: str | None) -> float:
    """One tick after the newest start, or the newest finite end if later (interval
    events); windows beginning there or later hold only open-ended events."""
    if end is None or not rows:
        return INF
    finite = [r[end] for r in rows if r[end] is not None]
    return max([max(r[time] for r in rows) + 1, *finite])


def _same(a: list[Any], b: list[Any]) -> bool:
    def eq(x: Any, y: Any) -> bool:
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(eq(p, q) for p, q in zip(x, y, strict=True))
        if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
            return True
        return bool(x == y) and (x is None) == (y is None) and type(x) is type(y)

    return all(eq(x, y) for x, y in zip(a, b, strict=True))


def hopping(rows: list[Row], *, time: str, end: str | None, key: list[str],
            order: str | None, columns: list[str], size: int, hop: int, align: int,
            output: str, aggs: Sequence[Aggregation]) -> list[Row]:
    """Windows [w, w+size), w = align + k*hop; an event is in every window its lifetime
    overlaps. "windows": one row per non-empty window beginning before the horizon,
    time = window end, then one row (null end, time = its first window's end) for the
    windows from the horizon on when they are not empty. "changes": window w's result
    is valid on [w+size, w+size+hop); equal results on touching intervals merge."""
    h = horizon(rows, time, end)
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=[c for c in columns if c != end]):
        spans = [lifetime(r, time, end) for r in members]
        first = min(s for s, _ in spans)
        last = max(max(s for s, _ in spans) + 1,
                   max((e for _, e in spans if e != INF), default=first))
        stop = last if h == INF else max(h, last)
        k = (first - size - align) // hop
        entries: list[tuple[int, int | None, int, list[Any]]] = []  # start, end, time, res
        while True:
            w = align + k * hop
            inside = [r for r, (s, e) in zip(members, spans, strict=True)
                      if s < w + size and e > w]
            beyond = w >= stop
            if inside:
                result = _result(inside, (w, w + size), time=time, end=end, aggs=aggs)
                if output == "changes":
                    entries.append((w + size, None if beyond else w + size + hop, w + size,
                                    result))
                else:
                    entries.append((w, None if beyond else w + size, w + size, result))
            if beyond:
                break
            k += 1
        if output == "changes":
            merged: list[tuple[int, int | None, int, list[Any]]] = []
            for entry in entries:
                if merged and merged[-1][1] == entry[0] and _same(merged[-1][3], entry[3]):
                    merged[-1] = (merged[-1][0], entry[1], merged[-1][2], merged[-1][3])
                else:
                    merged.append(entry)
            entries = merged
        for start, finish, at, result in entries:
            row: Row = dict(key_values)
            row.update(window_start=start, window_end=finish, time=at)
            row.update({agg.output_name: v for agg, v in zip(aggs, result, strict=True)})
            out.append(row)
    return out


def snapshot(rows: list[Row], *, time: str, end: str | None, key: list[str],
             order: str | None, columns: list[str],
             aggs: Sequence[Aggregation]) -> list[Row]:
    """One window between consecutive distinct start/end points, over the events alive
    in it; the last reaches the end of time when an open-ended event is alive there."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=[c for c in columns if c != end]):
        spans = [lifetime(r, time, end) for r in members]
        points = sorted({s for s, _ in spans} | {e for _, e in spans if e != INF})
        bounds = [*itertools.pairwise(points), (points[-1], INF)]
        for lo, hi in bounds:
            alive = [r for r, (s, e) in zip(members, spans, strict=True) if s <= lo < e]
            if not alive:
                continue
            row: Row = dict(key_values)
            row.update(window_start=lo, window_end=None if hi == INF else hi, time=lo)
            row.update({agg.output_name: v for agg, v in zip(
                aggs, _result(alive, (lo, hi), time=time, end=end, aggs=aggs), strict=True)})
            out.append(row)
    return out


def count_by_start_time(rows: list[Row], *, time: str, end: str | None, key: list[str],
                        order: str | None, columns: list[str], n: int,
                        aggs: Sequence[Aggregation]) -> list[Row]:
    """Window i: events whose start lies in [u_i, u_{i+n-1}] (u = distinct starts);
    span [u_i, u_{i+n-1} + 1); time u_{i+n-1}; lifetimes clipped to the span."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=[c for c in columns if c != end]):
        starts = sorted({r[time] for r in members})
        for i in range(len(starts) - n + 1):
            lo, hi = starts[i], starts[i + n - 1]
            inside = [r for r in members if lo <= r[time] <= hi]
            row: Row = dict(key_values)
            row.update(window_start=lo, window_end=hi + 1, time=hi)
            row.update({agg.output_name: v for agg, v in zip(
                aggs, _result(inside, (lo, hi + 1), time=time, end=end, aggs=aggs),
                strict=True)})
            out.append(row)
    return out
