"""The executor side of running aggregates kept as accumulators: the cumulative window
(`ev.agg(...)`: everything of the key up to and including each row) and `Since(pred)`
over predicate ticks (a row whose tick flag is true closes its period, that row
included; the next row starts a new one; a null flag counts as false).

Each row's window ends at the row, so its aggregates are a scan over the key's rows
that restarts at every period (a "segment"): counts and exact sums by prefix sums,
float sums and Welford's second moments by sequential scans, extremes by running
maxima, first/last by positions. The state between pieces of a key is a few
accumulators per aggregate (scalars) and at most one row (the values `first`, `last`
and the `min`/`max` of decimals and non-numeric columns carry, in their own types),
never the key's rows: unlike `FrameKernel` with `RunningFrame` and `TickKernel` with
predicate ticks, whose states hold the open window's rows.

A step puts the carried accumulators in front of the piece as a virtual row 0 of the
first segment, so a scan over `[carried, row, row, ...]` continues the uncut one: a
resumed run gives the uncut run's outputs bit for bit (float sums and moments included,
as each is added in row order, once).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import WispUnsupportedError
from ...kernels.runs import one_run
from ...kernels.segments import BoolArray, IntArray, Segments
from ...spec.aggregates import DEFINITIONS
from ..aggregates.aggregate import AggregateJob
from ..codecs.arrays import from_ticks, to_ticks
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, resumed
from .scans import Carry, Scanned, carried, result_at, scalar_of, scan_all

SUPPORTED = tuple(fn for fn, definition in DEFINITIONS.items() if definition.accumulators)
"""The built-in aggregations a few accumulators hold (`Definition.accumulators`)."""
HIDDEN_TICK = "__wisp_tick__"
"""The hidden boolean column Spark evaluates next to each row for predicate ticks."""


def refuse(aggregates: tuple[AggregateJob, ...]) -> None:
    """A `WispUnsupportedError` for an aggregation no fixed set of accumulators holds
    (`Definition.accumulators`): `collect` and udafs read every value of the window, so
    their state would grow with the key's history. A user's mergeable aggregator
    carries its own state."""
    for job in aggregates:
        if job.definition.accumulators:
            continue
        why = (" (its state would hold every value of the window, growing with the key's "
               "history)" if job.definition.needs_values else "")
        raise WispUnsupportedError(
            f"`aggregations` of a running window kept as accumulators must be "
            f"{', '.join(SUPPORTED)}, found {job.label}{why}")



@dataclass(frozen=True)
class RunningKernel:
    """Running aggregates over each key's rows, as accumulators: the cumulative window
    (`since=False`: every row of the key up to and including the row) or `Since(pred)`
    over predicate ticks (`since=True`: the period up to and including the row; the
    boolean `tick_column` closes a period at each row where it is true). Picklable, no
    Spark objects; `aggregates` must be those of `SUPPORTED` (else
    `WispUnsupportedError`, see `refuse`).

    Output rows, in `schema`'s order: the key columns, `window_start` (cumulative: the
    time of the key's first row; `Since`: of its period's first row), `window_end` and
    `time` (the row's time), then one column per aggregate. One row per input row;
    `Since` with `emit="ticks"` only the rows whose flag is true ("events" and "both":
    every row, the tick rows being event rows). The same rows as `FrameKernel` with
    `RunningFrame` and `TickKernel` with predicate ticks; float sums are added in row
    order and variance/stddev by Welford's update, so those agree to rounding.

    Streamable (`resumable.Streamable`): every row's window ends at the row, so its
    output is final as soon as the row arrives; a horizon changes nothing, `wake` is
    always None and `finish` emits nothing. The state is the open window's
    accumulators as scalars (`start`, the window's start; per aggregate `j`: `j:count`,
    `j:sum`, `j:best`, `j:numbers`, `j:m2`) and, when `first`, `last` or a `min`/`max`
    by rank is asked, one row: the key columns and the value each carries. After a
    `Since` period closes it is empty. Bound: a constant, whatever the key's length."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    since: bool = False
    emit: str = "events"
    tick_column: str = HIDDEN_TICK

    def __post_init__(self) -> None:
        refuse(self.aggregates)
        if self.emit not in ("events", "ticks", "both") or (not self.since
                                                           and self.emit != "events"):
            raise ValueError(f"wisp: no running window emits {self.emit!r} "
                             f"(since={self.since})")

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time, long runs in pieces through `step`."""
        return resumed(self, batches, CHUNK_ROWS)

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def flags(self, table: pa.Table) -> BoolArray:
        """The rows that close their period (none for the cumulative window)."""
        if not self.since:
            return np.zeros(table.num_rows, dtype=bool)
        column = pc.fill_null(table.column(self.tick_column).combine_chunks(), False)
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=bool)

    def run_group(self, group: pa.Table, runs: IntArray | None = None) -> pa.RecordBatch:
        """The output rows of whole key runs (`runs`: where each begins, then the
        length; one run by default)."""
        n = group.num_rows
        if n == 0:
            return self.empty()
        runs = one_run(n) if runs is None else runs
        flags = self.flags(group)
        closes = np.nonzero(flags[:-1])[0].astype(np.int64) + 1
        starts = np.unique(np.concatenate([runs[:-1][runs[:-1] < n], closes, [n]]))
        times = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        carry = Carry({}, None, 0)
        return self.emit_rows(group, times, flags, Segments(starts.astype(np.int64)),
                              carry)[0]

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Every row's output (final at once: its window ends at it), the carried
        accumulators in front of the first segment; `horizon` changes nothing."""
        m = chunk.num_rows
        if m == 0:
            return self.empty(), state if state is not None else KernelState(pa.table({}))
        scalars = {} if state is None else state.scalars
        carry = Carry(scalars, None if state is None else state.rows, 1)
        flags = self.flags(chunk)
        closes = np.nonzero(flags[:-1])[0].astype(np.int64) + 2  # after position 0
        segments = Segments(np.concatenate([[0], closes, [m + 1]]).astype(np.int64))
        times = to_ticks(chunk.column(self.time).combine_chunks(), self.time_kind)
        start = scalars.get("start")
        lead = np.array([times[0] if start is None else start], dtype=times.dtype)
        scanned_times = np.concatenate([lead, times])
        out, found = self.emit_rows(chunk, scanned_times, flags, segments, carry)
        if flags[-1]:  # the period closed at the last row: nothing carries over
            return out, KernelState(pa.table({}))
        return out, carried(self.keys, chunk, found,
                            {"start": scalar_of(scanned_times[segments.starts[-2]])})

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """Nothing: every row's output came with its step."""
        return self.empty()

    def wake(self, state: KernelState) -> Horizon | None:
        """None: no output ever waits for a horizon."""
        return None

    def emit_rows(self, table: pa.Table, times: npt.NDArray[Any], flags: BoolArray,
                  segments: Segments, carry: Carry) -> tuple[pa.RecordBatch, list[Scanned]]:
        """The output rows of `table`'s rows (scanned positions `carry.virtual..`, each
        position's time in `times`), and each aggregation's scan."""
        virtual, m = carry.virtual, table.num_rows
        rows = np.arange(m, dtype=np.int64)
        if self.emit == "ticks":
            rows = rows[flags]
        anchors = rows + virtual
        everywhere = np.ones(len(rows), dtype=bool)
        take = pa.array(rows, pa.int64())
        columns: list[pa.Array] = [table.column(k).combine_chunks().take(take)
                                   for k in self.keys]
        for ticks in (times[segments.firsts()[anchors]], times[anchors], times[anchors]):
            columns.append(from_ticks(ticks, everywhere, self.time_kind, self.time_scale))
        found = scan_all(self.aggregates, table, segments, carry, times)
        columns += [result_at(scanned, job, anchors)
                    for scanned, job in zip(found, self.aggregates, strict=True)]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema), found
