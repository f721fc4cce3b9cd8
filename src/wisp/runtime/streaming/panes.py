"""Tumbling and hopping windows over point events on a stream, carried as partial
aggregates per pane instead of rows.

Windows are `[origin + k*hop, origin + k*hop + size)` (closed at the start, open at the
end; `time = window_end`), as in batch (`hopping.HoppingKernel`). The timeline is cut
into panes of width `p = gcd(size, hop)` on the same grid: pane `j` is
`[origin + j*p, origin + (j+1)*p)`, and every window is the union of `size / p`
consecutive panes. Per key, the state holds one row per non-empty pane not yet behind
every emitted window: its row count and, per aggregation, its value count and partial
state (`runtime.aggregates.partials`: a sum, moments, an extreme, the row picked, a set).
So the state is bounded by the panes of the windows still open, whatever the number of
rows in them, and each row is read once: when it arrives.

Rows arrive in any order (`operator.TakesDisorder`): a stream feeds each micro-batch's rows as
they come, without holding them until the watermark passes them, since adding a row to
its pane's partials gives the same pane whatever the order. Told a horizon `H` (every
later row has time >= H), a step emits every non-empty window that ends at or before
`H` and was not emitted before, in window order (the windows before the first not yet
closed, `DONE`, are closed, written or empty); `wake` is the least horizon that emits
the earliest window not emitted that holds a carried pane.

A row whose earliest window is closed is late (`late_panes`): adding it to the windows
still open alone would make a window's rows depend on when the batches fell, so every
window holding a row gets it, or the row is late. Rows can also arrive already reduced
to partials (`partials` groups by key and pane, `combine` adds up several rows of a
pane), as a stream's tasks send them (`pane_buckets`).

The aggregations this kernel carries are those with a partial state
(`Definition.stream_panes`, `runtime.aggregates.partials`): counts, sums (exact for integers and
decimals), means, variances, extremes, `first`/`last` and `max_by`/`min_by` (the row
picked with its time and tie-break columns, so the pane's pick does not depend on the
order rows arrive in), `count_distinct` (each pane's set of distinct values) and a
user's commutative `Aggregator` (its state per pane, pickled: `add` of the pane's
values, `merge` of a window's panes). NaN follows Spark as in batch: it propagates
through sums, means and moments, and is the greatest value for min and max. Float sums
are added pane by pane (rounded differently from batch's sums over rows, within a few
units in the last place); the planner leaves every other aggregation (`collect`, exact
quantiles, udafs, an order-sensitive user aggregator) to the row-carrying kernel.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...plan.intervals import HoppingWindows
from ..aggregates.aggregate import AggregateJob
from ..aggregates.partials import Chunk, Layout, partial_of
from ..codecs.arrays import DAY, from_ticks, tick_range_message, to_ticks
from ..codecs.arrays import validity as valid_of
from ..codecs.grouping import normalized
from ..windows.resumable import Horizon, KernelState

IntArray = npt.NDArray[np.int64]

PANE = "__wisp_pane"
ROWS = "__wisp_rows"
ROW = "__wisp_row"
NO_INPUTS = pa.schema([])
DONE = "done"
"""The scalar holding the index of the first window not emitted (absent: none yet)."""


@dataclass(frozen=True)
class PaneKernel:
    """Hopping windows (tumbling: `hop = size`) over one key's point events on a stream,
    from partial aggregates per pane (see the module's docstring)."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    window: HoppingWindows
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    inputs: pa.Schema = NO_INPUTS
    """The input columns the partials read (their types make the states' types)."""
    order: tuple[str, ...] = ()
    """The tie-break columns (window order after time), where an aggregation picks a row
    by window order (`first`, `last`, `max_by`, `min_by`)."""

    # ----------------------------------------------------------------- geometry

    @property
    def unit(self) -> int:
        """Date time runs in whole days (one tick = one day), other kinds in ticks."""
        return DAY if self.time_kind == "date" else 1

    @property
    def pane(self) -> int:
        return math.gcd(self.window.size, self.window.hop)

    def window_range(self, panes: IntArray) -> tuple[IntArray, IntArray]:
        """The first and last window holding each pane: window `k` holds pane `j` when
        `k*hop <= j*p <= k*hop + size - p` (offsets from `origin`)."""
        w, p = self.window, self.pane
        offset = panes * p
        first = -((w.size - p - offset) // w.hop)  # ceil((offset - size + p) / hop)
        last = offset // w.hop
        return first, last

    def final_window(self, horizon: int) -> int:
        """The last window that ends at or before `horizon` (ticks of this kernel)."""
        w = self.window
        return (horizon - w.size - w.origin) // w.hop

    def first_start(self, horizon: Horizon) -> int:
        """A stream's horizon (ticks of the time column) in this kernel's ticks: the
        first tick a later event can have."""
        if isinstance(horizon, float):
            return math.ceil(horizon / self.unit)
        return -(-horizon // self.unit)

    # ------------------------------------------------------------------ the steps

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Add `chunk`'s rows to their panes, then emit the windows final under
        `horizon` (`-inf`: no promise, nothing final; without one, as a batch step over
        rows in time order: under the newest time seen, since every later row comes at
        or after it)."""
        table = self.fold(state, chunk)
        scalars = {} if state is None else dict(state.scalars)
        if horizon is None:
            if chunk.num_rows == 0:
                return self.empty(), KernelState(table, scalars)
            newest = int(self.ticks(chunk).max())
            before = scalars.get("newest")
            if isinstance(before, int):
                newest = max(newest, before)
            scalars["newest"] = newest
            return self.emit(table, scalars, self.final_window(newest))
        if isinstance(horizon, float) and horizon == -math.inf:  # no promise: none final
            return self.empty(), KernelState(table, scalars)
        return self.emit(table, scalars, self.final_window(self.first_start(horizon)))

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """Every window not emitted yet (end of input)."""
        if state is None or state.rows.num_rows == 0:
            return self.empty()
        _, last = self.window_range(state.rows.column(PANE).to_numpy())
        out, _ = self.emit(state.rows, dict(state.scalars), int(last.max()))
        return out

    def run_group(self, group: pa.Table, runs: IntArray | None = None) -> pa.RecordBatch:
        """The windows of whole key runs (`runs`: where each begins, then the length)."""
        bounds = [0, group.num_rows] if runs is None else runs.tolist()
        outs = []
        for a, b in itertools.pairwise(bounds):
            out, state = self.step(None, group.slice(a, b - a))
            outs += [out, self.finish(state)]
        outs = [o for o in outs if o.num_rows]
        return pa.concat_batches(outs) if outs else self.empty()

    def wake(self, state: KernelState) -> Horizon | None:
        """The least horizon (ticks of the time column) at which a step emits the
        earliest window not emitted that holds a carried pane: its end (for date time,
        one tick past the start of its last day)."""
        if state.rows.num_rows == 0:
            return None
        first, _ = self.window_range(state.rows.column(PANE).to_numpy())
        done = state.scalars.get(DONE)
        k = int(first.min()) if not isinstance(done, int) else max(int(first.min()), done)
        return int(self.least_horizon(np.asarray([k]))[0])

    def least_horizon(self, windows: IntArray) -> IntArray:
        """The least horizon (ticks of the time column) at which a step emits each of
        `windows`: its end; for date time one tick past the start of its last day, since
        `first_start` takes a horizon just past a day to the next day."""
        w = self.window
        end = w.origin + windows * w.hop + w.size
        result: IntArray = (end - 1) * self.unit + 1
        return result

    # -------------------------------------------------------------------- panes

    def ticks(self, table: pa.Table) -> IntArray:
        result: IntArray = to_ticks(table.column(self.time).combine_chunks(),
                                    self.time_kind) // self.unit
        return result

    def fold(self, state: KernelState | None, chunk: pa.Table) -> pa.Table:
        """The state's panes with `chunk`'s rows added."""
        carried = None if state is None or state.rows.num_rows == 0 else state.rows
        if chunk.num_rows == 0:
            return carried if carried is not None else self.pane_schema.empty_table()
        fresh = self.partials(chunk)
        if carried is None:
            return fresh
        return self.combine(pa.concat_tables([carried, fresh.select(carried.schema.names)
                                              .cast(carried.schema)]))

    def panes_of(self, ticks: IntArray) -> IntArray:
        """The pane of each time (ticks of this kernel); a time whose windows would leave
        the 64-bit tick range fails as in batch."""
        w = self.window
        if len(ticks) and (ticks.min() < np.iinfo(np.int64).min + w.size + w.hop
                           or ticks.max() > np.iinfo(np.int64).max - w.size - w.hop):
            raise OverflowError(tick_range_message(self.time))
        result: IntArray = (ticks - w.origin) // self.pane
        return result

    def late_times(self, state: KernelState | None, ticks: IntArray) -> npt.NDArray[np.bool_]:
        """Which times (ticks of the time column) come too late for this key's state: a
        window holding them is already closed (`late_panes`)."""
        return self.late_panes(state, self.panes_of(ticks // self.unit))

    def late_panes(self, state: KernelState | None, panes: IntArray) -> npt.NDArray[np.bool_]:
        """Which panes' rows come too late: the earliest window holding the pane is
        before the first window not yet closed (`DONE`), so it was written (or closed
        empty) without them. A later window alone would take them, which would make the
        rows in windows depend on where they fall: every window holding a row gets it,
        or the row is late."""
        done = None if state is None else state.scalars.get(DONE)
        if not isinstance(done, int):
            return np.zeros(len(panes), dtype=bool)
        return self.closed_panes(panes, done)

    def closed_panes(self, panes: IntArray, done: IntArray | int) -> npt.NDArray[np.bool_]:
        """Which panes' earliest window lies before `done` (one per pane, or one for
        all), the first window not yet closed for their key: the late rule of
        `late_panes`, for one key or many (`pane_buckets`)."""
        first, _ = self.window_range(panes)
        closed: npt.NDArray[np.bool_] = first < done
        return closed

    @cached_property
    def layout(self) -> Layout:
        """What the partial states are made of (`runtime.aggregates.partials.Layout`)."""
        ticks = pa.float64() if self.time_kind == "float" else pa.int64()
        return Layout(self.inputs, ticks, self.order)

    @cached_property
    def pane_schema(self) -> pa.Schema:
        """The state's columns: the pane, its row count, each aggregation's partials (its
        value count `n{i}` and its state's columns, `runtime.aggregates.partials`)."""
        fields = [pa.field(PANE, pa.int64()), pa.field(ROWS, pa.int64())]
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            fields.append(pa.field(f"n{i}", pa.int64()))
            fields += [pa.field(name, kind) for name, kind in
                       partial_of(job).fields(job, i, self.layout)]
        return pa.schema(fields)

    def partials(self, chunk: pa.Table) -> pa.Table:
        """One row per key and pane of `chunk`'s rows (sorted by pane): the key columns
        (every NaN one value, `-0.0` as `0.0`, as Spark groups keys), the row count and
        each aggregation's partials."""
        panes = self.panes_of(self.ticks(chunk))
        keys = normalized(chunk.select(list(self.keys)))
        order, starts = self.groups(keys, panes)
        counts = np.diff(np.r_[starts, len(panes)])
        columns: dict[str, Any] = {PANE: panes[order][starts], ROWS: counts}
        taken = pa.array(order)
        times = to_ticks(chunk.column(self.time).combine_chunks(), self.time_kind)[order]
        ordering = tuple(chunk.column(name).combine_chunks().take(taken)
                         for name in self.order)
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            column = chunk.column(job.column).combine_chunks().take(taken)
            by = None if job.by is None else chunk.column(job.by).combine_chunks().take(taken)
            valid = valid_of(column if by is None else by)
            columns[f"n{i}"] = np.add.reduceat(valid.astype(np.int64), starts)
            rows = Chunk(column, valid, times, starts, by, ordering)
            columns.update(partial_of(job).add(job, i, rows, self.layout))
        table = self.state_table(columns)
        key_rows = pa.array(order[starts])
        for key in reversed(self.keys):
            table = table.add_column(0, key, keys.column(key).take(key_rows))
        return table

    def state_table(self, columns: dict[str, Any]) -> pa.Table:
        """Columns of states (numpy or Arrow) as a table of the state's types."""
        schema = self.pane_schema
        arrays = []
        for name, values in columns.items():
            kind = schema.field(name).type
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                arrays.append(values if values.type == kind else values.cast(kind))
            else:
                arrays.append(pa.array(values, kind))
        return pa.table(arrays, names=list(columns))

    def groups(self, keys: pa.Table, panes: IntArray) -> tuple[IntArray, IntArray]:
        """The rows in groups of one key and pane, the groups in pane order: the row order
        and where each group begins in it."""
        if not self.keys:
            order: IntArray = np.argsort(panes, kind="stable")
            ordered = panes[order]
            return order, np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        numbered = keys.append_column(PANE, pa.array(panes)).append_column(
            ROW, pa.array(np.arange(len(panes))))
        grouped = numbered.group_by([*self.keys, PANE], use_threads=False).aggregate(
            [(ROW, "list")])
        grouped = grouped.take(pa.array(np.argsort(grouped.column(PANE).to_numpy(),
                                                   kind="stable")))
        members = grouped.column(ROW + "_list").combine_chunks()
        offsets = members.offsets.to_numpy()
        return members.values.to_numpy(), offsets[:-1]

    def combine(self, table: pa.Table, order: IntArray | None = None,
                starts: IntArray | None = None, carried: tuple[str, ...] | None = None
                ) -> pa.Table:
        """Partials of one key, several rows to a pane perhaps (carried and fresh, or
        from several places), as one row per pane in pane order; or, given the rows'
        `order` and where each group `starts` in it, one row per group, with the
        `carried` columns (by default the keys) of its first row."""
        if table.num_rows == 0:
            return table
        panes = table.column(PANE).to_numpy()
        if order is None or starts is None:
            order = np.argsort(panes, kind="stable")
            ordered = panes[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        if len(starts) == len(panes) and (order == np.arange(len(panes))).all():
            return table  # already one row a group, in order
        ordered = panes[order]

        def total(name: str) -> Any:
            return np.add.reduceat(table.column(name).to_numpy()[order], starts)

        columns: dict[str, Any] = {PANE: ordered[starts], ROWS: total(ROWS)}
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            columns[f"n{i}"] = total(f"n{i}")
            columns.update(partial_of(job).merge(job, i, table, order, starts))
        combined = self.state_table(columns)
        first_rows = pa.array(order[starts])
        for name in reversed(self.keys if carried is None else carried):
            combined = combined.add_column(0, name, table.column(name).take(first_rows))
        return combined

    # ------------------------------------------------------------------ windows

    def emit(self, table: pa.Table, scalars: dict[str, Any], last: int
             ) -> tuple[pa.RecordBatch, KernelState]:
        """The non-empty windows from the first not emitted up to window `last`, and
        the state: the panes some later window still holds."""
        done = scalars.get(DONE)
        if table.num_rows == 0:
            return self.empty(), KernelState(table, scalars)
        panes = table.column(PANE).to_numpy()
        first, final = self.window_range(panes)
        low = first if not isinstance(done, int) else np.maximum(first, done)
        high = np.minimum(final, last)
        spans = np.maximum(high - low + 1, 0)
        out = self.empty()
        if spans.sum():
            windows = np.unique(counting_up(low, spans))
            out = self.windows(table, panes, windows)
        if isinstance(done, int):
            last = max(last, done - 1)
        scalars[DONE] = last + 1
        keep = final >= last + 1
        return out, KernelState(table.filter(pa.array(keep)), scalars)

    def windows(self, table: pa.Table, panes: IntArray, windows: IntArray
                ) -> pa.RecordBatch:
        """The rows of `windows` (indices, sorted, each holding a carried pane)."""
        w, p = self.window, self.pane
        lo = np.searchsorted(panes, windows * w.hop // p)
        hi = np.searchsorted(panes, (windows * w.hop + w.size) // p)
        spans = hi - lo
        members = counting_up(lo, spans)
        starts = np.cumsum(spans) - spans
        keys = [table.column(key).combine_chunks().slice(0, 1).take(
            pa.array(np.zeros(len(windows), dtype=np.int64))) for key in self.keys]
        return self.window_rows(keys, windows, table, members, starts)

    def window_rows(self, keys: list[pa.Array], windows: IntArray, table: pa.Table,
                    members: IntArray, starts: IntArray) -> pa.RecordBatch:
        """Output rows: window `windows[g]` of the key `keys[...][g]`, aggregated over the
        pane rows `members[starts[g]:starts[g + 1]]` of `table`."""
        w = self.window

        def total(name: str) -> Any:
            return np.add.reduceat(table.column(name).to_numpy()[members], starts)

        begin = (w.origin + windows * w.hop) * self.unit
        end = begin + w.size * self.unit
        everywhere = np.ones(len(windows), dtype=bool)
        columns = [*keys, from_ticks(begin, everywhere, self.time_kind, self.time_scale),
                   from_ticks(end, everywhere, self.time_kind, self.time_scale),
                   from_ticks(end, everywhere, self.time_kind, self.time_scale)]
        rows = total(ROWS)
        for i, job in enumerate(self.aggregates):
            columns.append(self.result(i, job, table, members, starts, rows, total))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def result(self, i: int, job: AggregateJob, table: pa.Table, members: IntArray,
               starts: IntArray, rows: IntArray, total: Any) -> pa.Array:
        """Aggregation `i` of each window: its panes' partials merged, then finished."""
        if job.column is None:
            return pa.array(rows, pa.int64()).cast(job.output_type)
        partial = partial_of(job)
        merged = partial.merge(job, i, table, members, starts)
        return partial.finish(job, i, merged, total(f"n{i}"))

    def empty(self) -> pa.RecordBatch:
        return self.no_rows

    @cached_property
    def no_rows(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)


def counting_up(first: IntArray, counts: IntArray) -> IntArray:
    """`first[i], first[i] + 1, ...` (`counts[i]` values) for each `i`, one after the
    other."""
    offsets: IntArray = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts,
                                                                 counts)
    result: IntArray = np.repeat(first, counts) + offsets
    return result
