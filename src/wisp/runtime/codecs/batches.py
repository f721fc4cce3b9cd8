"""How a partition's sorted batches reach a kernel: split into key runs (`key_runs`: one
key at a time), or gathered into groups of whole short runs and pieces of long ones
(`key_groups`, which `resumable.resumed` feeds to a kernel). Key changes are found per batch,
vectorised (`same_as_previous`), so the cost per key is a few array entries."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .arrays import validity

CHUNK_ROWS = 1 << 14
"""Events a `Rows`/`Range` kernel gathers before it computes the windows it can."""
GROUP_ROWS = 1 << 13
"""Events of short key runs a `Rows`/`Range` kernel gathers to compute at once. Arrays
of this size stay in the processor's cache: one group eight times as large measured
slower than eight of this size (blocked scans make about twenty passes over each array)."""


def same_as_previous(column: pa.Array) -> npt.NDArray[np.bool_]:
    """For rows 1..n-1: is the value equal to the row before (null equals null, NaN
    equals NaN)?"""
    current, previous = column.slice(1), column.slice(0, len(column) - 1)
    equal = np.asarray(pc.fill_null(pc.equal(current, previous), False)
                       .to_numpy(zero_copy_only=False), dtype=bool)
    both_null = ~validity(current) & ~validity(previous)
    same = equal | both_null
    if pa.types.is_floating(column.type):
        both_nan = np.asarray(pc.fill_null(pc.and_(pc.is_nan(current), pc.is_nan(previous)),
                                           False).to_numpy(zero_copy_only=False), dtype=bool)
        same |= both_nan
    return same


def key_runs(batches: Iterator[pa.RecordBatch], keys: tuple[str, ...]) -> Iterator[pa.Table]:
    """Split a stream of batches, sorted by key, into one table per key."""
    pending: list[pa.RecordBatch] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if pending and _new_key(pending[-1], batch, keys):
            yield pa.Table.from_batches(pending)
            pending = []
        cuts = [0, *_key_cuts(batch, keys), batch.num_rows]
        for begin, stop in itertools.pairwise(cuts[:-1]):
            pending.append(batch.slice(begin, stop - begin))
            yield pa.Table.from_batches(pending)
            pending = []
        pending.append(batch.slice(cuts[-2], cuts[-1] - cuts[-2]))
    if pending:
        yield pa.Table.from_batches(pending)


Group = tuple[pa.Table, npt.NDArray[np.int64] | None, bool, bool]
"""An item of `key_groups`: `(table, starts, first, last)`."""


def key_groups(batches: Iterator[pa.RecordBatch], keys: tuple[str, ...], limit: int
               ) -> Iterator[Group]:
    """The key runs in tables of about `limit` rows: several whole runs shorter than
    `limit` together, `(table, starts, True, True)` with `starts` where each run begins
    and the table's length; a longer run in consecutive pieces of about `limit` rows
    (fewer at the end), `(table, None, first, last)`: `first` when the piece begins the
    run, `last` when it ends it (then the piece may be empty). Key changes are found per
    batch, vectorised, so the cost per key is a few array entries, not Python steps.
    (`KeyGroups` pushed each batch, then closed.)"""
    groups = KeyGroups(keys, limit)
    for batch in batches:
        yield from groups.push(batch)
    yield from groups.close()


class KeyGroups:
    """`key_groups` driven by its input: `push` each batch as it comes, in order, for
    the items it completes, then `close` for the rest. A caller that is handed batches
    one at a time (a table function's `eval`) gets the same items as one that hands
    over an iterator."""

    def __init__(self, keys: tuple[str, ...], limit: int) -> None:
        self.keys = keys
        self.limit = limit
        self.group: list[pa.RecordBatch] = []
        self.starts: list[int] = [0]
        self.run: list[pa.RecordBatch] = []  # the open run's rows not yet yielded
        self.run_rows = 0
        self.streaming = False  # the open run is longer than `limit` and partly yielded
        self.schema: pa.Schema | None = None
        self.previous: pa.RecordBatch | None = None
        self.group_limit = min(limit, GROUP_ROWS)

    def whole_runs(self) -> Group:
        """The group of whole runs, which then begins anew."""
        found = (pa.Table.from_batches(self.group, schema=self.schema),
                 np.array(self.starts, dtype=np.int64), True, True)
        self.group, self.starts = [], [0]
        return found

    def push(self, batch: pa.RecordBatch) -> Iterator[Group]:
        """The items that `batch`, the next of the input, completes."""
        if batch.num_rows == 0:
            return
        schema = self.schema = batch.schema
        continues = self.previous is not None and not _new_key(self.previous, batch,
                                                               self.keys)
        self.previous = batch
        cuts = _key_cuts(batch, self.keys)
        bounds = [0, *cuts, batch.num_rows]
        if not continues and (self.run or self.streaming):  # the open run ended before
            if self.streaming:
                yield pa.Table.from_batches(self.run, schema=schema), None, False, True
            else:
                self.group += self.run
                self.starts.append(self.starts[-1] + self.run_rows)
            self.run, self.run_rows, self.streaming = [], 0, False
        head = batch.slice(0, bounds[1])
        if len(bounds) > 2:  # the head's run ends in this batch, whole runs follow
            if self.streaming:
                yield (pa.Table.from_batches([*self.run, head], schema=schema), None,
                       False, True)
            else:
                self.group += [*self.run, head]
                self.starts.append(self.starts[-1] + self.run_rows + head.num_rows)
            self.run, self.run_rows, self.streaming = [], 0, False
            if len(bounds) > 3:
                middle = batch.slice(bounds[1], bounds[-2] - bounds[1])
                self.group.append(middle)
                self.starts += [self.starts[-1] + b - bounds[1] for b in bounds[2:-1]]
            head = batch.slice(bounds[-2])
        self.run.append(head)
        self.run_rows += head.num_rows
        if self.starts[-1] >= self.group_limit:
            yield self.whole_runs()
        if self.run_rows >= self.limit:
            if len(self.starts) > 1:
                yield self.whole_runs()
            yield (pa.Table.from_batches(self.run, schema=schema), None,
                   not self.streaming, False)
            self.run, self.run_rows, self.streaming = [], 0, True

    def close(self) -> Iterator[Group]:
        """The items the end of the input completes."""
        if self.streaming:
            yield pa.Table.from_batches(self.run, schema=self.schema), None, False, True
        elif self.run:
            self.group += self.run
            self.starts.append(self.starts[-1] + self.run_rows)
        self.run, self.run_rows, self.streaming = [], 0, False
        if len(self.starts) > 1:
            yield self.whole_runs()


def _new_key(previous: pa.RecordBatch, batch: pa.RecordBatch, keys: tuple[str, ...]) -> bool:
    """Whether `batch` begins with another key than `previous` ends with."""
    if not keys:
        return False
    glue = [previous.slice(previous.num_rows - 1), batch.slice(0, 1)]
    return not all(same_as_previous(pa.concat_arrays([g.column(k) for g in glue]))[0]
                   for k in keys)


def _key_cuts(batch: pa.RecordBatch, keys: tuple[str, ...]) -> list[int]:
    """The positions in `batch` where a new key begins (after the first row)."""
    if not keys or batch.num_rows < 2:
        return []
    same = np.ones(batch.num_rows - 1, dtype=bool)
    for k in keys:
        same &= same_as_previous(batch.column(k))
    cuts: list[int] = (np.nonzero(~same)[0] + 1).tolist()
    return cuts
