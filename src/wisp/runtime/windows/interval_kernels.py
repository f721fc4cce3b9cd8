"""The interval kernel of each window kind: the one place that picks it."""

from __future__ import annotations

import pyarrow as pa

from ...plan.intervals import CountWindows, HoppingWindows, IntervalWindow, SnapshotWindows
from ..aggregates.aggregate import AggregateJob
from .counts import CountKernel
from .hopping import HoppingKernel
from .intervals import IntervalKernel
from .snapshot import SnapshotKernel

KERNELS: dict[type[IntervalWindow], type[IntervalKernel]] = {
    HoppingWindows: HoppingKernel,
    SnapshotWindows: SnapshotKernel,
    CountWindows: CountKernel,
}
"""The kernel class of each interval window kind, by the class of its description."""


def interval_kernel(keys: tuple[str, ...], time: str, end: str | None, time_kind: str,
                    time_scale: int, window: IntervalWindow,
                    aggregates: tuple[AggregateJob, ...], schema: pa.Schema
                    ) -> IntervalKernel:
    """The kernel of `window`'s kind over events with these columns (`end` None: point
    events), computing `aggregates` into rows of `schema`."""
    return KERNELS[type(window)](keys, time, end, time_kind, time_scale, window, aggregates,
                                schema)
