"""Partial states of numbered windows: a window's rows so far reduced to one row of
states (its row count, and per aggregation its value count `n{i}` and its
`runtime.aggregates.partials` state), so a kernel can carry an open window of any length as a
handful of values instead of its rows.

A table of states has a `GROUP` column (the window's number, the caller's), `ROWS`, and
the aggregations' columns; several rows may share a group (states of different parts of
its rows), and `merge` reduces them to one per group. Every aggregation here must have a
partial state (`Definition.stream_panes` holds its value class): `holds` says whether a
kernel's aggregations do.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..codecs.arrays import validity
from .aggregate import AggregateJob
from .partials import Chunk, Layout, partial_of

GROUP, ROWS = "__wisp_group", "__wisp_rows"
IntArray = npt.NDArray[np.int64]


def holds(aggregates: tuple[AggregateJob, ...]) -> bool:
    """Whether every aggregation has a partial state that merges in any order (its value
    class in `Definition.stream_panes`; no lifetimes)."""
    return all(not job.lifetimes and (job.column is None
                                      or job.value_class in job.definition.stream_panes)
               for job in aggregates)


@dataclass(frozen=True)
class WindowStates:
    """The partial states of `aggregates` over rows of the `layout`'s columns."""

    aggregates: tuple[AggregateJob, ...]
    layout: Layout

    @cached_property
    def schema(self) -> pa.Schema:
        fields = [pa.field(GROUP, pa.int64()), pa.field(ROWS, pa.int64())]
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            fields.append(pa.field(f"n{i}", pa.int64()))
            fields += [pa.field(name, kind) for name, kind in
                       partial_of(job).fields(job, i, self.layout)]
        return pa.schema(fields)

    def table(self, columns: dict[str, Any]) -> pa.Table:
        """Columns of states (numpy or Arrow) as a table of the schema's types."""
        arrays = []
        for name, values in columns.items():
            kind = self.schema.field(name).type
            if isinstance(values, (pa.Array, pa.ChunkedArray)):
                arrays.append(values if values.type == kind else values.cast(kind))
            else:
                arrays.append(pa.array(values, kind))
        return pa.table(arrays, names=list(columns))

    def empty(self) -> pa.Table:
        return self.schema.empty_table()

    def add(self, rows: pa.Table, times: npt.NDArray[Any], members: IntArray,
            starts: IntArray, groups: IntArray) -> pa.Table:
        """The states of windows `groups[g]`, each of the rows `members[starts[g]:
        starts[g + 1]]` of `rows` (in window order; `times` their ticks). No window may
        be empty."""
        if len(groups) == 0:
            return self.empty()
        taken = pa.array(members)
        picked = times[members]
        ordering = tuple(rows.column(name).combine_chunks().take(taken)
                         for name in self.layout.order)
        columns: dict[str, Any] = {GROUP: groups,
                                   ROWS: np.diff(np.r_[starts, len(members)])}
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            column = rows.column(job.column).combine_chunks().take(taken)
            by = None if job.by is None else rows.column(job.by).combine_chunks().take(taken)
            valid = validity(column if by is None else by)
            columns[f"n{i}"] = np.add.reduceat(valid.astype(np.int64), starts)
            chunk = Chunk(column, valid, picked, starts, by, ordering)
            columns.update(partial_of(job).add(job, i, chunk, self.layout))
        return self.table(columns)

    def frames(self, rows: pa.Table, times: npt.NDArray[Any], lo: IntArray, hi: IntArray,
               groups: IntArray) -> pa.Table:
        """The states of the non-empty frames `[lo, hi)` of `rows`, window `groups[g]`
        for frame `g`. Frames that all end at the same row (windows still open, all
        reaching the newest row) add each row once: the segments between their first
        rows, then suffix merges in `log2` rounds (`suffixes`); other frames add their
        rows frame by frame."""
        full = hi > lo
        lo, hi, groups = lo[full], hi[full], groups[full]
        if len(lo) == 0:
            return self.empty()
        if (hi != hi[0]).any():
            return self.add(rows, times, *frame_members(lo, hi, groups))
        firsts = np.unique(lo)
        members = np.arange(int(firsts[0]), int(hi[0]), dtype=np.int64)
        segments = self.add(rows, times, members, firsts - firsts[0],
                            np.arange(len(firsts), dtype=np.int64))
        suffixes = self.suffixes(segments)
        taken = suffixes.take(pa.array(np.searchsorted(firsts, lo)))
        return taken.set_column(0, GROUP, pa.array(groups, pa.int64()))

    def suffixes(self, states: pa.Table) -> pa.Table:
        """Row `k` of `states` (groups `0..K-1`, in order) merged with every row after it:
        each round merges row `k` with row `k + d`, `d` doubling."""
        count, step = states.num_rows, 1
        while step < count:
            later = states.slice(step).set_column(
                0, GROUP, pa.array(np.arange(count - step, dtype=np.int64)))
            states = self.merge(pa.concat_tables([states, later]))
            step *= 2
        return states

    def prefixes(self, rows: pa.Table, times: npt.NDArray[Any], ends: IntArray,
                 groups: IntArray) -> pa.Table:
        """The states of the frames `[0, ends[g])` of `rows` (`ends` increasing, the
        first at least 1), window `groups[g]` for frame `g`: each row added once, to
        the segment between two ends, then prefix merges in `log2` rounds."""
        if len(ends) == 0:
            return self.empty()
        firsts = np.r_[0, ends[:-1]].astype(np.int64)
        members = np.arange(int(ends[-1]), dtype=np.int64)
        states = self.add(rows, times, members, firsts,
                          np.arange(len(ends), dtype=np.int64))
        count, step = states.num_rows, 1
        while step < count:
            earlier = states.slice(0, count - step).set_column(
                0, GROUP, pa.array(np.arange(step, count, dtype=np.int64)))
            states = self.merge(pa.concat_tables([states, earlier]))
            step *= 2
        return states.set_column(0, GROUP, pa.array(groups, pa.int64()))

    def merge(self, states: pa.Table) -> pa.Table:
        """One row per group of `states`, in group order."""
        if states.num_rows == 0:
            return states
        groups = states.column(GROUP).to_numpy()
        order: IntArray = np.argsort(groups, kind="stable")
        ordered = groups[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        if len(starts) == len(groups) and (order == np.arange(len(groups))).all():
            return states

        def total(name: str) -> Any:
            return np.add.reduceat(states.column(name).to_numpy()[order], starts)

        columns: dict[str, Any] = {GROUP: ordered[starts], ROWS: total(ROWS)}
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                continue
            columns[f"n{i}"] = total(f"n{i}")
            columns.update(partial_of(job).merge(job, i, states, order, starts))
        return self.table(columns)

    def finish(self, merged: pa.Table) -> list[pa.Array]:
        """Each aggregation's result for each row of `merged` (one row per group)."""
        whole = np.arange(merged.num_rows, dtype=np.int64)
        results = []
        for i, job in enumerate(self.aggregates):
            if job.column is None:
                rows = merged.column(ROWS).to_numpy()
                results.append(pa.array(rows, pa.int64()).cast(job.output_type))
                continue
            partial = partial_of(job)
            finished = partial.merge(job, i, merged, whole, whole)
            results.append(partial.finish(job, i, finished,
                                          merged.column(f"n{i}").to_numpy()))
        return results


def frame_members(lo: IntArray, hi: IntArray, groups: IntArray
                  ) -> tuple[IntArray, IntArray, IntArray]:
    """For `WindowStates.add`: the positions of frames `[lo, hi)`, where each begins
    among them and its group, the empty frames left out."""
    spans = hi - lo
    full = spans > 0
    spans, first = spans[full], lo[full]
    starts = np.cumsum(spans) - spans
    members = np.repeat(first - starts, spans) + np.arange(int(spans.sum()), dtype=np.int64)
    return members.astype(np.int64), starts.astype(np.int64), groups[full]

