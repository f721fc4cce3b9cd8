"""The executor side of the interval-windows strategy (`engine/intervals.py` builds the
Spark plan): the walk over each key's lifetimes that every interval window kind shares.

`IntervalKernel` turns each key's events into lifetimes, hands them to its kind's
`windows` (`kernels/intervals.py`: window groups whose member sets are equal, and the
output rows naming them), aggregates each member set once and writes the rows out. One
subclass per kind says what differs: `hopping.HoppingKernel`,
`snapshot.SnapshotKernel`, `count_windows.CountKernel`; `interval_kernels` picks the
class for a window. No Spark row and no kernel row is made per (event, window) pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..kernels import intervals as iv
from ..kernels import stabbing as sb
from ..plan.intervals import IntervalWindow
from .aggregate import AggregateJob, aggregate, scaled, udaf_values
from .alive import aggregate_alive
from .batches import PerKeyKernel, whole_runs
from .codec import (
    DAY,
    from_ticks,
    null_mask,
    numeric_values,
    tick_range_message,
    to_ticks,
    validity,
)

MEMBER_LISTS = ("collect", "udaf", "time_weighted_mean")
"""Aggregates computed over each window group's listed members (their cost grows with
the member sets); every other aggregate comes from each event's range of base groups
(`aggregate_alive`), without listing members."""


@dataclass(frozen=True)
class IntervalKernel(PerKeyKernel):
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
        """Whether `job` is computed over each window group's listed members."""
        return job.fn in MEMBER_LISTS

    def merged(self, results: list[pa.Array], rows: iv.Rows, key_rows: iv.IntArray
               ) -> tuple[list[pa.Array], iv.Rows, iv.IntArray]:
        """The output rows after this kind merges any (none by default)."""
        return results, rows, key_rows

    def run_runs(self, table: pa.Table, runs: iv.IntArray) -> Iterator[pa.RecordBatch]:
        """Several whole key runs (`runs`: where each begins, then the length): as one,
        each run getting its own windows, by default."""
        out = self.run_group(table, runs)
        if out.num_rows:
            yield out

    # ------------------------------------------------------------- the shared walk

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not self.keys_together:
            yield from super().__call__(batches)
            return
        for table, runs in whole_runs(batches, self.keys):
            if runs is not None:
                yield from self.run_runs(table, runs)
                continue
            out = self.run_group(table)
            if out.num_rows:
                yield out

    def run_group(self, group: pa.Table, runs: iv.IntArray | None = None) -> pa.RecordBatch:
        """The windows of one key's run, or of several runs (`runs`: where each begins,
        then the length), each run getting its own windows."""
        start, end = self.lifetimes(group)
        self.check_tick_range(start, end)
        groups, rows, row_runs = self.windows(group, start, end, runs)
        self.check_bounds(rows)
        key_rows = (np.zeros(len(rows.group), dtype=np.int64) if runs is None
                    else runs[:-1][row_runs])
        return self.emit(group, start, end, groups, rows, key_rows)

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
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        alive = sb.Stabbing(groups.event_first, groups.event_stop, groups.base_count)
        alive_memo: dict[tuple[str, str], Any] = {}
        frame_memo: dict[tuple[str, ...], Any] = {}
        results = [self.aggregate(job, group, start, end, groups, alive, alive_memo,
                                  frame_memo).take(pa.array(rows.group))
                   for job in self.aggregates]
        results, rows, key_rows = self.merged(results, rows, key_rows)
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
        if job.fn == "time_weighted_mean":
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
        return pa.array(results, type=job.output_type)
