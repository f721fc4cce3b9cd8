"""Count-by-start-time windows on the interval kernel: window `i` holds the events whose
start lies between a key's `i`-th and `(i+n-1)`-th distinct start times
(`kernels.intervals.count_by_start`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..kernels import intervals as iv
from ..plan.intervals import CountWindows
from .aggregate import AggregateJob
from .intervals import IntervalKernel


@dataclass(frozen=True)
class CountKernel(IntervalKernel):
    """Count windows over each key's lifetimes; several short key runs as one, each run
    counting its own start times."""

    window: CountWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        return iv.count_by_start(start, self.window.n, runs)

    def needs_members(self, job: AggregateJob) -> bool:
        """Always: a count window's members are contiguous in start order, so its groups
        index the events directly (frames `[lo, hi)`) and no base groups are made."""
        return True
