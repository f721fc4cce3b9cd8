"""Eviction and trigger policies of the sliding and policy-tumbling windows, per key.

Input: one key's tuples in arrival order (`times` in ticks, and the values of the delta
attributes). Output: the emitted firings, each with its time and the set of tuples in
its window, described either as contiguous frames `[lo, hi)` over arrival positions
(aggregated by `window_agg`) or, when eviction can remove tuples from the middle, as one
range `[qlo[j], qhi[j])` of firing indices per tuple (aggregated by `stabbing.py`).

Semantics (the binding rules, in wisp's words):

- The clock is the newest time seen so far: `now[i] = max(times[:i + 1])`.
- Arrival of tuple `i` with a count or time trigger: evict (clock `now[i]`), insert,
  then test the trigger. With a delta trigger: test the trigger on the window as the
  previous arrival left it (the arriving tuple is not in it), then evict and insert.
- `Count(n)` eviction: the window keeps the last `n` tuples. `Time(t)` eviction: a
  tuple stays while `clock - its time <= t` (exactly `t` old stays); time-trigger
  firings evict too, at their own clock. The arriving tuple is always inserted (after
  eviction), so a late tuple more than `t` old is seen by the trigger of its own arrival
  and evicted at the next eviction. `Delta(a, d)` eviction: the arriving tuple evicts
  every tuple `w` of the window with `new.a - w.a > d` (strict), comparing with the
  arriving tuple only.
- `Count(n)` trigger: after every `n`-th arrival. `Delta(a, d)` trigger: when
  `new.a - ref.a > d`, where `ref` is the last tuple that fired (the first tuple only
  sets it). `Time(t, align)` trigger: at every `align + k*t` from the first at or after
  the key's first tuple's time up to the first at or after the newest time; a firing at
  `tau` sees every arrival whose clock is `<= tau`.
- A firing's time: `now[i]` of the arrival that fired it; `tau` for a time trigger.
- Nothing is emitted before the window is first full (count eviction: `n` tuples
  inserted; delta eviction: after its first eviction; time eviction: always full),
  except that a time trigger always emits; `partial=True` emits every firing.

Cost per key of `n` tuples and `m` firings: O((n + m) log(n + m)) time, vectorised.
Contiguous windows (count eviction; time or delta eviction whenever the evictions go
oldest first, e.g. in-order data) reuse `window_agg` (O(n log n)); otherwise every tuple's
range of firings is cut into O(log m) canonical nodes of a segment tree over the
firings, aggregated per node and combined along each firing's O(log m) ancestors:
O((n + m) log m), and every value added into a firing's result is in its window (no
cancellation). Delta eviction and delta triggers on out-of-order attributes find "the
first later tuple exceeding by more than d" by binary lifting over a sparse table of
maxima: O(n log n) time and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Ticks = npt.NDArray[Any]


@dataclass(frozen=True)
class Policy:
    """A resolved policy: `kind` is "count", "time", "delta" or "punctuation"; `n` for
    count; `t` (ticks) and `align` (ticks) for time; `attr` (index into the attribute
    arrays) and `d` (ticks of the attribute) for delta and punctuation."""

    kind: str
    n: int = 0
    t: int | float = 0
    align: int | float = 0
    attr: int = 0
    d: int | float = 0


@dataclass(frozen=True)
class Frames:
    """Emitted firings with contiguous windows `[lo, hi)` over arrival positions."""

    time: Ticks
    lo: IntArray
    hi: IntArray


@dataclass(frozen=True)
class Alive:
    """Emitted firings `0..m-1`; tuple `j` is in the windows of firings
    `qlo[j] .. qhi[j]-1` (an empty range when `qhi[j] <= qlo[j]`)."""

    time: Ticks
    qlo: IntArray
    qhi: IntArray

    @property
    def m(self) -> int:
        return len(self.time)


Windows = Frames | Alive

# ---------------------------------------------------------------- small primitives


def clock(times: Ticks) -> Ticks:
    """The newest time seen after each arrival."""
    result: Ticks = np.maximum.accumulate(times) if len(times) else times
    return result


def exceeds(new: Ticks, old: Ticks, d: int | float) -> BoolArray:
    """`new - old > d`, exactly: floats as IEEE differences (as a literal reading
    computes them), integers without overflow (by a saturating `old + d`)."""
    if np.asarray(new).dtype.kind == "f" or np.asarray(old).dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            result: BoolArray = np.asarray(np.subtract(new, old, dtype=np.float64) > d)
        return result
    old64 = np.asarray(old, dtype=np.int64)
    limit = np.iinfo(np.int64).max - int(d)
    bound = np.where(old64 > limit, np.iinfo(np.int64).max, old64 + np.int64(d))
    return np.asarray(np.asarray(new, dtype=np.int64) > bound)


def next_exceeding(values: Ticks, d: int | float) -> IntArray:
    """For each `j`, the first `i > j` with `values[i] - values[j] > d` (`n` if none).

    Binary lifting over a sparse table of range maxima: the difference is monotone in
    `values[i]` (rounding is monotone), so a block holds an exceeding value iff its
    maximum exceeds. O(n log n) time and memory."""
    n = len(values)
    levels = [values]
    while (1 << len(levels)) <= n:
        half = 1 << (len(levels) - 1)
        prev = levels[-1]
        cur = prev.copy()
        cur[:n - half] = np.maximum(prev[:n - half], prev[half:])
        levels.append(cur)
    pos = np.arange(1, n + 1, dtype=np.int64)
    for k in range(len(levels) - 1, -1, -1):
        step = 1 << k
        inside = pos + step <= n
        block = levels[k][np.where(inside, pos, 0)]
        clear = inside & ~exceeds(block, values, d)
        pos = np.where(clear, pos + step, pos)
    return pos


def chain(nxt: IntArray) -> IntArray:
    """The positions `0, nxt[0], nxt[nxt[0]], ...` below `n`, by pointer doubling
    (O(n log n), vectorised)."""
    n = len(nxt)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    jump = np.append(nxt, n).astype(np.int64)
    path = np.zeros(1, dtype=np.int64)
    while path[-1] != n:
        path = np.concatenate([path, jump[path]])
        jump = jump[jump]
    return path[path < n]


def time_firings(now: Ticks, policy: Policy) -> Ticks:
    """`align + k*t` from the first at or after `now[0]` to the first at or after
    `now[-1]` (both included)."""
    t, align = policy.t, policy.align
    if now.dtype.kind == "f":
        first = float(np.ceil((float(now[0]) - align) / t))
        last = float(np.ceil((float(now[-1]) - align) / t))
        while align + (first - 1) * t >= now[0]:
            first -= 1
        while align + first * t < now[0]:
            first += 1
        while align + (last - 1) * t >= now[-1]:
            last -= 1
        while align + last * t < now[-1]:
            last += 1
        ks = np.arange(first, last + 1, dtype=np.float64)
        result: Ticks = align + ks * t
        return result
    ti, ai = int(t), int(align)
    first_k = -((ai - int(now[0])) // ti)
    last_k = -((ai - int(now[-1])) // ti)
    if ai + last_k * ti > np.iinfo(np.int64).max:
        raise ValueError("wisp: a time trigger's last firing lies beyond the int64 range")
    return ai + np.arange(first_k, last_k + 1, dtype=np.int64) * np.int64(ti)


# ----------------------------------------------------------------------- sliding


def sliding(times: Ticks, attrs: list[Ticks], evict: Policy, trigger: Policy,
            partial: bool) -> Windows:
    """The emitted firings of a sliding window over one key's tuples in arrival order.

    Firings are numbered in timeline order; each has a *stage*: `2i` for a delta
    trigger's firing on the arrival of `i` (before its eviction and insertion), `2i + 1`
    for a count trigger's firing after the arrival of `i` and for time firings between
    the arrival of `i` and the next. Tuple `j` is in every firing from the first of
    stage >= `2j + 1` until the first firing after the eviction event that removes it.
    """
    n = len(times)
    now = clock(times)
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return Frames(now[:0], empty, empty)
    arrival: IntArray
    if trigger.kind == "count":
        arrival = np.arange(trigger.n - 1, n, trigger.n, dtype=np.int64)
        stage = 2 * arrival + 1
        fire_time = now[arrival]
    elif trigger.kind == "delta":
        arrival = chain(next_exceeding(attrs[trigger.attr], trigger.d))[1:]
        stage = 2 * arrival
        fire_time = now[arrival]
    else:
        fire_time = time_firings(now, trigger)
        arrival = (np.searchsorted(now, fire_time, side="right") - 1).astype(np.int64)
        stage = 2 * arrival + 1
    m = len(stage)
    positions = np.arange(n, dtype=np.int64)
    qlo = np.searchsorted(stage, 2 * positions + 1, side="left").astype(np.int64)
    if evict.kind == "time":
        qhi = _time_deaths(times, now, evict.t, stage, arrival, fire_time,
                           trigger.kind == "time")
        full_from = 0
    else:
        if evict.kind == "count":
            killer = positions + evict.n
            first_full_stage = 2 * evict.n - 1  # n tuples inserted: after arrival n-1
        else:
            killer = next_exceeding(attrs[evict.attr], evict.d)
            first_evict = int(killer.min())
            first_full_stage = 2 * first_evict + 1 if first_evict < n else 2 * n + 2
        qhi = np.searchsorted(stage, 2 * killer + 1, side="left").astype(np.int64)
        full_from = int(np.searchsorted(stage, first_full_stage, side="left"))
    if partial or trigger.kind == "time":
        full_from = 0
    qhi = np.maximum(qhi, qlo)
    fire_time = fire_time[full_from:]
    qlo = np.clip(qlo - full_from, 0, None)
    qhi = np.clip(qhi - full_from, 0, None)
    if np.all(np.diff(qhi) >= 0):
        fires = np.arange(m - full_from, dtype=np.int64)
        lo = np.searchsorted(qhi, fires, side="right").astype(np.int64)
        hi = np.searchsorted(qlo, fires, side="right").astype(np.int64)
        return Frames(fire_time, lo, np.maximum(hi, lo))
    return Alive(fire_time, qlo, qhi)


def _time_deaths(times: Ticks, now: Ticks, t: int | float, stage: IntArray,
                 arrival: IntArray, fire_time: Ticks, time_trigger: bool) -> IntArray:
    """For time eviction: the first firing index after each tuple's eviction.

    Eviction events in timeline order: the arrival of `i` (clock `now[i]`, affecting
    firings of stage >= 2i + 1) and, with a time trigger, every firing (clock `tau`,
    affecting itself on). Their clocks never decrease, so the first event that evicts
    tuple `j` (clock - times[j] > t) is found by binary search, then bounded below by
    the first event after `j`'s insertion."""
    n = len(times)
    m = len(stage)
    ev_clock = now[1:]
    ev_order = np.arange(1, n, dtype=np.int64) * 2  # (arrival, 0) sorts before firings
    ev_kill = np.searchsorted(stage, 2 * np.arange(1, n, dtype=np.int64) + 1, side="left")
    if time_trigger:
        ev_clock = np.concatenate([ev_clock, fire_time])
        ev_order = np.concatenate([ev_order, 2 * arrival + 1])
        ev_kill = np.concatenate([ev_kill, np.arange(m, dtype=np.int64)])
        sort = np.argsort(ev_order, kind="stable")  # firings keep their own order
        ev_clock, ev_order, ev_kill = ev_clock[sort], ev_order[sort], ev_kill[sort]
    ev_kill = ev_kill.astype(np.int64)
    count = len(ev_clock)
    # first event strictly after the insertion of j: order key > 2j
    after = np.searchsorted(ev_order, 2 * np.arange(n, dtype=np.int64), side="right")
    # first event whose clock evicts j: monotone along the events, so binary search
    low = np.zeros(n, dtype=np.int64)
    high = np.full(n, count, dtype=np.int64)
    for _ in range(count.bit_length() + 1 if count else 0):
        active = low < high
        mid = (low + high) // 2
        hit = exceeds(ev_clock[np.minimum(mid, count - 1)], times, t)
        high = np.where(active & hit, mid, high)
        low = np.where(active & ~hit, mid + 1, low)
    first = np.maximum(low, after)
    padded = np.append(ev_kill, m)
    result: IntArray = padded[np.minimum(first, count)]
    return result


# ---------------------------------------------------------------------- tumbling


def tumbling(times: Ticks, attrs: list[Ticks], punctuation: BoolArray | None,
             policy: Policy, partial: bool) -> Frames:
    """The emitted windows of a policy-tumbling window over one key's tuples.

    `Count(n)`: every `n` tuples, fired by the `n`-th (time = its clock). `Time(t)`: the
    tuples whose clock lies in `(tau_{k-1}, tau_k]`, fired at every `tau_k` (empty
    windows included). `Delta(a, d)`: a tuple with `new.a - first.a > d` (first = the
    window's oldest tuple) fires the window without itself, then starts the next one.
    `Punctuation(col)`: a tuple whose `col` is true closes the window it ends (it is
    its last tuple). The unfired tail is emitted at end of input only with `partial`
    (time = the newest time seen)."""
    n = len(times)
    now = clock(times)
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return Frames(now[:0], empty, empty)
    if policy.kind == "time":
        fire_time = time_firings(now, policy)
        hi = np.searchsorted(now, fire_time, side="right").astype(np.int64)
        lo = np.concatenate([np.zeros(1, dtype=np.int64), hi[:-1]])
        return Frames(fire_time, lo, hi)
    if policy.kind == "count":
        ends = np.arange(policy.n, n + 1, policy.n, dtype=np.int64)
        fired_by = ends - 1
    elif policy.kind == "delta":
        starts = chain(next_exceeding(attrs[policy.attr], policy.d))
        ends = starts[1:]
        fired_by = ends
    else:
        assert punctuation is not None
        fired_by = np.nonzero(punctuation)[0].astype(np.int64)
        ends = fired_by + 1
    lo = np.concatenate([np.zeros(1, dtype=np.int64), ends])[:-1]
    hi = ends
    fire_time = now[fired_by]
    last = int(ends[-1]) if len(ends) else 0
    if partial and last < n:
        lo = np.append(lo, last)
        hi = np.append(hi, n)
        fire_time = np.append(fire_time, now[-1])
    return Frames(fire_time, lo.astype(np.int64), hi.astype(np.int64))
