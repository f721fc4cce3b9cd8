"""Snapshot windows on the interval kernel: one window per interval between consecutive
distinct start/end points of a key's lifetimes (`kernels.intervals.snapshot`).

Resumable (`resume`): once the newest start seen is `T` (a point), a window that ends
at or before `T` is final (a later event starts at or after `T`: it adds no point before
it and lives in no window before it). A step emits those; it carries the events alive
after `T` (`end > T`), so the state is the events alive at one instant: open-ended and
long events stay in it as long as they live.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from ..kernels import intervals as iv
from ..kernels import stabbing as sb
from ..plan.intervals import SnapshotWindows
from .aggregate import AggregateJob
from .intervals import IntervalKernel
from .resumable import Scalar


@dataclass(frozen=True)
class SnapshotKernel(IntervalKernel):
    """Snapshot windows over each key's lifetimes; several short key runs as one, each
    run getting its own points."""

    window: SnapshotWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        return iv.snapshot(start, end, gather=self.gather, runs=runs)

    def resume(self, table: pa.Table, scalars: dict[str, Scalar], final: bool,
               bound: int | None = None
               ) -> tuple[pa.RecordBatch, iv.IntArray, dict[str, Scalar]]:
        """The windows of the carried events and the new chunk, recomputed with starts
        clipped up to the previous newest start `before` (the windows from there on are
        the same; aggregates still see the real starts): those beginning at or after
        `before` and, in a step, ending at or before the newest start `T`; the events
        alive after `T` are carried. A stream's horizon is ignored (`bound` is None:
        see `intervals`)."""
        start, end = self.lifetimes(table)
        before, newest = self.newest(start, scalars)
        clipped = start if before is None else np.maximum(start, before)
        groups, rows, _ = iv.snapshot(clipped, end, gather=self.gather)
        self.check_bounds(rows)
        mask = np.ones(len(rows.group), dtype=bool)
        if before is not None:
            mask &= rows.start >= before
        if not final:
            mask &= rows.end_known & (rows.end <= newest)
        out = self.emit(table, start, end, groups, self.subset(rows, mask),
                        np.zeros(int(mask.sum()), dtype=np.int64))
        keep = np.nonzero(end > newest)[0].astype(np.int64)
        return out, keep, {"newest": newest}

    def needs_members(self, job: AggregateJob) -> bool:
        """Collect and udafs list each window group's members; a time-weighted mean does
        not: every member of a snapshot window lives through all of it, so all weights
        are equal and it is the mean."""
        return job.fn != "time_weighted_mean" and super().needs_members(job)

    def aggregate(self, job: AggregateJob, group: pa.Table, start: iv.IntArray,
                  end: iv.IntArray, groups: iv.Groups, alive: sb.Stabbing,
                  alive_memo: dict[tuple[str, str], Any] | None = None,
                  frame_memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
        if job.fn == "time_weighted_mean":  # every weight is equal: the mean
            job = replace(job, fn="mean")
        return super().aggregate(job, group, start, end, groups, alive, alive_memo,
                                 frame_memo)
