"""The k-collections (`first_k`, `last_k`, `top_k`, `bottom_k`) and `histogram` on the
executors: their frame kernels (`FRAME_KERNELS` of `aggregate`, over the numpy
selections of `kernels/k_lists.py`) and their partial states (`ALGEBRAS` of
`partials`, for panes, streams and open windows).

Order and equality, as Spark's: a frame's rows are in window order already (time, then
the tie-break columns); values compare by their dense ranks in Arrow's sort (NaN the
greatest, `-0.0` equal to `0.0`, strings, dates and decimals in their own order).
`top_k` gives the largest first, `bottom_k` the smallest first, equal values in window
order; `last_k` its values in window order too (the newest last). `histogram` counts
each distinct value, every NaN one value and `-0.0` as `0.0` (its key is `0.0`), its
entries in ascending order of value. An empty frame gives an empty array or map.

Partial states keep at most `k` values per group with the time and tie-break columns
of their rows (as `partials.Pick` keeps one), so that states merged in any order pick
the same rows: a merge lists the states' values and picks again. A histogram's state is
its distinct values and their counts; a merge adds the counts of equal values.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import k_lists as kl
from ...kernels.window_agg import Lists
from ..codecs.arrays import dense_ranks
from ..codecs.grouping import normalized
from ..codecs.sorting import order_ranks

if TYPE_CHECKING:
    from collections.abc import Callable

    from .aggregate import AggregateJob, Frames
    from .partials import Chunk, Columns, Layout

IntArray = npt.NDArray[np.int64]


def lists_array(lists: Lists, column: pa.Array, output: pa.DataType) -> pa.Array:
    """Each list of positions of `column` as a list of its values, of type `output`."""
    items = column.take(pa.array(lists.positions, pa.int64()))
    offsets = pa.array(lists.offsets.astype(np.int32), pa.int32())
    return pa.ListArray.from_arrays(offsets, items).cast(output)


def canonical(column: pa.Array) -> pa.Array:
    """A column as Spark groups its values: every float NaN one NaN, `-0.0` as `0.0`."""
    return normalized(pa.table({"v": column})).column("v").combine_chunks()


def _first_k(f: Frames, *, latest: bool) -> pa.Array:
    """`first_k` or `last_k` (`latest`)."""
    lists = kl.frame_first_k(f.valid, f.lo, f.hi, f.job.k, latest=latest)
    return lists_array(lists, f.column, f.job.output_type)


def _best_k(f: Frames, *, largest: bool) -> pa.Array:
    """`top_k` (`largest`) or `bottom_k`."""
    lists = kl.frame_best_k(dense_ranks(f.column), f.valid, f.lo, f.hi, f.job.k,
                            largest=largest)
    return lists_array(lists, f.column, f.job.output_type)


def _histogram(f: Frames) -> pa.Array:
    column = canonical(f.column)
    ranks = dense_ranks(column)
    offsets, found, counts = kl.frame_value_counts(ranks, f.valid, f.lo, f.hi)
    representative = np.zeros(int(ranks.max(initial=0)) + 1, dtype=np.int64)
    present = np.flatnonzero(f.valid)
    representative[ranks[present]] = present
    keys = column.take(pa.array(representative[found], pa.int64()))
    return pa.MapArray.from_arrays(pa.array(offsets.astype(np.int32), pa.int32()), keys,
                                   pa.array(counts, pa.int64())).cast(f.job.output_type)


FRAME_KERNELS: dict[str, Callable[[Frames], pa.Array]] = {
    "first_k": partial(_first_k, latest=False),
    "last_k": partial(_first_k, latest=True),
    "top_k": partial(_best_k, largest=True),
    "bottom_k": partial(_best_k, largest=False),
    "histogram": _histogram,
}
"""The frame kernels of the k-collections and the histogram, by algebra (merged into
`aggregate.FRAME_KERNELS`)."""


def _flattened(states: pa.Table, name: str, order: IntArray
               ) -> tuple[pa.Array, IntArray]:
    """The items of the list column `name` of the states `order`, and each state's
    item count (a null list: none)."""
    lists = states.column(name).combine_chunks().take(pa.array(order, pa.int64()))
    lengths = np.asarray(lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False),
                         dtype=np.int64)
    return lists.flatten(), lengths


def _owners(starts: IntArray, length: int) -> IntArray:
    """The group of each of `length` items, groups beginning at `starts`."""
    result: IntArray = np.repeat(np.arange(len(starts), dtype=np.int64),
                                 np.diff(np.r_[starts, length]))
    return result


def _grouped_lists(items: pa.Array, owners: IntArray, groups: int) -> pa.Array:
    """`items` (sorted by owner) as one list per group."""
    counts = np.bincount(owners, minlength=groups)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items)


@dataclass(frozen=True)
class KList:
    """`first_k`/`last_k` (`by_value` False; `latest`: last) and `top_k`/`bottom_k`
    (`by_value`; `largest`: top): at most `k` values per group, each with its row's time
    and tie-break columns, in the order `finish` gives them."""

    by_value: bool = False
    latest: bool = False
    largest: bool = False
    ordered: ClassVar[bool] = True

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        assert job.column is not None
        fields = [(f"v{i}", pa.list_(layout.inputs.field(job.column).type)),
                  (f"k{i}", pa.list_(layout.ticks))]
        return fields + [(f"o{i}_{j}", pa.list_(layout.inputs.field(name).type))
                         for j, name in enumerate(layout.order)]

    @staticmethod
    def names(i: int, order: int) -> list[str]:
        """The state's columns: values, times, `order` tie-break columns."""
        return [f"v{i}", f"k{i}", *[f"o{i}_{j}" for j in range(order)]]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        kept = np.flatnonzero(chunk.valid)
        taken = pa.array(kept, pa.int64())
        columns = [chunk.column.take(taken), pa.array(chunk.times[kept], layout.ticks),
                   *[column.take(taken) for column in chunk.order]]
        owners = chunk.group_ids()[kept]
        return self.picked(job, self.names(i, len(chunk.order)), columns, owners,
                           chunk.groups)

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        count = sum(1 for name in states.column_names if name.startswith(f"o{i}_"))
        names = self.names(i, count)
        columns: list[pa.Array] = []
        lengths = np.zeros(len(order), dtype=np.int64)
        for name in names:
            items, lengths = _flattened(states, name, order)
            columns.append(items)
        owners = np.repeat(_owners(starts, len(order)), lengths)
        return self.picked(job, names, columns, owners, len(starts))

    def picked(self, job: AggregateJob, names: list[str], columns: list[pa.Array],
               owners: IntArray, groups: int) -> Columns:
        """Each group's picks among the candidate rows `columns` (value, time, tie-break
        columns; row `r` of group `owners[r]`), as lists named `names`."""
        sequence = order_ranks(columns[1:]) if len(owners) else np.zeros(0, np.int64)
        if self.by_value:
            ranks = dense_ranks(columns[0]) if len(owners) else sequence
            keys: tuple[IntArray, ...] = (sequence, -ranks if self.largest else ranks)
        else:
            keys = (-sequence if self.latest else sequence,)
        chosen = np.lexsort((*keys, owners))
        ordered_owners = owners[chosen]
        firsts = np.searchsorted(ordered_owners, np.arange(groups), side="left")
        place = np.arange(len(chosen)) - firsts[ordered_owners] if len(chosen) else chosen
        kept = chosen[place < job.k]
        if self.latest:  # the newest last
            kept = kept[np.lexsort((sequence[kept], owners[kept]))]
        taken = pa.array(kept, pa.int64())
        return {name: _grouped_lists(column.take(taken), owners[kept], groups)
                for name, column in zip(names, columns, strict=True)}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        values = merged[f"v{i}"]
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        result: pa.Array = values.fill_null(pa.scalar([], values.type)).cast(
            job.output_type)
        return result


class Histogram:
    """`histogram`: each group's distinct values (as Spark groups them: `canonical`)
    and their counts, as two lists in ascending order of value."""

    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        assert job.column is not None
        return [(f"h{i}", pa.list_(layout.inputs.field(job.column).type)),
                (f"c{i}", pa.list_(pa.int64()))]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        kept = np.flatnonzero(chunk.valid)
        values = chunk.column.take(pa.array(kept, pa.int64()))
        return self.counted(i, values, np.ones(len(kept), dtype=np.int64),
                            chunk.group_ids()[kept], chunk.groups)

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        values, lengths = _flattened(states, f"h{i}", order)
        counts, _ = _flattened(states, f"c{i}", order)
        owners = np.repeat(_owners(starts, len(order)), lengths)
        return self.counted(i, values, np.asarray(counts.to_numpy(zero_copy_only=False),
                                                  dtype=np.int64), owners, len(starts))

    @staticmethod
    def counted(i: int, values: pa.Array, counts: IntArray, owners: IntArray,
                groups: int) -> Columns:
        """Each group's distinct `values` with the sum of their `counts` (value `j` of
        group `owners[j]`)."""
        table = pa.table({"g": pa.array(owners, pa.int64()), "v": canonical(values),
                          "c": pa.array(counts, pa.int64())})
        summed = table.group_by(["g", "v"], use_threads=False).aggregate([("c", "sum")])
        summed = summed.sort_by([("g", "ascending"), ("v", "ascending")])
        ordered_owners = summed.column("g").to_numpy()
        return {f"h{i}": _grouped_lists(summed.column("v").combine_chunks(),
                                        ordered_owners, groups),
                f"c{i}": _grouped_lists(summed.column("c_sum").combine_chunks(),
                                        ordered_owners, groups)}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        keys, counts = (merged[name] for name in (f"h{i}", f"c{i}"))
        if isinstance(keys, pa.ChunkedArray):
            keys, counts = keys.combine_chunks(), counts.combine_chunks()
        lengths = np.asarray(keys.value_lengths().fill_null(0).to_numpy(
            zero_copy_only=False), dtype=np.int64)
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int32)
        result: pa.Array = pa.MapArray.from_arrays(
            pa.array(offsets, pa.int32()), keys.flatten(), counts.flatten()
        ).cast(job.output_type)
        return result
