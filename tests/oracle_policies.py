"""Brute-force reference (the oracle) of the sliding and policy-tumbling windows: a
literal, tuple-by-tuple simulation of the rules, with the window held as a Python list.

Per key, tuples arrive in `order` (then time, then the other columns) or, without
`order`, in time order (then the other columns). The clock is the newest time seen.

- Sliding, count or time trigger: evict (at the new clock), insert, test the trigger.
  Delta trigger: test (against the last tuple that fired; the first tuple only sets it),
  then evict and insert. Time triggers fire at `align + k*t`, from the first at or after
  the first tuple's time to the first at or after the newest time; a firing at `tau`
  happens once every arrival with clock <= tau is in, evicts (time eviction) at clock
  `tau` and always emits. Other firings emit only once the window has been full
  (count: n tuples; delta: after its first eviction; time: always) or with `partial`.
- Tumbling: count(n) fires on the n-th tuple; time(t) fires at every `align + k*t`
  (empty windows too) over the tuples that arrived since the previous firing; delta
  fires when the arriving tuple exceeds the window's first tuple by more than d (and
  starts the next window); punctuation fires on a row whose flag is true (the row is
  the window's last). The unfired tail is emitted at the end only with `partial`.

A stream at horizon `until` (`until` given; the caller passes only the tuples with
time < until, which have all arrived): time firings at every `align + k*t` below
`until`, from the first at or after the first tuple's time, also after the newest
tuple; no firing at the end of input and no flushed tail (a stream has no end).

Output rows: key columns, window_start / window_end (times of the window's first and
last tuples, None when empty), time (the trigger's time), the aggregations. `trace`
additionally returns, per key, every step: ("arrive", tuple, window) and
("fire", time, window, emitted).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from oracle import aggregate, spark_sort_key

from wisp.spec.aggregates import Aggregation
from wisp.spec.policies import Count, Delta, Punctuation, Time
from wisp.spec.time import duration_to_ticks, instant_to_micros
from wisp.spec.windows import Sliding, Tumbling

Row = dict[str, Any]


def _ticks(value: object) -> Any:
    ticks = duration_to_ticks(value, "value")
    return float(ticks) if isinstance(ticks, Decimal) else ticks


def _align(policy: Time) -> Any:
    if policy.align is None:
        return 0
    if isinstance(policy.align, (int, float)):
        return policy.align
    return instant_to_micros(policy.align, "align")


def _firings(policy: Time, at: Any) -> Iterator[Any]:
    """align + k*t for k = the first with align + k*t >= at, then k + 1, k + 2, ..."""
    t, align = _ticks(policy.t), _align(policy)
    k = math.ceil(Fraction(at - align) / Fraction(t))  # exact, also for floats
    while align + k * t < at:  # float rounding of align + k*t: walk to the literal first
        k += 1
    while align + (k - 1) * t >= at:
        k -= 1
    while True:
        yield align + k * t
        k += 1


def arrival_order(rows: list[Row], *, time: str, key: list[str], order: str | None,
                  columns: list[str]) -> list[tuple[dict[str, Any], list[Row]]]:
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(spark_sort_key(row[k]) for k in key), []).append(row)
    others = [c for c in columns if c not in key and c != time and c != order]
    leading = [order, time] if order is not None else [time]

    def position(row: Row) -> tuple[Any, ...]:
        return tuple(spark_sort_key(row[c]) for c in [*leading, *others])

    return [({k: groups[g][0][k] for k in key}, sorted(groups[g], key=position))
            for g in sorted(groups)]


def _exceeds(new: Any, old: Any, d: Any) -> bool:
    return bool(new - old > d)


class _Sim:
    """One key's window as a list, with a log of its steps."""

    def __init__(self, time: str) -> None:
        self.time = time
        self.window: list[Row] = []
        self.steps: list[tuple[Any, ...]] = []
        self.fired: list[tuple[Any, list[Row]]] = []

    def fire(self, at: Any, emitted: bool) -> None:
        self.steps.append(("fire", at, list(self.window), emitted))
        if emitted:
            self.fired.append((at, list(self.window)))


def simulate_sliding(members: list[Row], *, time: str, window: Sliding,
                     until: Any = None) -> _Sim:
    sim = _Sim(time)
    evict, trigger = window.evict, window.trigger
    clock: Any = None
    evicted_once = False
    reference: Row | None = None
    next_tau: Any = None
    taus: Iterator[Any] = iter(())

    def full() -> bool:
        if window.partial:
            return True
        if isinstance(evict, Count):
            return len(sim.window) >= evict.n
        if isinstance(evict, Delta):
            return evicted_once
        return True

    def evict_by_time(now: Any) -> None:
        if isinstance(evict, Time):
            t = _ticks(evict.t)
            sim.window = [w for w in sim.window if not now - w[time] > t]

    for inserted, row in enumerate(members, start=1):
        new_clock = row[time] if clock is None else max(clock, row[time])
        if isinstance(trigger, Time):
            if next_tau is None:
                taus = _firings(trigger, row[time])
                next_tau = next(taus)
            while next_tau < new_clock:
                evict_by_time(next_tau)
                sim.fire(next_tau, True)
                next_tau = next(taus)
        clock = new_clock
        if isinstance(trigger, Delta):
            if reference is None:
                reference = row
            elif _exceeds(row[trigger.attr], reference[trigger.attr], _ticks(trigger.d)):
                sim.fire(clock, full())
                reference = row
        # evict
        if isinstance(evict, Count):
            while len(sim.window) >= evict.n:
                sim.window.pop(0)
        elif isinstance(evict, Time):
            evict_by_time(clock)
        else:
            kept = [w for w in sim.window
                    if not _exceeds(row[evict.attr], w[evict.attr], _ticks(evict.d))]
            evicted_once = evicted_once or len(kept) < len(sim.window)
            sim.window = kept
        sim.window.append(row)
        sim.steps.append(("arrive", row, list(sim.window)))
        if isinstance(trigger, Count) and inserted % trigger.n == 0:
            sim.fire(clock, full())
    if isinstance(trigger, Time) and next_tau is not None and until is not None:
        while next_tau < until:
            evict_by_time(next_tau)
            sim.fire(next_tau, True)
            next_tau = next(taus)
    elif isinstance(trigger, Time) and next_tau is not None:
        while True:
            evict_by_time(next_tau)
            sim.fire(next_tau, True)
            if next_tau >= clock:
                break
            next_tau = next(taus)
    return sim


def simulate_tumbling(members: list[Row], *, time: str, window: Tumbling,
                      until: Any = None) -> _Sim:
    sim = _Sim(time)
    policy = window.size
    clock: Any = None
    next_tau: Any = None
    taus: Iterator[Any] = iter(())
    for row in members:
        new_clock = row[time] if clock is None else max(clock, row[time])
        if isinstance(policy, Time):
            if next_tau is None:
                taus = _firings(policy, row[time])
                next_tau = next(taus)
            while next_tau < new_clock:
                sim.fire(next_tau, True)
                sim.window = []
                next_tau = next(taus)
        clock = new_clock
        if isinstance(policy, Delta) and sim.window and _exceeds(
                row[policy.attr], sim.window[0][policy.attr], _ticks(policy.d)):
            sim.fire(clock, True)
            sim.window = []
        sim.window.append(row)
        sim.steps.append(("arrive", row, list(sim.window)))
        if (isinstance(policy, Count) and len(sim.window) == policy.n) or (
                isinstance(policy, Punctuation) and row[policy.col] is True):
            sim.fire(clock, True)
            sim.window = []
    if isinstance(policy, Time) and next_tau is not None and until is not None:
        while next_tau < until:
            sim.fire(next_tau, True)
            sim.window = []
            next_tau = next(taus)
    elif isinstance(policy, Time) and next_tau is not None:
        while True:
            sim.fire(next_tau, True)
            sim.window = []
            if next_tau >= clock:
                break
            next_tau = next(taus)
    elif window.partial and sim.window and until is None:
        sim.fire(clock, True)
        sim.window = []
    return sim


def simulate(members: list[Row], *, time: str, window: Sliding | Tumbling,
             until: Any = None) -> _Sim:
    if isinstance(window, Sliding):
        return simulate_sliding(members, time=time, window=window, until=until)
    return simulate_tumbling(members, time=time, window=window, until=until)


def spl_window(rows: list[Row], *, time: str, key: list[str], order: str | None,
               columns: list[str], window: Sliding | Tumbling,
               aggs: Sequence[Aggregation], until: Any = None) -> list[Row]:
    """Every emitted firing of every key as an output row (`until`: a stream's
    horizon, see the module's docstring)."""
    out: list[Row] = []
    for key_values, members in arrival_order(rows, time=time, key=key, order=order,
                                             columns=columns):
        for at, contents in simulate(members, time=time, window=window,
                                     until=until).fired:
            row: Row = dict(key_values)
            row.update(window_start=contents[0][time] if contents else None,
                       window_end=contents[-1][time] if contents else None, time=at)
            for agg in aggs:
                row[agg.output_name] = aggregate(agg, contents, time)
            out.append(row)
    return out


def trace(rows: list[Row], *, time: str, window: Sliding | Tumbling, label: str,
          order: str | None = None, columns: list[str] | None = None) -> list[list[Any]]:
    """One key's steps as plain lists: ["arrive", label, [labels in the window]] and
    ["fire", time, [labels], emitted]."""
    (_, members), = arrival_order(rows, time=time, key=[], order=order,
                                  columns=columns or list(rows[0]))
    steps: list[list[Any]] = []
    for step in simulate(members, time=time, window=window).steps:
        if step[0] == "arrive":
            steps.append(["arrive", step[1][label], [w[label] for w in step[2]]])
        else:
            steps.append(["fire", step[1], [w[label] for w in step[2]], step[3]])
    return steps
