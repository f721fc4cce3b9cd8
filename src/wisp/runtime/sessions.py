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
from .resumable import KernelState, pending, resumed


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
    session is appended to the state without recomputing it."""

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

    def step(self, state: KernelState | None, chunk: pa.Table
             ) -> tuple[pa.RecordBatch, KernelState]:
        """The sessions closed by the rows so far (all but the last one found), and the
        rows of the last one as the state (with, without `max_duration`, the largest
        reach of its events: a chunk that does not break the open session is appended
        to it without recomputing it, so an endless session costs linear time)."""
        if chunk.num_rows == 0:
            return self.empty(), state if state is not None else KernelState(chunk)
        if state is not None and state.rows.num_rows and "reach" in state.scalars:
            ticks, reach = self.reach(chunk)
            before = np.array([state.scalars["reach"]], dtype=ticks.dtype)
            running = np.maximum.accumulate(np.concatenate([before, reach]))
            if not (ticks > shifted(running[:-1], self.gap)).any():
                return self.empty(), KernelState(pending(state, chunk),
                                                 {"reach": running[-1].item()})
        table = pending(state, chunk)
        ticks, reach = self.reach(table)
        found = sk.sessions(ticks, reach, self.gap, self.max_duration)
        last = int(found.lo[-1])
        out = self.rows(table, ticks, found, slice(0, len(found.lo) - 1))
        scalars = {} if self.max_duration is not None else {
            "reach": reach[last:].max().item()}
        return out, KernelState(table.slice(last), scalars)

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
