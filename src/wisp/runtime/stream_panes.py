"""Tumbling and hopping windows over point events on a stream, carried as partial
aggregates per pane instead of rows.

Windows are `[origin + k*hop, origin + k*hop + size)` (closed at the start, open at the
end; `time = window_end`), as in batch (`hopping.HoppingKernel`). The timeline is cut
into panes of width `p = gcd(size, hop)` on the same grid: pane `j` is
`[origin + j*p, origin + (j+1)*p)`, and every window is the union of `size / p`
consecutive panes. Per key, the state holds one row per non-empty pane not yet behind
every emitted window: its row count and, per aggregation, a few numbers (valid count,
sum, the sum of squared deviations from the pane's mean, the extreme and a NaN count).
So the state is bounded by the panes of the windows still open, whatever the number of
rows in them, and each row is read once: when it arrives.

Rows arrive in any order (`takes_disorder`): a stream feeds each micro-batch's rows as
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
pane), as a stream's tasks send them (`stream_pane_buckets`).

The aggregations this kernel carries (`Definition.stream_panes`): `count()`, `count(col)`
of any column, and `sum`, `mean`, `variance`, `stddev`, `min`, `max` of float columns
(`min`/`max` of integer columns too), and a user's commutative `Aggregator` (its
state per pane, pickled: `add` of the pane's values, `merge` of a window's panes).
NaN follows Spark as in batch: it propagates
through sums, means and moments, and is the greatest value for min and max. Float sums
are added pane by pane (rounded differently from batch's sums over rows, within a few
units in the last place); the planner leaves every other aggregation to the
row-carrying kernel.
"""

from __future__ import annotations

import itertools
import math
import pickle
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..plan.intervals import HoppingWindows
from ..spec.aggregates import check_state
from .aggregate import AggregateJob, naming_errors, udaf_values, user_array
from .codec import DAY, from_ticks, null_mask, numeric_values, tick_range_message, to_ticks
from .codec import validity as valid_of
from .grouping import normalized
from .resumable import Horizon, KernelState

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PANE = "__wisp_pane"
ROWS = "__wisp_rows"
ROW = "__wisp_row"
EXTREME_FILL: dict[tuple[str, bool], Any] = {
    ("min", True): np.inf, ("max", True): -np.inf,
    ("min", False): np.iinfo(np.int64).max, ("max", False): np.iinfo(np.int64).min}
"""The value a pane without values contributes to a min or max (by float or not)."""
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

    takes_disorder: ClassVar[bool] = True
    """A stream may feed rows ahead of its horizon, in any order."""

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
        `late_panes`, for one key or many (`stream_pane_buckets`)."""
        first, _ = self.window_range(panes)
        closed: npt.NDArray[np.bool_] = first < done
        return closed

    @cached_property
    def pane_schema(self) -> pa.Schema:
        """The state's columns: the pane, its row count, each aggregation's partials."""
        fields = [pa.field(PANE, pa.int64()), pa.field(ROWS, pa.int64())]
        for i, job in enumerate(self.aggregates):
            fields += [pa.field(name, kind) for name, kind in self.partial_fields(i, job)]
        return pa.schema(fields)

    def partial_fields(self, i: int, job: AggregateJob) -> list[tuple[str, pa.DataType]]:
        if job.column is None:
            return []
        fields = [(f"n{i}", pa.int64())]
        if job.aggregator is not None:
            return [*fields, (f"u{i}", pa.binary())]
        if job.fn in ("sum", "mean", "variance", "stddev"):
            fields += [(f"s{i}", pa.float64())]
        if job.fn in ("variance", "stddev"):
            fields += [(f"m{i}", pa.float64())]
        if job.fn in ("min", "max"):
            kind = pa.float64() if job.value_class == "float" else pa.int64()
            fields += [(f"x{i}", kind), (f"nan{i}", pa.int64())]
        return fields

    def partials(self, chunk: pa.Table) -> pa.Table:
        """One row per key and pane of `chunk`'s rows (sorted by pane): the key columns
        (every NaN one value, `-0.0` as `0.0`, as Spark groups keys), the row count and
        each aggregation's partials."""
        panes = self.panes_of(self.ticks(chunk))
        keys = normalized(chunk.select(list(self.keys)))
        order, starts = self.groups(keys, panes)
        counts = np.diff(np.r_[starts, len(panes)])
        columns: dict[str, Any] = {PANE: panes[order][starts], ROWS: counts}
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            column = chunk.column(job.column).combine_chunks().take(pa.array(order))
            valid = valid_of(column)
            columns[f"n{i}"] = np.add.reduceat(valid.astype(np.int64), starts)
            if job.aggregator is not None:
                times = to_ticks(chunk.column(self.time).combine_chunks(),
                                 self.time_kind)[order]
                columns[f"u{i}"] = user_partials(job, column, valid, times, starts)
                continue
            if job.fn in ("count",):
                continue
            values = numeric_values(column, job.value_class)
            if job.fn in ("min", "max"):
                columns.update(self.extremes(i, job, values, valid, starts))
                continue
            data = np.where(valid, values.astype(np.float64), 0.0)
            sums = np.add.reduceat(data, starts)
            columns[f"s{i}"] = sums
            if job.fn in ("variance", "stddev"):
                n = columns[f"n{i}"]
                with np.errstate(divide="ignore", invalid="ignore"):
                    means = np.where(n > 0, sums / np.maximum(n, 1), 0.0)
                deviation = np.where(valid, data - np.repeat(means, counts), 0.0)
                columns[f"m{i}"] = np.add.reduceat(deviation * deviation, starts)
        table = pa.table({name: pa.array(values, self.pane_schema.field(name).type)
                          for name, values in columns.items()})
        key_rows = pa.array(order[starts])
        for key in reversed(self.keys):
            table = table.add_column(0, key, keys.column(key).take(key_rows))
        return table

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

        def column(name: str) -> Any:
            return table.column(name).to_numpy()[order]

        def total(name: str) -> Any:
            return np.add.reduceat(column(name), starts)

        columns: dict[str, Any] = {PANE: ordered[starts], ROWS: total(ROWS)}
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            n = columns[f"n{i}"] = total(f"n{i}")
            if job.aggregator is not None:
                columns[f"u{i}"] = merged_partials(job, table.column(f"u{i}").to_pylist(),
                                                   order, starts)
                continue
            if job.fn in ("sum", "mean", "variance", "stddev"):
                columns[f"s{i}"] = total(f"s{i}")
            if job.fn in ("variance", "stddev"):
                columns[f"m{i}"] = np.add.reduceat(spread(
                    column(f"n{i}"), column(f"s{i}"), column(f"m{i}"),
                    columns[f"s{i}"] / np.maximum(n, 1), starts), starts)
            if job.fn in ("min", "max"):
                reduce = np.minimum if job.fn == "min" else np.maximum
                columns[f"x{i}"] = reduce.reduceat(column(f"x{i}"), starts)
                columns[f"nan{i}"] = total(f"nan{i}")
        schema = self.pane_schema
        combined = pa.table({name: pa.array(values, schema.field(name).type)
                             for name, values in columns.items()})
        first_rows = pa.array(order[starts])
        for name in reversed(self.keys if carried is None else carried):
            combined = combined.add_column(0, name, table.column(name).take(first_rows))
        return combined

    def extremes(self, i: int, job: AggregateJob, values: npt.NDArray[Any],
                 valid: npt.NDArray[np.bool_], starts: IntArray) -> dict[str, Any]:
        """A pane's extreme over its valid non-NaN values and its count of NaN values."""
        floats = job.value_class == "float"
        data = values.astype(np.float64 if floats else np.int64)
        nan = valid & np.isnan(data) if floats else np.zeros(len(data), dtype=bool)
        number = valid & ~nan
        reduce = np.minimum if job.fn == "min" else np.maximum
        fill = EXTREME_FILL[(job.fn, floats)]
        extreme = reduce.reduceat(np.where(number, data, fill), starts)
        return {f"x{i}": extreme, f"nan{i}": np.add.reduceat(nan.astype(np.int64), starts)}

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
        """Aggregation `i` of each window from its panes' partials."""
        if job.column is None:
            return pa.array(rows, pa.int64()).cast(job.output_type)
        if job.aggregator is not None:
            assert job.aggregator is not None
            blobs = table.column(f"u{i}").to_pylist()
            states = merged_partials(job, blobs, members, starts, pickled=False)
            with naming_errors(job.aggregator):
                results = [job.aggregator.finish(state) for state in states]
            return user_array(job, results)
        n = total(f"n{i}")
        if job.fn == "count":
            return pa.array(n, pa.int64()).cast(job.output_type)
        with np.errstate(divide="ignore", invalid="ignore"):
            if job.fn == "sum":
                return pa.array(total(f"s{i}"), pa.float64()).cast(job.output_type)
            if job.fn == "mean":
                return self.floats(total(f"s{i}") / np.maximum(n, 1), n > 0, job)
            if job.fn in ("variance", "stddev"):
                count, sums, m2 = (table.column(f"{part}{i}").to_numpy()[members]
                                   for part in "nsm")
                deviations = spread(count, sums, m2, total(f"s{i}") / np.maximum(n, 1),
                                    starts)
                var = np.add.reduceat(deviations, starts) / np.maximum(n - 1, 1)
                value = np.sqrt(var) if job.fn == "stddev" else var
                return self.floats(value, n >= 2, job)
        extremes = table.column(f"x{i}").to_numpy()[members]
        reduce = np.minimum if job.fn == "min" else np.maximum
        extreme = reduce.reduceat(extremes, starts)
        nans = total(f"nan{i}")
        if job.value_class == "float":
            if job.fn == "max":
                extreme = np.where(nans > 0, np.nan, extreme)
            else:
                extreme = np.where(nans == n, np.nan, extreme)
            return self.floats(extreme, n > 0, job)
        return pa.array(extreme, pa.int64(), mask=null_mask(n > 0)).cast(job.output_type)

    @staticmethod
    def floats(values: FloatArray, valid: npt.NDArray[np.bool_], job: AggregateJob
               ) -> pa.Array:
        return pa.array(np.where(valid, values, 0.0), pa.float64(),
                        mask=null_mask(valid)).cast(job.output_type)

    def empty(self) -> pa.RecordBatch:
        return self.no_rows

    @cached_property
    def no_rows(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)


def user_partials(job: AggregateJob, column: pa.Array, valid: npt.NDArray[np.bool_],
                  times: npt.NDArray[Any], starts: IntArray) -> list[bytes]:
    """A user aggregator's state of each group of rows (groups begin at `starts`), over
    its non-null values, pickled. The aggregator is commutative (the planner gives panes
    no other), so rows arriving in any order make the same state."""
    aggregator = job.aggregator
    assert aggregator is not None
    values = udaf_values(job, column)
    ends = np.r_[starts[1:], len(values)]
    blobs: list[bytes] = []
    with naming_errors(aggregator):
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            kept = valid[a:b]
            state = aggregator.add(aggregator.zero(), values[a:b][kept], times[a:b][kept])
            blobs.append(check_state(aggregator, "add", state))
    return blobs


def merged_partials(job: AggregateJob, blobs: list[Any], order: IntArray, starts: IntArray,
                    pickled: bool = True) -> list[Any]:
    """The merge of the pickled states `blobs[order[starts[g]:starts[g + 1]]]` of each
    group `g`, pickled again (or not)."""
    aggregator = job.aggregator
    assert aggregator is not None
    ends = np.r_[starts[1:], len(order)]
    merged: list[Any] = []
    with naming_errors(aggregator):
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            state = aggregator.zero()
            for position in order[a:b].tolist():
                state = aggregator.merge(state, pickle.loads(blobs[position]))
            merged.append(check_state(aggregator, "merge", state) if pickled else state)
    return merged


def counting_up(first: IntArray, counts: IntArray) -> IntArray:
    """`first[i], first[i] + 1, ...` (`counts[i]` values) for each `i`, one after the
    other."""
    offsets: IntArray = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts,
                                                                 counts)
    result: IntArray = np.repeat(first, counts) + offsets
    return result


def spread(count: IntArray, sums: FloatArray, m2: FloatArray, means: FloatArray,
           starts: IntArray) -> FloatArray:
    """Each part's share of its group's sum of squared deviations (groups begin at
    `starts`, `means` one per group): its own, plus its count times the square of its
    mean's distance from the group's (parts without values: 0)."""
    mean = np.repeat(means, np.diff(np.r_[starts, len(count)]))
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(count > 0, sums / np.maximum(count, 1), 0.0)
        result: FloatArray = np.where(count > 0, m2 + count * (own - mean) ** 2, 0.0)
    return result
