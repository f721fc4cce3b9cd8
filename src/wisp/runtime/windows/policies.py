"""The executor side of the `arrow-spl` strategy (`engine/policies.py` builds the Spark
plan): sliding and policy-tumbling windows, per key. The kernel replays each key's
eviction and trigger policies (`wisp.kernels.policies`; short keys' runs several at
once, a long run in pieces through `step`, as `resumable.resumed` feeds them) and aggregates every
emitted firing's window: as frames `[lo, hi)` with `aggregate.aggregate` when the
windows are contiguous in arrival order, else over per-tuple ranges of firings
(`alive.aggregate_alive`).

Policies are the spec's own classes (`wisp.spec.policies`), resolved to ticks:
`Count(n)`, `Time(t, align)` with `t` and `align` in ticks of the time column,
`Delta(attr, d)` with `d` in ticks of the attribute, `Punctuation(col)`.

A key run longer than `chunk_rows` goes through `step` in pieces (`resumable.resumed`),
carrying the window's contents and what the policies remember (see `SplKernel`).

Streamable (`resumable.Streamable`): a stream feeds each key's tuples in time order
(then the tie-break columns), each once the watermark passes it, with a horizon `H`
(every later tuple has time >= H). A count or delta firing is final once its tuple has
arrived (its window holds tuples that arrived before it); a time firing at `tau` once
`tau < H` (it sees the tuples with clock <= tau, and none can still come), so a step
emits every time firing below the horizon, however many periods the horizon passed,
also with no new tuple and after the key's newest one (a batch stops at the first
firing at or after it; a stream has no end). The `due` scalar is the horizon already
passed (the firings below it were emitted); `wake` is the horizon past the next time
firing. Nothing else fires without tuples: count and delta policies never wake, and no
tumbling tail is flushed (`finish` is the end of a batch only).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import policies as ks
from ...kernels import stabbing as sb
from ...kernels.runs import one_run
from ...kernels.segments import Segments
from ...spec.policies import Count, Delta, Policy, Punctuation, Time
from ..aggregates.aggregate import AggregateJob, aggregate
from ..aggregates.alive import aggregate_alive
from ..codecs.arrays import from_ticks, to_ticks
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, Scalar, pending, resumed
from .scans import Carry as ScanCarry
from .scans import (
    Scans,
    carried,
    held_by_accumulators,
    input_names,
    scan_all,
    with_inputs,
)


@dataclass(frozen=True)
class SplKernel:
    """The executor side: picklable, no Spark objects. Short key runs are computed
    several at once (each policy restarting per run), a run longer than `chunk_rows` in
    pieces through `step` and `finish`.

    `mode` "sliding" (`evict` and `trigger`) or "tumbling" (`evict` is the window's size
    policy, `trigger` None); `attrs`: each delta attribute's column and kind (a time
    kind: how its values become ticks).

    Resumable (`resumable.Resumable`). The state's rows are the window's contents in
    arrival order (sliding: the tuples not yet evicted, not always a contiguous tail;
    tumbling: the tuples since the last firing), its scalars what the policies remember:
    `clock` (the newest time seen: tuples arrive in arrival order, not always in time
    order), `arrived` (tuples so far: a count trigger's phase), `reference` (the delta
    trigger's reference value, the attribute of the last tuple that fired) and `full`
    (delta eviction has evicted: the window has been full). A time trigger's next firing
    is the first at or after the clock. `step` replays the state's rows (as carried,
    without arrivals of their own) and the chunk's, and emits every firing of the
    chunk's arrivals and every time firing before the new clock: all are final, as a
    later tuple only joins firings at or after its own clock. The firings at or after
    the clock wait: `finish` emits the one at or after the key's newest time (and a
    tumbling window's unfired tail with `partial`).

    Memory: the state is bounded by the window's reach. Count eviction: the last `n`
    tuples; time eviction: the tuples within `t` of the clock, plus the last tuple when
    it arrived late (it leaves at the next eviction); a count-sized tumbling window:
    fewer than `n` tuples; a time-sized one: the tuples whose clock is after the last
    firing (within `t` of the clock). Not bounded: delta eviction keeps every tuple that
    no later tuple exceeded by more than `d`, so in-order (rising) values keep the
    tuples within `d` of the newest value, but falling values keep every tuple; a
    delta-sized tumbling window keeps every tuple since its first while none exceeds it
    by more than `d`; a punctuation window every tuple since the last flag. Those states
    grow with the key's history (the results stay correct), and each step recomputes
    them: time grows with the state's size per piece.

    On a stream (`step` with a horizon): see the module's docstring. A time-sized
    tumbling window whose tuples have all fired keeps its newest tuple as an `anchor`
    (the `anchor` scalar): in no window, only the key's columns for the empty windows
    that the following periods emit."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    mode: str
    evict: Policy
    trigger: Policy | None
    partial: bool
    attrs: tuple[tuple[str, str], ...]
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS

    def attr_ticks(self, group: pa.Table) -> dict[str, npt.NDArray[Any]]:
        return {name: to_ticks(group.column(name).combine_chunks(), kind)
                for name, kind in self.attrs}

    def windows(self, group: pa.Table, ticks: npt.NDArray[Any], runs: npt.NDArray[np.int64]
                ) -> ks.Windows:
        return self.replay(group, ticks, self.attr_ticks(group), runs, None)[0]

    def replay(self, group: pa.Table, ticks: npt.NDArray[Any],
               attrs: dict[str, npt.NDArray[Any]], runs: npt.NDArray[np.int64],
               carry: ks.Carry | None) -> tuple[ks.Windows, int]:
        """The emitted firings of `group`'s runs (resumed from `carry`: one run), and
        the position of the last tuple that fired a sliding trigger (-1: none)."""
        if self.mode == "sliding":
            assert self.trigger is not None
            if carry is None:
                return ks.sliding(ticks, attrs, self.evict, self.trigger, self.partial,
                                  runs), -1
            return ks.resume_sliding(ticks, attrs, self.evict, self.trigger, self.partial,
                                     carry)
        flags = None
        if isinstance(self.evict, Punctuation):
            column = group.column(self.evict.col).combine_chunks()
            flags = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False),
                               dtype=bool)
        return ks.tumbling(ticks, attrs, flags, self.evict, self.partial, runs, carry), -1

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time, long runs in pieces of about `chunk_rows`
        rows through `step` and `finish`."""
        return resumed(self, batches, self.chunk_rows)

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The output rows of the key runs in `group` (`runs`: where each begins, then
        the length; one run by default)."""
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        runs = one_run(len(ticks)) if runs is None else runs
        return self.rows(group, ticks, runs, self.windows(group, ticks, runs))

    # -------------------------------------------------------- accumulators path

    @property
    def accumulates(self) -> bool:
        """Whether a delta- or punctuation-sized tumbling window keeps its open window
        as accumulators, not its tuples: when every aggregation is held by a few
        (`Definition.accumulators`). Those windows have no bound of their own (values
        within `d` of the window's first, a punctuation that never comes); a window
        depends on its earlier tuples only through the first one's time and delta
        attributes, its last one's time and the aggregations' states. Each window's
        aggregates are then running scans restarting at each window, read at its last
        tuple, whole runs and pieces alike. Count- and time-sized windows are bounded by
        their policy and keep their tuples."""
        return (self.mode == "tumbling" and isinstance(self.evict, (Delta, Punctuation))
                and held_by_accumulators(self.aggregates))

    def scanned(self, group: pa.Table, ticks: npt.NDArray[Any], runs: npt.NDArray[np.int64],
                found: ks.Frames, carry: ScanCarry | None = None) -> tuple[list[pa.Array], Any]:
        """The aggregations of `found`'s windows from running scans of `group` (after
        `carry`'s virtual position), restarting at each window and at the unfired
        tail; and the scans (whose last segment is the open window)."""
        n = len(ticks)
        starts = np.unique(np.concatenate([[0], found.lo, found.hi, runs, [n]])
                           .astype(np.int64))
        starts = starts[starts <= n]
        scans = scan_all(self.aggregates, group, Segments(starts),
                         carry if carry is not None else ScanCarry({}, None, 0), ticks)
        if not len(found.time):
            return [], scans
        return Scans(self.aggregates, scans, group.slice(0, 0)).at(found.lo, found.hi), scans

    def frame_rows(self, group: pa.Table, ticks: npt.NDArray[Any], ends: npt.NDArray[Any],
                   runs: npt.NDArray[np.int64], found: ks.Frames, results: list[pa.Array]
                   ) -> pa.RecordBatch:
        """Output rows of contiguous windows `found` with their aggregations `results`:
        a window starts at its first tuple's time (`ticks`) and ends at its last one's
        (`ends`)."""
        m = len(found.time)
        if m == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        first_row = pa.array(runs[found.run])
        columns: list[pa.Array] = [group.column(key).combine_chunks().take(first_row)
                                   for key in self.keys]
        lo, hi = found.lo, found.hi
        known = hi > lo
        columns.append(from_ticks(ticks[np.where(known, lo, 0)], known, self.time_kind,
                                  self.time_scale))
        columns.append(from_ticks(ends[np.where(known, hi - 1, 0)], known, self.time_kind,
                                  self.time_scale))
        columns.append(from_ticks(found.time, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        columns.extend(results)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def accumulated_step(self, state: KernelState | None, chunk: pa.Table,
                         force: bool = False) -> tuple[pa.RecordBatch, KernelState]:
        """`step` when the open window is carried as accumulators (`accumulates`). The
        state: the policies' scalars as the rows path keeps them, and while a window is
        open `first_time`, `last_time`, `first:<attr>` (its first tuple's time and delta
        attributes, its last tuple's time) with the aggregations' accumulators, in one
        row (the key columns, what `first`/`last`/... carry, the input columns of the
        key's last tuple, for their types). The chunk's tuples follow the open window as
        one virtual position 0 standing for its first tuple; `force` (end of input)
        emits the unfired tail with `partial`."""
        scalars: dict[str, Scalar] = {} if state is None else dict(state.scalars)
        held = None if state is None or state.rows.num_rows == 0 else state.rows
        virtual = 1 if "first_time" in scalars else 0
        m = chunk.num_rows
        nothing = pa.RecordBatch.from_pylist([], schema=self.schema)
        if m == 0 and not (force and virtual):
            return nothing, state if state is not None else KernelState(pa.table({}))
        dtype = np.float64 if self.time_kind == "float" else np.int64
        new_ticks = to_ticks(chunk.column(self.time).combine_chunks(), self.time_kind)
        lead = np.array([scalars["first_time"]] if virtual else [], dtype=dtype)
        ticks = np.concatenate([lead, new_ticks.astype(dtype)])
        new_attrs = self.attr_ticks(chunk)
        attrs = {name: np.concatenate([np.array([scalars[f"first:{name}"]] if virtual
                                                else [], dtype=values.dtype), values])
                 for name, values in new_attrs.items()}
        flags = None
        if isinstance(self.evict, Punctuation):
            column = chunk.column(self.evict.col).combine_chunks()
            flags = np.concatenate([np.zeros(virtual, dtype=bool), np.asarray(
                pc.fill_null(column, False).to_numpy(zero_copy_only=False), dtype=bool)])
        carry = self.carry(state, final=force)
        carry = replace(carry, held=virtual)
        n = len(ticks)
        found = ks.tumbling(ticks, attrs, flags, self.evict, self.partial, one_run(n), carry)
        if m:
            source = chunk
        else:
            assert held is not None
            source = held.select(input_names(self.keys, held)).slice(0, 0)
        keys = chunk.select(list(self.keys))
        if held is not None and not m:
            keys = held.select(list(self.keys))
        elif held is not None and virtual:
            keys = pa.concat_tables([held.select(list(self.keys)).cast(keys.schema), keys])
        ends = ticks.copy()
        if virtual:  # a window ending at the virtual position ends at its last tuple
            ends[0] = scalars["last_time"]
        results, scans = self.scanned(source, ticks, one_run(n), found,
                                      ScanCarry(scalars, held, virtual))
        out = self.frame_rows(keys, ticks, ends, one_run(n), found, results)
        clock = carry.clock
        if m:
            newest = new_ticks.max().item()
            clock = newest if clock is None else max(clock, newest)
        origin = carry.origin if carry.origin is not None or not m else new_ticks[0].item()
        kept: dict[str, Scalar] = {"clock": clock, "arrived": carry.arrived + m,
                                   "reference": carry.reference, "full": carry.full,
                                   "origin": origin}
        done = int(found.hi.max()) if len(found.hi) else 0
        if force or done >= n:
            return out, KernelState(pa.table({}), kept)
        kept["first_time"] = ticks[done].item()
        kept["last_time"] = new_ticks[-1].item() if m else scalars["last_time"]
        for name, values in attrs.items():
            kept[f"first:{name}"] = values[done].item()
        state_rows = carried(self.keys, keys, scans, kept, keys_always=True)
        last = chunk if m else held
        assert last is not None
        return out, KernelState(with_inputs(self.keys, state_rows.rows, last),
                                state_rows.scalars)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Every firing of the chunk's arrivals, and every time firing before the new
        clock (see the class's docstring), or on a stream (`horizon`: every later tuple
        has time >= it) every time firing before the horizon; the state: the window's
        contents and the policies' scalars."""
        if self.accumulates:
            return self.accumulated_step(state, chunk)
        anchor, held = self.contents(state)
        group = pending(held, chunk)
        carry = replace(self.carry(held, final=False), until=horizon,
                        due=None if state is None else _number(state.scalars.get("due")))
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        attrs = self.attr_ticks(group)
        found, fired = self.replay(group, ticks, attrs, one_run(len(ticks)), carry)
        out = self.rows(group if group.num_rows or anchor is None else anchor, ticks,
                        one_run(len(ticks)), found)
        n = len(ticks)
        clock = carry.clock
        if n:
            newest = ticks.max().item()
            clock = newest if clock is None else max(clock, newest)
        origin = carry.origin if carry.origin is not None or not n else ticks[0].item()
        scalars: dict[str, Scalar] = {"clock": clock,
                                      "arrived": carry.arrived + chunk.num_rows,
                                      "reference": carry.reference, "full": carry.full,
                                      "origin": origin}
        if horizon is not None and clock is not None and self.timed():
            # the time firings before the horizon are emitted (none before the clock)
            due = carry.due if carry.due is not None else horizon
            scalars["due"] = max(due, horizon)
        if isinstance(self.trigger, Delta) and n:
            values = attrs[self.trigger.attr]
            if fired >= 0:
                scalars["reference"] = values[fired].item()
            elif carry.reference is None:
                scalars["reference"] = values[0].item()  # the key's first tuple
        kept: pa.Table
        if self.mode != "sliding":
            done = int(found.hi.max()) if isinstance(found, ks.Frames) and len(found.hi) \
                else 0
            kept = group.slice(done)
            if kept.num_rows == 0 and self.timed() and horizon is not None:
                # no tuple waits: keep the newest (or the anchor) for the key's columns
                # of the empty windows to come, marked as no part of the window
                kept = group.slice(n - 1) if n else (
                    anchor if anchor is not None else group)
                scalars["anchor"] = kept.num_rows > 0
        elif isinstance(self.evict, Count):
            kept = group.slice(max(n - self.evict.n, 0))
        else:
            reach = clock
            if self.timed() and len(found.time) and reach is not None:
                # a stream's time firings after the newest tuple evicted at their own
                # clock: the tuples they evicted leave the state (the newest stays)
                reach = max(reach, found.time.max().item())
            alive = self.alive(ticks, attrs, reach)
            if isinstance(self.evict, Delta) and not alive.all():
                scalars["full"] = True
            kept = group.take(pa.array(np.flatnonzero(alive)))
        return out, KernelState(kept.combine_chunks(), scalars)

    def timed(self) -> bool:
        """Whether firings come from a time policy (a time trigger, a time-sized
        tumbling window): those fire as the stream's horizon passes them."""
        policy = self.trigger if self.mode == "sliding" else self.evict
        return isinstance(policy, Time)

    def contents(self, state: KernelState | None
                 ) -> tuple[pa.Table | None, KernelState | None]:
        """A stream's state split into its anchor (a time-sized tumbling window with no
        tuple waiting keeps the newest tuple for the key's columns, in no window) and
        the state of the window's contents."""
        if state is None or not state.scalars.get("anchor"):
            return None, state
        return state.rows.slice(0, 1), KernelState(state.rows.slice(1), state.scalars)

    def wake(self, state: KernelState) -> Horizon | None:
        """The horizon past the next time firing (the first at or after the clock and
        the horizon already passed); None without a time policy or before a tuple."""
        policy = self.trigger if self.mode == "sliding" else self.evict
        clock = _number(state.scalars.get("clock"))
        if not isinstance(policy, Time) or clock is None:
            return None
        dtype = np.float64 if self.time_kind == "float" else np.int64
        tau = ks.next_firing(policy, clock, _number(state.scalars.get("due")), dtype)
        if isinstance(tau, float):
            return float(np.nextafter(tau, np.inf))
        return tau + 1

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The time firings from the clock on, up to the first at or after the key's
        newest time; a tumbling window's unfired tail with `partial`."""
        if self.accumulates:
            if state is None or "first_time" not in state.scalars:
                return pa.RecordBatch.from_pylist([], schema=self.schema)
            return self.accumulated_step(state, state.rows.slice(0, 0), force=True)[0]
        _, state = self.contents(state)
        if state is None or state.rows.num_rows == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        group = state.rows
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        found, _ = self.replay(group, ticks, self.attr_ticks(group), one_run(len(ticks)),
                               self.carry(state, final=True))
        return self.rows(group, ticks, one_run(len(ticks)), found)

    def carry(self, state: KernelState | None, final: bool) -> ks.Carry:
        """Where a replay of the state's rows and a chunk's starts."""
        if state is None:
            return ks.Carry(final=final)
        scalars = state.scalars
        clock, arrived = scalars.get("clock"), scalars.get("arrived", 0)
        reference, origin = scalars.get("reference"), scalars.get("origin")
        assert clock is None or isinstance(clock, (int, float))
        assert isinstance(arrived, int)
        assert reference is None or isinstance(reference, (int, float))
        assert origin is None or isinstance(origin, (int, float))
        return ks.Carry(state.rows.num_rows, clock, arrived, reference,
                        bool(scalars.get("full", False)), final, origin)

    def alive(self, ticks: npt.NDArray[Any], attrs: dict[str, npt.NDArray[Any]],
              clock: int | float | None) -> npt.NDArray[np.bool_]:
        """Which of a sliding window's tuples (time or delta eviction) are still in it
        after the last one's arrival: time, those at most `t` older than the clock;
        delta, those no later tuple exceeds by more than `d`; the last tuple always."""
        n = len(ticks)
        if n == 0:
            return np.zeros(0, dtype=bool)
        if isinstance(self.evict, Time):
            stale = ks.exceeds(np.asarray(clock, dtype=ticks.dtype), ticks,
                               ks.ticks(self.evict.t))
        else:
            assert isinstance(self.evict, Delta)
            values = attrs[self.evict.attr]
            later = np.maximum.accumulate(values[::-1])[::-1]  # the max from each on
            stale = np.zeros(n, dtype=bool)
            stale[:-1] = ks.exceeds(later[1:], values[:-1], ks.ticks(self.evict.d))
        alive: npt.NDArray[np.bool_] = ~np.asarray(stale, dtype=bool)
        alive[-1] = True
        return alive

    def rows(self, group: pa.Table, ticks: npt.NDArray[Any], runs: npt.NDArray[np.int64],
             found: ks.Windows) -> pa.RecordBatch:
        """The output rows of the emitted firings `found` over `group` (with no tuple,
        `group` holds one row for the key's columns, and every window is empty)."""
        m = len(found.time)
        if m == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        if len(ticks) == 0:
            return self.empty_windows(group, found.time)
        if isinstance(found, ks.Frames):
            if self.accumulates:
                results = self.scanned(group, ticks, runs, found)[0]
            else:
                memo: dict[tuple[str, ...], Any] = {}
                results = [aggregate(job, group, ticks, found.lo, found.hi, memo)
                           for job in self.aggregates]
            return self.frame_rows(group, ticks, ticks, runs, found, results)
        first_row = pa.array(runs[found.run])
        columns: list[pa.Array] = [group.column(key).combine_chunks().take(first_row)
                                   for key in self.keys]
        stab = sb.Stabbing(found.qlo, found.qhi, m)
        everything = np.ones(len(ticks), dtype=bool)
        first = sb.alive_positions(stab, len(ticks), everything, latest=False)
        last = sb.alive_positions(stab, len(ticks), everything, latest=True)
        known = first.valid
        start, end = ticks[first.positions], ticks[last.positions]
        shared: dict[tuple[str, str], Any] = {}
        results = [aggregate_alive(job, group, ticks, stab, shared)
                   for job in self.aggregates]
        columns.append(from_ticks(start, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(end, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(found.time, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        columns.extend(results)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def empty_windows(self, anchor: pa.Table, times: npt.NDArray[Any]) -> pa.RecordBatch:
        """Firings at `times` over no tuple (a stream's time-sized tumbling window after
        its tuples): the key's columns from `anchor`'s row, no window start or end, the
        aggregations of an empty window."""
        m = len(times)
        zero = np.zeros(m, dtype=np.int64)
        columns: list[pa.Array] = [anchor.column(key).combine_chunks().take(pa.array(zero))
                                   for key in self.keys]
        unknown = np.zeros(m, dtype=bool)
        nothing = np.zeros(m, dtype=times.dtype)
        columns.append(from_ticks(nothing, unknown, self.time_kind, self.time_scale))
        columns.append(from_ticks(nothing, unknown, self.time_kind, self.time_scale))
        columns.append(from_ticks(times, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        none = anchor.slice(0, 0)
        no_ticks = np.zeros(0, dtype=times.dtype)
        columns.extend(aggregate(job, none, no_ticks, zero, zero, {})
                       for job in self.aggregates)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _number(value: Scalar) -> int | float | None:
    """A scalar that holds a time in ticks (or nothing)."""
    assert value is None or isinstance(value, (int, float))
    return value
