"""Sessions: `repartition(key)` + each partition sorted by (key, time, tie-break)
(`layout.mapped_by_key`) + `mapInArrow(kernel)`; the kernel finds each key's sessions
(kernels/sessions.py) and aggregates over all of them at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pyspark.sql import DataFrame, Observation

from ..kernels import sessions as sk
from ..plan.dynamic import SessionDetails
from ..plan.nodes import Plan
from .arrow import AggregateJob, aggregate, whole_runs
from .arrow_codec import from_ticks, ticks_or_zero, to_ticks, validity
from .columns import col, interval_guarded
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped_by_key,
    output_fields,
)

END = "__wisp_end"


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


def end_message(plan: Plan) -> str:
    events = plan.events
    return (f"WispError: `end` column {events.end!r} must not be before `time` column "
            f"{events.time.name!r}, found an event whose end is before its time")


def sessions(plan: Plan, observation: Observation) -> DataFrame:
    """Build the Spark plan of session windows."""
    events = plan.events
    details: SessionDetails = plan.details
    keys = list(events.key)
    df = interval_guarded(events, observation, end_message(plan))
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan)]))
    if events.end is not None:
        df = df.withColumn(END, col(events.end))
        needed.append(END)
    fields = output_fields(events, plan.aggregations)
    kernel = SessionKernel(
        keys=tuple(keys), time=events.time.name,
        end=None if events.end is None else END, time_kind=events.time.kind,
        time_scale=events.time.scale, gap=details.gap, max_duration=details.max_duration,
        aggregates=aggregate_jobs(plan),
        schema=arrow_schema(fields))
    return mapped_by_key(df, keys, [events.time.name, *plan.tie_break], needed, kernel,
                         fields)
