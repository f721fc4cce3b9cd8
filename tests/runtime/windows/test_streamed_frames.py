"""The frames kernel without Spark: streamed in chunks it gives the same rows as the
whole-run computation, and it holds only a bounded number of events of a hot key."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from jobs import built_in_job

from wisp.plan.frames import Frame, RangeFrame, RowsFrame
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.frames import FrameKernel

SCHEMA = pa.schema([("k", pa.int64()), ("window_start", pa.int64()),
                    ("window_end", pa.int64()), ("time", pa.int64()),
                    ("sum_v", pa.float64()), ("mean_v", pa.float64()),
                    ("max_v", pa.float64()), ("first_v", pa.float64())])
JOBS = (built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None))
FRAMES: list[Frame] = [RowsFrame(-9, 0, True), RowsFrame(-30, 5, False), RowsFrame(3, 8, True),
                       RowsFrame(-8, -2, False), RangeFrame(-500, 0, "both"),
                       RangeFrame(-300, 200, "neither"), RangeFrame(50, 400, "left")]


def events(n: int, keys: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = np.sort(rng.integers(0, keys, n))
    t = np.concatenate([np.sort(rng.integers(0, 20 * n, (k == key).sum())) for key in range(keys)])
    v = rng.normal(size=n)
    v[rng.random(n) < 0.05] = np.nan
    mask = rng.random(n) < 0.05
    return pa.table({"k": k, "t": t, "v": pa.array(v, mask=mask)})


@pytest.mark.parametrize("keys", [3, 300])
@pytest.mark.parametrize("frame", FRAMES, ids=repr)
def test_chunks_give_the_whole_run_result(frame: Frame, keys: int) -> None:
    # 3 keys: long runs streamed in chunks; 300 keys (about 10 events each): short
    # runs computed several at a time, frames clipped to each run
    table = events(3000, keys)
    kernel = FrameKernel(("k",), "t", "integer", 1, frame, JOBS, SCHEMA)
    whole = pa.Table.from_batches(
        [kernel.run_group(g) for g in key_runs(iter(table.to_batches(1000)), ("k",))],
        schema=SCHEMA)
    for chunk_rows, batch_rows in ((1, 7), (37, 11), (500, 64)):
        small = dataclasses.replace(kernel, chunk_rows=chunk_rows)
        streamed = pa.Table.from_batches(list(small(iter(table.to_batches(batch_rows)))),
                                         schema=SCHEMA)
        assert streamed.num_rows == whole.num_rows
        for name in SCHEMA.names:
            a = whole.column(name).to_numpy(zero_copy_only=False)
            b = streamed.column(name).to_numpy(zero_copy_only=False)
            if name in ("sum_v", "mean_v"):
                np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
            else:
                np.testing.assert_array_equal(b, a)


def test_hot_key_is_held_in_bounded_memory() -> None:
    """1M events of one key, generated batch by batch: the kernel's Arrow allocations
    stay bounded by a few chunks, far below the key's run (24 MB of input)."""
    n, batch = 1_000_000, 10_000

    def batches() -> Iterator[pa.RecordBatch]:
        for begin in range(0, n, batch):
            t = np.arange(begin, begin + batch, dtype=np.int64)
            yield pa.record_batch({"k": np.zeros(batch, dtype=np.int64), "t": t,
                                   "v": np.sin(t.astype(np.float64))})

    for frame in (RowsFrame(-999, 0, False), RangeFrame(-5000, 0, "both")):
        kernel = FrameKernel(("k",), "t", "integer", 1, frame, JOBS, SCHEMA,
                             chunk_rows=1 << 16)
        peak = rows = 0
        base = pa.total_allocated_bytes()
        for out in kernel(batches()):
            rows += out.num_rows
            peak = max(peak, pa.total_allocated_bytes() - base)
            del out
        assert rows == (n - 999 if isinstance(frame, RowsFrame) else n)
        assert peak < 8 * (1 << 20), peak  # measured: ~1.7 MB
