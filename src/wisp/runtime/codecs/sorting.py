"""Sorting a partition's events in the Python worker, instead of in Spark.

A kernel needs each key's events contiguous and in (time, tie-break) order. Spark's
`sortWithinPartitions` gives that, but its sort of rows that then cross to Python
cost more than the whole Arrow kernel: shuffle plus Spark's sort plus an identity
`mapInArrow` measured slower than shuffle plus an identity `mapInArrow` that sorts each
partition with Arrow (see BENCHMARKS.md).

`SortedInput` wraps a kernel: it gathers the partition's batches, sorts them with
Arrow and hands the sorted batches to the kernel. The order is Spark's ascending,
nulls-first order, floating NaN after every number (Arrow alone would put NaN with the
nulls), ties kept in arrival order. A partition larger than `SORT_BUDGET_BYTES` is never
held whole: each budget's worth of events is sorted and spilled to an Arrow IPC file in
Spark's local directory, and the sorted files are merged a block at a time (`merged`),
so memory stays about one budget plus one block per file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..limits import cap_megabytes

SORT_BUDGET_BYTES = 256 << 20
"""Arrow bytes of events a worker sorts in memory; beyond it, sorted runs go to disk."""
MERGE_ROWS = 1 << 16
"""Events read from each spilled run at a time while merging."""

Kernel = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class SortedInput:
    """A kernel fed its partition sorted by `columns` (ascending, nulls first)."""

    kernel: Kernel
    columns: tuple[str, ...]
    budget_bytes: int = SORT_BUDGET_BYTES
    block_rows: int = MERGE_ROWS

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return self.kernel(sorted_batches(batches, self.columns, self.budget(),
                                          self.block_rows))

    def budget(self) -> int:
        """The bytes sorted in memory: `budget_bytes`, within the worker's cap."""
        return sort_budget(self.budget_bytes)


SORT_SHARE_OF_CAP = 16
"""Under a Python worker memory cap (`spark.executor.pyspark.memory`), the events sorted
in memory take at most this fraction of it: the cap bounds the worker's address space
(the interpreter, numpy and Arrow's own reservations included), and a sort's run, its
permutation and its sorted copy live at once."""


def sort_budget(budget_bytes: int = SORT_BUDGET_BYTES) -> int:
    """The bytes of events a worker sorts in memory: `budget_bytes`, within its share
    of the worker's memory cap (`SORT_SHARE_OF_CAP`)."""
    return min(budget_bytes, capped_budget(SORT_SHARE_OF_CAP))


def capped_budget(share: int) -> int:
    """1/`share` of the worker's memory cap in bytes: Spark gives the worker its
    `spark.executor.pyspark.memory` as PYSPARK_EXECUTOR_MEMORY_MB (and sets the
    address-space limit from it); no cap, no limit."""
    megabytes = cap_megabytes()
    return 1 << 62 if megabytes is None else (megabytes << 20) // share


def sort_order(table: pa.Table, columns: tuple[str, ...]) -> pa.Array:
    """Indices that sort `table` by `columns` in Spark's ascending, nulls-first order
    (stable: equal rows keep their order)."""
    keys: list[pa.Array | pa.ChunkedArray] = []
    for name in columns:
        column = table.column(name)
        if pa.types.is_floating(column.type):
            keys.append(pc.is_nan(column))  # NaN after every number, nulls still first
        keys.append(column)
    names = [f"k{i}" for i in range(len(keys))]
    by = pa.table(keys, names=names)
    if _PER_KEY_NULLS:
        return pc.sort_indices(by, sort_keys=[(name, "ascending", "at_start")
                                              for name in names])
    return pc.sort_indices(by, sort_keys=[(name, "ascending") for name in names],
                           null_placement="at_start")


_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25
"""pyarrow 25 moved the null placement into each sort key (and deprecated the option)."""


def order_ranks(keys: list[pa.Array]) -> npt.NDArray[np.int64]:
    """Each row's position in window order by `keys` (time, then the tie-break columns,
    Spark's ascending order); equal rows keep their order."""
    table = pa.table(keys, names=[f"k{j}" for j in range(len(keys))])
    indices = sort_order(table, tuple(table.column_names)).to_numpy()
    ranks = np.empty(len(indices), dtype=np.int64)
    ranks[indices] = np.arange(len(indices))
    return ranks


def sorted_batches(batches: Iterable[pa.RecordBatch], columns: tuple[str, ...],
                   budget_bytes: int = SORT_BUDGET_BYTES, block_rows: int = MERGE_ROWS
                   ) -> Iterator[pa.RecordBatch]:
    """The batches' rows sorted by `columns`, in memory up to `budget_bytes`, else by
    sorted runs spilled to disk and merged `block_rows` rows of each run at a time.
    Batches out are no longer than the longest batch in (the session's Arrow batch
    size). (`SortedRuns` pushed each batch, then closed.)"""
    runs = SortedRuns(columns, budget_bytes, block_rows)
    try:
        for batch in batches:
            runs.push(batch)
    except BaseException:
        runs.discard()
        raise
    yield from runs.close()


class SortedRuns:
    """`sorted_batches` driven by its input: `push` each batch as it comes (past the
    budget, the batches held so far are sorted and spilled as a run), then `close` for
    every row, sorted. A caller handed batches one at a time (a table function's
    `eval`) holds at most the budget in memory, as the API's worker does."""

    def __init__(self, columns: tuple[str, ...], budget_bytes: int = SORT_BUDGET_BYTES,
                 block_rows: int = MERGE_ROWS) -> None:
        self.columns = columns
        self.budget_bytes = budget_bytes
        self.block_rows = block_rows
        self.pending: list[pa.RecordBatch] = []
        self.size = 0
        self.longest = 1
        self.spill: _Spill | None = None

    def push(self, batch: pa.RecordBatch) -> None:
        """Take the next batch."""
        if batch.num_rows == 0:
            return
        self.pending.append(batch)
        self.size += batch.nbytes
        self.longest = max(self.longest, batch.num_rows)
        if self.size > self.budget_bytes:
            self.spill = self.spill or _Spill(self.block_rows)
            self.spill.write(_sorted_table(self.pending, self.columns))
            self.pending, self.size = [], 0

    def close(self) -> Iterator[pa.RecordBatch]:
        """Every row pushed, sorted; the spilled runs are removed once read."""
        pending, self.pending, self.size = self.pending, [], 0
        try:
            if self.spill is None:
                if pending:
                    table = _sorted_table(pending, self.columns)
                    pending = []
                    yield from table.to_batches(max_chunksize=self.longest)
                return
            if pending:
                self.spill.write(_sorted_table(pending, self.columns))
                pending = []
            spill = self.spill
            for table in merged([spill.runs(i) for i in range(spill.count)], self.columns):
                yield from table.to_batches(max_chunksize=self.longest)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the spilled runs (a sort abandoned, or read)."""
        if self.spill is not None:
            self.spill.close()
            self.spill = None


def _sorted_table(batches: list[pa.RecordBatch], columns: tuple[str, ...]) -> pa.Table:
    table = pa.Table.from_batches(batches)
    return table.take(sort_order(table, columns))


def local_dir() -> str | None:
    """Where the worker spills: the first of Spark's local directories, which Spark
    hands its Python workers as `SPARK_LOCAL_DIRS`; the system's temporary directory
    outside Spark."""
    for entry in os.environ.get("SPARK_LOCAL_DIRS", "").split(","):
        if entry and os.path.isdir(entry):
            return entry
    return None


class _Spill:
    """Sorted runs written as Arrow IPC files in one temporary directory."""

    def __init__(self, block_rows: int) -> None:
        self.directory = tempfile.TemporaryDirectory(prefix="wisp-sort-", dir=local_dir())
        self.block_rows = block_rows
        self.count = 0

    def path(self, index: int) -> str:
        return os.path.join(self.directory.name, f"run-{index}.arrow")

    def write(self, table: pa.Table) -> None:
        with pa.ipc.new_file(self.path(self.count), table.schema) as writer:
            writer.write_table(table, max_chunksize=self.block_rows)
        self.count += 1

    def runs(self, index: int) -> Iterator[pa.Table]:
        """Run `index`, read one block at a time (into memory of its own, so no batch
        handed on refers to the file)."""
        with pa.OSFile(self.path(index), "rb") as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                if batch.num_rows:
                    yield pa.Table.from_batches([batch])

    def close(self) -> None:
        self.directory.cleanup()


def merged(runs: list[Iterator[pa.Table]], columns: tuple[str, ...]) -> Iterator[pa.Table]:
    """Merge sorted runs (each an iterator of sorted blocks) into sorted tables.

    Each round takes every unfinished run's current block and cuts at the smallest of
    their last rows: every row that sorts before that cut row (by a stable sort of the
    blocks, concatenated in run order) is no larger than any row still to come, since
    each later row of a run is at least its block's last row. Those rows go out; from
    each block that is a prefix, and the cut row's block goes out whole, so every round
    finishes at least one block."""
    blocks: list[pa.Table | None] = [next(run, None) for run in runs]
    while True:
        live = [i for i, block in enumerate(blocks) if block is not None]
        if not live:
            return
        if len(live) == 1:
            only = live[0]
            block = blocks[only]
            assert block is not None
            yield block
            yield from runs[only]
            return
        tables = [block for block in blocks if block is not None]
        lengths = np.array([t.num_rows for t in tables])
        lasts = pa.concat_tables([t.slice(t.num_rows - 1) for t in tables])
        cut = int(np.asarray(sort_order(lasts, columns))[0])  # the slot of the cut row
        combined = pa.concat_tables(tables)
        order = np.asarray(sort_order(combined, columns))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        cut_row = offsets[cut + 1] - 1
        out = order[: int(np.flatnonzero(order == cut_row)[0]) + 1]
        yield combined.take(out)
        taken = np.bincount(np.searchsorted(offsets, out, side="right") - 1,
                            minlength=len(live))
        for slot, index in enumerate(live):
            rest = tables[slot].slice(int(taken[slot]))
            blocks[index] = rest if rest.num_rows else next(runs[index], None)
