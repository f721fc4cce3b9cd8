"""Arrow-kernel strategy: Spark partitions by key, each partition is sorted, a kernel
walks the sorted batches, finds each key's run of events and computes every frame's
aggregates at once.

Shape: `repartition(key)` + `mapInArrow(kernel)`, the kernel fed each partition sorted by
(key, time, tie-break): by the Python worker with Arrow (`sorting.SortedInput`, sorted
runs spilled to disk past a budget), or by Spark's `sortWithinPartitions` for column
types whose order Arrow does not share (`layout.mapped_by_key`). Spark does the one
shuffle.
For `Rows` and `Range` frames the kernel streams each key's run in chunks of about
`CHUNK_ROWS` events, carrying over only the events that later windows can still need
(the last `-first` events for `Rows`, the events after `t + start` for `Range`), so a hot
key never sits whole in the Python worker; shorter runs are computed together, about
`GROUP_ROWS` events at a time, each frame clipped to its own run, so that a million
keys of a few events cost what a few long keys do. The running frame (only chosen for
user-defined aggregates) holds one key's run at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from ..kernels import frames as fr
from ..kernels import window_agg as wa
from ..plan.nodes import Frame, Plan, RangeFrame, RowsFrame, RunningFrame
from .arrow_codec import (
    decimal_from_unscaled,
    dense_ranks,
    from_ticks,
    null_mask,
    numeric_values,
    to_ticks,
    validity,
)
from .columns import guarded


@dataclass(frozen=True)
class AggregateJob:
    """What the executor needs to know about one aggregation (picklable)."""

    fn: str
    column: str | None
    value_class: str
    output_type: pa.DataType
    func: Callable[..., Any] | None
    lifetimes: bool = False


CHUNK_ROWS = 1 << 14
"""Events a `Rows`/`Range` kernel gathers before it computes the windows it can."""
GROUP_ROWS = 1 << 13
"""Events of short key runs a `Rows`/`Range` kernel gathers to compute at once. Arrays
of this size stay in the processor's cache: one group of 65,536 events took twice as
long as eight of 8,192 (blocked scans make about twenty passes over each array)."""


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


def aggregate(job: AggregateJob, group: pa.Table, ticks: npt.NDArray[Any],
              lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
              memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
    """One aggregation over every frame of one key's run. `memo` (optional) shares the
    column conversions, valid counts and float sums between the aggregations of one
    call (mean reuses sum's frame sums)."""
    if job.column is None:
        return to_arrow(wa.count_rows(lo, hi), None, job)
    memo = {} if memo is None else memo
    name = job.column
    if ("column", name) not in memo:
        column = group.column(name).combine_chunks()
        memo[("column", name)] = column, validity(column)
    column, valid = memo[("column", name)]
    fn = job.fn
    if fn in ("sum", "mean") and job.value_class == "float":
        if ("sum", name) not in memo:
            values = numeric_values(column, job.value_class)
            memo[("sum", name)] = wa.frame_sum(values, valid, lo, hi)
        sums = memo[("sum", name)]
        if fn == "sum":
            return to_arrow(sums, column, job)
        return to_arrow(wa.frame_mean(values=np.zeros(0), valid=valid, lo=lo, hi=hi,
                                      sums=sums.values), column, job)
    if fn == "count":
        return to_arrow(wa.count_valid(valid, lo, hi), column, job)
    if fn in ("first", "last"):
        return to_arrow(wa.frame_first_last(fn, valid, lo, hi), column, job)
    if fn == "collect":
        return to_arrow(wa.frame_collect(valid, lo, hi), column, job)
    if fn == "udaf":
        assert job.func is not None
        results = wa.frame_apply(job.func, udaf_values(job, column), ticks, valid, lo, hi)
        return pa.array(results, type=job.output_type)
    if fn in ("min", "max") and job.value_class in ("ordered", "decimal"):
        return to_arrow(wa.frame_extreme_by_rank(fn, dense_ranks(column), valid, lo, hi),
                        column, job)
    values = numeric_values(column, job.value_class)
    if fn in ("min", "max"):
        return to_arrow(wa.frame_extreme(fn, values, valid, lo, hi), column, job)
    if fn == "sum":
        return to_arrow(wa.frame_sum(values, valid, lo, hi), column, job)
    values = scaled(values, job, column)
    if fn == "mean":
        return to_arrow(wa.frame_mean(values, valid, lo, hi), column, job)
    if fn in ("variance", "stddev"):
        return to_arrow(wa.frame_moments(fn, values, valid, lo, hi), column, job)
    raise AssertionError(f"no kernel for {fn}")


def udaf_values(job: AggregateJob, column: pa.Array) -> npt.NDArray[Any]:
    """A column's values as a user function sees them: numbers as numpy numbers
    (decimals as float64), other types as numpy objects."""
    if job.value_class in ("ordered", "other"):
        values: npt.NDArray[Any] = column.to_numpy(zero_copy_only=False)
        return values
    return scaled(numeric_values(column, job.value_class), job, column)


def scaled(values: npt.NDArray[Any], job: AggregateJob, column: pa.Array) -> npt.NDArray[Any]:
    """Decimal values as float64 numbers (for mean, variance, stddev and udafs)."""
    if job.value_class == "decimal":
        return values.astype(np.float64) / float(10 ** column.type.scale)
    return values


def to_arrow(result: wa.Result, column: pa.Array | None, job: AggregateJob) -> pa.Array:
    if isinstance(result, wa.Take):
        assert column is not None
        positions = pa.array(result.positions, pa.int64(), mask=null_mask(result.valid))
        return column.take(positions).cast(job.output_type)
    if isinstance(result, wa.Lists):
        assert column is not None
        items = column.take(pa.array(result.positions, pa.int64()))
        offsets = pa.array(result.offsets.astype(np.int32), pa.int32())
        return pa.ListArray.from_arrays(offsets, items).cast(job.output_type)
    target = job.output_type
    if pa.types.is_decimal(target):
        unscaled = result.values
        if unscaled.dtype != object:
            unscaled = unscaled.astype(np.int64)
        return decimal_from_unscaled(unscaled, result.valid, target.precision, target.scale)
    if pa.types.is_boolean(target):
        return pa.array(result.values.astype(bool), pa.bool_(),
                        mask=null_mask(result.valid))
    if pa.types.is_floating(target):
        return pa.array(result.values.astype(np.float64), pa.float64(),
                        mask=null_mask(result.valid)).cast(target)
    values = result.values
    if values.dtype == object:
        limit = 1 << 63
        if any(not -limit <= int(v) < limit for v, ok in zip(values, result.valid,
                                                              strict=True) if ok):
            raise ArithmeticError(
                f"wisp: {job.fn}({job.column}) overflows a long (64-bit) result, as Spark's "
                "ARITHMETIC_OVERFLOW reports in ANSI mode; cast the column to a decimal")
        values = values.astype(np.int64)
    return pa.array(values.astype(np.int64), pa.int64(),
                    mask=null_mask(result.valid)).cast(target)


class PerKeyKernel:
    """Base of the executor-side kernels that take one key's whole run at a time: the
    mapInArrow function (`__call__`) hands each key's run to `run_group`."""

    keys: tuple[str, ...]

    def run_group(self, group: pa.Table) -> pa.RecordBatch:
        raise NotImplementedError

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for group in key_runs(batches, self.keys):
            out = self.run_group(group)
            if out.num_rows:
                yield out


def same_as_previous(column: pa.Array) -> npt.NDArray[np.bool_]:
    """For rows 1..n-1: is the value equal to the row before (null equals null, NaN
    equals NaN)?"""
    current, previous = column.slice(1), column.slice(0, len(column) - 1)
    equal = np.asarray(pc.fill_null(pc.equal(current, previous), False)
                       .to_numpy(zero_copy_only=False), dtype=bool)
    both_null = ~validity(current) & ~validity(previous)
    same = equal | both_null
    if pa.types.is_floating(column.type):
        both_nan = np.asarray(pc.fill_null(pc.and_(pc.is_nan(current), pc.is_nan(previous)),
                                           False).to_numpy(zero_copy_only=False), dtype=bool)
        same |= both_nan
    return same


def key_runs(batches: Iterator[pa.RecordBatch], keys: tuple[str, ...]) -> Iterator[pa.Table]:
    """Split a stream of batches, sorted by key, into one table per key."""
    pending: list[pa.RecordBatch] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if pending and _new_key(pending[-1], batch, keys):
            yield pa.Table.from_batches(pending)
            pending = []
        cuts = [0, *_key_cuts(batch, keys), batch.num_rows]
        for begin, stop in itertools.pairwise(cuts[:-1]):
            pending.append(batch.slice(begin, stop - begin))
            yield pa.Table.from_batches(pending)
            pending = []
        pending.append(batch.slice(cuts[-2], cuts[-1] - cuts[-2]))
    if pending:
        yield pa.Table.from_batches(pending)


def whole_runs(batches: Iterator[pa.RecordBatch], keys: tuple[str, ...]) -> Iterator[
        tuple[pa.Table, npt.NDArray[np.int64] | None]]:
    """Whole key runs for kernels that need a run at once: several short runs together,
    `(table, starts)` as `key_groups` gives them, or one long run, `(table, None)`, once
    all its pieces have arrived."""
    pieces: list[pa.Table] = []
    for table, starts, _, last in key_groups(batches, keys, CHUNK_ROWS):
        if starts is not None:
            yield table, starts
            continue
        pieces.append(table)
        if last:
            yield pa.concat_tables(pieces), None
            pieces = []


def key_groups(batches: Iterator[pa.RecordBatch], keys: tuple[str, ...], limit: int
               ) -> Iterator[tuple[pa.Table, npt.NDArray[np.int64] | None, bool, bool]]:
    """The key runs in tables of about `limit` rows: several whole runs shorter than
    `limit` together, `(table, starts, True, True)` with `starts` where each run begins
    and the table's length; a longer run in consecutive pieces of about `limit` rows
    (fewer at the end), `(table, None, first, last)`: `first` when the piece begins the
    run, `last` when it ends it (then the piece may be empty). Key changes are found per
    batch, vectorised, so the cost per key is a few array entries, not Python steps."""
    group: list[pa.RecordBatch] = []
    starts: list[int] = [0]
    run: list[pa.RecordBatch] = []  # the open run's rows not yet yielded
    run_rows = 0
    streaming = False  # the open run is longer than `limit` and partly yielded
    schema: pa.Schema | None = None
    previous: pa.RecordBatch | None = None
    group_limit = min(limit, GROUP_ROWS)

    def whole_runs() -> tuple[pa.Table, npt.NDArray[np.int64], bool, bool]:
        return (pa.Table.from_batches(group, schema=schema),
                np.array(starts, dtype=np.int64), True, True)

    for batch in batches:
        if batch.num_rows == 0:
            continue
        schema = batch.schema
        continues = previous is not None and not _new_key(previous, batch, keys)
        previous = batch
        cuts = _key_cuts(batch, keys)
        bounds = [0, *cuts, batch.num_rows]
        if not continues and (run or streaming):  # the open run ended with the last batch
            if streaming:
                yield pa.Table.from_batches(run, schema=schema), None, False, True
            else:
                group += run
                starts.append(starts[-1] + run_rows)
            run, run_rows, streaming = [], 0, False
        head = batch.slice(0, bounds[1])
        if len(bounds) > 2:  # the head's run ends in this batch, whole runs follow
            if streaming:
                yield pa.Table.from_batches([*run, head], schema=schema), None, False, True
            else:
                group += [*run, head]
                starts.append(starts[-1] + run_rows + head.num_rows)
            run, run_rows, streaming = [], 0, False
            if len(bounds) > 3:
                middle = batch.slice(bounds[1], bounds[-2] - bounds[1])
                group.append(middle)
                starts += [starts[-1] + b - bounds[1] for b in bounds[2:-1]]
            head = batch.slice(bounds[-2])
        run.append(head)
        run_rows += head.num_rows
        if starts[-1] >= group_limit:
            yield whole_runs()
            group, starts = [], [0]
        if run_rows >= limit:
            if len(starts) > 1:
                yield whole_runs()
                group, starts = [], [0]
            yield pa.Table.from_batches(run, schema=schema), None, not streaming, False
            run, run_rows, streaming = [], 0, True
    if streaming:
        yield pa.Table.from_batches(run, schema=schema), None, False, True
    elif run:
        group += run
        starts.append(starts[-1] + run_rows)
    if len(starts) > 1:
        yield whole_runs()


def _new_key(previous: pa.RecordBatch, batch: pa.RecordBatch, keys: tuple[str, ...]) -> bool:
    """Whether `batch` begins with another key than `previous` ends with."""
    if not keys:
        return False
    glue = [previous.slice(previous.num_rows - 1), batch.slice(0, 1)]
    return not all(same_as_previous(pa.concat_arrays([g.column(k) for g in glue]))[0]
                   for k in keys)


def _key_cuts(batch: pa.RecordBatch, keys: tuple[str, ...]) -> list[int]:
    """The positions in `batch` where a new key begins (after the first row)."""
    if not keys or batch.num_rows < 2:
        return []
    same = np.ones(batch.num_rows - 1, dtype=bool)
    for k in keys:
        same &= same_as_previous(batch.column(k))
    cuts: list[int] = (np.nonzero(~same)[0] + 1).tolist()
    return cuts


def frames(plan: Plan, observation: Observation) -> DataFrame:
    """Build the Spark plan of the frames strategy."""
    from .layout import (  # layout builds on this module's AggregateJob and arrow_type
        aggregate_jobs,
        aggregation_columns,
        arrow_schema,
        mapped_by_key,
        output_fields,
    )

    events = plan.events
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = FrameKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, frame=plan.details, aggregates=aggregate_jobs(plan),
        schema=arrow_schema(fields), chunk_rows=CHUNK_ROWS)
    return mapped_by_key(guarded(events, observation), keys,
                         [events.time.name, *plan.tie_break], needed, kernel, fields)


def arrow_type(data_type: T.DataType) -> pa.DataType:
    if isinstance(data_type, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(data_type, T.TimestampNTZType):
        return pa.timestamp("us")
    return to_arrow_type(data_type)

