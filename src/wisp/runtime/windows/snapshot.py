"""Snapshot windows on the interval kernel: one window per interval between consecutive
distinct start/end points of a key's lifetimes (`kernels.intervals.snapshot`).

Resumable (`resume`): once the newest start seen is `T` (a point), a window that ends
at or before `T` is final (a later event starts at or after `T`: it adds no point before
it and lives in no window before it). A step emits those; it carries the events alive
after `T` (`end > T`), so the state is the events alive at one instant: open-ended and
long events stay in it as long as they live.

On a stream (`bound`: every later event starts at or after `B`), the frontier moves on
from `T` to the latest end point at or before `B`: a window ending there is final for
the same reason. The frontier stays a point, so that no window straddles it (the next
step's windows begin there); `wake` is the horizon that reaches the next end point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...kernels import intervals as iv
from ...plan.intervals import SnapshotWindows
from ..aggregates.aggregate import AggregateJob
from .intervals import IntervalKernel
from .resumable import Horizon, KernelState, Scalar


@dataclass(frozen=True)
class SnapshotKernel(IntervalKernel):
    """Snapshot windows over each key's lifetimes; several short key runs as one, each
    run getting its own points."""

    window: SnapshotWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        return iv.snapshot(start, end, gather=self.gather, runs=runs)

    def bound(self, horizon: Horizon | None) -> int | None:
        """A stream's horizon as the first tick a later event can start at."""
        return self.first_start(horizon)

    def wake(self, state: KernelState) -> Horizon | None:
        """The horizon at which the earliest end point after the frontier becomes one
        (a step then emits the window ending there); None without carried events that
        end."""
        if state.rows.num_rows == 0:
            return None
        _, end = self.lifetimes(state.rows)
        frontier = state.scalars.get("newest")
        assert frontier is None or isinstance(frontier, int)
        ends = end[(end != iv.END_OF_TIME) & (end > (frontier if frontier is not None
                                                     else np.iinfo(np.int64).min))]
        if len(ends) == 0:
            return None
        return (int(ends.min()) - 1) * self.unit + 1  # the least h whose bound reaches it

    def resume(self, table: pa.Table, scalars: dict[str, Scalar], final: bool,
               bound: int | None = None
               ) -> tuple[pa.RecordBatch, iv.IntArray, dict[str, Scalar]]:
        """The windows of the carried events and the new chunk, recomputed with starts
        clipped up to the previous frontier `before` (the windows from there on are
        the same; aggregates still see the real starts): those beginning at or after
        `before` and, in a step, ending at or before the frontier, the newest start `T`
        or, under a stream's `bound`, the latest end point at or before it if later;
        the events alive after the frontier are carried."""
        start, end = self.lifetimes(table)
        before, newest = self.newest(start, scalars)
        if before is not None:
            newest = max(newest, before)
        if bound is not None and not final:
            reached = end[(end != iv.END_OF_TIME) & (end <= bound)]
            if len(reached):
                newest = max(newest, int(reached.max()))
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
        """As every kind's, except for an aggregation weighing lifetimes (the
        time-weighted mean): every member of a snapshot window lives through all of it,
        so all weights are equal and it is the mean, which the alive kernels compute
        without listing members (`alive.ALIVE_KERNELS`)."""
        return not job.definition.lifetimes and super().needs_members(job)
