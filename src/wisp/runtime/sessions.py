"""The executor side of sessions (`engine/sessions.py` builds the Spark plan): the kernel
finds each key's sessions (`kernels/sessions.py`) and aggregates over all of them at
once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..kernels import sessions as sk
from .aggregate import AggregateJob, aggregate
from .batches import whole_runs
from .codec import from_ticks, ticks_or_zero, to_ticks, validity


@dataclass(frozen=True)
class SessionKernel:
    """The executor side of sessions: picklable, no Spark objects."""

    keys: tuple[str, ...]
    time: str
    end: str | None
    time_kind: str
    time_scale: int
    gap: int | float
    max_duration: int | float | None
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time, each long run whole, once all its pieces
        have arrived."""
        for table, starts in whole_runs(batches, self.keys):
            yield self.run_group(table, starts)

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch:
        """The sessions of one key's run, or of several (`runs`: where each begins, then
        the length; no session spans two runs)."""
        ticks = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        reach = ticks
        if self.end is not None:
            ends = group.column(self.end).combine_chunks()
            reach = np.where(validity(ends), ticks_or_zero(ends, self.time_kind),
                             sk.forever(ticks))
            reach = np.maximum(reach, ticks).astype(ticks.dtype)
        found = sk.sessions(ticks, reach, self.gap, self.max_duration, runs)
        m = len(found.lo)
        firsts = pa.array(found.lo)
        columns: list[pa.Array] = [group.column(k).take(firsts).combine_chunks()
                                   for k in self.keys]
        everywhere = np.ones(m, dtype=bool)
        columns.append(from_ticks(found.start, everywhere, self.time_kind, self.time_scale))
        end = from_ticks(found.end, found.end_known, self.time_kind, self.time_scale)
        columns += [end, end]
        for job in self.aggregates:
            columns.append(aggregate(job, group, ticks, found.lo, found.hi))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)
