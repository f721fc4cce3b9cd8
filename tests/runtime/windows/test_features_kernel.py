"""The feature-set kernel alone (no Spark): every window of a set at every event equals
a brute force over the key's events (one window at a time, from the windows'
definitions); a key's run cut anywhere, the state through bytes at every cut, gives the
rows of one uncut run, the cumulative window folded into a partial state where every
aggregation has one; the carried events stay within the widest bounded window's reach;
several keys at once equal each key alone."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import assert_resumes

from wisp.plan.features import FeatureFrame, PeriodsFrame
from wisp.plan.frames import RangeFrame, RowsFrame, RunningFrame
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.codecs.sorting import sort_order
from wisp.runtime.windows.features import FeaturesKernel
from wisp.runtime.windows.resumable import KernelState

HELD = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "i", "integer", pa.int64(), None),
        built_in_job("count_distinct", "i", "integer", pa.int64(), None))
"""Every aggregation with a partial state: the cumulative window folds."""
ROWS_ONLY = (*HELD[:3], built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None))
"""`collect` has no partial state: the cumulative window carries every event."""


def kernel(frames: Sequence[FeatureFrame], jobs: tuple[AggregateJob, ...],
           chunk_rows: int = 1 << 14) -> FeaturesKernel:
    fields = [pa.field("k", pa.string()), pa.field("time", pa.int64())]
    fields += [pa.field(f"{j}_{f}", job.output_type) for j, job in enumerate(jobs)
               for f in range(len(frames))]
    return FeaturesKernel(("k",), "t", "integer", 0, tuple(frames), jobs, pa.schema(fields),
                          chunk_rows, order=("i", "v"))


def events(keys: Sequence[str], times: Sequence[int], values: Sequence[float | None]
           ) -> pa.Table:
    """Sorted as the kernel reads them: key, time, then the tie-break columns `i` and
    `v` (Spark's ascending order: nulls first, NaN last)."""
    m = len(times)
    table = pa.table({"k": pa.array(keys, pa.string()), "t": pa.array(times, pa.int64()),
                      "v": pa.array(values, pa.float64()),
                      "i": pa.array([None if j % 5 == 3 else j * 7 - 20 for j in range(m)],
                                    pa.int64()),
                      "f": pa.array([None if j % 7 == 6 else j % 3 == 0 for j in range(m)],
                                    pa.bool_())})
    return table.take(sort_order(table, ("k", "t", "i", "v")))


def frame_members(frame: FeatureFrame, times: list[int], at: int,
                  flags: list[bool | None]) -> list[int]:
    """Positions of the events in `frame` at event `at` (one key's sorted events; `flags`
    their ticks)."""
    n = len(times)
    if isinstance(frame, PeriodsFrame):
        ticks = [p for p in range(at) if flags[p]]
        return list(range(ticks[-frame.n] + 1 if len(ticks) >= frame.n else 0, at + 1))
    if isinstance(frame, RowsFrame):
        return [p for p in range(at + frame.first, at + frame.last + 1) if 0 <= p < n]
    if isinstance(frame, RangeFrame):
        lo, hi = times[at] + frame.start, times[at] + frame.end
        left = frame.closed in ("both", "left")
        right = frame.closed in ("both", "right")
        return [p for p in range(n) if (times[p] > lo or (left and times[p] == lo))
                and (times[p] < hi or (right and times[p] == hi))]
    return list(range(at + 1))


def brute(rows: list[dict[str, Any]]) -> list[Any]:
    """`HELD`'s results over `rows` (window order)."""
    v = [r["v"] for r in rows if r["v"] is not None]
    i = [r["i"] for r in rows if r["i"] is not None]
    numbers = [x for x in v if not math.isnan(x)]
    top = None if not v else (math.nan if len(numbers) < len(v) else max(numbers))
    total = math.fsum(v) if v else 0.0
    return [len(rows), len(v), total, top, v[0] if v else None, i[-1] if i else None,
            len(set(i))]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


frames_st = st.lists(st.one_of(
    st.builds(RowsFrame, st.integers(-6, 1), st.integers(-1, 3), st.just(True)),
    st.builds(RangeFrame, st.sampled_from([-9, -4, -1, 0]), st.sampled_from([0, 2, 5]),
              st.sampled_from(["both", "left", "right", "neither"])),
    st.just(RunningFrame()),
    st.builds(PeriodsFrame, st.integers(1, 3), st.just("f"))), min_size=1, max_size=4).filter(
        lambda fs: all(not isinstance(f, RowsFrame) or f.first <= f.last for f in fs))
values_st = st.one_of(st.none(), st.just(math.nan), st.integers(-20, 20).map(lambda x: x / 4))


@st.composite
def one_key(draw: st.DrawFn) -> tuple[pa.Table, list[int]]:
    m = draw(st.integers(1, 60))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7]), min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    values = draw(st.lists(values_st, min_size=m, max_size=m))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    return events(["a"] * m, times, values), cuts


@settings(max_examples=150, deadline=None)
@given(data=one_key(), frames=frames_st)
def test_every_window_at_every_event_equals_a_brute_force(
        data: tuple[pa.Table, list[int]], frames: list[FeatureFrame]) -> None:
    table, _ = data
    out = kernel(frames, HELD).run_group(table).to_pylist()
    rows = table.to_pylist()
    times = [r["t"] for r in rows]
    assert [r["time"] for r in out] == times
    for at, found in enumerate(out):
        for f, frame in enumerate(frames):
            flags = [r["f"] for r in rows]
            want = brute([rows[p] for p in frame_members(frame, times, at, flags)])
            got = [found[f"{j}_{f}"] for j in range(len(HELD))]
            assert all(same(x, y) for x, y in zip(got, want, strict=True)), (
                frame, at, got, want)


@settings(max_examples=150, deadline=None)
@given(data=one_key(), frames=frames_st, held=st.booleans())
def test_a_run_cut_anywhere_gives_the_rows_of_the_whole_run(
        data: tuple[pa.Table, list[int]], frames: list[FeatureFrame], held: bool) -> None:
    """Pieces of one row are enough to fold the cumulative window (`chunk_rows` 1)."""
    table, cuts = data
    features = kernel(frames, HELD if held else ROWS_ONLY, chunk_rows=1)
    assert features.folds == (held and any(isinstance(f, RunningFrame) for f in frames))
    assert_resumes(features, table, cuts)


def carried(features: FeaturesKernel, table: pa.Table, piece: int) -> int:
    """The most rows the state holds, the table fed `piece` rows at a time (reloaded)."""
    state: KernelState | None = None
    largest = 0
    for begin in range(0, table.num_rows, piece):
        _, state = features.step(state, table.slice(begin, piece))
        state = KernelState.from_bytes(state.to_bytes())
        largest = max(largest, state.rows.num_rows)
    return largest


def test_carried_events_stay_within_the_widest_bounded_window() -> None:
    """One event per tick, `Range(-50, 0)`, `Rows(-10, 0)` and the cumulative window:
    with every aggregation held as a partial state the cumulative window folds and the
    state stays near 50 events (plus the events gathered, `GATHER`); with `collect` it
    carries every event of the key."""
    m = 3000
    table = events(["a"] * m, list(range(m)), [float(j % 9) for j in range(m)])
    frames = (RangeFrame(-50, 0, "both"), RowsFrame(-10, 0, True), RunningFrame())
    assert carried(kernel(frames, HELD, chunk_rows=64), table, 64) <= 4 * 64 + 51
    assert carried(kernel(frames, ROWS_ONLY, chunk_rows=64), table, 64) > m - 64
    assert_resumes(kernel(frames, HELD, chunk_rows=64), table, list(range(0, m, 64)))


def test_several_keys_at_once_equal_each_key_alone() -> None:
    rng = np.random.default_rng(3)
    sizes = [1, 4, 30, 2, 17]
    keys = [f"k{n}" for n, size in enumerate(sizes) for _ in range(size)]
    times = [int(t) for size in sizes for t in np.sort(rng.integers(0, size * 2, size))]
    values = [float(x) / 2 for x in rng.integers(-9, 9, len(keys))]
    table = events(keys, times, values)
    frames = (RangeFrame(-3, 1, "left"), RowsFrame(-2, 1, True), RunningFrame(),
              PeriodsFrame(2, "f"))
    features = kernel(frames, HELD)
    runs = np.cumsum([0, *sizes]).astype(np.int64)
    together = features.run_group(table, runs).to_pylist()
    alone = [row for a, b in itertools.pairwise(runs.tolist())
             for row in features.run_group(table.slice(a, b - a)).to_pylist()]
    assert [repr(r) for r in together] == [repr(r) for r in alone]
