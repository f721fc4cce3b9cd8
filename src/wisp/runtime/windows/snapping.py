"""`wisp.snap_to_hops`'s kernel: each row's lifetime snapped to the validity intervals
of hopping windows (`kernels.intervals.snapped`), batch by batch (executor side)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import intervals as iv
from ..codecs.arrays import DAY, from_ticks, tick_range_message, to_ticks, validity


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
