"""The executor side of the frames strategy (`engine/arrow.py`): a kernel walks the
sorted batches, finds each key's run of events and computes every frame's aggregates at
once.

For `Rows` and `Range` frames the kernel streams each key's run in chunks of about
`CHUNK_ROWS` events, carrying over only the events that later windows can still need
(the last `-first` events for `Rows`, the events after `t + start` for `Range`), so a hot
key never sits whole in the Python worker; shorter runs are computed together, about
`GROUP_ROWS` events at a time, each frame clipped to its own run, so that a million
keys of a few events cost what a few long keys do. The running frame (only chosen for
user-defined aggregates) holds one key's run at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..kernels import frames as fr
from ..plan.frames import Frame, RangeFrame, RowsFrame, RunningFrame
from .aggregate import AggregateJob, aggregate
from .batches import CHUNK_ROWS, key_groups, key_runs
from .codec import from_ticks, to_ticks


@dataclass(frozen=True)
class FrameKernel:
    """The executor side of the frames strategy: picklable, no Spark objects."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    frame: Frame
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if isinstance(self.frame, RunningFrame):
            for group in key_runs(batches, self.keys):
                out = self.run_group(group)
                if out.num_rows:
                    yield out
            return
        yield from self.stream(batches)

    def stream(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs together, several per table (frames clipped to each run), and
        each long run in chunks: compute the windows whose events have all arrived,
        keep only the events that the remaining windows can still need."""
        buffer: pa.Table | None = None
        base = 0  # position in the key's run of the buffer's first event
        done = 0  # buffer events before this one have had their window computed
        carried = 0  # events kept from the previous computation
        for piece, starts, first, last in key_groups(batches, self.keys, self.chunk_rows):
            if starts is not None:
                out = self.emit_runs(piece, starts)
                if out is not None:
                    yield out
                continue
            if first or buffer is None:
                buffer, base, done, carried = piece, 0, 0, 0
            else:
                buffer = pa.concat_tables([buffer, piece])
            if buffer.num_rows == 0:
                continue
            if not last and buffer.num_rows - carried < 3 * carried:
                continue  # wide windows carry many events: gather more new ones first
            ticks = to_ticks(buffer.column(self.time).combine_chunks(), self.time_kind)
            anchors, lo, hi, ready, keep = self.ready_frames(ticks, base, done, last)
            if len(anchors):
                yield self.emit(buffer, ticks, anchors, lo, hi)
            if not last:
                buffer = buffer.slice(keep)
                base, done, carried = base + keep, ready - keep, buffer.num_rows

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

    def ready_frames(self, ticks: npt.NDArray[Any], base: int, done: int, last: bool
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                npt.NDArray[np.int64], int, int]:
        """The anchors among buffer positions `done..` whose windows are complete in
        the buffer (all of them when the key's run ends here), their frames, where the
        next call starts (`ready`) and the first buffer position to keep (`keep`)."""
        n = len(ticks)
        frame = self.frame
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
        if last:
            ready = n
        else:
            ends = fr.shifted(ticks[done:], frame.end)
            ready = done + int(np.searchsorted(ends, ticks[-1], side="left"))
        anchors = np.arange(done, ready, dtype=np.int64)
        lo_all, hi_all = fr.range_frames(ticks, frame.start, frame.end, frame.closed)
        nxt = min(ready, n - 1)
        reach = int(np.searchsorted(ticks, fr.shifted(ticks[nxt:nxt + 1], frame.start)[0],
                                    side="left"))
        return anchors, lo_all[anchors], hi_all[anchors], ready, min(ready, reach)

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
            known = np.ones(len(anchors), dtype=bool)
            return (fr.shifted(anchor_times, frame.start), fr.shifted(anchor_times, frame.end),
                    known)
        if isinstance(frame, RunningFrame):
            return np.full(len(anchors), ticks[0]), anchor_times, np.ones(len(anchors), bool)
        known = hi > lo
        safe_lo = np.where(known, lo, 0)
        safe_last = np.where(known, hi - 1, 0)
        return ticks[safe_lo], ticks[safe_last], known

    def run_group(self, group: pa.Table) -> pa.RecordBatch:
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
