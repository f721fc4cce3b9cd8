"""The Python worker's memory cap, as a window's state meets it.

Spark gives each Python worker its `spark.executor.pyspark.memory` as
PYSPARK_EXECUTOR_MEMORY_MB and limits the worker's address space to it. Every window
kind carries a state bounded by its reach except where the window itself has no bound (a
`collect` or a udaf over an unbounded frame, a session that never breaks without
`max_duration`, a start read from a column without `obsolete`, delta eviction over
falling values, a punctuation that never comes): such a state grows with the key's
history. Two guards turn its end into a `WispMemoryError` naming the limit, never a bare
`MemoryError`: `check_state` before each step of a long key (a state and the rows read
with it past 1/`STATE_SHARE_OF_CAP` of the cap fail while the worker still has room to
say so), and
`WithinMemory` around the kernel (a `MemoryError` raised anywhere in it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..errors import WispMemoryError

STATE_SHARE_OF_CAP = 4
"""A key's carried state and the new rows a step reads with it (up to
`resumable.GATHER` times as many) may take at most this fraction of the worker's
memory cap: the step also makes their outputs and its own working arrays."""

CAP_SETTING = "spark.executor.pyspark.memory"
UNBOUNDED = ("a window whose state grows with its key's history (collect or a udaf over "
             "an unbounded frame, a session without max_duration, a start column without "
             "obsolete, delta eviction over falling values, a punctuation that never "
             "comes)")

Kernel = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def cap_megabytes() -> int | None:
    """The worker's memory cap in MiB, or None without one."""
    text = os.environ.get("PYSPARK_EXECUTOR_MEMORY_MB", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def check_state(carried: pa.Table, waiting: list[pa.Table], keys: tuple[str, ...]
                ) -> None:
    """Fail when a key's carried rows and the rows waiting for the next step (which
    reads them together) pass their share of the memory cap."""
    cap = cap_megabytes()
    size = carried.nbytes + sum(t.nbytes for t in waiting)
    if cap is None or size <= (cap << 20) // STATE_SHARE_OF_CAP:
        return
    key = ""
    if keys and carried.num_rows:
        key = f" (key {({k: carried.column(k)[0].as_py() for k in keys})!r})"
    raise WispMemoryError(
        f"`{CAP_SETTING}` must hold the state of one key, found {carried.num_rows:,} "
        f"rows carried{key} and {sum(t.num_rows for t in waiting):,} more to read with "
        f"them, {size / (1 << 20):,.1f} MiB, past 1/{STATE_SHARE_OF_CAP} of the "
        f"worker's cap of {cap:,} MiB: {UNBOUNDED}; raise {CAP_SETTING}, or bound the "
        "window")


def check_blob(owner: str, size: int) -> None:
    """Fail when one carried state of `owner` (a user's aggregator) takes `size` bytes,
    past its share of the worker's memory cap."""
    cap = cap_megabytes()
    if cap is None or size <= (cap << 20) // STATE_SHARE_OF_CAP:
        return
    raise WispMemoryError(
        f"`{CAP_SETTING}` must hold the state of aggregator {owner}, found "
        f"{size / (1 << 20):,.1f} MiB pickled, past 1/{STATE_SHARE_OF_CAP} of the "
        f"worker's cap of {cap:,} MiB: its state grows with the window; raise "
        f"{CAP_SETTING}, or keep a bounded state")


@dataclass(frozen=True)
class WithinMemory:
    """A kernel whose `MemoryError` becomes a `WispMemoryError` naming the limit."""

    kernel: Kernel

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return within_memory(self.kernel(batches))


def within_memory(outputs: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A kernel's `outputs`, a `MemoryError` while making them a `WispMemoryError`
    naming the limit."""
    try:
        yield from outputs
    except WispMemoryError:
        raise
    except MemoryError as error:
        cap = cap_megabytes()
        limit = "unset" if cap is None else f"{cap:,} MiB"
        raise WispMemoryError(
            f"`{CAP_SETTING}` must hold what the window needs per key, found the "
            f"Python worker out of memory (cap: {limit}): {UNBOUNDED}, or one of "
            f"a key's outputs, holds more; raise {CAP_SETTING}, or bound the "
            "window") from error
