"""The `arrow-spl` strategy: sliding and policy-tumbling windows, per key, in an Arrow
kernel.

Shape: `repartition(key)` + each partition sorted by (key, arrival order) +
`mapInArrow(kernel)`, as in `engine.arrow`. The kernel replays each key's eviction and
trigger policies (`wisp.kernels.policies`; short keys' runs several at once, a long run
whole, as `engine.arrow.whole_runs` gathers them) and aggregates every emitted firing's
window:
as frames `[lo, hi)` with `engine.arrow.aggregate` when the windows are contiguous in
arrival order, else over per-tuple ranges of firings (`kernels.policies.Stabbing`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ..kernels import policies as ks
from ..kernels import stabbing as sb
from ..kernels.runs import one_run
from ..plan.nodes import Plan
from ..plan.policies import ResolvedPolicy, SplDetails
from .alive import aggregate_alive
from .arrow import AggregateJob, aggregate, whole_runs
from .arrow_codec import from_ticks, to_ticks
from .columns import col, fail_where, guarded
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped_by_key,
    output_fields,
)


@dataclass(frozen=True)
class SplKernel:
    """The executor side: picklable, no Spark objects. Short key runs are computed
    several at once (each policy restarting per run), a long run whole."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    details: SplDetails
    attrs: tuple[tuple[str, str], ...]  # (column, kind) of each delta attribute
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    def policy(self, p: ResolvedPolicy) -> ks.Policy:
        attr = [name for name, _ in self.attrs].index(p.attr) if p.attr is not None else 0
        return ks.Policy(p.kind, n=p.n, t=p.t, align=p.align, attr=attr, d=p.d)

    def windows(self, group: pa.Table, ticks: npt.NDArray[Any], runs: npt.NDArray[np.int64]
                ) -> ks.Windows:
        attrs = [to_ticks(group.column(name).combine_chunks(), kind)
                 for name, kind in self.attrs]
        details = self.details
        if details.mode == "sliding":
            assert details.trigger is not None
            return ks.sliding(ticks, attrs, self.policy(details.evict),
                              self.policy(details.trigger), details.partial, runs)
        flags = None
        if details.evict.kind == "punctuation":
            assert details.evict.col is not None
            column = group.column(details.evict.col).combine_chunks()
            flags = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False),
                               dtype=bool)
        return ks.tumbling(ticks, attrs, flags, self.policy(details.evict), details.partial,
                           runs)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for table, starts in whole_runs(batches, self.keys):
            runs = one_run(table.num_rows) if starts is None else starts
            out = self.run_group(table, runs)
            if out.num_rows:
                yield out

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The output rows of the key runs in `group` (`runs`: where each begins, then
        the length; one run by default)."""
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        runs = one_run(len(ticks)) if runs is None else runs
        found = self.windows(group, ticks, runs)
        m = len(found.time)
        if m == 0:
            return pa.RecordBatch.from_pylist([], schema=self.schema)
        columns: list[pa.Array] = []
        first_row = pa.array(runs[found.run])
        for key in self.keys:
            columns.append(group.column(key).combine_chunks().take(first_row))
        if isinstance(found, ks.Frames):
            lo, hi = found.lo, found.hi
            known = hi > lo
            start = ticks[np.where(known, lo, 0)]
            end = ticks[np.where(known, hi - 1, 0)]
            memo: dict[tuple[str, ...], Any] = {}
            results = [aggregate(job, group, ticks, lo, hi, memo) for job in self.aggregates]
        else:
            stab = sb.Stabbing(found.qlo, found.qhi, m)
            everything = np.ones(len(ticks), dtype=bool)
            first = sb.alive_positions(stab, len(ticks), everything, "first")
            last = sb.alive_positions(stab, len(ticks), everything, "last")
            known = first.valid
            start, end = ticks[first.positions], ticks[last.positions]
            shared: dict[tuple[str, str], Any] = {}
            results = [aggregate_alive(job, group, ticks, stab, shared)
                       for job in self.aggregates]
        columns.append(from_ticks(start, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(end, known, self.time_kind, self.time_scale))
        columns.append(from_ticks(found.time, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        columns.extend(results)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def attribute_guard(df: DataFrame, attrs: list[tuple[str, str]]) -> DataFrame:
    """Fail the query on a null (or NaN) delta attribute: a delta policy cannot compare
    it, and wisp never drops a row silently."""
    for name, kind in attrs:
        value = col(name)
        missing: Column = value.isNull() | F.isnan(value) if kind == "float" else \
            value.isNull()
        message = (f"WispError: `attr` column {name!r} must not be null or NaN (a Delta "
                   "policy compares its values), found a null or NaN value")
        df = fail_where(df, missing, message)
    return df


def policy_windows(plan: Plan, observation: Observation) -> DataFrame:
    """Build the Spark plan of the `arrow-spl` strategy."""
    events = plan.events
    details: SplDetails = plan.details
    policies = [details.evict] + ([details.trigger] if details.trigger is not None else [])
    attrs = list(dict.fromkeys((p.attr, p.attr_kind) for p in policies
                               if p.kind == "delta" and p.attr is not None
                               and p.attr_kind is not None))
    df = attribute_guard(guarded(events, observation), attrs)
    keys = list(events.key)
    needed = list(dict.fromkeys(
        [*keys, events.time.name, *[name for name, _ in attrs],
         *[p.col for p in policies if p.col is not None], *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = SplKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, details=details, attrs=tuple(attrs),
        aggregates=aggregate_jobs(plan), schema=arrow_schema(fields))
    return mapped_by_key(df, keys, details.arrival, needed, kernel, fields)
