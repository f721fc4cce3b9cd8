"""A window kind defined outside wisp that also runs on a stream: its spec, batch and
stream rules, plan, kernel builder, compiler and resumable kernel are all here, and
nothing of wisp changes (docs/architecture.md, "Adding a window kind").

`Pairs()`: one window per event after a key's first, holding the event and the one
before it (in time, then tie-break, order): `[previous time, time]`, closed on both
sides, output time the event's own. Aggregations: `count()` and `sum(col)`.

A module of its own (not a test module) because Spark's Python workers import the
kernel by reference, from this folder, as a user's own modules must be importable
there."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from wisp.engine.columns import guarded
from wisp.engine.compiler import KeyedKernel, Query, compiles, kernel_for, keyed_kernel
from wisp.engine.layout import arrow_schema, bound_fields, mapped
from wisp.errors import WispUnsupportedError
from wisp.plan.nodes import Plan, ResolvedAggregation
from wisp.plan.registry import rule
from wisp.plan.source import Inputs, tie_break_columns
from wisp.plan.streaming import Streamed, stream_rule
from wisp.runtime.windows.resumable import Horizon, KernelState, resumed
from wisp.spec.windows import Window

STRATEGY = "arrow-pairs"


@dataclass(frozen=True)
class Pairs(Window):
    """Each event with the one before it of its key: `[previous time, time]`, closed on
    both sides; output time the event's time; a key's first event has no window."""


@dataclass(frozen=True, kw_only=True)
class PairsPlan(Plan):
    strategy = STRATEGY

    def how(self) -> str:
        return "a kernel per key pairs each event with the one before it"


@rule(Pairs)
def plan_pairs(inputs: Inputs, window: Pairs, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    for r in resolved:
        if r.aggregation.definition.name not in ("count", "sum"):
            raise WispUnsupportedError(f"`aggregations` must be count or sum for Pairs, "
                                       f"found {r.name}")
    return PairsPlan(source=inputs.source, window=repr(window), aggregations=resolved,
                     tie_break=tie_break_columns(inputs.source), reason="a test kind")


@stream_rule(Pairs)
def stream_pairs(inputs: Inputs, window: Pairs,
                 resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    return Streamed(plan_pairs(inputs, window, resolved, STRATEGY), "the key's last event",
                    "an event's window once the watermark passes its time")


@dataclass(frozen=True)
class PairsKernel:
    """The resumable kernel: its state is the key's last row."""

    keys: tuple[str, ...]
    time: str
    sums: tuple[str | None, ...]
    """Per aggregation, the column it sums (None: a count)."""
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """In batch: a partition's batches sorted by key, time and tie-break."""
        return resumed(self, batches)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        rows = chunk if state is None or state.rows.num_rows == 0 else pa.concat_tables(
            [state.rows, chunk.select(state.rows.column_names)])
        if rows.num_rows == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema), KernelState(rows)
        return self._pairs(rows), KernelState(rows.slice(rows.num_rows - 1, 1))

    def _pairs(self, rows: pa.Table) -> pa.RecordBatch:
        n = rows.num_rows - 1
        time = rows.column(self.time).combine_chunks()
        columns: list[Any] = [rows.column(k).combine_chunks().slice(1) for k in self.keys]
        columns += [time.slice(0, n), time.slice(1), time.slice(1)]
        for column in self.sums:
            if column is None:
                columns.append(pa.array(np.full(n, 2, dtype=np.int64)))
            else:
                values: npt.NDArray[np.float64] = rows.column(column).to_numpy(
                    zero_copy_only=False).astype(np.float64)
                columns.append(pa.array(values[:-1] + values[1:]))
        return pa.RecordBatch.from_arrays(
            [c.cast(f.type) for c, f in zip(columns, self.schema, strict=True)],
            schema=self.schema)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def wake(self, state: KernelState) -> Horizon | None:
        return None

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> Iterator[pa.RecordBatch]:
        starts = [0] if runs is None else list(runs[:-1])
        ends = [group.num_rows] if runs is None else list(runs[1:])
        for start, end in zip(starts, ends, strict=True):
            if end - start > 1:
                yield self._pairs(group.slice(start, end - start))


@keyed_kernel(PairsPlan)
def pairs_kernel(plan: PairsPlan, query: Query) -> KeyedKernel:
    events = query.events
    sums = tuple(r.aggregation.col if r.aggregation.definition.name == "sum" else None
                 for r in plan.aggregations)
    fields = bound_fields(events) + [T.StructField(r.name, query.output_type(r))
                                     for r in plan.aggregations]
    needed = list(dict.fromkeys([*events.key, events.time.name,
                                 *[s for s in sums if s is not None]]))
    kernel = PairsKernel(tuple(events.key), events.time.name, sums, arrow_schema(fields))
    return KeyedKernel(guarded(events, query.observation), list(events.key),
                       [events.time.name, *plan.tie_break], needed, kernel, fields)


@compiles(PairsPlan)
def pairs(plan: PairsPlan, query: Query) -> DataFrame:
    return mapped(kernel_for(plan, query))
