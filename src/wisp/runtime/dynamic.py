"""The executor side of dynamic windows (`engine/dynamic.py` builds the Spark plan): the
kernel takes each key's run of the union of anchor rows and events (`KIND` tells them
apart), splits anchors from events and finds every window's `[lo, hi)` by binary search
in the sorted event times; clock ticks are generated here from the key's span. Obsolete
violations travel as a message column (`VIOLATION`) that the driver's `raise_error`
filter turns into a failed query.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..kernels import dynamic as dk
from ..kernels.frames import shifted
from ..kernels.runs import offsets, one_run, owners, run_index
from ..plan.dynamic import ClockTicks
from .aggregate import AggregateJob, aggregate
from .batches import whole_runs
from .codec import DAY, from_ticks, ticks_or_zero, to_ticks, validity

KIND, TIME, START, END, OBSOLETE = ("__wisp_kind", "__wisp_time", "__wisp_start",
                                    "__wisp_end", "__wisp_obsolete")
VIOLATION = "__wisp_violation"
CHUNK = 65_536  # anchors per output batch
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class BoundJob:
    """A bound on the executor: "none", "offset" (anchor time + offset) or "column"
    (the union's column `column`)."""

    kind: str
    offset: int | float
    column: str


@dataclass(frozen=True)
class DynamicKernel:
    """The executor side of dynamic windows: picklable, no Spark objects."""

    keys: tuple[str, ...]
    time_kind: str
    time_scale: int
    closed: str
    start: BoundJob
    end: BoundJob
    obsolete: BoundJob
    clock: ClockTicks | None
    check: bool
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for table, starts in whole_runs(batches, self.keys):
            yield from self.run_group(table, starts)

    def run_group(self, group: pa.Table, starts: IntArray | None = None
                  ) -> Iterator[pa.RecordBatch]:
        """The windows of the key runs in `group` (`starts`: where each begins, then the
        length; one run by default), each anchor searching its own key's events."""
        runs = one_run(group.num_rows) if starts is None else starts
        run_of = run_index(runs)
        if self.clock is None:
            is_event = np.asarray(group.column(KIND).to_numpy(zero_copy_only=False)) == 1
            events = group.filter(pa.array(is_event))
            anchors: pa.Table | None = group.filter(pa.array(~is_event))
            event_runs = run_of[is_event]
            anchor_runs = run_of[~is_event]
        else:
            events, anchors, event_runs = group, None, run_of
        ticks = to_ticks(events.column(TIME).combine_chunks(), self.time_kind)
        # where each run's events begin among the events, then their number
        bounds = np.searchsorted(event_runs, np.arange(len(runs)), side="left").astype(
            np.int64)
        if anchors is None:
            assert self.clock is not None
            yield from self.clock_windows(group, runs, events, ticks, bounds, self.clock)
            return
        m = anchors.num_rows
        if m == 0:
            return
        anchor_ticks = to_ticks(anchors.column(TIME).combine_chunks(), self.time_kind)
        starts_, start_known = self.bound(self.start, anchors, anchor_ticks)
        ends, end_known = self.bound(self.end, anchors, anchor_ticks)
        messages: list[str | None] = [None] * m
        if self.check:
            obsolete, obsolete_known = self.bound(self.obsolete, anchors, anchor_ticks)
            for found in dk.obsolete_violations(starts_, start_known, obsolete,
                                                obsolete_known, anchor_runs):
                run = int(anchor_runs[found.index])
                messages[found.index] = self.message(
                    found, anchor_ticks[found.index], group.slice(int(runs[run]), 1))
        for begin in range(0, m, CHUNK):
            part = slice(begin, min(m, begin + CHUNK))
            yield self.windows(group, runs, events, ticks, bounds, anchor_runs[part],
                               anchor_ticks[part], starts_[part], start_known[part],
                               ends[part], end_known[part], messages[part])

    def clock_windows(self, group: pa.Table, runs: IntArray, events: pa.Table,
                      ticks: npt.NDArray[Any], bounds: IntArray, clock: ClockTicks
                      ) -> Iterator[pa.RecordBatch]:
        """Each run's clock ticks as anchors: all runs' at once up to `CHUNK` ticks,
        else run by run in pieces of `CHUNK` ticks."""
        count = len(runs) - 1
        first = ticks[bounds[:-1]] if clock.start is None else np.full(count, clock.start)
        last = ticks[bounds[1:] - 1] if clock.end is None else np.full(count, clock.end)
        align = clock.align if clock.align is not None else (
            0.0 if self.time_kind == "float" else 0)
        k0, counts = dk.clock_ranges(first, last, clock.every, align)
        float_time = ticks.dtype.kind == "f"
        if int(counts.sum()) <= CHUNK:
            anchor_runs = owners(counts)
            steps = np.repeat(k0, counts) + offsets(counts)
            yield from self.clock_batch(group, runs, events, ticks, bounds, anchor_runs,
                                        dk.tick_values(steps, clock.every, align, float_time))
            return
        for run in range(count):
            for skip in range(0, int(counts[run]), CHUNK):
                stop = min(int(counts[run]), skip + CHUNK)
                steps = np.arange(int(k0[run]) + skip, int(k0[run]) + stop, dtype=np.int64)
                yield from self.clock_batch(
                    group, runs, events, ticks, bounds, np.full(stop - skip, run),
                    dk.tick_values(steps, clock.every, align, float_time))

    def clock_batch(self, group: pa.Table, runs: IntArray, events: pa.Table,
                    ticks: npt.NDArray[Any], bounds: IntArray, anchor_runs: IntArray,
                    anchor_ticks: npt.NDArray[Any]) -> Iterator[pa.RecordBatch]:
        if not len(anchor_ticks):
            return
        starts, start_known = self.bound(self.start, None, anchor_ticks)
        ends, end_known = self.bound(self.end, None, anchor_ticks)
        yield self.windows(group, runs, events, ticks, bounds, anchor_runs, anchor_ticks,
                           starts, start_known, ends, end_known, [None] * len(anchor_ticks))

    def bound(self, job: BoundJob, anchors: pa.Table | None,
              anchor_ticks: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        known = np.ones(len(anchor_ticks), dtype=bool)
        if job.kind == "none":
            return anchor_ticks, known
        if job.kind == "offset":
            return shifted(anchor_ticks, job.offset), known
        assert anchors is not None
        column = anchors.column(job.column).combine_chunks()
        return ticks_or_zero(column, self.time_kind), validity(column)

    def windows(self, group: pa.Table, runs: IntArray, events: pa.Table,
                ticks: npt.NDArray[Any], bounds: IntArray, anchor_runs: IntArray,
                anchor_ticks: npt.NDArray[Any], starts: npt.NDArray[Any],
                start_known: npt.NDArray[np.bool_], ends: npt.NDArray[Any],
                end_known: npt.NDArray[np.bool_], messages: list[str | None]
                ) -> pa.RecordBatch:
        m = len(anchor_ticks)
        lo, hi = dk.window_frames(ticks, starts, start_known, ends, end_known, self.closed,
                                  bounds, anchor_runs)
        key_rows = pa.array(runs[anchor_runs])
        columns: list[pa.Array] = [group.column(k).take(key_rows).combine_chunks()
                                   for k in self.keys]
        columns.append(from_ticks(starts, start_known, self.time_kind, self.time_scale))
        columns.append(from_ticks(ends, end_known, self.time_kind, self.time_scale))
        columns.append(from_ticks(anchor_ticks, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        for job in self.aggregates:
            columns.append(aggregate(job, events, ticks, lo, hi))
        if self.check:
            columns.append(pa.array(messages, pa.string()))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def message(self, found: dk.Violation, anchor_time: Any, first_row: pa.Table) -> str:
        at = f"at the anchor at time {self.show(anchor_time, True)}"
        if self.keys:
            values = {k: first_row.column(k)[0].as_py() for k in self.keys}
            at += f" (key {values!r})"
        if found.rule == "decrease":
            return (f"WispError: `obsolete` must not decrease from one anchor to the next, "
                    f"found obsolete {self.show(found.found, found.found_known)} {at} after "
                    f"obsolete {self.show(found.bound, True)} of the anchor before it")
        return (f"WispError: `start` must not be before an earlier anchor's obsolete "
                f"{self.show(found.bound, True)}, found start "
                f"{self.show(found.found, found.found_known)} {at}")

    def show(self, ticks: Any, known: bool) -> str:
        """A time in ticks as the user reads it."""
        if not known:
            return "the start of time"
        kind = self.time_kind
        if kind in ("timestamp", "timestamp_ntz"):
            moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(ticks))
            zone = " UTC" if kind == "timestamp" else ""
            return moment.isoformat(sep=" ", timespec="microseconds") + zone
        if kind == "date":
            return (_dt.date(1970, 1, 1) + _dt.timedelta(days=int(ticks) // DAY)).isoformat()
        if kind == "decimal":
            return str(Decimal(int(ticks)).scaleb(-self.time_scale))
        if kind == "float":
            return repr(float(ticks))
        return str(int(ticks))
