"""The executor side of feature sets (`engine/features.py`): one kernel walks each key's
sorted events and computes every window of the set at every event, so a set of any size
costs one shuffle and one sort.

Short key runs go several at a time through `run_group` (every window's frames clipped
to its own run). A long run goes through `step` in pieces and `finish`
(`resumable.resumed`), carrying the events the windows of later events can still
need: for `Rows(first, last)` the last `-first` events, for `Range(start, end)` the
events from the next event's `t + start` on, whichever reaches back furthest. The
cumulative window reaches back to the key's first event: where every aggregation has a
partial state (`window_states.holds`) the events behind the carried ones are folded into
one state row (`KernelState.partials`), so the carried events stay those of the other
windows; otherwise every event of the key is carried (bounded by the worker's cap, as
the running frame's rows are).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import frames as fr
from ...kernels import periods as pk
from ...kernels.runs import one_run
from ...plan.features import CalendarFrame, FeatureFrame, PeriodsFrame
from ...plan.frames import RangeFrame, RowsFrame, RunningFrame
from ...spec import calendar
from ...spec.windows import CalendarTick
from ..aggregates.aggregate import AggregateJob, aggregate
from ..aggregates.partials import Layout
from ..aggregates.window_states import GROUP, WindowStates, holds
from ..codecs.arrays import from_ticks, to_ticks
from ..codecs.batches import CHUNK_ROWS
from .periods import shared_table
from .resumable import Horizon, KernelState, pending, resumed

GATHER = 3
"""A step computes once its new events number at least `GATHER` times the carried ones
(as `runtime.windows.frames`): wide windows carry many events, and recomputing them for a few
new ones would cost each step the window's width."""
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class FeaturesKernel:
    """Every window of a feature set at every event of each key. Picklable, no Spark
    objects.

    Output rows, in `schema`'s order: the key columns, `time` (the event's), then for
    each aggregation, for each frame, its value over the frame.

    Resumable and Streamable (`resumable.Streamable`) by tail recompute, as the frame
    kernel: the
    state's rows are the events later windows can still need followed by those not yet
    computed; scalars `base` (the position in the key's run of the first carried
    event), `done` (carried events before it have had their row emitted) and `carried`
    (the events kept by the last computation); `partials`, where the cumulative window
    folds, one state row of every event of the key before the carried ones. An event's
    row is emitted once every frame of it is final: `Rows(first, last)` once `last`
    events follow it, `Range` once no later event can fall in it (`runtime.windows.frames`),
    the cumulative window at once. Float sums and means of the cumulative window over a
    long key are then added in another order than over a whole run (within a few units
    in the last place)."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    frames: tuple[FeatureFrame, ...]
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS
    order: tuple[str, ...] = ()
    """The tie-break columns (window order after time), for partial states that pick
    a row (`first`, `last`, `max_by`, `min_by`)."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return resumed(self, batches, self.chunk_rows)

    @property
    def folds(self) -> bool:
        """Whether the cumulative window's events behind the carried ones are folded
        into one partial state (every aggregation has one)."""
        return any(isinstance(f, RunningFrame) for f in self.frames) and holds(
            self.aggregates)

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    # ------------------------------------------------------------------ whole runs

    def run_group(self, group: pa.Table, runs: IntArray | None = None) -> pa.RecordBatch:
        """The rows of whole key runs (`runs`: where each begins, then the length)."""
        n = group.num_rows
        if n == 0:
            return self.empty()
        runs = one_run(n) if runs is None else runs
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        frames = [self.whole_frames(frame, group, ticks, runs) for frame in self.frames]
        anchors = np.arange(n, dtype=np.int64)
        return self.emit(group, ticks, anchors, frames)

    @staticmethod
    def whole_frames(frame: FeatureFrame, rows: pa.Table, ticks: npt.NDArray[Any],
                     runs: IntArray) -> tuple[IntArray, IntArray]:
        """Every event's frame, clipped to its own run."""
        if isinstance(frame, PeriodsFrame):
            lo, hi, _ = pk.trailing_predicate(tick_flags(rows, frame.column), frame.n, runs)
            return lo, hi
        if isinstance(frame, CalendarFrame):
            return (calendar_starts(frame.tick, frame.n, ticks, runs),
                    np.arange(1, len(ticks) + 1, dtype=np.int64))
        if isinstance(frame, RowsFrame):
            _, lo, hi = fr.segmented_rows_frames(runs, frame.first, frame.last, True)
            return lo, hi
        if isinstance(frame, RangeFrame):
            return fr.segmented_range_frames(ticks, runs, frame.start, frame.end,
                                             frame.closed)
        begin, _ = fr.segment_bounds(runs)
        return begin, np.arange(1, len(ticks) + 1, dtype=np.int64)

    def emit(self, rows: pa.Table, ticks: npt.NDArray[Any], anchors: IntArray,
             frames: list[tuple[IntArray, IntArray]],
             folded: dict[int, list[pa.Array]] | None = None) -> pa.RecordBatch:
        """Output rows of `anchors` (positions in `rows`) with each frame's `[lo, hi)`
        there; `folded`: for frame `f`, its aggregations computed already."""
        take = pa.array(anchors, pa.int64())
        columns: list[pa.Array] = [rows.column(k).take(take).combine_chunks()
                                   for k in self.keys]
        columns.append(from_ticks(ticks[anchors], np.ones(len(anchors), dtype=bool),
                                  self.time_kind, self.time_scale))
        shared: dict[tuple[str, ...], Any] = {}
        found: list[list[pa.Array]] = []
        for f, (lo, hi) in enumerate(frames):
            if folded is not None and f in folded:
                found.append(folded[f])
                continue
            memo = dict(shared)  # the columns' conversions; sums depend on the frames
            found.append([aggregate(job, rows, ticks, lo, hi, memo)
                          for job in self.aggregates])
            shared.update((k, v) for k, v in memo.items() if k[0] == "column")
        for j in range(len(self.aggregates)):
            columns += [found[f][j] for f in range(len(frames))]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    # ------------------------------------------------------------------ pieces

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The rows of the events whose every frame is final among the key's events so
        far (and under `horizon`, when given: every later event has time >= it), and
        the state for the rest."""
        buffer = pending(state, chunk)
        scalars = {"base": 0, "done": 0, "carried": 0} if state is None else state.scalars
        base, done, carried = (int(scalars[k] or 0) for k in ("base", "done", "carried"))
        partials = None if state is None else state.partials
        gathering = horizon is None and buffer.num_rows - carried < GATHER * carried
        if buffer.num_rows == 0 or gathering:
            return self.empty(), KernelState(buffer, {"base": base, "done": done,
                                                      "carried": carried}, partials)
        out, keep, ready, partials = self.advance(buffer, done, partials, False, horizon)
        kept = buffer.slice(keep)
        return out, KernelState(kept, {"base": base + keep, "done": ready - keep,
                                       "carried": kept.num_rows}, partials)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The rows of the events left, their frames clipped to the key's end."""
        if state is None or state.rows.num_rows == 0:
            return self.empty()
        done = int(state.scalars.get("done") or 0)
        return self.advance(state.rows, done, state.partials, True)[0]

    def wake(self, state: KernelState) -> Horizon | None:
        """The least horizon at which a step without events emits a row: None while
        the first pending event waits for later events (`Rows` reaching forward);
        else the newest time when its frames are final already (a step gathered it),
        or the least horizon that makes every `Range` frame of it final."""
        n = state.rows.num_rows
        done = int(state.scalars.get("done") or 0)
        if n <= done:
            return None
        ticks = to_ticks(state.rows.column(self.time).combine_chunks(), self.time_kind)
        if any(isinstance(f, RowsFrame) and n - 1 - done < f.last for f in self.frames):
            return None
        if self.ready(ticks, done, False) > done:
            return _horizon(ticks[-1])
        wakes = [range_wake(f, ticks[done]) for f in self.frames
                 if isinstance(f, RangeFrame)]
        if not wakes or any(w is None for w in wakes):
            return None
        return max(w for w in wakes if w is not None)

    def ready(self, ticks: npt.NDArray[Any], done: int, last: bool,
              horizon: Horizon | None = None) -> int:
        """Where the events whose every frame is final end (from `done`): `Rows` once
        `last` events follow, `Range` once no later event (at or after the newest time,
        or `horizon`) can fall in it (a closed end below that bound, an open end at or
        below it), the cumulative window at once."""
        n = len(ticks)
        if last:
            return n
        ready = n
        for frame in self.frames:
            if isinstance(frame, RowsFrame):
                ready = min(ready, max(done, n - max(frame.last, 0)))
            elif isinstance(frame, RangeFrame):
                bound = ticks[-1] if horizon is None else max(ticks[-1], horizon)
                side: fr.Side = "right" if frame.closed in ("left", "neither") else "left"
                ends = fr.shifted(ticks[done:], frame.end)
                ready = min(ready, done + int(np.searchsorted(ends, bound, side=side)))
        return ready

    def keep(self, rows: pa.Table, ticks: npt.NDArray[Any], ready: int) -> int:
        """The first position the frames of the events from `ready` on can reach (the
        cumulative window aside when it folds)."""
        n = len(ticks)
        keep = ready
        for frame in self.frames:
            if isinstance(frame, PeriodsFrame):
                keep = min(keep, period_reach(tick_flags(rows, frame.column)[:ready],
                                              frame.n))
            elif isinstance(frame, CalendarFrame):
                start = calendar_start(frame.tick, frame.n, int(ticks[min(ready, n - 1)]))
                keep = min(keep, int(np.searchsorted(ticks, start, side="right")))
            elif isinstance(frame, RowsFrame):
                keep = min(keep, max(0, ready + min(frame.first, 0)))
            elif isinstance(frame, RangeFrame):
                nxt = min(ready, n - 1)
                reach = fr.shifted(ticks[nxt:nxt + 1], frame.start)[0]
                keep = min(keep, int(np.searchsorted(ticks, reach, side="left")))
            elif not self.folds:
                keep = 0
        return keep

    def advance(self, buffer: pa.Table, done: int, partials: pa.Table | None, last: bool,
                horizon: Horizon | None = None
                ) -> tuple[pa.RecordBatch, int, int, pa.Table | None]:
        """The rows final in `buffer` from `done` on, the first position to keep, where
        the next computation starts, and the cumulative window's folded state."""
        ticks = to_ticks(buffer.column(self.time).combine_chunks(), self.time_kind)
        n = len(ticks)
        ready = self.ready(ticks, done, last, horizon)
        keep = n if last else self.keep(buffer, ticks, ready)
        anchors = np.arange(done, ready, dtype=np.int64)
        out = self.empty()
        states = None
        if self.folds:
            states = WindowStates(self.aggregates, Layout(
                buffer.schema, pa.float64() if self.time_kind == "float" else pa.int64(),
                self.order))
        if len(anchors):
            frames = [self.whole_frames(frame, buffer, ticks, one_run(n))
                      for frame in self.frames]
            frames = [(lo[anchors], hi[anchors]) for lo, hi in frames]
            folded = None
            if states is not None and partials is not None:
                folded = {f: self.cumulative(states, buffer, ticks, anchors, partials)
                          for f, frame in enumerate(self.frames)
                          if isinstance(frame, RunningFrame)}
            out = self.emit(buffer, ticks, anchors, frames, folded)
        if states is not None and not last and keep > 0:
            dropped = states.add(buffer, ticks, np.arange(keep, dtype=np.int64),
                                 np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
            partials = states.merge(dropped if partials is None
                                    else pa.concat_tables([partials, dropped]))
        return out, keep, ready, partials

    @staticmethod
    def cumulative(states: WindowStates, buffer: pa.Table, ticks: npt.NDArray[Any],
                   anchors: IntArray, partials: pa.Table) -> list[pa.Array]:
        """The cumulative window at `anchors`: the folded state of the key's events
        before `buffer`, merged with the prefix of `buffer` up to each anchor."""
        groups = np.arange(len(anchors), dtype=np.int64)
        prefixes = states.prefixes(buffer, ticks, anchors + 1, groups)
        before = partials.take(pa.array(np.zeros(len(anchors), dtype=np.int64)))
        before = before.set_column(0, GROUP, pa.array(groups))
        return states.finish(states.merge(pa.concat_tables([before, prefixes])))


def tick_flags(rows: pa.Table, column: str) -> npt.NDArray[np.bool_]:
    """Each row's tick (a null tick: not a tick)."""
    flags = pc.fill_null(rows.column(column).combine_chunks(), False)
    return np.asarray(flags.to_numpy(zero_copy_only=False), dtype=bool)


def calendar_starts(tick: CalendarTick, n: int, times: IntArray, runs: IntArray
                    ) -> IntArray:
    """Where each event's last `n` calendar periods begin (the first event after the
    tick `n` periods back), within its run: one tick table for the runs, or one per
    run where they lie far apart in time (`runtime.windows.periods.shared_table`)."""
    if len(times) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(runs) > 2 and not shared_table(times, runs):
        return np.concatenate([
            calendar_starts(tick, n, times[begin:stop], one_run(stop - begin)) + begin
            for begin, stop in itertools.pairwise(runs.tolist())]).astype(np.int64)
    table, _, _ = pk.tick_table(tick, int(times.min()), int(times.max()), n)
    first = np.searchsorted(table, times[runs[:-1]], side="left").astype(np.int64)
    lo, _, _, _ = pk.calendar_events(times, table, n, first, runs)
    return lo.astype(np.int64)


def calendar_start(tick: CalendarTick, n: int, instant: int) -> int:
    """The tick `n` periods back from the period of `instant`: its window's events are
    those after it."""
    start = calendar.closing_tick(tick, instant)
    for _ in range(n):
        start = calendar.prev_tick(tick, start)
    return start


def period_reach(flags: npt.NDArray[np.bool_], n: int) -> int:
    """The first position a later row's `n` tick periods can reach, given the ticks
    before it: just after the `n`-th last of them (0 with fewer)."""
    positions = np.flatnonzero(flags)
    return int(positions[-n]) + 1 if len(positions) >= n else 0


def range_wake(frame: RangeFrame, first: Any) -> Horizon | None:
    """The least horizon that makes the `Range` frame of an event at `first` final:
    just past a closed end (one tick, or the next float), an open end itself; None
    where the end saturates the tick range."""
    end = fr.shifted(np.array([first]), frame.end)
    if end.dtype.kind != "f" and end[0] == np.iinfo(np.int64).max:
        return None
    if frame.closed in ("left", "neither"):
        return _horizon(end[0])
    if end.dtype.kind == "f":
        return float(np.nextafter(end[0], np.inf))
    return int(end[0]) + 1


def _horizon(tick: Any) -> Horizon:
    return float(tick) if isinstance(tick, np.floating) else int(tick)

