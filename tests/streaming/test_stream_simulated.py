"""Streams without Spark: random events in random micro-batches, with disorder, late rows
and a restart after every batch (each key's state through its stored bytes), through the
simulator of Spark's rules (`simulator.py`). The rows emitted equal the batch oracle's
rows over the accepted events that are final at the last watermark; late rows are
counted exactly; no row is emitted twice."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, range_window, rows_window, sort_output
from simulator import Simulation, simulate

import wisp as ws
from wisp.plan.frames import RangeFrame, RowsFrame
from wisp.plan.intervals import HoppingWindows
from wisp.runtime.aggregate import AggregateJob
from wisp.runtime.frames import FrameKernel
from wisp.runtime.interval_kernels import interval_kernel
from wisp.runtime.running import RunningKernel
from wisp.runtime.sessions import SessionKernel
from wisp.runtime.sorting import sort_order
from wisp.runtime.streaming import StreamKernel, StreamState

SECOND = 1_000_000
INPUT = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("v", pa.float64())])
AGGS = [ws.count(), ws.sum("v"), ws.max("v"), ws.mean("v")]
JOBS = (AggregateJob("count", None, "none", pa.int64(), None),
        AggregateJob("sum", "v", "float", pa.float64(), None),
        AggregateJob("max", "v", "float", pa.float64(), None),
        AggregateJob("mean", "v", "float", pa.float64(), None))
OUTPUT = pa.schema([pa.field("k", pa.string()),
                    *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                        "time")],
                    pa.field("count", pa.int64()), pa.field("sum_v", pa.float64()),
                    pa.field("max_v", pa.float64()), pa.field("mean_v", pa.float64())])

values = st.one_of(st.none(), st.just(float("nan")),
                   st.integers(-40, 40).map(lambda x: x * 0.25))
event = st.tuples(st.sampled_from(["a", "b", None]),
                  st.integers(1, 60).map(lambda s: s * SECOND // 2), values)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[pa.Table], int]:
    """Events in micro-batches (then the final batch without data), and a lateness."""
    events = draw(st.lists(event, min_size=1, max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(events)), max_size=8)))
    bounds = [0, *cuts, len(events)]
    batches = [table(events[a:b]) for a, b in itertools.pairwise(bounds)]
    lateness = draw(st.integers(0, 12)) * SECOND // 2 + 1000
    return [*batches, table([])], lateness


def table(events: list[tuple[str | None, int, float | None]]) -> pa.Table:
    return pa.table({"k": pa.array([e[0] for e in events], pa.string()),
                     "t": pa.array([e[1] for e in events], pa.int64()),
                     "v": pa.array([e[2] for e in events], pa.float64())})


def frames(frame: RowsFrame | RangeFrame) -> StreamKernel:
    kernel = FrameKernel(("k",), "t", "integer", 0, frame, JOBS, OUTPUT, 5)
    return StreamKernel(kernel, INPUT, "t", "integer", ("t", "v"), "spec")


def accepted(result: Simulation) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pa.concat_tables(result.accepted).to_pylist()
    return rows


def emitted(result: Simulation) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [r for b in result.emitted for r in b.to_pylist()]
    return rows  # a row emitted twice fails the comparison with the oracle (row counts)


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Equal rows (the oracle's sum of no values is the integer 0: a double 0.0 here)."""
    want = [{**r, "sum_v": float(r["sum_v"])} if isinstance(r["sum_v"], int) else r
            for r in want]
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-9,
                      scales={"sum_v": 10.0, "mean_v": 10.0})


def late_rows(batches: list[pa.Table], lateness: int) -> int:
    """Rows at or below the watermark of the batch before theirs, counted here from
    the rule itself: that watermark is the newest time before it, minus the lateness."""
    count, newest, watermarks = 0, None, [0]
    for batch in batches:
        mark = watermarks[-2] if len(watermarks) > 1 else 0
        count += sum(1 for t in batch.column("t").to_pylist() if mark > 0 and t <= mark * 1000)
        times = [t for t in batch.column("t").to_pylist()
                 if not (mark > 0 and t <= mark * 1000)]
        if times:
            newest = max([*([newest] if newest is not None else []), max(times) // 1000])
        watermarks.append(max(watermarks[-1], newest - lateness // 1000)
                          if newest is not None else watermarks[-1])
    return count


@settings(max_examples=150, deadline=None)
@given(data=streams(), start=st.integers(-8, 0), end=st.integers(-3, 4),
       closed=st.sampled_from(["both", "left", "right", "neither"]))
def test_range_on_a_stream_emits_the_final_batch_rows(
        data: tuple[list[pa.Table], int], start: int, end: int, closed: str) -> None:
    batches, lateness = data
    assume(start != end or closed == "both")
    window = ws.Range(start * SECOND // 2, end * SECOND // 2, closed=closed)
    result = simulate(frames(RangeFrame(window.start_ticks, window.end_ticks, closed)),
                      batches, "k", lateness)
    assert result.late == late_rows(batches, lateness)
    bound = result.watermarks[-1] * 1000
    right_open = closed in ("left", "neither")
    want = [r for r in range_window(accepted(result), time="t", key=["k"], order=None,
                                    columns=["k", "t", "v"], window=window, aggs=AGGS)
            if r["time"] <= bound and (r["window_end"] <= bound or
                                       (right_open and r["window_end"] <= bound + 1))]
    assert_same(emitted(result), want)


@settings(max_examples=150, deadline=None)
@given(data=streams(), first=st.integers(-3, 0), last=st.integers(0, 2))
def test_rows_on_a_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], int], first: int, last: int) -> None:
    batches, lateness = data
    window = ws.Rows(first, last)
    result = simulate(frames(RowsFrame(first, last, False)), batches, "k", lateness)
    bound = result.watermarks[-1] * 1000
    want = [r for r in rows_window(accepted(result), time="t", key=["k"], order=None,
                                   columns=["k", "t", "v"], window=window, aggs=AGGS)
            if r["window_end"] <= bound and r["time"] <= bound]
    assert_same(emitted(result), want)


@settings(max_examples=150, deadline=None)
@given(data=streams(), gap=st.integers(1, 6), cap=st.one_of(st.none(), st.integers(2, 12)))
def test_sessions_on_a_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], int], gap: int, cap: int | None) -> None:
    batches, lateness = data
    gap_ticks = gap * SECOND // 2
    cap_ticks = None if cap is None else cap * SECOND // 2
    kernel = SessionKernel(("k",), "t", None, "integer", 0, gap_ticks, cap_ticks, JOBS,
                           OUTPUT, 5)
    result = simulate(StreamKernel(kernel, INPUT, "t", "integer", ("t", "v"), "spec"),
                      batches, "k", lateness)
    horizon = result.watermarks[-1] * 1000 + 1
    want = [r for r in whole_runs(kernel, pa.concat_tables(result.accepted))
            if r["window_end"] < horizon
            or (cap_ticks is not None and r["window_start"] + cap_ticks <= horizon)]
    assert_same(emitted(result), want)


def test_a_checkpoint_of_another_query_is_refused() -> None:
    stream = frames(RangeFrame(-SECOND, 0, "both"))
    stored = stream.empty().to_row("another spec")
    with pytest.raises(ws.WispInputError, match="`checkpointLocation` must belong to this "
                       "query, found a checkpoint made for another query"):
        StreamState.from_row(stored, stream.spec)


FLAGGED = pa.schema([*INPUT, pa.field("p", pa.bool_())])


def flagged(batches: list[pa.Table], flags: list[bool | None]) -> list[pa.Table]:
    """The batches with a boolean tick column `p`, cycling through `flags`."""
    out, n = [], 0
    for batch in batches:
        column = [flags[(n + i) % len(flags)] for i in range(batch.num_rows)]
        out.append(batch.append_column("p", pa.array(column, pa.bool_())))
        n += batch.num_rows
    return out


def whole_runs(kernel: Any, rows: pa.Table, order: tuple[str, ...] = ("t", "v")
               ) -> list[dict[str, Any]]:
    """The batch rows of `kernel` over `rows` (several keys), sorted by key and `order`
    as Spark sorts (nulls first, NaN last)."""
    rows = rows.take(sort_order(rows, ("k", *order)))
    keys = rows.column("k").to_pylist()
    out: list[dict[str, Any]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            found = kernel.run_group(rows.slice(start, i - start))
            for batch in [found] if isinstance(found, pa.RecordBatch) else found:
                out += batch.to_pylist()
            start = i
    return out


@settings(max_examples=150, deadline=None)
@given(data=streams(), since=st.booleans(),
       flags=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=5),
       emit=st.sampled_from(["events", "ticks", "both"]))
def test_running_aggregates_on_a_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], int], since: bool, flags: list[bool | None],
        emit: str) -> None:
    """The cumulative window and `Since(predicate)`: accumulators per key, each row's
    output final once the watermark passes its time."""
    batches, lateness = data
    emit = emit if since else "events"
    kernel = RunningKernel(("k",), "t", "integer", 0, JOBS, OUTPUT, since, emit, "p")
    stream = StreamKernel(kernel, FLAGGED, "t", "integer", ("t", "v", "p"), "spec")
    result = simulate(stream, flagged(batches, flags), "k", lateness)
    bound = result.watermarks[-1] * 1000
    want = [r for r in whole_runs(kernel, pa.concat_tables(result.accepted),
                                  ("t", "v", "p")) if r["time"] <= bound]
    assert_same(emitted(result), want)


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3))
def test_hopping_windows_on_a_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], int], size: int, hop: int, align: int) -> None:
    """Tumbling (hop = size) and hopping windows over point events: a window is final
    once the watermark passes its end."""
    batches, lateness = data
    window = HoppingWindows(size=size * SECOND // 2, hop=hop * SECOND // 2,
                            align=align * SECOND // 2)
    kernel = interval_kernel(("k",), "t", None, "integer", 0, window, JOBS, OUTPUT)
    result = simulate(StreamKernel(kernel, INPUT, "t", "integer", ("t", "v"), "spec"),
                      batches, "k", lateness)
    horizon = result.watermarks[-1] * 1000 + 1
    want = [r for r in whole_runs(kernel, pa.concat_tables(result.accepted))
            if r["window_end"] <= horizon]
    assert_same(emitted(result), want)
