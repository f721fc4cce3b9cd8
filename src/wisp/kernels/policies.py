"""Eviction and trigger policies of the sliding and policy-tumbling windows, per key.

Input: one key's tuples in arrival order (`times` in ticks, and the values of the delta
attributes by column name), and the policies as the spec's own classes
(`wisp.spec.policies`) resolved to ticks: `Count(n)`, `Time(t, align)` with `t` and
`align` in ticks of the time column (`align` None: 0), `Delta(attr, d)` with `d` in ticks
of the attribute `attr`, `Punctuation(col)` (its flags passed on their own). Output: the
emitted firings, each with its time and the set of tuples in its window, described
either as contiguous frames `[lo, hi)` over arrival positions (aggregated by
`window_agg`) or, when eviction can remove tuples from the middle, as one range
`[qlo[j], qhi[j])` of firing indices per tuple (aggregated by `stabbing.py`).

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

Several keys' runs can be computed at once (`runs`, as in `kernels.runs`): every
policy restarts at each run, and no window holds two runs' tuples.

One key's tuples can also be replayed in chunks (`resume_sliding`, `tumbling` with a
`Carry`): the input starts with the window's contents carried from the chunks before
(no arrivals of their own), and the carry holds what the policies remember (the clock,
the count of arrivals, the delta trigger's reference, whether the window has been full).

Cost per call of `n` tuples and `m` firings: O((n + m) log(n + m)) time, vectorised,
however many runs it holds. Contiguous windows (count eviction; time or delta eviction
whenever the evictions go oldest first, e.g. in-order data) reuse `window_agg`
(O(n log n)); otherwise every tuple's range of firings is cut into O(log m) canonical
nodes of a segment tree over the firings, aggregated per node and combined along each
firing's O(log m) ancestors: O((n + m) log m), and every value added into a firing's
result is in its window (no cancellation). Delta eviction and delta triggers on
out-of-order attributes find "the first later tuple of the run exceeding by more than
d" by binary lifting over a sparse table of maxima: O(n log n) time and memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..spec.limits import too_many_ticks
from ..spec.policies import Count, Delta, Policy, Time
from .runs import (
    chain,
    counts_at_most,
    offsets,
    one_run,
    owners,
    run_chains,
    run_index,
    run_search,
    running_max,
)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Ticks = npt.NDArray[Any]


@dataclass(frozen=True)
class Frames:
    """Emitted firings with contiguous windows `[lo, hi)` over arrival positions; `run`:
    the run each firing belongs to."""

    time: Ticks
    lo: IntArray
    hi: IntArray
    run: IntArray


@dataclass(frozen=True)
class Alive:
    """Emitted firings `0..m-1` (of run `run[f]`); tuple `j` is in the windows of
    firings `qlo[j] .. qhi[j]-1` (an empty range when `qhi[j] <= qlo[j]`)."""

    time: Ticks
    qlo: IntArray
    qhi: IntArray
    run: IntArray

    @property
    def m(self) -> int:
        return len(self.time)


Windows = Frames | Alive


@dataclass(frozen=True)
class Carry:
    """Where a resumed replay of one key starts (`sliding`/`tumbling` with `carry`): the
    input's first `held` tuples are carried over from earlier chunks (a sliding window's
    contents, or a tumbling window's tuples since its last firing) and have already
    arrived (no events of their own); the tuples after them arrive now.

    `clock`: the newest time seen before (None: no tuple yet); `arrived`: how many
    tuples arrived before (a count trigger's phase); `reference`: the delta trigger's
    reference value (the attribute of the last tuple that fired; None: no tuple yet);
    `full`: the window has been full (delta eviction: it has evicted); `final`: the input
    ends here, so the time firings up to the first at or after the clock are emitted
    (otherwise only those before the clock: a later tuple may still join the others);
    `origin`: the key's first tuple's time (its time firings are counted from it
    against `max_ticks`).

    On a stream: `until`, the step's horizon (every later tuple has time >= it), so the
    time firings before it are final and due (also after the newest tuple, however many
    periods it passes); `due`, the horizon of the step before, below which every time
    firing was already emitted. Both None in batch."""

    held: int = 0
    clock: int | float | None = None
    arrived: int = 0
    reference: int | float | None = None
    full: bool = False
    final: bool = False
    origin: int | float | None = None
    until: int | float | None = None
    due: int | float | None = None

# ---------------------------------------------------------------- small primitives


def ticks(value: object) -> int | float:
    """A number of a policy resolved to ticks (`Time.t`, `Time.align`, `Delta.d`): an
    integer or a float; an `align` of None is 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"wisp: a policy resolved to ticks holds numbers, found {value!r}")
    return value


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


def next_exceeding(values: Ticks, d: int | float, limit: IntArray | None = None) -> IntArray:
    """For each `j`, the first `i > j` below `limit[j]` (default: `n`) with
    `values[i] - values[j] > d`, else `limit[j]`.

    Binary lifting over a sparse table of range maxima: the difference is monotone in
    `values[i]` (rounding is monotone), so a block holds an exceeding value iff its
    maximum exceeds. O(n log n) time and memory."""
    n = len(values)
    stop = np.full(n, n, dtype=np.int64) if limit is None else limit
    levels = [values]
    while (1 << len(levels)) <= n:
        half = 1 << (len(levels) - 1)
        prev = levels[-1]
        cur = prev.copy()
        cur[:n - half] = np.maximum(prev[:n - half], prev[half:])
        levels.append(cur)
    pos = np.minimum(np.arange(1, n + 1, dtype=np.int64), stop)
    for k in range(len(levels) - 1, -1, -1):
        step = 1 << k
        inside = pos + step <= stop
        block = levels[k][np.where(inside, pos, 0)]
        clear = inside & ~exceeds(block, values, d)
        pos = np.where(clear, pos + step, pos)
    return pos


def time_firings(now: Ticks, runs: IntArray, policy: Time) -> tuple[Ticks, IntArray]:
    """Per run, `align + k*t` from the first at or after the run's first clock to the
    first at or after its newest (both included), and the run of each firing."""
    t, align = ticks(policy.t), ticks(policy.align)
    first_now, last_now = now[runs[:-1]], now[runs[1:] - 1]
    check_firings(first_now, last_now, policy)
    if now.dtype.kind == "f":
        first = _grid_at_or_after(first_now, t, align)
        last = _grid_at_or_after(last_now, t, align)
        counts = (last - first + 1).astype(np.int64)
        steps = np.repeat(first, counts) + offsets(counts)
        times: Ticks = align + steps * t
        return times, owners(counts)
    ti, ai = int(t), int(align)
    first_k = -((ai - first_now.astype(object)) // ti)
    last_k = -((ai - last_now.astype(object)) // ti)
    if len(last_k) and ai + int(last_k.max()) * ti > np.iinfo(np.int64).max:
        raise ValueError("wisp: a time trigger's last firing lies beyond the int64 range")
    counts = (last_k - first_k + 1).astype(np.int64)
    first_time = (ai + first_k * ti).astype(np.int64)
    # the offsets from each run's first firing as unsigned: exact, as every firing fits
    # in int64 even when the difference from the first does not
    offset = offsets(counts).astype(np.uint64) * np.uint64(ti)
    times = (np.repeat(first_time, counts).view(np.uint64) + offset).view(np.int64)
    return times, owners(counts)


def check_firings(first_now: Ticks, last_now: Ticks, policy: Time) -> None:
    """Fail before making them when a run's time firings, from the first at or after
    its first clock to the first at or after its newest, would number more than the
    policy's `max_ticks` (`spec.limits`). The count is an estimate within one firing."""
    if not len(first_now):
        return
    span = np.asarray(last_now, dtype=np.float64) - np.asarray(first_now, dtype=np.float64)
    counts = np.floor(span / float(ticks(policy.t))) + 1
    worst = int(np.argmax(counts))
    if counts[worst] > policy.max_ticks:
        raise too_many_ticks("t", int(counts[worst]), policy.max_ticks, "Time")


def _grid_at_or_after(now: Ticks, t: float, align: float) -> Ticks:
    """The smallest `k` (as a float) with `align + k*t >= now`, exact under rounding."""
    k: Ticks = np.ceil((now - align) / t)
    while (early := align + (k - 1) * t >= now).any():
        k = np.where(early, k - 1, k)
    while (late := align + k * t < now).any():
        k = np.where(late, k + 1, k)
    return k


def _firings(now: Ticks, runs: IntArray, policy: Time, carry: Carry | None
             ) -> tuple[Ticks, IntArray]:
    """A time policy's firings and the run of each: over whole runs (`time_firings`),
    or over one key's rows resumed from `carry` (`carried_firings`, all in run 0)."""
    if carry is None:
        return time_firings(now, runs, policy)
    fire_time = carried_firings(now, policy, carry)
    return fire_time, np.zeros(len(fire_time), dtype=np.int64)


def carried_firings(now: Ticks, policy: Time, carry: Carry) -> Ticks:
    """The time firings of a resumed replay (one run, `now` its clocks, the carried
    tuples' clock first): from the first at or after the carried clock (or, with no
    tuple before, the first tuple's time) to the last before the newest clock, or with
    `carry.final` to the first at or after it. The firings before them were emitted by
    earlier chunks; those after wait for later tuples.

    On a stream (`carry.until`): from the first at or after both the carried clock and
    `carry.due` to the last before `until` (the newest clock lies below it), with no
    tuple in the replay too. The firings one such step makes count against
    `max_ticks` (a stream's key has no end, so its span does not)."""
    if carry.clock is None and len(now) == 0:
        return now[:0]
    begin = now[0] if carry.clock is None else carry.clock
    newest: Any = now[-1] if len(now) else carry.clock
    if carry.until is not None and not carry.final:
        if carry.due is not None:
            begin = max(begin, carry.due)
        stop = max(newest, carry.until)
        bounds = np.array([begin, stop], dtype=now.dtype)
        check_firings(bounds[:1], bounds[1:], policy)
        times, _ = time_firings(bounds, one_run(2), policy)
        return times[:-1]
    origin = begin if carry.origin is None else carry.origin
    check_firings(np.array([origin], dtype=now.dtype), now[-1:], policy)
    bounds = np.array([begin, now[-1]], dtype=now.dtype)
    times, _ = time_firings(bounds, one_run(2), policy)
    return times if carry.final else times[:-1]


def next_firing(policy: Time, clock: int | float, due: int | float | None,
                dtype: Any) -> int | float:
    """The first time firing at or after both `clock` and `due` (a stream's next due
    firing once every one before `due` was emitted)."""
    begin = clock if due is None else max(clock, due)
    times, _ = time_firings(np.array([begin, begin], dtype=dtype), one_run(2), policy)
    first: int | float = times[0].item()
    return first


def _empty(times: Ticks) -> Frames:
    empty = np.zeros(0, dtype=np.int64)
    return Frames(times[:0], empty, empty, empty)


# ----------------------------------------------------------------------- sliding


def sliding(times: Ticks, attrs: Mapping[str, Ticks], evict: Policy, trigger: Policy,
            partial: bool, runs: IntArray | None = None) -> Windows:
    """The emitted firings of a sliding window over each run's tuples in arrival order.

    Firings are numbered in timeline order; each has a *stage*: `2i` for a delta
    trigger's firing on the arrival of `i` (before its eviction and insertion), `2i + 1`
    for a count trigger's firing after the arrival of `i` and for time firings between
    the arrival of `i` and the next. Tuple `j` is in every firing from the first of
    stage >= `2j + 1` until the first firing after the eviction event that removes it,
    or after its run ends.
    """
    return _sliding(times, attrs, evict, trigger, partial, runs, None)[0]


def resume_sliding(times: Ticks, attrs: Mapping[str, Ticks], evict: Policy,
                   trigger: Policy, partial: bool, carry: Carry) -> tuple[Windows, int]:
    """`sliding` over one key's tuples resumed from `carry` (see `Carry`): the first
    `carry.held` tuples are the window's contents left by the earlier chunks, the
    others arrive now. The firings are those of the arriving tuples (and the time
    firings `carried_firings` gives); also the position of the last tuple that fired a
    trigger (-1: none), the delta trigger's next reference."""
    return _sliding(times, attrs, evict, trigger, partial, None, carry)


def _sliding(times: Ticks, attrs: Mapping[str, Ticks], evict: Policy, trigger: Policy,
             partial: bool, runs: IntArray | None, carry: Carry | None
             ) -> tuple[Windows, int]:
    n = len(times)
    if n == 0:
        return _empty(times), -1
    held = 0 if carry is None else carry.held
    runs = one_run(n) if runs is None else runs
    if (isinstance(trigger, Count) and trigger.n == 1 and isinstance(evict, Time)
            and times.dtype.kind == "i" and isinstance(t := ticks(evict.t), int)
            and (carry is None or carry.clock is None or held == n
                 or times[held] >= carry.clock)):
        recent = _recent_in_order(times, runs, t)
        if recent is not None:
            if held:
                recent = Frames(recent.time[held:], recent.lo[held:], recent.hi[held:],
                                recent.run[held:])
            return recent, n - 1 if n > held else -1
    run_of = run_index(runs)
    starts, ends = runs[:-1], runs[1:]
    now = running_max(times, runs)
    if carry is not None and carry.clock is not None:
        now = np.maximum(now, np.asarray(carry.clock, dtype=now.dtype))
    positions = np.arange(n, dtype=np.int64)
    arrival: IntArray
    if isinstance(trigger, Count):
        if carry is None:
            arrival = positions[(positions - starts[run_of]) % trigger.n == trigger.n - 1]
        else:
            later = positions[held:]
            arrival = later[(carry.arrived + later - held) % trigger.n == trigger.n - 1]
        stage = 2 * arrival + 1
        fire_time = now[arrival]
        fire_run = run_of[arrival]
    elif isinstance(trigger, Delta):
        values, d = attrs[trigger.attr], ticks(trigger.d)
        nxt = next_exceeding(values, d, ends[run_of])
        if carry is None or carry.reference is None:
            assert held == 0, "a carried window without a delta reference"
            arrival, fire_run = run_chains(nxt, runs)
        else:
            arrival = _chain_after(nxt, values, d, held, carry.reference)
            fire_run = run_of[arrival]
        stage = 2 * arrival
        fire_time = now[arrival]
    elif isinstance(trigger, Time):
        fire_time, fire_run = _firings(now, runs, trigger, carry)
        arrival = run_search(now, runs, fire_time, fire_run, "right") - 1
        stage = 2 * arrival + 1
    else:
        raise ValueError(f"wisp: a sliding window's trigger is Count, Time or Delta, found "
                         f"{trigger!r}")
    every_arrival = isinstance(trigger, Count) and trigger.n == 1 and held == 0
    qlo = firings_before(stage, 2 * positions + 1, every_arrival)
    # the first firing of the later runs: no tuple lives into it
    cap = firings_before(stage, 2 * ends, every_arrival)[run_of]
    full_stage: IntArray | None = None
    if isinstance(evict, Time):
        qhi = _time_deaths(times, now, runs, ticks(evict.t), stage, arrival, fire_time,
                           isinstance(trigger, Time), cap, every_arrival, held)
    else:
        if isinstance(evict, Count):
            killer = positions + evict.n
            # n tuples inserted (a carried window of fewer than n holds every tuple
            # before it, so positions are counted from the key's first tuple)
            full_stage = 2 * (starts + evict.n - 1) + 1
        elif isinstance(evict, Delta):
            killer = next_exceeding(attrs[evict.attr], ticks(evict.d), ends[run_of])
            first_evict = np.minimum.reduceat(killer, starts)
            full_stage = np.where(first_evict < ends, 2 * first_evict + 1, 2 * n + 2)
            if carry is not None and carry.full:
                full_stage = None
        else:
            raise ValueError(f"wisp: a sliding window's eviction is Count, Time or Delta, "
                             f"found {evict!r}")
        qhi = firings_before(stage, 2 * killer + 1, every_arrival)
    last_arrival = int(arrival[-1]) if len(arrival) else -1
    qhi = np.maximum(np.minimum(qhi, cap), qlo)
    if full_stage is not None and not partial and not isinstance(trigger, Time):
        keep = stage >= full_stage[fire_run]
        kept_before = np.concatenate([[0], np.cumsum(keep)]).astype(np.int64)
        qlo, qhi = kept_before[qlo], kept_before[qhi]
        fire_time, fire_run = fire_time[keep], fire_run[keep]
    if np.all(np.diff(qhi) >= 0):
        # firing f holds the tuples alive at it: those gone by f (qhi <= f) come first,
        # then those inserted by f (qlo <= f)
        lo = counts_at_most(qhi, len(fire_time))
        hi = counts_at_most(qlo, len(fire_time))
        return Frames(fire_time, lo, np.maximum(hi, lo), fire_run), last_arrival
    return Alive(fire_time, qlo, qhi, fire_run), last_arrival


def _chain_after(nxt: IntArray, values: Ticks, d: int | float, held: int,
                 reference: int | float) -> IntArray:
    """The delta trigger's firings of a resumed replay: the first tuple from `held` on
    exceeding `reference` by more than `d`, then the chain of `nxt` from it."""
    ref = np.asarray(reference, dtype=values.dtype)
    hit = np.flatnonzero(exceeds(values[held:], ref, d))
    if not len(hit):
        return np.zeros(0, dtype=np.int64)
    first = held + int(hit[0])
    path: IntArray = chain(nxt[first:] - first) + first
    return path


def _recent_in_order(times: Ticks, runs: IntArray, t: int) -> Frames | None:
    """`Time(t)` eviction with a `Count(1)` trigger over integer times that never
    decrease within a run (tuples arriving in time order, as wisp's sort gives them;
    None otherwise). The clock is then the arriving tuple's own time, so the window
    after arrival `f` holds the run's tuples from the first whose time is at least
    `times[f] - t` up to `f` itself: one search per firing. What `sliding` finds by
    following each tuple to its eviction, for any arrival order."""
    n = len(times)
    run_of = run_index(runs)
    if np.any((run_of[1:] == run_of[:-1]) & (times[1:] < times[:-1])):
        return None
    lowest = np.iinfo(np.int64).min
    oldest = np.where(times < lowest + t, lowest, times - np.int64(t))  # saturating
    lo = run_search(times, runs, oldest, run_of, "left")
    return Frames(times, lo, np.arange(1, n + 1, dtype=np.int64), run_of)


def firings_before(stage: IntArray, query: IntArray, every_arrival: bool) -> IntArray:
    """For each query stage, how many firings have a smaller stage. When a firing
    follows every arrival (stages `2i + 1` for every `i`, as a count trigger of 1
    gives), that is `query // 2` clipped to the firings, found without a search."""
    if every_arrival:
        return np.clip(query // 2, 0, len(stage)).astype(np.int64)
    found: IntArray = np.searchsorted(stage, query, side="left").astype(np.int64)
    return found


def _time_deaths(times: Ticks, now: Ticks, runs: IntArray, t: int | float,
                 stage: IntArray, arrival: IntArray, fire_time: Ticks, time_trigger: bool,
                 cap: IntArray, every_arrival: bool, held: int = 0) -> IntArray:
    """For time eviction: the first firing index after each tuple's eviction (`cap`,
    the next run's first firing, when its run ends first).

    Eviction events of a run in timeline order: the arrival of `i` after the run's
    first (clock `now[i]`, affecting firings of stage >= 2i + 1) and, with a time
    trigger, every firing (clock `tau`, affecting itself on). Their clocks never
    decrease within the run, so the first event that evicts tuple `j`
    (clock - times[j] > t) is found among the run's events after `j`'s insertion by one
    search for integer ticks (clock > times[j] + t, saturating), by a binary search on
    the rounded difference for float ticks. The first `held` tuples (a resumed replay's
    carried window) arrived before: their arrivals are no events."""
    n = len(times)
    m = len(stage)
    first_of_run = np.zeros(n, dtype=bool)
    first_of_run[runs[:-1]] = True
    first_of_run[:held] = True
    later = np.nonzero(~first_of_run)[0].astype(np.int64)
    ev_clock = now[later]
    ev_order = later * 2  # (arrival, 0) sorts before the firings after it
    ev_kill = firings_before(stage, 2 * later + 1, every_arrival)
    if time_trigger:
        ev_clock = np.concatenate([ev_clock, fire_time])
        ev_order = np.concatenate([ev_order, 2 * arrival + 1])
        ev_kill = np.concatenate([ev_kill, np.arange(m, dtype=np.int64)])
        sort = np.argsort(ev_order, kind="stable")  # firings keep their own order
        ev_clock, ev_order, ev_kill = ev_clock[sort], ev_order[sort], ev_kill[sort]
    ev_kill = ev_kill.astype(np.int64)
    if not len(ev_kill):
        return cap
    # the run's events strictly after the insertion of j: order keys in (2j, 2 * end);
    # an order key k is at most 2j exactly when ceil(k / 2) is at most j
    after = counts_at_most((ev_order + 1) // 2, n)
    ev_runs = np.searchsorted(ev_order, 2 * runs, side="left").astype(np.int64)
    stop = ev_runs[1:][run_index(runs)]
    if times.dtype.kind != "f" and isinstance(t, int | np.integer):
        # integers: clock - time > t exactly when clock > time + t
        limit = np.iinfo(np.int64).max
        reach = np.where(times > limit - int(t), limit, times + np.int64(t))
        first = np.maximum(run_search(ev_clock, ev_runs, reach, run_index(runs), "right"),
                           after)
    else:
        first = _first_exceeding(ev_clock, times, t, after, stop)
    result: IntArray = np.where(first < stop, ev_kill[np.minimum(first, len(ev_kill) - 1)],
                                cap)
    return result


def _first_exceeding(clocks: Ticks, times: Ticks, t: int | float, low: IntArray,
                     high: IntArray) -> IntArray:
    """For each `j`, the first `i` in `low[j]..high[j]-1` with `clocks[i] - times[j] > t`
    (`high[j]` if none), by binary search: `clocks` never decrease in that range."""
    stop = high.copy()
    span = int((high - low).max()) if len(low) else 0
    for _ in range(span.bit_length() + 1 if span > 0 else 0):
        active = low < high
        mid = (low + high) // 2
        hit = exceeds(clocks[np.minimum(mid, len(clocks) - 1)], times, t)
        high = np.where(active & hit, mid, high)
        low = np.where(active & ~hit, mid + 1, low)
    return np.where(low < stop, low, stop)


# ---------------------------------------------------------------------- tumbling


def tumbling(times: Ticks, attrs: Mapping[str, Ticks], punctuation: BoolArray | None,
             policy: Policy, partial: bool, runs: IntArray | None = None,
             carry: Carry | None = None) -> Frames:
    """The emitted windows of a policy-tumbling window over each run's tuples.

    `Count(n)`: every `n` tuples, fired by the `n`-th (time = its clock). `Time(t)`: the
    tuples whose clock lies in `(tau_{k-1}, tau_k]`, fired at every `tau_k` (empty
    windows included). `Delta(a, d)`: a tuple with `new.a - first.a > d` (first = the
    window's oldest tuple) fires the window without itself, then starts the next one.
    `Punctuation(col)`: a tuple whose `col` is true closes the window it ends (it is
    its last tuple). The unfired tail of a run is emitted at its end only with
    `partial` (time = the newest time seen).

    Resumed (`carry`, one key's run): the first `carry.held` tuples are the window's
    tuples since its last firing, carried from earlier chunks, so the windows of the
    whole input are those of the key's tuples from that firing on (a count window's
    first tuples, a delta window's first tuple, no punctuation among them); the clock
    starts at `carry.clock`, and time firings are `carried_firings`."""
    n = len(times)
    if n == 0 and isinstance(policy, Time) and carry is not None \
            and carry.clock is not None and carry.until is not None:
        # a stream's step with no tuple in the window: the empty windows due
        fire_time = carried_firings(times, policy, carry)
        empty = np.zeros(len(fire_time), dtype=np.int64)
        return Frames(fire_time, empty, empty, empty)
    if n == 0:
        return _empty(times)
    runs = one_run(n) if runs is None else runs
    run_of = run_index(runs)
    starts = runs[:-1]
    now = running_max(times, runs)
    if carry is not None and carry.clock is not None:
        now = np.maximum(now, np.asarray(carry.clock, dtype=now.dtype))
    if isinstance(policy, Time):
        fire_time, fire_run = _firings(now, runs, policy, carry)
        hi = run_search(now, runs, fire_time, fire_run, "right")
        lo = _window_starts(hi, starts[fire_run])
        return Frames(fire_time, lo, hi, fire_run)
    if isinstance(policy, Count):
        counts = np.diff(runs) // policy.n
        ends = np.repeat(starts, counts) + policy.n * (offsets(counts) + 1)
        fired_by = ends - 1
    elif isinstance(policy, Delta):
        nxt = next_exceeding(attrs[policy.attr], ticks(policy.d), runs[1:][run_of])
        ends, _ = run_chains(nxt, runs)
        fired_by = ends
    else:
        assert punctuation is not None
        fired_by = np.nonzero(punctuation)[0].astype(np.int64)
        ends = fired_by + 1
    fire_run = run_of[fired_by]
    lo = _window_starts(ends, starts[fire_run])
    hi = ends.astype(np.int64)
    fire_time = now[fired_by]
    if partial and (carry is None or carry.final):
        padded = np.concatenate([np.zeros(1, dtype=np.int64), ends])
        last = np.searchsorted(ends, runs[1:], side="right")  # in `padded`
        closed = np.maximum(padded[last], starts)
        tail = np.nonzero(closed < runs[1:])[0].astype(np.int64)
        if len(tail):
            lo = np.concatenate([lo, closed[tail]])
            hi = np.concatenate([hi, runs[1:][tail]])
            fire_time = np.concatenate([fire_time, now[runs[1:][tail] - 1]])
            fire_run = np.concatenate([fire_run, tail])
            order = np.argsort(hi, kind="stable")
            lo, hi, fire_time, fire_run = lo[order], hi[order], fire_time[order], \
                fire_run[order]
    return Frames(fire_time, lo.astype(np.int64), hi, fire_run)


def _window_starts(ends: IntArray, run_starts: IntArray) -> IntArray:
    """Each window begins where the one before it in its run ended, or at its run's
    start."""
    previous = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1]])
    result: IntArray = np.maximum(previous, run_starts).astype(np.int64)
    return result
