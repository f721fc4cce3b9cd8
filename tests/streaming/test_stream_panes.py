"""Tumbling and hopping windows over point events on a stream from partial aggregates
per pane (`runtime.streaming.panes`), without Spark: random events in random micro-batches
with disorder, late rows and a restart after every batch (simulator.py). The rows
emitted equal the independent oracle's windows over the accepted events that end at or
before the last horizon; late rows are counted exactly; the state holds panes, never
rows."""

from __future__ import annotations

import datetime as dt
import itertools

import pyarrow as pa
from aggregators import Spread
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_intervals import hopping as hopping_oracle
from simulator import Simulation, simulate
from test_stream_simulated import (
    INPUT,
    SECOND,
    Stream,
    accepted,
    emitted,
    late_rows,
    streams,
    table,
)

import wisp as ws
from wisp.plan.intervals import HoppingWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.panes import PANE, PaneKernel
from wisp.runtime.windows.resumable import KernelState

AGGS = [ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
        ws.variance("v"), ws.stddev("v"), ws.aggregate(Spread(), "v")]
JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None),
        built_in_job("min", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("variance", "v", "float", pa.float64(), None),
        built_in_job("stddev", "v", "float", pa.float64(), None),
        built_in_job("aggregate", "v", "float", pa.float64(), None,
                     definition=AGGS[-1].definition, aggregator=Spread()))
"""The aggregations with pane partials, a user's commutative aggregator among them."""
OUTPUT = pa.schema([pa.field("k", pa.string()),
                    *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                        "time")],
                    *[pa.field(a.output_name, j.output_type)
                      for a, j in zip(AGGS, JOBS, strict=True)]])
SCALES = {name: 10.0 for name in ("sum_v", "mean_v")} | {"variance_v": 100.0,
                                                         "stddev_v": 10.0}


def pane_kernel(size: int, hop: int, align: int, date: bool = False) -> PaneKernel:
    """Windows of `size`, `hop` and `align` half seconds (days for date time)."""
    if date:
        window = HoppingWindows(size=size, hop=hop, align=align)
        output = pa.schema([OUTPUT.field("k"), *[pa.field(f, pa.date32()) for f in (
            "window_start", "window_end", "time")], *list(OUTPUT)[4:]])
        return PaneKernel(("k",), "t", "date", 0, window, JOBS, output)
    window = HoppingWindows(size=size * SECOND // 2, hop=hop * SECOND // 2,
                            align=align * SECOND // 2)
    return PaneKernel(("k",), "t", "integer", 0, window, JOBS, OUTPUT)


DATE_INPUT = INPUT.set(1, pa.field("t", pa.date32()))
DAY = 86_400 * SECOND


def as_dates(data: Stream) -> Stream:
    """The stream with date time: each half second a day (the lateness too)."""
    batches, lateness, emit_late = data
    dated = [b.set_column(1, "t", pa.array([t // (SECOND // 2) for t in b.column(
        "t").to_pylist()], pa.int32()).cast(pa.date32())) for b in batches]
    return dated, lateness // (SECOND // 2) * DAY + lateness % (SECOND // 2), emit_late


def in_days(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Date values as days since the epoch."""
    epoch = dt.date(1970, 1, 1)
    return [{k: (v - epoch).days if isinstance(v, dt.date) else v for k, v in r.items()}
            for r in rows]


def oracle_rows(rows: list[dict[str, object]], kernel: PaneKernel, horizon: int
                ) -> list[dict[str, object]]:
    """The oracle's windows over `rows` that end at or before `horizon` (ticks of the
    kernel: days for date time)."""
    w = kernel.window
    return [r for r in hopping_oracle(rows, time="t", end=None, key=["k"], order=None,
                                      columns=["k", "t", "v"], size=w.size, hop=w.hop,
                                      align=w.align, output="windows", aggs=AGGS)
            if r["window_end"] is not None and r["window_end"] <= horizon]


@settings(max_examples=200, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3), tumbling=st.booleans(), date=st.booleans())
def test_pane_windows_on_a_stream_emit_the_oracle_rows(
        data: Stream, size: int, hop: int, align: int, tumbling: bool, date: bool) -> None:
    """Every non-empty window ending at or before the last horizon is emitted once,
    with the oracle's aggregates over the accepted events. Spark's late filter is off:
    a row is late only when a window holding it was closed for its key, so every late
    row is one Spark's filter would drop (at or below the watermark of the batch before
    its own), and some of those go in."""
    batches, lateness, emit_late = as_dates(data) if date else data
    kernel = pane_kernel(size, size if tumbling else hop, align, date)
    stream = StreamKernel(kernel, DATE_INPUT if date else INPUT, "t",
                          "date" if date else "integer", ("t", "v"), "spec")
    result = simulate(stream, batches, "k", lateness, emit_late, spark_filter=False)
    check_late(result, stream, batches, lateness)
    assert result.pending == 0  # rows never wait: they are in their panes
    horizon = kernel.first_start(result.watermarks[-1] * 1000 + 1)
    got = emitted(result)
    rows = accepted(result)
    if date:
        got, rows = in_days(got), in_days(rows)
    assert_same_rows(got, oracle_rows(rows, kernel, horizon))


def check_late(result: Simulation, stream: StreamKernel, batches: list[pa.Table],
               lateness: int) -> None:
    """Every row is accepted or late; each late row is at or below the watermark of the
    batch before its own, so there are at most as many as Spark's filter would drop
    (`late_rows` counts those from the rule itself, in microseconds)."""
    total = sum(b.num_rows for b in batches)
    assert sum(t.num_rows for t in result.accepted) + result.late == total
    in_micros = [pa.table({"t": stream.ticks(b)}) for b in batches]
    assert result.late <= late_rows(in_micros, lateness)
    for late, mark in result.late_rows:
        if late.num_rows:
            assert all(0 < t <= mark * 1000 for t in stream.ticks(late).tolist())


def assert_same_rows(got: list[dict[str, object]], want: list[dict[str, object]]) -> None:
    from oracle import assert_rows_match, sort_output
    want = [{**r, "sum_v": float(r["sum_v"])} if isinstance(r["sum_v"], int) else r
            for r in want]
    assert len(got) == len(want)
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-9,
                      scales=SCALES)


@settings(max_examples=100, deadline=None)
@given(events=st.lists(st.tuples(st.sampled_from(["a"]),
                                 st.integers(-40, 40).map(lambda s: s * SECOND // 2),
                                 st.one_of(st.none(), st.just(float("nan")),
                                           st.integers(-40, 40).map(lambda x: x * 0.25))),
                       min_size=1, max_size=40),
       cuts=st.lists(st.integers(0, 40), max_size=6), size=st.integers(1, 8),
       hop=st.integers(1, 8), align=st.integers(-3, 3))
def test_whole_runs_in_any_order_and_any_pieces_equal_the_oracle(
        events: list[tuple[str, int, float | None]], cuts: list[int], size: int,
        hop: int, align: int) -> None:
    """Rows in any order, in any pieces, with the state through bytes between them, then
    the end of input: every non-empty window (times before 1970 too), as the oracle."""
    kernel = pane_kernel(size, hop, align)
    state: KernelState | None = None
    outs: list[dict[str, object]] = []
    bounds = sorted({0, len(events), *[c for c in cuts if c < len(events)]})
    for a, b in itertools.pairwise(bounds):
        out, state = kernel.step(state, table(events[a:b]), -float("inf"))
        outs += out.to_pylist()
        state = KernelState.from_bytes(state.to_bytes())
    assert outs == []  # no promise, nothing final
    outs += kernel.finish(state).to_pylist()
    rows = [{"k": k, "t": t, "v": v} for k, t, v in events]
    assert_same_rows(outs, oracle_rows(rows, kernel, 2 ** 62))


def test_the_state_is_one_row_per_open_pane() -> None:
    """A thousand rows in three panes carry three rows; emitted panes leave the state."""
    kernel = pane_kernel(4, 4, 0)  # tumbling windows of 2 s
    times = [i * 6 * SECOND // 1000 for i in range(1000)]  # 0 .. 6 s
    rows = table([("a", t, 1.0) for t in times])
    out, state = kernel.step(None, rows, -float("inf"))
    assert out.num_rows == 0
    assert state.rows.column(PANE).to_pylist() == [0, 1, 2]
    out, state = kernel.step(state, rows.slice(0, 0), 4 * SECOND)
    assert [(r["window_start"], r["window_end"], r["count"]) for r in out.to_pylist()] == [
        (0, 2 * SECOND, 334), (2 * SECOND, 4 * SECOND, 333)]
    assert state.rows.column(PANE).to_pylist() == [2]
    assert kernel.wake(state) == 6 * SECOND
