"""`wisp.snap_to_hops`'s query: every lifetime snapped to the validity intervals of
hopping windows, row by row in an Arrow kernel (see `wisp.snap` for the rule).

The arguments are validated by `wisp.snap.snap_to_hops`; this module builds the Spark
plan (the data guards, then `mapInArrow` with `runtime.windows.snapping.SnapKernel`).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, Observation

from ..binding import Events
from ..runtime.windows.snapping import SnapKernel
from .columns import col, interval_guarded
from .layout import arrow_type, map_columns


def snapped_lifetimes(ev: Events, end: str, size: int, hop: int, align: int) -> DataFrame:
    """`ev`'s DataFrame with its data guards, the time column holding each snapped start
    and the column `end` each snapped end (null for the end of time). For point events
    (`ev.end` None) `end` is a new column, filled from the time before snapping. `size`,
    `hop` and `align` are in ticks of `ev`'s time column."""
    df = interval_guarded(ev, Observation(f"wisp_snap_{id(ev)}"))
    if ev.end is None:
        df = df.withColumn(end, col(ev.time.name))
    schema = df.schema
    kernel = SnapKernel(ev.time.name, end, ev.end is not None, ev.time.kind, ev.time.scale,
                        size, hop, align,
                        pa.schema([pa.field(f.name, arrow_type(f.dataType))
                                   for f in schema.fields]))
    return map_columns(df, df.columns, kernel, schema)
