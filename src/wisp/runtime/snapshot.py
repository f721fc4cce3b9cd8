"""Snapshot windows on the interval kernel: one window per interval between consecutive
distinct start/end points of a key's lifetimes (`kernels.intervals.snapshot`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from ..kernels import intervals as iv
from ..kernels import stabbing as sb
from ..plan.intervals import SnapshotWindows
from .aggregate import AggregateJob
from .intervals import IntervalKernel


@dataclass(frozen=True)
class SnapshotKernel(IntervalKernel):
    """Snapshot windows over each key's lifetimes; several short key runs as one, each
    run getting its own points."""

    window: SnapshotWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        return iv.snapshot(start, end, gather=self.gather, runs=runs)

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
