"""The executor side of the frames strategy (`engine/arrow.py`): a kernel walks the
sorted batches, finds each key's run of events and computes every frame's aggregates at
once.

Short key runs are computed together, about `GROUP_ROWS` events at a time, each frame
clipped to its own run (`run_group` with `runs`), so that a million keys of a few events
cost what a few long keys do. A long run goes through `step` in pieces of about
`CHUNK_ROWS` events and then `finish` (`resumable.resumed`): the kernel is `Resumable`,
carrying over only the events that later windows can still need (the last `-first`
events for `Rows`, the events after `t + start` for `Range`), so a hot key never sits
whole in the Python worker. The running frame (only chosen for user-defined aggregates,
or when the strategy is forced) needs every event of the key up to each anchor, so its
state is the key's whole run so far: the one unbounded case (see `FrameKernel`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import frames as fr
from ...plan.frames import Frame, RangeFrame, RowsFrame, RunningFrame
from ..aggregates.aggregate import AggregateJob, aggregate
from ..codecs.arrays import from_ticks, tick_range_message, to_ticks
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, pending, resumed

GATHER = 3
"""A step computes once its new events number at least `GATHER` times the carried ones
(else it only keeps them): wide windows carry many events, and recomputing them for a
few new ones would cost each step the window's width."""


@dataclass(frozen=True)
class FrameKernel:
    """The executor side of the frames strategy: picklable, no Spark objects.

    Resumable (`resumable.Resumable`), by tail recompute. The state's rows are the
    key's events that later windows can still need, followed by those not yet computed;
    its scalars are `base` (the position in the key's run of the first kept event, for
    a `Rows` frame's completeness), `done` (kept events before this one have had their
    window emitted) and `carried` (the events kept by the last computation).

    Streamable (`resumable.Streamable`): a step may be told a horizon (every later
    event has time >= it). Finality: with `Rows(first, last)` an anchor's window is
    final once `last` events follow it (a horizon tells nothing about how many events
    are still to come); with `Range(start, end)` once no later event can fall in it:
    later events come at or after the bound `max(newest time, horizon)`, so a closed
    end `t + end` is final below the bound and an open end at or below it; with the
    running frame at once. `finish` emits the remaining anchors, their windows clipped
    to the key's end (and the incomplete ones dropped unless `partial`, as the whole run
    does). Without a horizon a step computes only when its new events number at least
    `GATHER` times the carried ones; until then it emits nothing and keeps them (so one
    step's outputs may wait for a later step or `finish`). With a horizon it always
    computes, so that no final window waits.

    Bound: `Rows` carries at most `-first` events plus those gathered (below
    `GATHER + 1` times that, or a piece), `Range` the events within `start` of the
    next anchor, plus those gathered: both bounded by the window's reach. The running
    frame (everything of the key up to each event) carries the key's whole run so far:
    a user-defined aggregate or `collect` needs every earlier value (count, sum, min,
    max, mean and variance could carry accumulators instead, but the running frame only
    runs here for user-defined aggregates or when the strategy is forced), so this is
    the one case where the state, and the time of each computation, grow with the key's
    history (`GATHER` makes the recomputations geometric: O(n) in all)."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    frame: Frame
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time, long runs in pieces of about `chunk_rows`
        events through `step` and `finish`."""
        return resumed(self, batches, self.chunk_rows)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The windows final among the key's events so far, and under `horizon` when
        given (see the class's docstring; without one, only once enough new events have
        arrived, see `GATHER`), and the events the remaining windows can need."""
        buffer = pending(state, chunk)
        scalars = {"base": 0, "done": 0, "carried": 0} if state is None else state.scalars
        base, done, carried = (int(scalars[k] or 0) for k in ("base", "done", "carried"))
        gathering = horizon is None and buffer.num_rows - carried < GATHER * carried
        if buffer.num_rows == 0 or gathering:
            return self.empty(), KernelState(buffer, {"base": base, "done": done,
                                                      "carried": carried})
        out, keep, ready = self.advance(buffer, base, done, last=False, horizon=horizon)
        kept = buffer.slice(keep)
        return out, KernelState(kept, {"base": base + keep, "done": ready - keep,
                                       "carried": kept.num_rows})

    def wake(self, state: KernelState) -> Horizon | None:
        """The smallest horizon at which a step with no new events emits a window: for
        `Range`, the one that makes the first pending anchor's window final (just past
        a closed end `t + end`: one tick, or the next float; an open end itself). `Rows`
        and the running frame never wait for a horizon, only for events: None, unless
        a step without a horizon gathered events whose windows are final already (then
        the newest time, a horizon any later step may be told)."""
        n = state.rows.num_rows
        done = int(state.scalars.get("done") or 0)
        if n <= done:
            return None
        frame = self.frame
        column = state.rows.column(self.time)
        if isinstance(frame, RangeFrame):
            first = to_ticks(column.slice(done, 1).combine_chunks(), self.time_kind)
            end = fr.shifted(first, frame.end)
            if end.dtype.kind != "f" and end[0] == np.iinfo(np.int64).max:
                return None  # saturated: no representable horizon passes it
            if frame.closed in ("left", "neither"):
                return as_horizon(end[0])
            if end.dtype.kind == "f":
                return float(np.nextafter(end[0], np.inf))
            return int(end[0]) + 1
        if n <= int(state.scalars.get("carried") or 0):
            return None  # everything computed: what is pending waits for events
        ticks = to_ticks(column.combine_chunks(), self.time_kind)
        base = int(state.scalars.get("base") or 0)
        anchors = self.ready_frames(ticks, base, done, last=False)[0]
        return as_horizon(ticks[-1]) if len(anchors) else None

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The windows of the anchors left, clipped to the key's end."""
        if state is None or state.rows.num_rows == 0:
            return self.empty()
        base, done = (int(state.scalars.get(k) or 0) for k in ("base", "done"))
        out, _, _ = self.advance(state.rows, base, done, last=True)
        return out

    def advance(self, buffer: pa.Table, base: int, done: int, last: bool,
                horizon: Horizon | None = None) -> tuple[pa.RecordBatch, int, int]:
        """The output rows of the windows final in `buffer` (events `base..` of the
        key's run; under `horizon` too), the first buffer position still needed and
        where the next computation starts."""
        ticks = to_ticks(buffer.column(self.time).combine_chunks(), self.time_kind)
        anchors, lo, hi, ready, keep = self.ready_frames(ticks, base, done, last, horizon)
        if not len(anchors):
            return self.empty(), keep, ready
        return self.emit(buffer, ticks, anchors, lo, hi), keep, ready

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The output rows of one key's whole run, or of several (`runs`: where each
        begins, then the length), every frame clipped to its own run."""
        if runs is None:
            return self.whole_run(group)
        if isinstance(self.frame, RunningFrame):  # each run on its own, as a whole run
            outs = [self.whole_run(group.slice(b, e - b))
                    for b, e in zip(runs[:-1].tolist(), runs[1:].tolist(), strict=True)
                    if e > b]
            return pa.concat_batches(outs) if outs else self.empty()
        out = self.emit_runs(group, runs)
        return self.empty() if out is None else out

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def emit_runs(self, table: pa.Table, starts: npt.NDArray[np.int64]
                  ) -> pa.RecordBatch | None:
        """The output rows of several whole key runs at once (`starts`: where each run
        begins in `table`, then its length), every frame clipped to its own run."""
        ticks = to_ticks(table.column(self.time).combine_chunks(), self.time_kind)
        frame = self.frame
        if isinstance(frame, RowsFrame):
            anchors, lo, hi = fr.segmented_rows_frames(starts, frame.first, frame.last,
                                                       frame.partial)
        else:
            assert isinstance(frame, RangeFrame)
            lo, hi = fr.segmented_range_frames(ticks, starts, frame.start, frame.end,
                                               frame.closed)
            anchors = np.arange(len(ticks), dtype=np.int64)
        if not len(anchors):
            return None
        return self.emit(table, ticks, anchors, lo, hi)

    def ready_frames(self, ticks: npt.NDArray[Any], base: int, done: int, last: bool,
                     horizon: Horizon | None = None
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                npt.NDArray[np.int64], int, int]:
        """The anchors among buffer positions `done..` whose windows are final (all of
        them when the key's run ends here; see the class's docstring), their frames,
        where the next call starts (`ready`) and the first buffer position to keep
        (`keep`)."""
        n = len(ticks)
        frame = self.frame
        if isinstance(frame, RunningFrame):  # every event of the key so far: keep them
            anchors = np.arange(done, n, dtype=np.int64)
            return anchors, np.zeros(len(anchors), dtype=np.int64), anchors + 1, n, 0
        if isinstance(frame, RowsFrame):
            ready = n if last else max(done, min(n, n - frame.last))
            anchors = np.arange(done, ready, dtype=np.int64)
            if not frame.partial:
                complete = anchors + base + frame.first >= 0
                if last:
                    complete &= anchors + frame.last < n
                anchors = anchors[complete]
            lo = np.clip(anchors + frame.first, 0, n)
            hi = np.maximum(np.clip(anchors + frame.last + 1, 0, n), lo)
            keep = max(0, min(ready, ready + frame.first))
            return anchors, lo, hi, ready, min(keep, n)
        assert isinstance(frame, RangeFrame)
        ready = n if last else done + self.range_ready(ticks[done:], ticks[-1], horizon)
        anchors = np.arange(done, ready, dtype=np.int64)
        lo_all, hi_all = fr.range_frames(ticks, frame.start, frame.end, frame.closed)
        nxt = min(ready, n - 1)
        reach = int(np.searchsorted(ticks, fr.shifted(ticks[nxt:nxt + 1], frame.start)[0],
                                    side="left"))
        return anchors, lo_all[anchors], hi_all[anchors], ready, min(ready, reach)

    def range_ready(self, pending: npt.NDArray[Any], newest: Any, horizon: Horizon | None
                    ) -> int:
        """How many of the `pending` anchors (times, sorted) have a final `Range`
        window: later events come at or after `max(newest, horizon)`, which a closed
        end must be below (an event there would join it) and an open end at or below."""
        assert isinstance(self.frame, RangeFrame)
        bound = newest if horizon is None else max(newest, horizon)
        side: fr.Side = "right" if self.frame.closed in ("left", "neither") else "left"
        ends = fr.shifted(pending, self.frame.end)
        return int(np.searchsorted(ends, bound, side=side))

    def emit(self, buffer: pa.Table, ticks: npt.NDArray[Any], anchors: npt.NDArray[np.int64],
             lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> pa.RecordBatch:
        """The output rows of `anchors` (key columns, bounds, time, aggregates)."""
        m = len(anchors)
        start, end, known = self.bounds(ticks, anchors, lo, hi)
        columns: list[pa.Array] = []
        rows = pa.array(anchors)
        for key in self.keys:
            columns.append(buffer.column(key).take(rows).combine_chunks())
        columns.append(from_ticks(start, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(end, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(ticks[anchors], np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        memo: dict[tuple[str, ...], Any] = {}
        for job in self.aggregates:
            columns.append(aggregate(job, buffer, ticks, lo, hi, memo))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def frames(self, ticks: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], ...]:
        n = len(ticks)
        frame = self.frame
        if isinstance(frame, RowsFrame):
            return fr.rows_frames(n, frame.first, frame.last, frame.partial)
        if isinstance(frame, RangeFrame):
            lo, hi = fr.range_frames(ticks, frame.start, frame.end, frame.closed)
        else:
            lo, hi = fr.cumulative_frames(n)
        return np.arange(n, dtype=np.int64), lo, hi

    def bounds(self, ticks: npt.NDArray[Any], anchors: npt.NDArray[np.int64],
               lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> tuple[
                   npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.bool_]]:
        """window_start, window_end (ticks) and whether they are known."""
        frame = self.frame
        anchor_times = ticks[anchors]
        if isinstance(frame, RangeFrame):
            if _leaves_ticks(anchor_times, frame.start) or _leaves_ticks(anchor_times,
                                                                         frame.end):
                raise OverflowError(tick_range_message(self.time))
            known = np.ones(len(anchors), dtype=bool)
            return (fr.shifted(anchor_times, frame.start), fr.shifted(anchor_times, frame.end),
                    known)
        if isinstance(frame, RunningFrame):
            return np.full(len(anchors), ticks[0]), anchor_times, np.ones(len(anchors), bool)
        known = hi > lo
        safe_lo = np.where(known, lo, 0)
        safe_last = np.where(known, hi - 1, 0)
        return ticks[safe_lo], ticks[safe_last], known

    def whole_run(self, group: pa.Table) -> pa.RecordBatch:
        """The output rows of one key's whole run (the vectorised path)."""
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        anchors, lo, hi = self.frames(ticks)
        m = len(anchors)
        if m == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        start, end, known = self.bounds(ticks, anchors, lo, hi)
        everywhere = np.ones(m, dtype=bool)
        columns: list[pa.Array] = []
        first_row = pa.array(np.zeros(m, dtype=np.int64))
        for key in self.keys:
            columns.append(group.column(key).combine_chunks().take(first_row))
        columns.append(from_ticks(start, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(end, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(ticks[anchors], everywhere, self.time_kind,
                                  self.time_scale))
        for job in self.aggregates:
            columns.append(aggregate(job, group, ticks, lo, hi))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _leaves_ticks(times: npt.NDArray[Any], offset: int | float) -> bool:
    """Whether `time + offset` leaves the 64-bit tick range for one of `times` (integer
    ticks): a `Range` window's bound there fails the query, as the interval kinds' do,
    rather than being clamped to the range's edge."""
    if times.dtype.kind == "f" or offset == 0 or len(times) == 0:
        return False
    info = np.iinfo(np.int64)
    if offset > 0:
        return bool(times.max() > info.max - int(offset))
    return bool(times.min() < info.min - int(offset))


def as_horizon(tick: Any) -> Horizon:
    """A numpy tick as a horizon: a float for float ticks, else an int."""
    return float(tick) if isinstance(tick, np.floating) else int(tick)
