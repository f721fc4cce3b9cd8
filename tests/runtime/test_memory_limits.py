"""A state that grows with its key's history meets the worker's memory cap as a
`WispMemoryError` naming the setting, never a bare `MemoryError` (`runtime.limits`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from jobs import built_in_job

from wisp import WispError, WispMemoryError
from wisp.runtime.codecs.sorting import capped_budget
from wisp.runtime.limits import WithinMemory
from wisp.runtime.windows.sessions import SessionKernel


def endless_session(chunk_rows: int, collect: bool = True) -> SessionKernel:
    """A session that never breaks (no `max_duration`) over one key, its output one row
    at the end. With `collect` (an aggregation that reads every value) its state is
    every row so far; with `count()` alone, a few accumulators."""
    jobs = [built_in_job("count", None, "none", pa.int64(), None)]
    if collect:
        jobs.append(built_in_job("collect", "v", "float", pa.list_(pa.float64()), None))
    names = ["count", "collect_v"]
    schema = pa.schema([pa.field("k", pa.string()),
                        *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                            "time")],
                        *[pa.field(name, job.output_type)
                          for name, job in zip(names, jobs, strict=False)]])
    return SessionKernel(("k",), "t", None, "integer", 0, 1 << 40, None, tuple(jobs),
                         schema, chunk_rows)


def one_key(n: int) -> Iterator[pa.RecordBatch]:
    table = pa.table({"k": pa.array(["hot"] * n), "t": pa.array(np.arange(n)),
                      "v": pa.array(np.arange(n, dtype=np.float64))})
    return iter(table.to_batches(max_chunksize=4096))


def test_an_unbounded_state_fails_at_its_share_of_the_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a 1 MiB cap a state and the rows read with it may take 256 KiB: an endless
    session's state (every row so far, about 21 bytes a row here) passes it after
    about 12K rows of the key."""
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "1")
    kernel = WithinMemory(endless_session(chunk_rows=1024))
    with pytest.raises(WispMemoryError, match=re.escape(
            "`spark.executor.pyspark.memory` must hold the state of one key, found ")) \
            as caught:
        for _ in kernel(one_key(50_000)):
            pass
    text = str(caught.value)
    assert "rows carried (key {'k': 'hot'}) and " in text
    assert "past 1/4 of the worker's cap of 1 MiB" in text
    assert "a session without max_duration" in text
    assert isinstance(caught.value, MemoryError) and isinstance(caught.value, WispError)


def test_an_endless_session_of_accumulated_aggregates_stays_under_the_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same endless session counted alone carries its accumulators, not its rows:
    under the same 1 MiB cap it runs through."""
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "1")
    kernel = endless_session(1024, collect=False)
    assert kernel.accumulates
    out = list(WithinMemory(kernel)(one_key(50_000)))
    assert [r["count"] for b in out for r in b.to_pylist()] == [50_000]


def test_without_a_cap_the_state_is_not_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_EXECUTOR_MEMORY_MB", raising=False)
    out = list(endless_session(1024)(one_key(50_000)))
    assert [r["count"] for b in out for r in b.to_pylist()] == [50_000]
    assert capped_budget(16) == 1 << 62


def test_a_memory_error_in_a_kernel_names_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "1024")

    def exhausted(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield next(batches)
        raise MemoryError

    out = WithinMemory(exhausted)(one_key(10_000))
    assert next(out).num_rows == 4096
    with pytest.raises(WispMemoryError, match=re.escape(
            "`spark.executor.pyspark.memory` must hold what the window needs per key, "
            "found the Python worker out of memory (cap: 1,024 MiB)")):
        next(out)
