"""The frames kernel resumes: a key's rows cut anywhere, the state through bytes at every
cut, give the rows of one uncut run for `Rows`, `Range` and running frames; streamed
with horizons, every window final at a horizon is out by then, `wake` is the least
horizon that emits, and the rows are still the uncut run's; the carried rows stay
within the window's reach (the running frame keeps the key's rows, the documented
unbounded case); the mapInArrow function feeds long runs in pieces and short ones
several at a time, with the same rows (no Spark)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import LeastWake, assert_resumes, cut_run, rows, slack_st, stream_run
from tables import assert_same_rows

from wisp.plan.frames import Frame, RangeFrame, RowsFrame, RunningFrame
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.frames import FrameKernel
from wisp.runtime.windows.resumable import Horizon, KernelState


def times_seen(values: Any, times: Any) -> int:
    """A user-defined aggregate that sees both the values and their times."""
    return int(len(values) * 1000 + np.sum(np.asarray(times, dtype=np.float64) * 4) % 997)


JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("min", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "v", "float", pa.float64(), None),
        built_in_job("sum", "i", "integer", pa.int64(), None),
        built_in_job("min", "s", "ordered", pa.string(), None),
        built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None),
        built_in_job("udaf", "v", "float", pa.int64(), times_seen))
NAMES = ("count", "count_v", "sum_v", "mean_v", "max_v", "min_v", "first_v", "last_v",
         "sum_i", "min_s", "collect_i", "udaf_v")
MOMENTS = (built_in_job("variance", "v", "float", pa.float64(), None),
           built_in_job("stddev", "v", "float", pa.float64(), None))


def kernel(frame: Frame, *, floats: bool = False, chunk_rows: int = 1 << 14,
           jobs: tuple[AggregateJob, ...] = JOBS, names: Sequence[str] = NAMES
           ) -> FrameKernel:
    time_type = pa.float64() if floats else pa.int64()
    schema = pa.schema([pa.field("k", pa.string()),
                        *[pa.field(f, time_type) for f in ("window_start", "window_end",
                                                           "time")],
                        *[pa.field(name, job.output_type) for name, job in zip(
                            names, jobs, strict=True)]])
    return FrameKernel(("k",), "t", "float" if floats else "integer", 0, frame, jobs,
                       schema, chunk_rows)


def events(keys: Sequence[str], times: Sequence[float], values: Sequence[float | None]
           ) -> pa.Table:
    m = len(times)
    time_type = pa.float64() if any(isinstance(t, float) for t in times) else pa.int64()
    data: dict[str, Any] = {
        "k": keys, "t": pa.array(times, time_type), "v": pa.array(values, pa.float64()),
        "i": pa.array([None if j % 5 == 3 else j * 7 - 20 for j in range(m)], pa.int64()),
        "s": pa.array([None if j % 4 == 1 else f"s{(j * 37) % 11:02d}" for j in range(m)],
                      pa.string())}
    return pa.table(data)


# small halves: sums exact in any order (the frame-sum path depends on the whole array)
values_st = st.one_of(st.none(), st.just(math.nan),
                      st.integers(-40, 40).map(lambda x: x / 2 + 0.0))

rows_frames = st.builds(
    lambda a, width, partial: RowsFrame(a, a + width, partial),
    st.integers(-12, 4), st.integers(0, 10), st.booleans())
range_frames = st.builds(
    lambda a, width, closed: RangeFrame(a, a + width, closed),
    st.integers(-30, 8), st.integers(0, 30),
    st.sampled_from(["both", "left", "right", "neither"]))
frames_st = st.one_of(rows_frames, range_frames, st.just(RunningFrame()))


@st.composite
def frame_input(draw: st.DrawFn) -> tuple[pa.Table, list[int]]:
    """One key's rows: times with many ties, nulls and NaN among the values, and cuts
    anywhere (at 0, at the end, twice at the same place, inside ties)."""
    m = draw(st.integers(0, 70))
    gaps = draw(st.lists(st.sampled_from([0, 0, 0, 1, 1, 2, 3, 7, 20]), min_size=m,
                         max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    cuts = draw(st.lists(st.integers(0, m), max_size=10))
    return events(["a"] * m, times, vals), cuts


@settings(max_examples=200, deadline=None)
@given(data=frame_input(), frame=frames_st)
def test_frames_resume(data: tuple[pa.Table, list[int]], frame: Frame) -> None:
    table, cuts = data
    assert_resumes(kernel(frame), table, cuts)


@settings(max_examples=150, deadline=None)
@given(data=frame_input(), frame=frames_st)
def test_float_time_frames_resume(data: tuple[pa.Table, list[int]], frame: Frame) -> None:
    """Float time: quarter ticks, float range offsets."""
    table, cuts = data
    quarter = table.set_column(1, "t", pa.array([t / 4 for t in table.column("t")
                                                 .to_pylist()], pa.float64()))
    if isinstance(frame, RangeFrame):
        frame = RangeFrame(frame.start / 4, frame.end / 4, frame.closed)
    assert_resumes(kernel(frame, floats=True), quarter, cuts)


@settings(max_examples=150, deadline=None)
@given(data=frame_input(), frame=frames_st,
       values=st.lists(st.floats(-1e6, 1e6), min_size=70, max_size=70))
def test_moments_resume_to_rounding(data: tuple[pa.Table, list[int]], frame: Frame,
                                    values: list[float]) -> None:
    """Variance and stddev of arbitrary floats: the same rows, to rounding (a frame's
    moments are merged in blocks whose alignment depends on where the buffer begins)."""
    table, cuts = data
    table = table.set_column(2, "v", pa.array(values[:table.num_rows], pa.float64()))
    moments = kernel(frame, jobs=MOMENTS, names=("var_v", "std_v"))
    whole = pa.Table.from_batches([moments.run_group(table)])
    resumed = pa.Table.from_batches(cut_run(moments, table, cuts), schema=moments.schema)
    assert_same_rows(resumed, whole, ["time", "window_start", "window_end"], rel=1e-9)


def test_cuts_inside_ties_and_at_every_row() -> None:
    """Runs of equal times cut inside, at 0, at the end and twice at the same place."""
    times = [0, 0, 0, 1, 1, 5, 5, 5, 5, 20, 20, 21, 40, 40, 40, 41]
    m = len(times)
    table = events(["a"] * m, times, [float(j) if j % 6 else None for j in range(m)])
    frames: list[Frame] = [RowsFrame(-3, 0, False), RowsFrame(-3, 0, True),
                           RowsFrame(-2, 2, False), RowsFrame(1, 4, True),
                           RowsFrame(-5, -2, False), RangeFrame(-5, 0, "both"),
                           RangeFrame(0, 0, "both"), RangeFrame(-4, 4, "neither"),
                           RangeFrame(1, 20, "left"), RangeFrame(-20, -1, "right"),
                           RunningFrame()]
    for frame in frames:
        frame_kernel = kernel(frame)
        whole = frame_kernel.run_group(table)
        assert whole.num_rows > 0
        for cuts in ([], [0], [m], [1, 2], [4, 4, 7], list(range(m + 1)), [0, 0, m, m]):
            assert_resumes(frame_kernel, table, cuts)


def test_the_state_stays_within_the_window_reach() -> None:
    """A thousand events fed 5 at a time: a `Rows` state holds at most the last `-first`
    events plus those gathered (fewer than `GATHER + 1` times as many, or a piece), a
    `Range` state the events within `start` of the next anchor plus those gathered; each
    output is emitted once and all are."""
    m = 1000
    times = [j // 3 * 2 for j in range(m)]  # three events per time
    table = events(["a"] * m, times, [1.0] * m)
    for frame, reach in ((RowsFrame(-20, 0, False), 20), (RowsFrame(-6, 3, True), 9),
                         (RangeFrame(-10, 0, "both"), 3 * 6),
                         (RangeFrame(-8, 4, "right"), 3 * 7)):
        frame_kernel = kernel(frame)
        state: KernelState | None = None
        largest, emitted = 0, 0
        for begin in range(0, m, 5):
            out, state = frame_kernel.step(state, table.slice(begin, 5))
            state = KernelState.from_bytes(state.to_bytes())
            largest = max(largest, state.rows.num_rows)
            emitted += out.num_rows
            assert emitted >= begin - 5 * reach  # outputs do not wait for the end
        emitted += frame_kernel.finish(state).num_rows
        assert emitted == frame_kernel.run_group(table).num_rows
        assert 0 < largest <= 4 * reach + 5, (frame, largest)


def test_the_running_frame_carries_the_key() -> None:
    """The documented unbounded case: the running frame keeps every event of the key, and
    still emits each anchor's row once, with the uncut run's values."""
    m = 400
    table = events(["a"] * m, [j // 2 for j in range(m)], [float(j % 9) for j in range(m)])
    frame_kernel = kernel(RunningFrame())
    state: KernelState | None = None
    emitted = 0
    for begin in range(0, m, 10):
        out, state = frame_kernel.step(state, table.slice(begin, 10))
        emitted += out.num_rows
        assert state.rows.num_rows == begin + 10
        done = state.scalars["done"]
        assert isinstance(done, int) and done <= begin + 10
    emitted += frame_kernel.finish(state).num_rows
    assert emitted == m
    assert_resumes(frame_kernel, table, list(range(0, m, 10)))


FRAMES: list[Frame] = [RowsFrame(-9, 0, True), RowsFrame(-30, 5, False),
                       RowsFrame(3, 8, True), RowsFrame(-8, -2, False),
                       RangeFrame(-50, 0, "both"), RangeFrame(-30, 20, "neither"),
                       RangeFrame(5, 40, "left"), RunningFrame()]


def test_the_mapinarrow_function_feeds_long_runs_in_pieces() -> None:
    """One long key among short ones, through `__call__` with pieces of 64 rows: the rows
    equal those of every key run whole."""
    rng = np.random.default_rng(5)
    sizes = [3, 1, 700, 2, 5, 1_000, 4, 64, 65]
    keys = [f"k{n:02d}" for n, size in enumerate(sizes) for _ in range(size)]
    times: list[int | float] = []
    for size in sizes:
        times += np.sort(rng.integers(0, size * 4, size)).tolist()
    values = rng.normal(size=len(keys)).tolist()
    table = events(keys, times, values)
    for frame in FRAMES:
        frame_kernel = kernel(frame, chunk_rows=64)
        streamed = pa.Table.from_batches(
            list(frame_kernel(iter(table.to_batches(max_chunksize=50)))),
            schema=frame_kernel.schema)
        whole = pa.Table.from_batches(
            [frame_kernel.run_group(g) for g in key_runs(iter(table.to_batches()), ("k",))],
            schema=frame_kernel.schema)
        assert streamed.num_rows == whole.num_rows > 1000
        assert_same_rows(streamed, whole, ["k", "time", "window_start", "window_end",
                                           "count", "first_v", "last_v"])


def test_short_runs_together_equal_each_alone() -> None:
    """`run_group` with runs (several keys at once) gives each key's whole-run rows."""
    sizes = [1, 4, 2, 9, 3]
    keys = [f"k{n}" for n, size in enumerate(sizes) for _ in range(size)]
    times = [t for size in sizes for t in range(0, 2 * size, 2)]
    table = events(keys, times, [float(j % 4) for j in range(len(keys))])
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for frame in FRAMES:
        frame_kernel = kernel(frame)
        together = rows([frame_kernel.run_group(table, starts)])
        alone = rows([frame_kernel.run_group(g)
                      for g in key_runs(iter(table.to_batches()), ("k",))])
        assert [repr(r) for r in together] == [repr(r) for r in alone]


def test_a_long_key_streams_with_the_default_pieces() -> None:
    """40,000 events of one key, in batches of 1,000 (as Spark gives them), with the
    kernel's own piece size: every anchor once, the values of the whole run."""
    n, batch = 40_000, 1_000

    def batches() -> Iterator[pa.RecordBatch]:
        for begin in range(0, n, batch):
            t = np.arange(begin, begin + batch, dtype=np.int64) // 2
            yield pa.record_batch({"k": pa.array(["a"] * batch), "t": t,
                                   "v": (t % 13).astype(np.float64),
                                   "i": t % 7, "s": pa.array(["x"] * batch)})

    table = pa.Table.from_batches(list(batches()))
    for frame in (RowsFrame(-100, 0, False), RangeFrame(-3000, 0, "both")):
        frame_kernel = dataclasses.replace(kernel(frame), aggregates=JOBS[:9],
                                           schema=pa.schema(list(kernel(frame).schema)[:13]))
        streamed = pa.Table.from_batches(list(frame_kernel(batches())),
                                         schema=frame_kernel.schema)
        whole = pa.Table.from_batches([frame_kernel.run_group(table)])
        assert streamed.num_rows == whole.num_rows > 30_000
        assert_same_rows(streamed, whole, ["time", "window_start", "window_end", "count"])


def final_at(frame: Frame) -> Callable[[dict[str, Any], Horizon], bool]:
    """Whether an output row is final at a horizon `h` (every row before `h` is in,
    every later one at or after it), from the row's own columns: its anchor is in
    (`time < h`) and, for `Range`, no later row can fall in the window (a closed end
    `time + end` before `h`, an open one at or before it); for `Rows`, the window's
    last row is in (`window_end < h`) and the window is whole (its `count`: a partial
    window clipped at the key's end waits for the end)."""
    if isinstance(frame, RangeFrame):
        open_end = frame.closed in ("left", "neither")
        return lambda row, h: bool(row["time"] < h and (
            row["time"] + frame.end <= h if open_end else row["time"] + frame.end < h))
    if isinstance(frame, RowsFrame):
        width = frame.last - frame.first + 1
        return lambda row, h: bool(row["time"] < h and row["window_end"] is not None
                                   and row["window_end"] < h and row["count"] == width)
    return lambda row, h: bool(row["time"] < h)




@st.composite
def stream_input(draw: st.DrawFn) -> tuple[pa.Table, list[int], list[float]]:
    """`frame_input`, sometimes with an empty piece more (a cut repeated), and the
    slack placing each piece's horizon."""
    table, cuts = draw(frame_input())
    if cuts and draw(st.booleans()):
        cuts.append(cuts[-1])
    return table, cuts, draw(slack_st)


def assert_streams(frame_kernel: FrameKernel, table: pa.Table, cuts: Sequence[int],
                   slack: Sequence[float]) -> None:
    """Streamed with horizons (`stream_run`, every `wake` checked the least): the rows
    of the uncut run, value for value."""
    out = stream_run(LeastWake(frame_kernel), table, "t", cuts, slack,
                     final_at(frame_kernel.frame))
    whole = rows([frame_kernel.run_group(table)])
    assert [repr(r) for r in rows(out)] == [repr(r) for r in whole]


@settings(max_examples=150, deadline=None)
@given(data=stream_input(), frame=frames_st)
def test_frames_stream(data: tuple[pa.Table, list[int], list[float]], frame: Frame) -> None:
    table, cuts, slack = data
    assert_streams(kernel(frame), table, cuts, slack)


@settings(max_examples=100, deadline=None)
@given(data=stream_input(), frame=frames_st)
def test_float_time_frames_stream(data: tuple[pa.Table, list[int], list[float]],
                                  frame: Frame) -> None:
    """Float time: quarter ticks, float range offsets, horizons anywhere between."""
    table, cuts, slack = data
    quarter = table.set_column(1, "t", pa.array([t / 4 for t in table.column("t")
                                                 .to_pylist()], pa.float64()))
    if isinstance(frame, RangeFrame):
        frame = RangeFrame(frame.start / 4, frame.end / 4, frame.closed)
    assert_streams(kernel(frame, floats=True), quarter, cuts, slack)


def test_range_wakes_just_past_the_window() -> None:
    """One anchor at 10: `Range(-5, 3)` is final once no row can reach 13: a closed end
    wakes at 14 (a row at 13 would fall in it), an open end at 13; in float time, the
    float just above 13.0. Steps without a horizon wait for a later row."""
    for closed, want in (("both", 14), ("right", 14), ("left", 13), ("neither", 13)):
        frame_kernel = kernel(RangeFrame(-5, 3, closed))
        out, state = frame_kernel.step(None, events(["a"], [10], [1.0]))
        assert out.num_rows == 0 and frame_kernel.wake(state) == want
        out, state = frame_kernel.step(state, events(["a"], [13], [1.0]).slice(0, 0),
                                       want - 1)
        assert out.num_rows == 0
        out, state = frame_kernel.step(state, events(["a"], [13], [1.0]).slice(0, 0),
                                       want)
        assert out.column("time").to_pylist() == [10]
        assert frame_kernel.wake(state) is None
    floats = kernel(RangeFrame(-1.25, 3.0, "both"), floats=True)
    _, state = floats.step(None, events(["a"], [10.0], [1.0]))
    assert floats.wake(state) == float(np.nextafter(13.0, np.inf))


def test_rows_and_running_frames_emit_at_once_under_a_horizon() -> None:
    """With a horizon no step gathers: a `Rows` window is out as soon as its last row
    is, a running frame's at once; neither wakes for a horizon."""
    m = 200
    table = events(["a"] * m, list(range(m)), [1.0] * m)
    for frame, behind in ((RowsFrame(-50, 2, False), 2), (RunningFrame(), 0)):
        frame_kernel = kernel(frame)
        state: KernelState | None = None
        emitted = 0
        for begin in range(0, m, 4):
            out, state = frame_kernel.step(state, table.slice(begin, 4), begin + 4)
            emitted += out.num_rows
            complete = 0 if isinstance(frame, RunningFrame) else 50
            assert emitted == max(0, begin + 4 - behind - complete)
            assert frame_kernel.wake(state) is None
