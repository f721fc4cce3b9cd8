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

from ..kernels import sessions as sk
from ..kernels.frames import shifted
from .aggregate import AggregateJob, aggregate
from .batches import CHUNK_ROWS
from .codec import from_ticks, ticks_or_zero, to_ticks, validity
from .resumable import Horizon, KernelState, pending, resumed


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
    come after that event). `step` emits those sessions and keeps the rows of the last
    (open) session as the state, and without `max_duration` the largest reach of its
    events; `finish` emits the open session. Memory: the state is bounded by the open
    session's rows, which is NOT bounded for a session that never breaks (events
    always within `gap` of the last, or an open-ended interval event, without
    `max_duration`): such a session is carried whole, the one place where memory grows
    with the key's history. Time stays linear: a chunk that does not break the open
    session is appended to the state without recomputing it.

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

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The sessions of one key's run, or of several (`runs`: where each begins, then
        the length; no session spans two runs)."""
        ticks, found = self.found(group, runs)
        return self.rows(group, ticks, found, slice(None))

    def step(self, state: KernelState | None, chunk: pa.Table,
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
        if state.rows.num_rows == 0:
            return None
        if "reach" in state.scalars:  # no max_duration: the session's reach is kept
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
