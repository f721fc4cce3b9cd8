"""Revisions of Tumbling and Hopping windows over point events on the rows-carrying
operator (aggregations without pane partials), without Spark: each key's handler over
random micro-batches under Spark's rules, its state through its stored form after every
batch (a restart), against the independent oracle over the rows applied."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_intervals import hopping as hopping_oracle
from simulator import simulate as simulate_plain
from test_stream_revisions_sessions import Run, check_revisions, latest, simulate, written
from test_stream_simulated import (
    AGGS,
    INPUT,
    JOBS,
    OUTPUT,
    SECOND,
    Stream,
    assert_same,
    streams,
    table,
)

from wisp.plan.intervals import HoppingWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.revised import HoppingRevised, RevisedKernel
from wisp.runtime.windows.hopping import HoppingKernel
from wisp.runtime.windows.interval_kernels import interval_kernel

ORDER = ("t", "v")
sizes = st.integers(1, 8).map(lambda x: x * SECOND // 2)


def hopping_kernel(size: int, hop: int, align: int) -> HoppingKernel:
    kernel = interval_kernel(("k",), "t", None, "integer", 0,
                             HoppingWindows(size=size, hop=hop, align=align), JOBS, OUTPUT)
    assert isinstance(kernel, HoppingKernel)
    return kernel


def revised(kernel: HoppingKernel, allowed: int | None, changes: bool) -> RevisedKernel:
    return RevisedKernel(HoppingRevised(kernel), INPUT, "t", "integer", ORDER, "spec",
                         allowed, changes, 1)


def check_latest(run: Run, kernel: HoppingKernel, changes: bool) -> None:
    """The latest rows equal the oracle's windows over the rows applied: with `changes`
    all of them, else those final at the last watermark (ending at or before it + 1
    tick). A window's identity never changes, so nothing is replaced."""
    w = kernel.window
    want = hopping_oracle(run.kept, time="t", end=None, key=["k"], order=None,
                          columns=["k", "t", "v"], size=w.size, hop=w.hop, align=w.align,
                          output="windows", aggs=AGGS)
    horizon = run.watermark * 1000 + 1
    assert_same(latest(written(run)),
                [r for r in want if changes or r["window_end"] <= horizon])
    assert not any("replaces" in r for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=sizes, hop=sizes, align=st.integers(-3, 3),
       changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_windows_are_the_batch_result(
        data: Stream, size: int, hop: int, align: int, changes: bool) -> None:
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    run = simulate(revised(kernel, 10 ** 12, changes), data[0], data[1], False)
    check_revisions(run)
    assert run.late == 0
    check_latest(run, kernel, changes)
    if not changes:
        assert all(r["final"] for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=sizes, hop=sizes, align=st.integers(-3, 3),
       allowed=st.integers(0, 8), changes=st.booleans())
def test_rows_beyond_the_allowed_lateness_are_counted_and_the_rest_applied(
        data: Stream, size: int, hop: int, align: int, allowed: int,
        changes: bool) -> None:
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    allowed_ticks = allowed * SECOND // 2 + 1
    run = simulate(revised(kernel, allowed_ticks, changes), data[0], data[1], False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in data[0])
    for row, mark in run.late_rows:
        assert row["t"] + allowed_ticks < mark * 1000 + 1
    check_latest(run, kernel, changes)


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=sizes, hop=sizes, align=st.integers(-3, 3))
def test_early_rows_leave_the_final_rows_as_they_were(data: Stream, size: int, hop: int,
                                                      align: int) -> None:
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    early = simulate(revised(kernel, None, True), data[0], data[1], True)
    check_revisions(early)
    plain = simulate_plain(StreamKernel(kernel, INPUT, "t", "integer", ORDER, "spec"),
                           data[0], "k", data[1])
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final")}
              for r in written(early) if r["final"]]
    assert_same(finals, [r for b in plain.emitted for r in b.to_pylist()])
    assert early.late == plain.late and early.applied == 0


def test_a_late_row_revises_each_window_it_falls_in() -> None:
    """Hopping(4 s, 2 s), lateness 1 s, allowed lateness 10 s: [-2, 2), [0, 4) and
    [2, 6) are written; a late row at 3 s writes the two it falls in again as
    revision 1."""
    kernel = hopping_kernel(4 * SECOND, 2 * SECOND, 0)
    batches = [table([("a", 1 * SECOND, 1.0), ("a", 2 * SECOND, 2.0),
                      ("a", 9 * SECOND, 4.0)]),  # then the watermark is 8 s
               table([]), table([("a", 3 * SECOND, 8.0)]), table([])]
    run = simulate(revised(kernel, 10 * SECOND, False), batches, SECOND, False)
    shown = [[(r["window_start"] // SECOND, r["revision"], r["count"]) for r in rows]
             for rows in run.written]
    assert shown == [[], [(-2, 0, 1), (0, 0, 2), (2, 0, 1)], [(0, 1, 3), (2, 1, 2)], []]
    assert (run.applied, run.late) == (1, 0)
