"""Hopping, tumbling, snapshot and count-by-start-time windows over point and interval
events: one Arrow kernel per key (`kernels/intervals.py`).

Shape: `repartition(key)` + each partition sorted by (key, time, tie-break) +
`mapInArrow(kernel)`, as the frames strategy. The kernel groups windows whose member
sets are equal and aggregates each member set once, so no Spark row and no kernel row is
made per (event, window) pair.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ..events import Events
from ..kernels import intervals as iv
from ..kernels import stabbing as sb
from ..plan.intervals import IntervalWindow
from ..plan.nodes import Plan
from .alive import aggregate_alive
from .arrow import (
    AggregateJob,
    PerKeyKernel,
    aggregate,
    same_as_previous,
    scaled,
    udaf_values,
    whole_runs,
)
from .arrow_codec import DAY, from_ticks, null_mask, numeric_values, to_ticks, validity
from .columns import col, guarded, tick_range_message, whole_input
from .columns import interval_guarded as checked_intervals
from .layout import aggregate_jobs, arrow_schema, mapped_by_key, output_fields

HORIZON_START = "__wisp_newest_start"
HORIZON_END = "__wisp_newest_end"


def end_message(events: Events) -> Column:
    """The error of a row whose end is before its time, showing both values."""
    assert events.end is not None
    return F.concat(
        F.lit(f"WispError: `end` column {events.end!r} must not be before the `time` column "
              f"{events.time.name!r}, found end "),
        col(events.end).cast("string"), F.lit(" < time "),
        col(events.time.name).cast("string"))


def interval_guarded(events: Events, observation: Observation) -> DataFrame:
    """`guarded` plus the interval check: a row whose end is before its time fails the
    query, as a null time does."""
    if events.end is None:
        return guarded(events, observation)
    return checked_intervals(events, observation, end_message(events))


def needs_horizon(events: Events, window: IntervalWindow, per_window: bool) -> bool:
    """Hopping windows over interval events find where only open-ended events remain for
    output="windows" (to bound the output) and for per-window groups; not where the
    schema says the end column is never null (no event is open-ended, and without one
    the horizon changes nothing), which saves its pass over the whole input."""
    return (events.end is not None and window.kind == "hopping"
            and (window.output == "windows" or per_window)
            and events.df.schema[events.end].nullable)


def with_horizon(df: DataFrame, events: Events) -> DataFrame:
    """`df` with the newest start and the newest end of all the events in every row
    (`HORIZON_START`, `HORIZON_END`), from one scalar subquery (`whole_input`)."""
    assert events.end is not None
    newest = whole_input(events.df, F.struct(
        F.max(col(events.time.name)).alias(HORIZON_START),
        F.max(col(events.end)).alias(HORIZON_END)))
    return df.withColumns({HORIZON_START: newest.getField(HORIZON_START),
                           HORIZON_END: newest.getField(HORIZON_END)})


def intervals(plan: Plan, observation: Observation) -> DataFrame:
    """Build the Spark plan of the interval-windows strategy."""
    events = plan.events
    window: IntervalWindow = plan.details
    df = interval_guarded(events, observation)
    keys = list(events.key)
    needed = list(dict.fromkeys(
        [*keys, events.time.name, *([events.end] if events.end else []),
         *[r.aggregation.col for r in plan.aggregations if r.aggregation.col is not None]]))
    if needs_horizon(events, window, any(r.aggregation.lifetimes for r in plan.aggregations)):
        df = with_horizon(df, events)
        needed += [HORIZON_START, HORIZON_END]
    fields = output_fields(events, plan.aggregations)
    kernel = IntervalKernel(
        keys=tuple(keys), time=events.time.name, end=events.end, time_kind=events.time.kind,
        time_scale=events.time.scale, window=window,
        aggregates=aggregate_jobs(plan), schema=arrow_schema(fields))
    return mapped_by_key(df, keys, [events.time.name, *plan.tie_break], needed, kernel,
                         fields)


@dataclass(frozen=True)
class IntervalKernel(PerKeyKernel):
    """The executor side: picklable, no Spark objects."""

    keys: tuple[str, ...]
    time: str
    end: str | None
    time_kind: str
    time_scale: int
    window: IntervalWindow
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

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

    def check_tick_range(self, start: iv.IntArray, end: iv.IntArray) -> None:
        """Hopping windows are computed in 64-bit ticks and window indices: the query
        fails, rather than a bound wrapping around to the far end, where the first
        window holding the earliest start begins below the first tick or a window's
        index (hops from `origin`) passes `MAX_WINDOW_INDEX` (integer time above
        `hop * 2^61`, with a hop of 1-3 ticks). `start` and `end` are as from
        `lifetimes`, which has failed the query on a lifetime reaching the last tick."""
        if self.window.kind != "hopping" or not len(start):
            return
        w = self.window
        earliest = int(start.min()) - w.size  # Python ints: exact
        first = earliest - (earliest - w.origin) % w.hop + w.hop
        last = int(start.max())  # the latest tick of a lifetime
        finite = end != iv.END_OF_TIME
        if finite.any():
            last = max(last, int(end[finite].max()) - 1)
        if (first < np.iinfo(np.int64).min
                or (last - w.origin) // w.hop + 1 > iv.MAX_WINDOW_INDEX):
            raise self.out_of_range()

    def check_horizon(self, horizon: int) -> None:
        """The first window beginning at or after `horizon` has an index below
        `MAX_WINDOW_INDEX` (see `check_tick_range`)."""
        w = self.window
        if (horizon != iv.END_OF_TIME
                and -((w.origin - horizon) // w.hop) > iv.MAX_WINDOW_INDEX):
            raise self.out_of_range()

    def out_of_range(self) -> OverflowError:
        return OverflowError(tick_range_message(self.time))

    @property
    def unit(self) -> int:
        """Date time runs in whole days (one tick = one day), other kinds in ticks."""
        return DAY if self.time_kind == "date" else 1

    def horizon(self, group: pa.Table) -> int:
        """Windows that begin at or after this instant hold only open-ended events: one
        tick after the newest start, or the newest finite end if later."""
        if HORIZON_START not in group.column_names:
            return int(iv.END_OF_TIME)
        first = group.slice(0, 1)
        newest = int(to_ticks(first.column(HORIZON_START).combine_chunks(),
                              self.time_kind)[0]) // self.unit + 1
        ends = first.column(HORIZON_END).combine_chunks()
        if validity(ends)[0]:
            newest = max(newest, int(to_ticks(ends, self.time_kind)[0]) // self.unit)
        return min(newest, int(iv.END_OF_TIME))  # one tick after the last one: none

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None = None, slots: bool = False
                ) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        """The groups and rows of the key runs in `group` (one run unless `runs` says
        where each begins: snapshot and count windows), and the run of each row. With
        `slots` (hopping runs moved into slots of their own, no open-ended event) no
        horizon applies: every window beginning at or after it would be empty."""
        w = self.window
        gather = any(needs_members(job, self.window.kind) for job in self.aggregates)
        if w.kind == "snapshot":
            return iv.snapshot(start, end, gather=gather, runs=runs)
        if w.kind == "count":
            return iv.count_by_start(start, w.n, runs)
        time_weighted = any(job.fn == "time_weighted_mean" or job.lifetimes
                            for job in self.aggregates)
        horizon = int(iv.END_OF_TIME) if slots else self.horizon(group)
        self.check_horizon(horizon)
        try:
            groups, rows = iv.hopping(
                start, end, w.size, w.hop, w.align, output=w.output, horizon=horizon,
                split_partial=time_weighted, gather=gather,
                per_window=any(job.lifetimes for job in self.aggregates))
        except OverflowError:  # a window index beyond 64 bits
            raise self.out_of_range() from None
        return groups, rows, np.zeros(len(rows.group), dtype=np.int64)

    @property
    def keys_together(self) -> bool:
        """Whether several short key runs can run as one: snapshot and count windows
        (each run gets its own points), and hopping windows with aggregates that never
        see absolute times (each run moved into a time slot of its own, a run with an
        open-ended event alone; rows of two slots never touch, so changes never merge
        across keys; a time-weighted mean sees only lengths, which the move keeps)."""
        if self.window.kind in ("snapshot", "count"):
            return True
        return (self.window.kind == "hopping"
                and not any(job.fn == "udaf" or job.lifetimes for job in self.aggregates))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if not self.keys_together:
            yield from super().__call__(batches)
            return
        for table, runs in whole_runs(batches, self.keys):
            if runs is not None and self.window.kind == "hopping":
                yield from self.run_runs(table, runs)
                continue
            out = self.run_group(table, runs)
            if out.num_rows:
                yield out

    def run_runs(self, table: pa.Table, runs: iv.IntArray) -> Iterator[pa.RecordBatch]:
        """Several whole key runs (`runs`: where each begins, then the length) as one:
        each run is moved along the time axis by a whole number of hops, into a slot of
        its own wider than its windows and its events' lifetimes, so that no window
        holds two keys' events. A run with an open-ended event (no slot holds it) runs
        alone, the runs between such runs together."""
        start, end = self.lifetimes(table)
        endless = np.maximum.reduceat((end == iv.END_OF_TIME).astype(np.int8),
                                      runs[:-1]) > 0
        changes = np.nonzero(np.diff(endless.astype(np.int8)))[0] + 1
        for first, stop in itertools.pairwise([0, *changes.tolist(), len(endless)]):
            a, b = int(runs[first]), int(runs[stop])
            part = runs[first:stop + 1] - a
            offsets = (None if endless[first]
                       else self.slot_offsets(start[a:b], end[a:b], part))
            if offsets is None:  # open-ended events, or slots that would leave the tick
                # range: one run at a time
                for c, d in itertools.pairwise(runs[first:stop + 1].tolist()):
                    out = self.run_group(table.slice(c, d - c))
                    if out.num_rows:
                        yield out
                continue
            out = self.run_group(table.slice(a, b - a), part, offsets)
            if out.num_rows:
                yield out

    def slot_offsets(self, start: iv.IntArray, end: iv.IntArray, runs: iv.IntArray
                     ) -> iv.IntArray | None:
        """Per run, a shift (a multiple of the hop, so windows stay on their grid) that
        puts its lifetimes in `[P + align, P + align + hop + span)` (`span`: from the
        run's first start to its last end), where the slots `P` follow each other
        `span + 2*size + 4*hop` apart (rounded up to hops); None when the slots would
        leave 2^62 ticks."""
        w = self.window
        heads = start[runs[:-1]]
        tails = np.maximum.reduceat(end, runs[:-1]) - 1
        # in floats: the absolute value of the smallest 64-bit integer is not one
        spans = tails.astype(np.float64) - heads + 2.0 * w.size + 4.0 * w.hop
        extent = (float(np.abs(heads.astype(np.float64)).max()) + w.origin
                  + 4.0 * (w.size + w.hop) + float(spans.sum()))
        if extent >= 2.0**62:
            return None
        relative = heads - w.origin
        floored = relative - np.mod(relative, w.hop)
        slots = ((tails - heads) + 2 * w.size + 4 * w.hop - 1) // w.hop * w.hop
        places = np.concatenate([[0], np.cumsum(slots[:-1])]).astype(np.int64)
        offsets: iv.IntArray = places - floored
        return offsets

    def run_group(self, group: pa.Table, runs: iv.IntArray | None = None,
                  offsets: iv.IntArray | None = None) -> pa.RecordBatch:
        """The windows of one key's run, or of several runs (`runs`: where each begins,
        then the length): snapshot and count windows restart per run, hopping runs are
        moved into slots of their own (`offsets`: see `run_runs`)."""
        start, end = self.lifetimes(group)
        self.check_tick_range(start, end)
        if runs is not None and offsets is not None:
            shift = np.repeat(offsets, np.diff(runs))
            start, end = start + shift, end + shift
        groups, rows, row_runs = self.windows(group, start, end,
                                              runs if offsets is None else None,
                                              slots=offsets is not None)
        self.check_bounds(rows)
        m = len(rows.group)
        if m == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        alive = sb.Stabbing(groups.event_first, groups.event_stop, groups.base_count)
        alive_memo: dict[tuple[str, str], Any] = {}
        frame_memo: dict[tuple[str, ...], Any] = {}
        results = [self.aggregate(job, group, start, end, groups, alive, alive_memo,
                                  frame_memo).take(pa.array(rows.group))
                   for job in self.aggregates]
        begin, stop, stop_known = rows.start, rows.end, rows.end_known
        times = rows.time
        if self.window.kind == "hopping" and self.window.output == "changes":
            keep, stop, stop_known = coalesce(results, begin, stop, stop_known)
            begin, times = begin[keep], times[keep]
            results = [r.take(pa.array(keep)) for r in results]
            m = len(keep)
        columns: list[pa.Array] = []
        key_rows = np.zeros(m, dtype=np.int64)
        if runs is not None and offsets is not None:
            # a window of run j begins after the run's first event minus `size`, and
            # before the next run's first event minus `size`
            heads = start[runs[:-1]] - self.window.size
            run_of = np.searchsorted(heads, begin, side="right") - 1
            back = offsets[run_of]
            begin, stop, times = begin - back, stop - back, times - back
            key_rows = runs[:-1][run_of]
        elif runs is not None:
            key_rows = runs[:-1][row_runs]
        for key in self.keys:
            columns.append(group.column(key).take(pa.array(key_rows)).combine_chunks())
        everywhere = np.ones(m, dtype=bool)
        unit = self.unit
        columns.append(from_ticks(begin * unit, everywhere, self.time_kind, self.time_scale))
        columns.append(from_ticks(np.where(stop_known, stop, 0) * unit, stop_known,
                                  self.time_kind, self.time_scale))
        columns.append(from_ticks(times * unit, everywhere, self.time_kind, self.time_scale))
        columns += results
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def aggregate(self, job: AggregateJob, group: pa.Table, start: iv.IntArray,
                  end: iv.IntArray, groups: iv.Groups, alive: sb.Stabbing,
                  alive_memo: dict[tuple[str, str], Any] | None = None,
                  frame_memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
        """One aggregation per group: hopping and snapshot windows from each event's range
        of base runs (`alive`), without listing members; count windows (whose members
        are contiguous) and MEMBER_LISTS aggregates over the listed members. The memos
        (optional) share conversions, counts and sums between the aggregations of one
        call, one for each of the two ways."""
        if self.window.kind != "count" and not needs_members(job, self.window.kind):
            if job.fn == "time_weighted_mean":  # snapshot: every weight is equal
                job = replace(job, fn="mean")
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


MEMBER_LISTS = ("collect", "udaf", "time_weighted_mean")
"""Aggregates computed over each window group's listed members (their cost grows with
the member sets), except `time_weighted_mean` over snapshot windows: every member of a
snapshot window lives through all of it, so all weights are equal and it is the mean."""


def needs_members(job: AggregateJob, kind: str) -> bool:
    """Whether `job` over windows of `kind` needs each window group's members listed."""
    if job.fn == "time_weighted_mean":
        return kind != "snapshot"
    return job.fn in MEMBER_LISTS


def coalesce(results: list[pa.Array], begin: iv.IntArray, stop: iv.IntArray,
             known: iv.BoolArray) -> tuple[iv.IntArray, iv.IntArray, iv.BoolArray]:
    """Merge each row into the previous one when it starts where that one ends and every
    result is equal. Returns the kept rows and their (merged) ends."""
    m = len(begin)
    merge = np.zeros(m, dtype=bool)
    if m > 1:
        same = known[:-1] & (stop[:-1] == begin[1:])
        for result in results:
            same &= equal_to_previous(result)
        merge[1:] = same
    keep = np.nonzero(~merge)[0]
    last = np.concatenate([keep[1:] - 1, [m - 1]]).astype(np.int64)
    return keep, stop[last], known[last]


def equal_to_previous(array: pa.Array) -> npt.NDArray[np.bool_]:
    """Rows 1..n-1 equal to the row before (null = null, NaN = NaN; lists item by item)."""
    if pa.types.is_list(array.type):
        items = array.to_pylist()
        return np.array([_same(a, b) for a, b in zip(items[1:], items[:-1], strict=True)],
                        dtype=bool)
    return same_as_previous(array)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return bool(a == b) and (a is None) == (b is None)
