"""The kernel states of a bucket's keys stored together: their rows as one Arrow table
(one IPC stream for the bucket instead of one per key), each key's row count and
scalars in columns beside its key.

Packed only when every key's state has rows of one schema and no partials (every
kernel fed in order but those carrying window states); otherwise each key's state
keeps its own bytes (`KernelState.to_bytes`), as before. Reading gives each key a slice
of the one table (no copy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..windows.resumable import KernelState, scalars_json, scalars_of
from .operator import table_bytes, table_of

KERNEL = "kernel"
KERNEL_ROWS = "kernel_rows"
SCALARS = "scalars"


@dataclass(frozen=True)
class Packed:
    """A bucket's kernel states as columns (one value per key) and, when packed, the
    bytes of their rows' one table."""

    columns: dict[str, pa.Array]
    rows: bytes | None


def packable(states: list[KernelState | None]) -> bool:
    """Whether the states share one rows schema and carry no partials."""
    found = [s for s in states if s is not None]
    if not found or any(s.partials is not None for s in found):
        return False
    schema = found[0].rows.schema
    return all(s.rows.schema.equals(schema, check_metadata=True) for s in found)


def pack(states: list[KernelState | None]) -> Packed:
    """The states as stored: packed when `packable`, else each as its own bytes."""
    if not packable(states):
        return Packed({KERNEL: pa.array([None if s is None else s.to_bytes()
                                         for s in states], pa.binary())}, None)
    found = [s.rows for s in states if s is not None]
    rows = pa.concat_tables(found).combine_chunks()  # one record batch: one slice a key
    return Packed({
        KERNEL: pa.nulls(len(states), pa.binary()),
        KERNEL_ROWS: pa.array([None if s is None else s.rows.num_rows for s in states],
                              pa.int64()),
        SCALARS: pa.array([None if s is None else scalars_json(s.scalars)
                           for s in states], pa.string())}, table_bytes(rows))


def unpack(table: pa.Table, rows: bytes | None) -> list[KernelState | None]:
    """The states `pack` stored (`table`: its columns, one row per key)."""
    kernels = table.column(KERNEL).to_pylist()
    if rows is None or KERNEL_ROWS not in table.column_names:
        return [None if k is None else KernelState.from_bytes(k) for k in kernels]
    counts = table.column(KERNEL_ROWS).to_pylist()
    scalars = table.column(SCALARS).to_pylist()
    data = table_of(rows)
    starts = np.cumsum([0, *[0 if c is None else c for c in counts]])
    return [None if count is None else KernelState(
        data.slice(int(start), count), scalars_of(text))
        for count, text, start in zip(counts, scalars, starts[:-1], strict=True)]
