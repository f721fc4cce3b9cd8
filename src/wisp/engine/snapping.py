"""`wisp.snap_to_hops`'s query: every lifetime snapped to the validity intervals of
hopping windows, row by row in an Arrow kernel (see `wisp.snap` for the rule).

The arguments are validated by `wisp.snap.snap_to_hops`; this module builds the Spark
plan (the data guards, then `mapInArrow` with `SnapKernel`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation

from ..binding import Events
from ..kernels import intervals as iv
from ..runtime.codec import DAY, from_ticks, tick_range_message, to_ticks, validity
from .intervals import interval_guarded
from .layout import arrow_type


def snapped_lifetimes(ev: Events, end: str, size: int, hop: int, align: int) -> DataFrame:
    """`ev`'s DataFrame with its data guards, the time column holding each snapped start
    and the column `end` each snapped end (null for the end of time). For point events
    (`ev.end` None) `end` is a new column, filled from the time before snapping. `size`,
    `hop` and `align` are in ticks of `ev`'s time column."""
    df = interval_guarded(ev, Observation(f"wisp_snap_{id(ev)}"))
    if ev.end is None:
        df = df.withColumn(end, df[f"`{ev.time.name}`"])
    schema = df.schema
    kernel = SnapKernel(ev.time.name, end, ev.end is not None, ev.time.kind, ev.time.scale,
                        size, hop, align,
                        pa.schema([pa.field(f.name, arrow_type(f.dataType))
                                   for f in schema.fields]))
    return df.mapInArrow(kernel, schema)


@dataclass(frozen=True)
class SnapKernel:
    """Row-wise snapping (executor side, picklable)."""

    time: str
    end: str
    has_end: bool
    time_kind: str
    time_scale: int
    size: int
    hop: int
    align: int
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            times = batch.column(self.time)
            unit = DAY if self.time_kind == "date" else 1  # date time: whole days
            start = to_ticks(times, self.time_kind) // unit
            if self.has_end:
                ends = batch.column(self.end)
                known = validity(ends)
                end = to_ticks(pc.coalesce(ends, times), self.time_kind) // unit
            else:
                known, end = np.ones(len(start), bool), start
            bounds = iv.snapped(start, end, known, self.size // unit, self.hop // unit,
                                self.align // unit)
            if bounds is None:
                raise OverflowError(tick_range_message(self.time))
            new_start, new_end = bounds[0] * unit, bounds[1]
            new_end = np.where(new_end == iv.END_OF_TIME, new_end, new_end * unit)
            open_end = new_end == iv.END_OF_TIME
            everywhere = np.ones(len(start), bool)
            columns = []
            for field in self.schema:
                if field.name == self.time:
                    array = from_ticks(new_start, everywhere, self.time_kind, self.time_scale)
                elif field.name == self.end:
                    array = from_ticks(np.where(open_end, 0, new_end), ~open_end,
                                       self.time_kind, self.time_scale)
                else:
                    columns.append(batch.column(field.name))
                    continue
                columns.append(array.cast(field.type))
            yield pa.RecordBatch.from_arrays(columns, schema=self.schema)
