"""The executor side of the interval-windows strategy (`engine/intervals.py` builds the
Spark plan): the walk over each key's lifetimes that every interval window kind shares.

`IntervalKernel` turns each key's events into lifetimes, hands them to its kind's
`windows` (`kernels/intervals.py`: window groups whose member sets are equal, and the
output rows naming them), aggregates each member set once and writes the rows out. One
subclass per kind says what differs: `hopping.HoppingKernel`,
`snapshot.SnapshotKernel`, `counts.CountKernel`; `interval_kernels` picks the
class for a window. No Spark row and no kernel row is made per (event, window) pair.

Every kind is `resumable.Resumable`: the mapInArrow function (`__call__`, through
`resumable.resumed`) takes short key runs several at a time through `run_group` and
feeds a long run (more than `CHUNK_ROWS` events) through `step` in pieces, then
`finish`. A step recomputes the windows of the carried events and the new chunk (tail
recompute), emits the windows no later event can change (events come sorted by start:
a later event starts at or after the newest start seen) and carries the events that can
still be members of a window not yet emitted, plus a few scalars. Each kind says which
windows are final and which events it carries; the bound of the carried events is the
window's reach, except that an event stays carried while it is alive: open-ended and
very long events stay in the state as long as windows can still hold them.

Every kind is also `resumable.Streamable` in form: a step may be told a horizon (every
later event starts at or after it) and `wake` says when one would emit. Hopping windows
with `output="windows"` (`HoppingKernel.bound`) and snapshot windows
(`SnapshotKernel.bound`) use it; the other kinds (and hopping with "changes") ignore
the horizon, a step then being the batch step, and never wake (a count window still
open waits for more start times, not for time).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import intervals as iv
from ...kernels import stabbing as sb
from ...plan.intervals import IntervalWindow
from ..aggregates.aggregate import AggregateJob, aggregate, scaled, udaf_array, udaf_values
from ..aggregates.alive import aggregate_alive, lists_members
from ..codecs.arrays import (
    DAY,
    from_ticks,
    null_mask,
    numeric_values,
    tick_range_message,
    to_ticks,
    validity,
)
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, Scalar, pending, resumed


@dataclass(frozen=True)
class IntervalKernel:
    """The executor side, shared by every interval window kind: picklable, no Spark
    objects. A subclass gives its kind's `windows` and overrides what else differs."""

    keys: tuple[str, ...]
    time: str
    end: str | None
    time_kind: str
    time_scale: int
    window: IntervalWindow
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    # ------------------------------------------------------------ the kind's part

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        """The window groups and output rows of the key runs in `group` (lifetimes
        `start`, `end`; one run unless `runs` says where each begins, then the length),
        and the run of each row."""
        raise NotImplementedError(type(self).__name__)

    def check_tick_range(self, start: iv.IntArray, end: iv.IntArray) -> None:
        """Fail the query where this kind's windows over the lifetimes `start`, `end`
        would leave the 64-bit tick range before their bounds are computed (none by
        default: `check_bounds` checks the rows)."""

    @property
    def keys_together(self) -> bool:
        """Whether several short key runs can run as one (by default: each run gets its
        own windows)."""
        return True

    def needs_members(self, job: AggregateJob) -> bool:
        """Whether `job` is computed over each window group's listed members (a cost
        growing with the member sets): where its state holds the window's values
        (collect, udafs, quantiles, distinct counts), it weighs the members' lifetimes
        (the time-weighted mean), the user's code computes it, or the alive items would
        be listed for it anyway (`alive.lists_members`: max_by/min_by). Every other
        aggregate comes from each event's range of base groups (`aggregate_alive`),
        without listing members."""
        definition = job.definition
        return (definition.needs_values or definition.lifetimes or definition.user_code
                or lists_members(job))

    def merged(self, results: list[pa.Array], rows: iv.Rows, key_rows: iv.IntArray
               ) -> tuple[list[pa.Array], iv.Rows, iv.IntArray]:
        """The output rows after this kind merges any (none by default)."""
        return results, rows, key_rows

    def run_runs(self, table: pa.Table, runs: iv.IntArray) -> Iterator[pa.RecordBatch]:
        """Several whole key runs (`runs`: where each begins, then the length): as one,
        each run getting its own windows, where `keys_together`, else one at a time."""
        if not self.keys_together:
            for a, b in itertools.pairwise(runs.tolist()):
                out = self.run_whole(table.slice(a, b - a))
                if out.num_rows:
                    yield out
            return
        out = self.run_whole(table, runs)
        if out.num_rows:
            yield out

    # ------------------------------------------------------------- the shared walk

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time (`run_group`), a long run in pieces of about
        `CHUNK_ROWS` events (`step`, then `finish`)."""
        yield from resumed(self, batches, CHUNK_ROWS)

    def run_group(self, group: pa.Table, runs: iv.IntArray | None = None) -> pa.RecordBatch:
        """The windows of one key's whole run, or of several whole runs (`runs`: where
        each begins, then the length; `run_runs` says how they run)."""
        if runs is None:
            return self.run_whole(group)
        return self.concatenated(list(self.run_runs(group, runs)))

    def run_whole(self, group: pa.Table, runs: iv.IntArray | None = None) -> pa.RecordBatch:
        """The windows of one key's run, or of several runs (`runs`: where each begins,
        then the length), each run getting its own windows."""
        start, end = self.lifetimes(group)
        self.check_tick_range(start, end)
        groups, rows, row_runs = self.windows(group, start, end, runs)
        self.check_bounds(rows)
        key_rows = (np.zeros(len(rows.group), dtype=np.int64) if runs is None
                    else runs[:-1][row_runs])
        return self.emit(group, start, end, groups, rows, key_rows)

    def concatenated(self, batches: Sequence[pa.RecordBatch]) -> pa.RecordBatch:
        """The batches as one (an empty one of the output schema for none)."""
        if not batches:
            return self.empty()
        if len(batches) == 1:
            return batches[0]
        return pa.concat_batches(list(batches))

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    # ----------------------------------------------------- the resumable walk (steps)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The windows final once the key's rows so far are known and, told a `horizon`
        (every later row has time >= it), those final under that promise where the kind
        uses it (`bound`); and the carried rows (each kind's `resume`)."""
        bound = self.bound(horizon)
        if state is not None and chunk.num_rows == 0 and bound is None:
            return self.empty(), state
        table = pending(state, chunk)
        scalars = {} if state is None else dict(state.scalars)
        if table.num_rows == 0:
            return self.empty(), KernelState(table, scalars)
        out, keep, scalars = self.resume(table, scalars, final=False, bound=bound)
        return out, KernelState(table.take(pa.array(keep, pa.int64())), scalars)

    def bound(self, horizon: Horizon | None) -> int | None:
        """A stream's `horizon` as the start every later event has at least, in this
        kind's ticks, where its step uses one; None (the horizon ignored) by default."""
        return None

    def first_start(self, horizon: Horizon | None) -> int | None:
        """The first tick (of this kind's ticks) a later event can start at under the
        promise that its time is at least `horizon` (date time: the first whole day);
        None without a promise."""
        if horizon is None:
            return None
        if isinstance(horizon, float):
            if math.isnan(horizon) or horizon == -math.inf:
                return None  # no promise at all
            if horizon == math.inf:
                return int(iv.END_OF_TIME)
            return clamped(math.ceil(horizon / self.unit))
        return clamped(-(-horizon // self.unit))

    def wake(self, state: KernelState) -> Horizon | None:
        """The smallest horizon at which a step with no new rows emits a window: None
        by default (a kind that ignores horizons only emits on new rows or `finish`)."""
        return None

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The windows only the end of the key's rows makes final."""
        if state is None or state.rows.num_rows == 0:
            return self.empty()
        out, _, _ = self.resume(state.rows, dict(state.scalars), final=True)
        return out

    def resume(self, table: pa.Table, scalars: dict[str, Scalar], final: bool,
               bound: int | None = None
               ) -> tuple[pa.RecordBatch, iv.IntArray, dict[str, Scalar]]:
        """Over the carried rows and a new chunk (`table`, one key, not empty): the
        output rows final now (all of the remaining ones when `final`; under the
        promise that every later event starts at or after `bound`, in ticks, where the
        kind uses one), the positions of the rows to carry on, and the new scalars."""
        raise NotImplementedError(type(self).__name__)

    def newest(self, start: iv.IntArray, scalars: dict[str, Scalar]) -> tuple[int | None,
                                                                              int]:
        """The newest start seen before this table's new rows (None at first) and now
        (every later event starts at or after it)."""
        before = scalars.get("newest")
        assert before is None or isinstance(before, int)
        return before, int(start[-1])

    def subset(self, rows: iv.Rows, mask: iv.BoolArray) -> iv.Rows:
        """The rows where `mask` holds."""
        return iv.Rows(rows.group[mask], rows.start[mask], rows.end[mask],
                       rows.end_known[mask], rows.time[mask])

    def lifetimes(self, group: pa.Table) -> tuple[iv.IntArray, iv.IntArray]:
        """Each event's start and effective end in ticks (`iv.lifetimes`: an open end is
        `END_OF_TIME`, the last tick). The query fails, rather than an event being taken
        for an open-ended one or lost, where an event starts at the last tick or a known
        lifetime would end at or beyond it: both look like the end of time there."""
        times = group.column(self.time).combine_chunks()
        start = self.ticks(times)
        if self.end is None:
            known = np.ones(len(start), dtype=bool)
            end = iv.lifetimes(start, start, known)
        else:
            ends = group.column(self.end).combine_chunks()
            known = validity(ends)
            end = iv.lifetimes(start, self.ticks(pc.coalesce(ends, times)), known)
        at_the_end = (start == iv.END_OF_TIME) | (known & ((end <= start)
                                                            | (end == iv.END_OF_TIME)))
        if at_the_end.any():
            raise self.out_of_range()
        return start, end

    def ticks(self, array: pa.Array) -> iv.IntArray:
        """Times as 64-bit ticks (whole days for date time)."""
        result: iv.IntArray = to_ticks(array, self.time_kind) // self.unit
        return result

    def check_bounds(self, rows: iv.Rows) -> None:
        """Window bounds are computed in 64-bit ticks: a bound beyond them (a time near
        the limits of the tick range) would wrap around, so it fails the query."""
        wrapped = (rows.end_known & (rows.end <= rows.start)) | (rows.time < rows.start)
        if self.unit > 1:
            wrapped |= np.abs(rows.time) > np.iinfo(np.int64).max // self.unit
        if wrapped.any():
            raise self.out_of_range()

    def out_of_range(self) -> OverflowError:
        return OverflowError(tick_range_message(self.time))

    @property
    def unit(self) -> int:
        """Date time runs in whole days (one tick = one day), other kinds in ticks."""
        return DAY if self.time_kind == "date" else 1

    @property
    def gather(self) -> bool:
        """Whether some aggregate needs each window group's members listed."""
        return any(self.needs_members(job) for job in self.aggregates)

    def emit(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
             groups: iv.Groups, rows: iv.Rows, key_rows: iv.IntArray) -> pa.RecordBatch:
        """The output batch of `rows` over `groups` (lifetimes `start`, `end`, in the
        groups' ticks): key columns (`key_rows`: the row of `group` that holds each
        row's key), bounds, time, then every aggregate, once per group."""
        if len(rows.group) == 0:
            return self.empty()
        results = self.results(group, start, end, groups, rows)
        results, rows, key_rows = self.merged(results, rows, key_rows)
        return self.batch(group, results, rows, key_rows)

    def results(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                groups: iv.Groups, rows: iv.Rows) -> list[pa.Array]:
        """Every aggregate of each of `rows`, computed once per group."""
        alive = sb.Stabbing(groups.event_first, groups.event_stop, groups.base_count)
        alive_memo: dict[tuple[str, str], Any] = {}
        frame_memo: dict[tuple[str, ...], Any] = {}
        return [self.aggregate(job, group, start, end, groups, alive, alive_memo,
                               frame_memo).take(pa.array(rows.group))
                for job in self.aggregates]

    def batch(self, group: pa.Table, results: list[pa.Array], rows: iv.Rows,
              key_rows: iv.IntArray) -> pa.RecordBatch:
        """The output batch of `rows` with their `results` (`emit`)."""
        columns: list[pa.Array] = []
        for key in self.keys:
            columns.append(group.column(key).take(pa.array(key_rows)).combine_chunks())
        everywhere = np.ones(len(rows.group), dtype=bool)
        unit = self.unit
        columns.append(from_ticks(rows.start * unit, everywhere, self.time_kind,
                                  self.time_scale))
        columns.append(from_ticks(np.where(rows.end_known, rows.end, 0) * unit,
                                  rows.end_known, self.time_kind, self.time_scale))
        columns.append(from_ticks(rows.time * unit, everywhere, self.time_kind,
                                  self.time_scale))
        columns += results
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def aggregate(self, job: AggregateJob, group: pa.Table, start: iv.IntArray,
                  end: iv.IntArray, groups: iv.Groups, alive: sb.Stabbing,
                  alive_memo: dict[tuple[str, str], Any] | None = None,
                  frame_memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
        """One aggregation per group: from each event's range of base groups (`alive`),
        without listing members, unless the kind says `job` needs the members listed
        (`needs_members`). The memos (optional) share conversions, counts and sums
        between the aggregations of one call, one for each of the two ways."""
        if not self.needs_members(job):
            ticks = start * self.unit
            return aggregate_alive(job, group, ticks, alive, alive_memo).take(
                pa.array(groups.base_of))
        if job.definition.lifetimes:  # the time-weighted mean
            assert job.column is not None
            positions, weights, lo, hi = iv.clipped_weights(start, end, groups)
            column = group.column(job.column).combine_chunks().take(pa.array(positions))
            values = scaled(numeric_values(column, job.value_class), job, column).astype(
                np.float64)
            result, valid = iv.time_weighted_mean(values, validity(column), weights, lo, hi)
            return pa.array(result, pa.float64(), mask=null_mask(valid)).cast(job.output_type)
        if job.lifetimes:
            return self.udaf_over_lifetimes(job, group, start, end, groups)
        frame_memo = {} if frame_memo is None else frame_memo
        if ("members",) not in frame_memo:  # the members' rows, once per call
            positions = groups.positions
            identity = len(positions) == group.num_rows and bool(
                np.array_equal(positions, np.arange(len(positions))))
            taken = group if identity else group.take(pa.array(positions))
            ticks = (start if identity else start[positions]) * self.unit
            frame_memo[("members",)] = taken, ticks
        taken, ticks = frame_memo[("members",)]
        return aggregate(job, taken, ticks, groups.lo, groups.hi, frame_memo)

    def udaf_over_lifetimes(self, job: AggregateJob, group: pa.Table, start: iv.IntArray,
                            end: iv.IntArray, groups: iv.Groups) -> pa.Array:
        """`func(values, starts, ends)` per group over its members' non-null values and
        their lifetimes clipped to the group's window (ticks; `END_OF_TIME` stays)."""
        assert job.func is not None and job.column is not None
        positions, begin, finish, lo, hi = iv.clipped_lifetimes(start, end, groups)
        column = group.column(job.column).combine_chunks().take(pa.array(positions))
        values = udaf_values(job, column)
        unit = self.unit
        begin = begin * unit
        finish = np.where(finish == iv.END_OF_TIME, finish, finish * unit)
        valid = validity(column)
        results = [job.func(values[a:b][valid[a:b]], begin[a:b][valid[a:b]],
                            finish[a:b][valid[a:b]])
                   for a, b in zip(lo, hi, strict=True)]
        return udaf_array(job, results)


def clamped(value: int) -> int:
    """A bound (a Python integer) within the 64-bit tick range: comparisons of ticks
    with it give the same answers."""
    return max(min(value, int(iv.END_OF_TIME)), int(np.iinfo(np.int64).min))
