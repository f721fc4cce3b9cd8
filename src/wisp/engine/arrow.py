"""Arrow-kernel strategy: Spark partitions by key, each partition is sorted, a kernel
(`runtime.windows.frames.FrameKernel`) walks the sorted batches, finds each key's run of events
and computes every frame's aggregates at once.

Shape: `repartition(key)` + `mapInArrow(kernel)`, the kernel fed each partition sorted by
(key, time, tie-break): by the Python worker with Arrow (`runtime.codecs.sorting.SortedInput`,
sorted runs spilled to disk past a budget), or by Spark's `sortWithinPartitions` for
column types whose order Arrow does not share (`layout.mapped_by_key`). Spark does the
one shuffle. The kernel streams each key's run in chunks of about `CHUNK_ROWS` events
(see `runtime/windows/frames.py`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from ..binding import Events
from ..plan.frames import FramesPlan
from ..runtime.codecs.batches import CHUNK_ROWS
from ..runtime.windows.frames import FrameKernel
from .columns import guarded
from .compiler import KeyedKernel, Query, TableKernel, compiles, keyed_kernel, table_kernel
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, mapped, output_fields


@table_kernel(FramesPlan)
def frames_table(plan: FramesPlan, events: Events) -> TableKernel:
    """The frame kernel and the columns it reads, from the events' schema and roles."""
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = FrameKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, frame=plan.frame, aggregates=aggregate_jobs(plan, events),
        schema=arrow_schema(fields), chunk_rows=CHUNK_ROWS)
    return TableKernel(keys, [events.time.name, *plan.tie_break], needed, kernel, fields)


@keyed_kernel(FramesPlan)
def frames_kernel(plan: FramesPlan, query: Query) -> KeyedKernel:
    """The frame kernel and its input."""
    table = frames_table(plan, query.events)
    return KeyedKernel(guarded(query.events, query.observation), table.keys, table.order,
                       table.needed, table.kernel, table.fields)


@compiles(FramesPlan)
def frames(plan: FramesPlan, query: Query) -> DataFrame:
    """Build the Spark plan of the frames strategy."""
    return mapped(frames_kernel(plan, query))
