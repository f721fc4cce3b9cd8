"""The executor side of sessions (`engine/sessions.py` builds the Spark plan): the kernel
finds each key's sessions (`kernels/sessions.py`) and aggregates over all of them at
once. Short key runs go several at a time through `run_group`; a long run goes through
`step` in pieces (`resumable.resumed`), carrying the rows of its open session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import sessions as sk
from ...kernels.frames import shifted
from ...kernels.segments import Segments
from ..aggregates.aggregate import AggregateJob, aggregate
from ..codecs.arrays import from_ticks, ticks_or_zero, to_ticks, validity
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, pending, resumed
from .scans import (
    Carry,
    Scanned,
    carried,
    held_by_accumulators,
    result_at,
    scan_all,
)


def _plus(reach: npt.NDArray[Any], gaps: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """`reach + gaps` (gaps positive), saturating at the int64 range (an open event's
    reach, the largest int64, stays there) instead of wrapping."""
    if reach.dtype.kind == "f":
        added: npt.NDArray[Any] = reach + gaps
        return added
    limit = np.iinfo(np.int64).max
    return np.where(reach > limit - gaps, limit, reach + gaps).astype(reach.dtype)


@dataclass(frozen=True)
class SessionKernel:
    """The executor side of sessions: picklable, no Spark objects.

    Resumable (`resumable.Resumable`): a key's rows arrive sorted by time, so a later
    event can only extend the last session found so far or open one after it; every
    session before the last one is final (with `max_duration` too: a capped session
    ends at the first event that breaks its gap or reaches its cap, and later events
    come after that event). `step` emits those sessions and keeps the last (open)
    session as the state: where every aggregation has accumulators (`accumulates`), as
    its start, the largest reach of its events and the accumulators, a constant size
    however long the session grows (with `max_duration` too: the start fixes the cap);
    otherwise (collect, exact quantiles, udafs, lifetimes) as its rows, and without
    `max_duration` the largest reach of its events, so a session that never breaks is
    carried whole, the one place where memory grows with the key's history. Time stays
    linear: a chunk that does not break the open session is appended to the state
    without recomputing it.

    Streamable (`resumable.Streamable`): told a horizon `H` (every later event has time
    >= H), a step also emits the open session when no later event can join it: an
    event joins while its time is at most `last + gap` (`kernels.sessions`), so once
    `last + gap < H`, i.e. the session's `window_end` is before H; and, with
    `max_duration`, only while its time is before `first + max_duration`, so once that
    cap is at most H. An open-ended session (no `window_end`) without a cap waits for
    `finish`. `wake` is the smallest such H for the open session."""

    keys: tuple[str, ...]
    time: str
    end: str | None
    time_kind: str
    time_scale: int
    gap: int | float
    max_duration: int | float | None
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS
    gap_column: str | None = None
    """A per-row gap (ticks, positive), added to each event's reach; `gap` is then 0."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time, long runs in pieces of about `chunk_rows`
        rows through `step` and `finish`."""
        return resumed(self, batches, self.chunk_rows)

    @property
    def accumulates(self) -> bool:
        """Whether a key's open session is carried as accumulators, not rows (a session
        depends on its events only through its start, which also fixes its cap under
        `max_duration`, and their largest reach), when every aggregation is held by a
        few accumulators
        (`Definition.accumulators`: counts, sums, extremes, first/last, moments,
        max_by/min_by, a user's mergeable aggregator). Then each session's aggregates
        are running scans (`running.scan_all`) read at its last event, whole runs and
        steps alike, so a step resumes a session bit for bit, and a session that never
        breaks costs a constant state, not its rows."""
        return held_by_accumulators(self.aggregates)

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The sessions of one key's run, or of several (`runs`: where each begins, then
        the length; no session spans two runs)."""
        ticks, found = self.found(group, runs)
        if self.accumulates:
            if group.num_rows == 0:
                return self.empty()
            scanned = self.scanned(group, ticks, found, Carry({}, None, 0))
            return self.accumulated(group, ticks, found, scanned, len(found.lo))
        return self.rows(group, ticks, found, slice(None))

    def scanned(self, table: pa.Table, ticks: npt.NDArray[Any], found: sk.Sessions,
                carry: Carry) -> list[Scanned]:
        """Every aggregation's running scan over the positions (`carry.virtual`, then
        `table`'s rows), restarting at each session."""
        segments = Segments(np.append(found.lo, len(ticks)).astype(np.int64))
        return scan_all(self.aggregates, table, segments, carry, ticks)

    def accumulated(self, keys: pa.Table, ticks: npt.NDArray[Any], found: sk.Sessions,
                    scanned: list[Scanned], closed: int) -> pa.RecordBatch:
        """The output rows of the first `closed` sessions of `found` (over positions;
        `keys`: a row of key columns per position), each aggregate read at the session's
        last position."""
        which = slice(0, closed)
        lo, hi = found.lo[which], found.hi[which]
        columns: list[pa.Array] = [keys.column(k).take(pa.array(lo)).combine_chunks()
                                   for k in self.keys]
        everywhere = np.ones(len(lo), dtype=bool)
        columns.append(from_ticks(found.start[which], everywhere, self.time_kind,
                                  self.time_scale))
        end = from_ticks(found.end[which], found.end_known[which], self.time_kind,
                         self.time_scale)
        columns += [end, end]
        columns += [result_at(found_j, job, (hi - 1).astype(np.int64))
                    for found_j, job in zip(scanned, self.aggregates, strict=True)]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def step_accumulated(self, state: KernelState | None, chunk: pa.Table,
                         horizon: Horizon | None, force: bool = False
                         ) -> tuple[pa.RecordBatch, KernelState]:
        """`step` when the open session is carried as accumulators (`accumulates`): the
        state is one row of key columns (and the values `first`/`last`/... carry), the
        session's start and largest reach (`start`, `reach`) and each aggregation's
        accumulators. The chunk's rows follow the carried session as one virtual
        position 0 with that start and reach; `force` closes the last session (end of
        input)."""
        scalars = {} if state is None else dict(state.scalars)
        virtual = 1 if "start" in scalars else 0
        if chunk.num_rows == 0 and not virtual:
            return self.empty(), KernelState(pa.table({}))
        ticks, reach = self.reach(chunk)
        if virtual:
            dtype = ticks.dtype if chunk.num_rows else np.dtype(
                np.float64 if isinstance(scalars["start"], float) else np.int64)
            ticks = np.concatenate([np.array([scalars["start"]], dtype=dtype), ticks])
            reach = np.concatenate([np.array([scalars["reach"]], dtype=dtype),
                                    reach.astype(dtype)])
            if chunk.num_rows == 0 and not force and not self.closes(
                    ticks[0], shifted(reach[:1], self.gap)[0], horizon):
                return self.empty(), state if state is not None else KernelState(
                    pa.table({}))
        found = sk.sessions(ticks, reach, self.gap, self.max_duration)
        closed = len(found.lo) - 1
        if force or self.closes(found.start[-1], found.end[-1], horizon):
            closed += 1
        assert state is not None or not virtual
        carried_rows = None if state is None else state.rows
        scanned = self.scanned(chunk, ticks, found, Carry(scalars, carried_rows, virtual))
        keys = chunk.select(list(self.keys))
        if virtual:
            assert carried_rows is not None
            keys = pa.concat_tables([carried_rows.select(list(self.keys)).cast(keys.schema),
                                     keys])
        out = self.accumulated(keys, ticks, found, scanned, closed)
        if closed == len(found.lo):
            return out, KernelState(pa.table({}))
        last = int(found.lo[-1])
        kept = carried(self.keys, keys, scanned, {
            "start": found.start[-1].item(), "reach": reach[last:].max().item()},
            keys_always=True)
        inputs = chunk.select([c for c in self.input_columns if c not in self.keys])
        rows = kept.rows
        for name in inputs.column_names:  # typed, for `finish`'s chunk of no rows
            rows = rows.append_column(name, inputs.column(name).slice(chunk.num_rows - 1, 1))
        return out, KernelState(rows, kept.scalars)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """`step_accumulated` when sessions are carried as accumulators, else:"""
        if self.accumulates:
            return self.step_accumulated(state, chunk, horizon)
        return self.step_rows(state, chunk, horizon)

    def step_rows(self, state: KernelState | None, chunk: pa.Table,
                  horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The sessions closed by the rows so far (all but the last one found) and, told
        a `horizon`, the last one too when no later row can join it (see the class's
        docstring); the rows of the session left open as the state (with, without
        `max_duration`, the largest reach of its events: a chunk that does not break
        the open session is appended to it without recomputing it, so an endless
        session costs linear time)."""
        if state is None or state.rows.num_rows == 0:
            if chunk.num_rows == 0:
                return self.empty(), state if state is not None else KernelState(chunk)
        elif chunk.num_rows == 0 and horizon is None:
            return self.empty(), state
        elif "reach" in state.scalars:
            ticks, reach = self.reach(chunk)
            before = np.array([state.scalars["reach"]], dtype=ticks.dtype)
            running = np.maximum.accumulate(np.concatenate([before, reach]))
            joins = not (ticks > shifted(running[:-1], self.gap)).any()
            if joins and not self.closes(None, shifted(running[-1:], self.gap)[0], horizon):
                return self.empty(), KernelState(pending(state, chunk),
                                                 {"reach": running[-1].item()})
        table = pending(state, chunk)
        ticks, reach = self.reach(table)
        found = sk.sessions(ticks, reach, self.gap, self.max_duration)
        last = int(found.lo[-1])
        closed = len(found.lo) - 1
        if self.closes(found.start[-1], found.end[-1], horizon):
            closed, last = closed + 1, table.num_rows
        out = self.rows(table, ticks, found, slice(0, closed))
        scalars = {} if self.max_duration is not None or last == table.num_rows else {
            "reach": reach[last:].max().item()}
        return out, KernelState(table.slice(last), scalars)

    def closes(self, start: Any, end: Any, horizon: Horizon | None) -> bool:
        """Whether no row at or after `horizon` can join the session begun at `start`
        whose `window_end` is `end` (`forever` for an open-ended one): `end` is before
        the horizon, or (with `max_duration`; `start` None when there is none) its cap
        is at or before it."""
        if horizon is None:
            return False
        if end != sk.forever(np.asarray(end)) and end < horizon:
            return True
        return (self.max_duration is not None and start is not None
                and shifted(np.asarray([start]), self.max_duration)[0] <= horizon)

    def wake(self, state: KernelState) -> Horizon | None:
        """The smallest horizon at which the open session closes (`closes`): just past
        its `window_end` (one tick, or the next float), or its cap if that comes first;
        None for no open session, or an open-ended one without a cap."""
        if self.accumulates:
            if "start" not in state.scalars:
                return None
            reach = state.scalars["reach"]
            kind = np.dtype(np.float64 if isinstance(reach, float) else np.int64)
            start = np.array([state.scalars["start"]], dtype=kind)[0]
            end = shifted(np.array([reach], dtype=kind), self.gap)[0]
        elif state.rows.num_rows == 0:
            return None
        elif "reach" in state.scalars:  # no max_duration: the session's reach is kept
            dtype = to_ticks(state.rows.column(self.time).slice(0, 1).combine_chunks(),
                             self.time_kind).dtype
            start = None
            end = shifted(np.array([state.scalars["reach"]], dtype=dtype), self.gap)[0]
        else:
            _, found = self.found(state.rows, None)
            start, end = found.start[-1], found.end[-1]
        wakes: list[Horizon] = []
        if end != sk.forever(np.asarray(end)):
            wakes.append(float(np.nextafter(end, np.inf)) if isinstance(end, np.floating)
                         else int(end) + 1)
        if self.max_duration is not None and start is not None:
            cap = shifted(np.asarray([start]), self.max_duration)[0]
            wakes.append(float(cap) if isinstance(cap, np.floating) else int(cap))
        return min(wakes) if wakes else None

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The open session."""
        if self.accumulates:
            if state is None or "start" not in state.scalars:
                return self.empty()
            no_input = state.rows.select(list(self.input_columns)).slice(0, 0)
            return self.step_accumulated(state, no_input, None, force=True)[0]
        if state is None or state.rows.num_rows == 0:
            return self.empty()
        return self.run_group(state.rows)

    def found(self, group: pa.Table, runs: npt.NDArray[np.int64] | None
              ) -> tuple[npt.NDArray[Any], sk.Sessions]:
        """The rows' time ticks and their sessions."""
        ticks, reach = self.reach(group)
        return ticks, sk.sessions(ticks, reach, self.gap, self.max_duration, runs)

    def reach(self, group: pa.Table) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """The rows' time ticks, and how far each event is alive (`kernels.sessions`)."""
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        reach = ticks
        if self.end is not None:
            ends = group.column(self.end).combine_chunks()
            reach = np.where(validity(ends), ticks_or_zero(ends, self.time_kind),
                             sk.forever(ticks))
            reach = np.maximum(reach, ticks).astype(ticks.dtype)
        if self.gap_column is not None:
            gaps = group.column(self.gap_column).combine_chunks().to_numpy(
                zero_copy_only=False).astype(ticks.dtype)
            reach = _plus(reach, gaps)
        return ticks, reach

    def rows(self, group: pa.Table, ticks: npt.NDArray[Any], found: sk.Sessions,
             which: slice) -> pa.RecordBatch:
        """The output rows of the sessions `which` of `found`."""
        lo, hi = found.lo[which], found.hi[which]
        m = len(lo)
        firsts = pa.array(lo)
        columns: list[pa.Array] = [group.column(k).take(firsts).combine_chunks()
                                   for k in self.keys]
        everywhere = np.ones(m, dtype=bool)
        columns.append(from_ticks(found.start[which], everywhere, self.time_kind,
                                  self.time_scale))
        end = from_ticks(found.end[which], found.end_known[which], self.time_kind,
                         self.time_scale)
        columns += [end, end]
        for job in self.aggregates:
            columns.append(aggregate(job, group, ticks, lo, hi))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The columns a step reads: keys, time, end, gap, the aggregations' columns."""
        names = [*self.keys, self.time, *([self.end] if self.end else []),
                 *([self.gap_column] if self.gap_column else []),
                 *[c for job in self.aggregates for c in (job.column, job.by) if c]]
        return tuple(dict.fromkeys(names))
