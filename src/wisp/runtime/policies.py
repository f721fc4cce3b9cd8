"""The executor side of the `arrow-spl` strategy (`engine/policies.py` builds the Spark
plan): sliding and policy-tumbling windows, per key. The kernel replays each key's
eviction and trigger policies (`wisp.kernels.policies`; short keys' runs several at
once, a long run whole, as `batches.whole_runs` gathers them) and aggregates every
emitted firing's window: as frames `[lo, hi)` with `aggregate.aggregate` when the
windows are contiguous in arrival order, else over per-tuple ranges of firings
(`alive.aggregate_alive`).

Policies are the spec's own classes (`wisp.spec.policies`), resolved to ticks:
`Count(n)`, `Time(t, align)` with `t` and `align` in ticks of the time column,
`Delta(attr, d)` with `d` in ticks of the attribute, `Punctuation(col)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..kernels import policies as ks
from ..kernels import stabbing as sb
from ..kernels.runs import one_run
from ..spec.policies import Policy, Punctuation
from .aggregate import AggregateJob, aggregate
from .alive import aggregate_alive
from .batches import whole_runs
from .codec import from_ticks, to_ticks


@dataclass(frozen=True)
class SplKernel:
    """The executor side: picklable, no Spark objects. Short key runs are computed
    several at once (each policy restarting per run), a long run whole.

    `mode` "sliding" (`evict` and `trigger`) or "tumbling" (`evict` is the window's size
    policy, `trigger` None); `attrs`: each delta attribute's column and kind (a time
    kind: how its values become ticks)."""

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    mode: str
    evict: Policy
    trigger: Policy | None
    partial: bool
    attrs: tuple[tuple[str, str], ...]
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    def windows(self, group: pa.Table, ticks: npt.NDArray[Any], runs: npt.NDArray[np.int64]
                ) -> ks.Windows:
        attrs = {name: to_ticks(group.column(name).combine_chunks(), kind)
                 for name, kind in self.attrs}
        if self.mode == "sliding":
            assert self.trigger is not None
            return ks.sliding(ticks, attrs, self.evict, self.trigger, self.partial, runs)
        flags = None
        if isinstance(self.evict, Punctuation):
            column = group.column(self.evict.col).combine_chunks()
            flags = np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False),
                               dtype=bool)
        return ks.tumbling(ticks, attrs, flags, self.evict, self.partial, runs)

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
