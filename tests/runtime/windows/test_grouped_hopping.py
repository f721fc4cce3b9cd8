"""Windows of many short keys computed several keys at a time equal the windows of each
key computed alone. Hopping windows over point events (each key's run moved into a slot
of its own on the time axis): random keys, times before 1970, sizes that are not
multiples of the hop, alignments off the grid, and one key longer than a chunk. Snapshot
and count windows (each run restarting on its own points), with interval events too."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from jobs import built_in_job
from tables import assert_same_rows

from wisp.plan.intervals import CountWindows, HoppingWindows, IntervalWindow, SnapshotWindows
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.hopping import HORIZON_END, HORIZON_START
from wisp.runtime.windows.interval_kernels import interval_kernel

SCHEMA = pa.schema([("k", pa.int64()), ("window_start", pa.int64()),
                    ("window_end", pa.int64()), ("time", pa.int64()),
                    ("count", pa.int64()), ("sum_v", pa.float64()), ("max_v", pa.float64()),
                    ("first_v", pa.float64()), ("collect_v", pa.list_(pa.float64()))])
JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("collect", "v", "float", pa.list_(pa.float64()), None))


def events(keys: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, keys)
    sizes[keys // 2] = 20_000  # one run longer than a chunk (16,384 events)
    k = np.repeat(np.arange(keys), sizes)
    t = np.concatenate([np.sort(rng.integers(-10**6, 10**6, s)) for s in sizes])
    v = rng.normal(size=len(k))
    return pa.table({"k": k, "t": t, "v": v})


@pytest.mark.parametrize(("size", "hop", "align"), [(10, 10, 0), (100, 30, -7),
                                                   (7, 3, 5), (50, 1, 0)])
def test_keys_together_equal_keys_alone(size: int, hop: int, align: int) -> None:
    table = events(3000, size + hop)
    kernel = interval_kernel(("k",), "t", None, "integer", 0,
                             HoppingWindows(size, hop, align), JOBS, SCHEMA)
    assert kernel.keys_together
    together = pa.Table.from_batches(list(kernel(iter(table.to_batches(5_000)))))
    alone = pa.Table.from_batches(
        [kernel.run_group(g) for g in key_runs(iter(table.to_batches(5_000)), ("k",))])
    order = [("k", "ascending"), ("window_start", "ascending")]
    assert together.num_rows == alone.num_rows
    assert together.sort_by(order).equals(alone.sort_by(order))


def test_keys_far_apart_run_one_at_a_time() -> None:
    # key 0 spans both ends of the tick range: slots for all keys would leave 2^62
    # ticks, so the runs are computed one by one, with the same result
    far = 4 * 10**18
    table = pa.table({"k": np.array([0, 0, 1, 2, 2], dtype=np.int64),
                      "t": np.array([-far, far, 3, 7, 12], dtype=np.int64),
                      "v": np.arange(5, dtype=np.float64)})
    kernel = interval_kernel(("k",), "t", None, "integer", 0,
                             HoppingWindows(10, 5, 0), JOBS, SCHEMA)
    times = np.asarray(table.column("t"))
    assert kernel.slot_offsets(times, times + 1, np.array([0, 2, 3, 5], dtype=np.int64)) is None
    together = pa.Table.from_batches(list(kernel(iter(table.to_batches()))))
    alone = pa.Table.from_batches(
        [kernel.run_group(g) for g in key_runs(iter(table.to_batches()), ("k",))])
    order = [("k", "ascending"), ("window_start", "ascending")]
    assert together.num_rows == alone.num_rows == 9  # windows of 10 every 5: 4 + 2 + 3
    assert together.sort_by(order).equals(alone.sort_by(order))


@pytest.mark.parametrize("window", [SnapshotWindows(), CountWindows(3),
                                    HoppingWindows(100, 30, -7),
                                    HoppingWindows(100, 30, -7, output="changes")])
@pytest.mark.parametrize("open_share", [None, 0.0, 0.002])
def test_interval_events_keys_together_equal_keys_alone(window: IntervalWindow,
                                                        open_share: float | None) -> None:
    """Snapshot and count windows restart per run without moving any time; hopping
    windows (per window or as changes) move each run into a slot past its last end, or
    run one key at a time when the group holds an open-ended event. Keys whose events
    overlap in time; point events (`open_share` None) or interval events."""
    table = events(600, 7)
    intervals = open_share is not None
    if open_share is not None:
        rng = np.random.default_rng(8)
        lengths = rng.integers(0, 50, table.num_rows)
        ends = pa.array(table.column("t").to_numpy() + lengths,
                        mask=rng.random(table.num_rows) < open_share)
        table = table.append_column("e", ends)
        # the newest start and end of the whole input, as the plan hands them over
        newest = [pc.max(table.column("t")).as_py()] * table.num_rows
        table = table.append_column(HORIZON_START, pa.array(newest, pa.int64()))
        table = table.append_column(HORIZON_END, pa.array(
            [pc.max(table.column("e")).as_py()] * table.num_rows, pa.int64()))
    kernel = interval_kernel(("k",), "t", "e" if intervals else None, "integer", 0, window,
                             JOBS, SCHEMA)
    assert kernel.keys_together
    together = pa.Table.from_batches(list(kernel(iter(table.to_batches(5_000)))))
    alone = pa.Table.from_batches(
        [kernel.run_group(g) for g in key_runs(iter(table.to_batches(5_000)), ("k",))])
    assert together.num_rows == alone.num_rows > 0
    # float sums may round differently: the stabbing tree spans the whole group
    assert_same_rows(together, alone, ["k", "window_start", "time"])


@pytest.mark.parametrize("output", ["windows", "changes"])
def test_time_weighted_means_of_keys_together_equal_keys_alone(output: str) -> None:
    """A time-weighted mean weighs each member by its lifetime clipped to the window:
    lengths, which moving a run into its slot keeps."""
    table = events(600, 11)
    rng = np.random.default_rng(12)
    table = table.append_column("e", pa.array(table.column("t").to_numpy()
                                              + rng.integers(0, 80, table.num_rows)))
    schema = pa.schema([("k", pa.int64()), ("window_start", pa.int64()),
                        ("window_end", pa.int64()), ("time", pa.int64()),
                        ("twm_v", pa.float64())])
    jobs = (built_in_job("time_weighted_mean", "v", "float", pa.float64(), None),)
    kernel = interval_kernel(("k",), "t", "e", "integer", 0,
                             HoppingWindows(50, 20, 3, output=output), jobs, schema)
    assert kernel.keys_together
    together = pa.Table.from_batches(list(kernel(iter(table.to_batches(5_000)))))
    alone = pa.Table.from_batches(
        [kernel.run_group(g) for g in key_runs(iter(table.to_batches(5_000)), ("k",))])
    assert together.num_rows == alone.num_rows > 0
    assert_same_rows(together, alone, ["k", "window_start"])
