"""`snap_to_hops`: interval events with their lifetimes snapped to hopping-window
assignments (the hopping-window example's "adjusted events").

For hopping windows `[w, w + size)`, `w = align + k*hop` with `hop <= size`, the result
of window `w` is valid on `[w + size, w + size + hop)`: these validity intervals tile
the timeline. An event's lifetime `[s, e)` is snapped to `[S, E)`, where `S` is where the
earliest window holding `s` becomes valid (that window's end) and `E` is where the latest
window holding the last tick `e - 1` stops being valid (its end plus one hop). Snapshot
windows over the snapped events give one row per interval over which the hopping
result is constant (`Hopping(..., output="changes")`). An open-ended event stays
open-ended (null end = end of time). Point events are lifetimes of one tick. The
bounds are exact to the limits of 64-bit ticks; one beyond them fails the query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Observation

from .errors import bad_value
from .events import EDGE_END_COLUMN, Events, events
from .kernels import intervals as iv

__all__ = ["snap_to_hops"]


def snap_to_hops(ev: Events, size: Any, hop: Any, align: Any = None) -> Events:
    """`ev` with every lifetime snapped to the validity intervals of the hopping windows
    `[align + k*hop, align + k*hop + size)` (see the module's docstring). Needs
    `0 < hop <= size`. The result's `time` column holds the snapped start and its end
    column (the events' own, or a new column `end` for point events) the snapped end,
    null for the end of time. Rows with a null time fail the query (or are dropped, as
    `ev`'s `on_null_time` says), as do rows whose end is before their time."""
    from .engine.arrow import arrow_type
    from .engine.intervals import interval_guarded
    from .plan.intervals import _check, _positive, resolve_align

    if not isinstance(ev, Events):
        raise bad_value("ev", "wisp events (wisp.events(...))", type(ev).__name__)
    _check(ev, None, "snap_to_hops")
    size_ticks = _positive(size, ev.time, "size")
    hop_ticks = _positive(hop, ev.time, "hop")
    if hop_ticks > size_ticks:
        raise bad_value("hop", f"at most `size` ({size!r}) to snap lifetimes to windows "
                        "without gaps", hop)
    align_ticks = resolve_align(align, ev.time)
    end = ev.end
    df = interval_guarded(ev, Observation(f"wisp_snap_{id(ev)}"))
    if end is None:
        if EDGE_END_COLUMN in df.columns:
            raise bad_value("ev", f"point events without a column named {EDGE_END_COLUMN!r} "
                            "(snap_to_hops writes the snapped end there)", EDGE_END_COLUMN)
        end = EDGE_END_COLUMN
        df = df.withColumn(end, df[f"`{ev.time.name}`"])
    schema = df.schema
    kernel = SnapKernel(ev.time.name, end, ev.end is not None, ev.time.kind, ev.time.scale,
                        size_ticks, hop_ticks, align_ticks,
                        pa.schema([pa.field(f.name, arrow_type(f.dataType))
                                   for f in schema.fields]))
    snapped = df.mapInArrow(kernel, schema)
    return events(snapped, ev.time.name, end=end, key=list(ev.key) or None, order=ev.order,
                  on_null_time=ev.on_null_time)


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
        from .engine.arrow_codec import DAY, from_ticks, to_ticks, validity
        from .engine.columns import tick_range_message

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
