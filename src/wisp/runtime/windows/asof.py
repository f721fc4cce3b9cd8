"""The as-of join in a Python worker: one pass over a partition of both sides' rows.

The partition holds the left and the right rows of its keys together (a boolean column
tells them apart), sorted by the `by` columns, then the time (`on`), then the right
side's tie-break. `AsOfKernel` gathers about `chunk_rows` rows, matches them all at once
(`kernels.asof.match`: a running maximum and minimum over the whole piece, every key at
once), emits one row per settled left row (the left row's columns, then the matched
right row's, null without a match), and carries the unsettled rest into the next piece.

What is carried between pieces (the memory a key can hold beyond a piece): the rows of
the last (key, time) seen, the last right row before them, and the left rows still
waiting for a right row after them: with `direction="forward"` or `"nearest"`, the left
rows of the current key after its last right row, as far back as `tolerance` reaches
(without a tolerance: all of them; `"nearest"` settles a left row early once its
backward match is no farther than the newest time seen). A piece is computed once the
rows that came since are at least as many as the carried ones, so every row is
computed a bounded number of times on average, however many rows wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels.asof import match
from ...spec.joins import Direction
from ..codecs.arrays import ticks_or_zero, validity
from ..codecs.batches import same_as_previous

CHUNK_ROWS = 1 << 16
"""Rows an as-of kernel gathers before it matches them (more when more are carried)."""


@dataclass(frozen=True)
class AsOfKernel:
    """The as-of match over a partition of sorted batches (see the module docstring).

    `keys`: the `by` columns; `on`: the time column of both sides' rows, of time kind
    `kind`; `is_left`: the boolean column true on the left rows. The output's columns are
    `left_columns` taken from each left row, then `right_columns` from its matched right
    row, under the names and types of `schema`."""

    keys: tuple[str, ...]
    on: str
    kind: str
    is_left: str
    direction: Direction
    exact: bool
    tolerance: int | float | None
    left_columns: tuple[str, ...]
    right_columns: tuple[str, ...]
    schema: pa.Schema
    chunk_rows: int = CHUNK_ROWS

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        carried: pa.Table | None = None
        waiting: list[pa.RecordBatch] = []
        waiting_rows = 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            waiting.append(batch)
            waiting_rows += batch.num_rows
            carried_rows = 0 if carried is None else carried.num_rows
            if waiting_rows >= max(self.chunk_rows, carried_rows):
                out, carried = self.step(carried, waiting, open_end=True)
                waiting, waiting_rows = [], 0
                yield from out.to_batches()
        if waiting or carried is not None:
            out, _ = self.step(carried, waiting, open_end=False)
            yield from out.to_batches()

    def step(self, carried: pa.Table | None, batches: list[pa.RecordBatch], open_end: bool
             ) -> tuple[pa.Table, pa.Table | None]:
        """The output of the settled left rows of `carried` followed by `batches`, and the
        rows to carry into the next step (None: nothing)."""
        tables = [] if carried is None else [carried]
        if batches:
            tables.append(pa.Table.from_batches(batches))
        table = pa.concat_tables(tables).combine_chunks() if len(tables) > 1 \
            else tables[0].combine_chunks()
        n = table.num_rows
        new_key = np.ones(n, dtype=bool)
        if n > 1 and self.keys:
            same = np.ones(n - 1, dtype=bool)
            for key in self.keys:
                same &= same_as_previous(_array(table, key))
            new_key[1:] = ~same
        elif n > 1:
            new_key[1:] = False
        on = _array(table, self.on)
        valid = validity(on)
        if pa.types.is_floating(on.type):
            valid &= ~np.asarray(pc.fill_null(pc.is_nan(on), False)
                                 .to_numpy(zero_copy_only=False), dtype=bool)
        ticks = ticks_or_zero(on, self.kind)
        left = _flags(_array(table, self.is_left))
        found = match(new_key, ticks, valid, left, self.direction, self.exact,
                      self.tolerance, open_end)
        rows = np.flatnonzero(left[:found.cut])
        out = self.output(table, rows, found.match[rows])
        if found.cut >= n:
            return out, None
        keep = np.arange(found.cut, n, dtype=np.int64)
        if found.context >= 0:
            keep = np.concatenate([[found.context], keep]).astype(np.int64)
        return out, table.take(pa.array(keep))

    def output(self, table: pa.Table, rows: npt.NDArray[np.int64],
               matched: npt.NDArray[np.int64]) -> pa.Table:
        """The left rows `rows` of `table`, each with the right row `matched` (-1: none)."""
        take_left = pa.array(rows, pa.int64())
        take_right = pa.array(matched, pa.int64(), mask=matched < 0)
        arrays = [_array(table, c).take(take_left) for c in self.left_columns]
        arrays += [_array(table, c).take(take_right) for c in self.right_columns]
        cast = [a if a.type == f.type else a.cast(f.type)
                for a, f in zip(arrays, self.schema, strict=True)]
        return pa.Table.from_arrays(cast, schema=self.schema)


def _array(table: pa.Table, name: str) -> pa.Array:
    column = table.column(name)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _flags(array: pa.Array) -> npt.NDArray[np.bool_]:
    """A boolean column as numpy (null as False)."""
    filled = array if array.null_count == 0 else pc.fill_null(array, False)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)
