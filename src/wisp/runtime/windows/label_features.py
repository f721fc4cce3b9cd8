"""The executor side of point-in-time feature sets (`Events.features(..., at=labels)`):
label rows and events of each key in one sorted run (`KIND` tells them apart, a label row
before the events of its time, or after them with `include_current`), each label row's
windows read off the events before it.

A label row is final as soon as it arrives (no later event can join its windows), so a
long key's pieces (`resumable.resumed`) carry only the events later label rows can
reach: for `Range(start, end)` those from the newest time plus `start`, for `Rows(first,
last)` the last `1 - first`; the cumulative window's earlier events are folded into one
partial state where every aggregation has one (`window_states`), else carried.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import dynamic as dk
from ...kernels import frames as fr
from ...kernels import periods as pk
from ...kernels.runs import one_run, run_index
from ...plan.features import CalendarFrame, FeatureFrame, PeriodsFrame
from ...plan.frames import RangeFrame, RowsFrame, RunningFrame
from ..aggregates.aggregate import AggregateJob, aggregate
from ..aggregates.partials import Layout
from ..aggregates.window_states import GROUP, WindowStates, holds
from ..codecs.arrays import from_ticks, to_ticks
from ..codecs.batches import CHUNK_ROWS
from .features import calendar_start, period_reach, tick_flags
from .resumable import Horizon, KernelState, pending, resumed

KIND, TIME = "__wisp_kind", "__wisp_time"
EVENT = 1
"""`KIND` of an event row; a label row's is 0 (before the events of its time) or 2
(after them, `include_current`)."""
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LabelFeaturesKernel:
    """Each label row's windows over its key's events before it. Picklable, no Spark
    objects.

    Input: the union of label rows and events, by key and then (`TIME`, `KIND`, the
    events' tie-break columns). Output rows, in `schema`'s order: the key columns,
    `time` (the label's), the label rows' `carried` columns, then for each aggregation,
    for each frame, its value over the frame: `Range` the events in `[T + start,
    T + end]` before the label, `Rows` the positions around the last event before it
    (index 0), the cumulative window every event before it.

    Resumable and Streamable (`resumable.Streamable`): a step emits every label row it
    is given; the
    state's rows are the events later label rows can reach (scalars: none), and
    `partials`, where the cumulative window folds, one state row of the key's events
    before them."""

    keys: tuple[str, ...]
    time_kind: str
    time_scale: int
    frames: tuple[FeatureFrame, ...]
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    carried: tuple[str, ...] = ()
    """The label rows' columns carried to the output (their names in the input)."""
    chunk_rows: int = CHUNK_ROWS
    order: tuple[str, ...] = ()
    """The events' tie-break columns, for partial states that pick a row."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return resumed(self, batches, self.chunk_rows)

    @property
    def folds(self) -> bool:
        return any(isinstance(f, RunningFrame) for f in self.frames) and holds(
            self.aggregates)

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def run_group(self, group: pa.Table, runs: IntArray | None = None) -> pa.RecordBatch:
        """The rows of the label rows of whole key runs (`runs`: where each begins,
        then the length)."""
        if group.num_rows == 0:
            return self.empty()
        runs = one_run(group.num_rows) if runs is None else runs
        return self.labelled(group, runs, None)[0]

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Every label row of `chunk` (its windows over the carried and new events), and
        the events later label rows can reach. A label row is final when it arrives
        (the events before it came first), so a `horizon` changes nothing."""
        buffer = pending(state, chunk)
        partials = None if state is None else state.partials
        if buffer.num_rows == 0:
            return self.empty(), KernelState(buffer, {}, partials)
        out, events, ticks = self.labelled(buffer, one_run(buffer.num_rows), partials)
        keep = self.keep(events, ticks)
        if self.folds and keep > 0:
            states = self.states(events)
            dropped = states.add(events, ticks, np.arange(keep, dtype=np.int64),
                                 np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
            partials = states.merge(dropped if partials is None
                                    else pa.concat_tables([partials, dropped]))
        return out, KernelState(events.slice(keep), {}, partials)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """Nothing: every label row's output came with its step."""
        return self.empty()

    def wake(self, state: KernelState) -> Horizon | None:
        """None: no label row waits for a horizon."""
        return None

    def keep(self, events: pa.Table, ticks: npt.NDArray[Any]) -> int:
        """The first event a later label row can reach (label rows come at or after the
        newest event's time)."""
        n = len(ticks)
        if n == 0:
            return 0
        keep = n
        for frame in self.frames:
            if isinstance(frame, PeriodsFrame):
                keep = min(keep, period_reach(tick_flags(events, frame.column), frame.n))
            elif isinstance(frame, CalendarFrame):
                start = calendar_start(frame.tick, frame.n, int(ticks[-1]))
                keep = min(keep, int(np.searchsorted(ticks, start, side="right")))
            elif isinstance(frame, RowsFrame):
                keep = min(keep, max(0, n - 1 + min(frame.first, 1)))
            elif isinstance(frame, RangeFrame):
                reach = fr.shifted(ticks[-1:], frame.start)[0]
                keep = min(keep, int(np.searchsorted(ticks, reach, side="left")))
            elif not self.folds:
                keep = 0
        return keep

    def states(self, events: pa.Table) -> WindowStates:
        ticks = pa.float64() if self.time_kind == "float" else pa.int64()
        return WindowStates(self.aggregates, Layout(events.schema, ticks, self.order))

    def labelled(self, group: pa.Table, runs: IntArray, partials: pa.Table | None
                 ) -> tuple[pa.RecordBatch, pa.Table, npt.NDArray[Any]]:
        """The rows of `group`'s label rows, and its events with their ticks."""
        kinds = np.asarray(group.column(KIND).to_numpy(zero_copy_only=False))
        is_event = kinds == EVENT
        events = group.filter(pa.array(is_event))
        labels = group.filter(pa.array(~is_event))
        ticks = to_ticks(events.column(TIME).combine_chunks(), self.time_kind)
        if labels.num_rows == 0:
            return self.empty(), events, ticks
        run_of = run_index(runs)
        label_runs = run_of[~is_event]
        bounds = np.searchsorted(run_of[is_event], np.arange(len(runs)),
                                 side="left").astype(np.int64)
        before = np.cumsum(is_event)[~is_event].astype(np.int64)
        begin = bounds[label_runs]
        label_ticks = to_ticks(labels.column(TIME).combine_chunks(), self.time_kind)
        m = labels.num_rows
        columns: list[pa.Array] = [labels.column(k).combine_chunks() for k in self.keys]
        columns.append(from_ticks(label_ticks, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        columns += [labels.column(name).combine_chunks() for name in self.carried]
        shared: dict[tuple[str, ...], Any] = {}
        found: list[list[pa.Array]] = []
        for frame in self.frames:
            lo, hi = self.frame_of(frame, events, ticks, label_ticks, bounds, label_runs,
                                   begin, before)
            if isinstance(frame, RunningFrame) and partials is not None:
                found.append(self.cumulative(events, ticks, before, partials))
                continue
            memo = dict(shared)
            found.append([aggregate(job, events, ticks, lo, hi, memo)
                          for job in self.aggregates])
            shared.update((k, v) for k, v in memo.items() if k[0] == "column")
        for j in range(len(self.aggregates)):
            columns += [found[f][j] for f in range(len(self.frames))]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema), events, ticks

    def frame_of(self, frame: FeatureFrame, events: pa.Table, ticks: npt.NDArray[Any],
                 label_ticks: npt.NDArray[Any], bounds: IntArray, label_runs: IntArray,
                 begin: IntArray, before: IntArray) -> tuple[IntArray, IntArray]:
        """Each label row's frame `[lo, hi)` among the events: within its key's events
        (from `begin`), none at or after the first event not before it (`before`)."""
        if isinstance(frame, PeriodsFrame):
            flags = tick_flags(events, frame.column)
            counted = np.concatenate([[0], np.cumsum(flags)]).astype(np.int64)
            lo, hi = period_starts(flags, counted[before], frame.n, begin), before
        elif isinstance(frame, CalendarFrame):
            table, _, _ = pk.tick_table(frame.tick, int(label_ticks.min()),
                                        int(label_ticks.max()), frame.n)
            starts = table[pk.closing_positions(label_ticks, table) - frame.n]
            known = np.ones(len(label_ticks), dtype=bool)
            lo, hi = dk.window_frames(ticks, starts, known, label_ticks, known, "right",
                                      bounds, label_runs)
        elif isinstance(frame, RangeFrame):
            known = np.ones(len(label_ticks), dtype=bool)
            lo, hi = dk.window_frames(ticks, fr.shifted(label_ticks, frame.start), known,
                                      fr.shifted(label_ticks, frame.end), known,
                                      frame.closed, bounds, label_runs)
        elif isinstance(frame, RowsFrame):
            last = before - 1
            lo = np.clip(last + frame.first, begin, before)
            hi = np.clip(last + frame.last + 1, begin, before)
        else:
            lo, hi = begin, before
        hi = np.minimum(hi, before)
        return np.minimum(lo, hi).astype(np.int64), hi.astype(np.int64)

    def cumulative(self, events: pa.Table, ticks: npt.NDArray[Any], before: IntArray,
                   partials: pa.Table) -> list[pa.Array]:
        """The cumulative window of each label row of one key: the folded state of the
        key's events behind `events`, merged with the prefix of `events` before it."""
        states = self.states(events)
        m = len(before)
        groups = np.arange(m, dtype=np.int64)
        ends = np.unique(before[before > 0])
        parts = [partials.take(pa.array(np.zeros(m, dtype=np.int64))).set_column(
            0, GROUP, pa.array(groups))]
        if len(ends):
            prefixes = states.prefixes(events, ticks, ends, np.arange(len(ends)))
            has = before > 0
            rows = np.searchsorted(ends, before[has])
            parts.append(prefixes.take(pa.array(rows)).set_column(
                0, GROUP, pa.array(groups[has])))
        return states.finish(states.merge(pa.concat_tables(parts)))


def period_starts(flags: npt.NDArray[np.bool_], before: IntArray, n: int, begin: IntArray
                  ) -> IntArray:
    """Where the `n` tick periods of each label row begin, given the ticks `before` it:
    just after the `n`-th last of them, no earlier than `begin` (its run's first
    event)."""
    positions = np.flatnonzero(flags).astype(np.int64)
    index = before - n
    found = np.where(index >= 0, positions[np.clip(index, 0, max(len(positions) - 1, 0))]
                     + 1 if len(positions) else 0, 0)
    return np.maximum(found, begin).astype(np.int64)
