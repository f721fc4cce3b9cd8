"""Count-by-start-time windows on the interval kernel: window `i` holds the events whose
start lies between a key's `i`-th and `(i+n-1)`-th distinct start times
(`kernels.intervals.count_by_start`).

Resumable (`resume`): once the newest start seen is `T` (on a stream, once every later
event starts at or after a bound `B`: `T` then reads as `max(T, B)`), a window whose
last start time is before `T` is final (a later event starts at or after `T`: it joins
no such window, and a window's members are the events of its `n` start times). A step
emits those; it carries the events of the last `n` distinct start times (the newest one
may still gain events), so the state is bounded by one window's events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...kernels import intervals as iv
from ...plan.intervals import CountWindows
from ..aggregates.aggregate import AggregateJob
from .intervals import IntervalKernel
from .resumable import Horizon, Scalar


@dataclass(frozen=True)
class CountKernel(IntervalKernel):
    """Count windows over each key's lifetimes; several short key runs as one, each run
    counting its own start times."""

    window: CountWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        return iv.count_by_start(start, self.window.n, runs)

    def resume(self, table: pa.Table, scalars: dict[str, Scalar], final: bool,
               bound: int | None = None
               ) -> tuple[pa.RecordBatch, iv.IntArray, dict[str, Scalar]]:
        """The windows of the carried events and the new chunk, recomputed: those whose
        last start time is at or after the previous newest start (the earlier ones were
        emitted) and, in a step, before the newest start `T`; the events of the last `n`
        distinct start times are carried. Under a stream's `bound` (every later event
        starts at or after it) the windows whose last start time is before it are final
        too: all of those ending the rows fed."""
        start, end = self.lifetimes(table)
        before, newest = self.newest(start, scalars)
        if bound is not None and not final:
            newest = max(newest, bound, before if before is not None else bound)
        groups, rows, _ = iv.count_by_start(start, self.window.n)
        self.check_bounds(rows)
        mask = np.ones(len(rows.group), dtype=bool)
        if before is not None:
            mask &= rows.time >= before
        if not final:
            mask &= rows.time < newest
        out = self.emit(table, start, end, groups, self.subset(rows, mask),
                        np.zeros(int(mask.sum()), dtype=np.int64))
        distinct = np.unique(start)
        first = distinct[-self.window.n] if len(distinct) >= self.window.n else distinct[0]
        keep = np.nonzero(start >= first)[0].astype(np.int64)
        return out, keep, {"newest": newest}

    def bound(self, horizon: Horizon | None) -> int | None:
        """A stream's horizon as the first tick a later event can start at (no wake: a
        step told it emits every window its rows complete)."""
        return self.first_start(horizon)

    def needs_members(self, job: AggregateJob) -> bool:
        """Always: a count window's members are contiguous in start order, so its groups
        index the events directly (frames `[lo, hi)`) and no base groups are made."""
        return True
