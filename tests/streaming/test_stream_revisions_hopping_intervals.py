"""Revisions of Tumbling and Hopping windows over interval events `[t, e)` (some
open-ended) on the rows-carrying operator, without Spark: each key's handler over
random micro-batches under Spark's rules, its state through its stored form after every
batch (a restart), against the independent oracle over the rows applied."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_intervals import hopping as hopping_oracle
from simulator import simulate as simulate_plain
from test_stream_revisions_sessions import (
    Run,
    check_revisions,
    identity,
    latest,
    simulate,
    written,
)
from test_stream_simulated import (
    AGGS,
    INTERVALS,
    JOBS,
    OUTPUT,
    SECOND,
    Stream,
    assert_same,
    streams,
    with_ends,
)

from wisp.plan.intervals import HoppingWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.revised import HoppingRevised, RevisedKernel
from wisp.runtime.windows.hopping import HoppingKernel
from wisp.runtime.windows.interval_kernels import interval_kernel

Row = dict[str, Any]
ORDER = ("t", "e", "v")
sizes = st.integers(1, 8).map(lambda x: x * SECOND // 2)
lengths = st.lists(st.one_of(st.none(), st.integers(0, 12)), min_size=1, max_size=4)


def hopping_kernel(size: int, hop: int, align: int) -> HoppingKernel:
    kernel = interval_kernel(("k",), "t", "e", "integer", 0,
                             HoppingWindows(size=size, hop=hop, align=align), JOBS, OUTPUT)
    assert isinstance(kernel, HoppingKernel)
    return kernel


def revised(kernel: HoppingKernel, allowed: int | None, changes: bool) -> RevisedKernel:
    return RevisedKernel(HoppingRevised(kernel), INTERVALS, "t", "integer", ORDER, "spec",
                         allowed, changes, 1)


def oracle(run: Run, kernel: HoppingKernel) -> tuple[list[Row], dict[Any, Row]]:
    """The oracle's windows with an end over the rows applied, and per key its one row
    for the windows from its horizon on (only open-ended events: null end)."""
    w = kernel.window
    want = hopping_oracle(run.kept, time="t", end="e", key=["k"], order=None,
                          columns=["k", "t", "e", "v"], size=w.size, hop=w.hop,
                          align=w.align, output="windows", aggs=AGGS)
    return ([r for r in want if r["window_end"] is not None],
            {r["k"]: r for r in want if r["window_end"] is None})


def as_window(shared: Row, start: int, size: int) -> Row:
    """The oracle's row for all windows from its horizon on, as the window at `start`
    (the aggregates here do not depend on the window's bounds)."""
    return {**shared, "window_start": start, "window_end": start + size,
            "time": start + size}


def check_latest(run: Run, kernel: HoppingKernel, changes: bool) -> None:
    """The latest rows equal the oracle's windows over the rows applied: with `changes`
    each window written (those from the oracle's horizon on as its row for all of
    them), and each of the oracle's not written is open and holds only open-ended
    events (a key writes those as its watermark reaches them, not up to the horizon of
    every key); else exactly those final at the last watermark (ending at or before it
    + 1 tick). A window's identity never changes, so nothing is replaced."""
    w = kernel.window
    finite, shared = oracle(run, kernel)
    got = latest(written(run))
    assert not any("replaces" in r for r in written(run))
    assert all((r["window_start"] - w.align) % w.hop == 0 for r in got)
    ids = {identity(r) for r in finite}
    beyond = [r for r in got if identity(r) not in ids]
    for row in beyond:  # windows past the oracle's horizon hold open-ended events only
        assert row["k"] in shared
        assert row["window_start"] >= shared[row["k"]]["window_start"]
    horizon = run.watermark * 1000 + 1
    if changes:
        shown = {identity(g) for g in got}
        assert_same([r for r in got if identity(r) in ids],
                    [r for r in finite if identity(r) in shown])
        assert_same(beyond, [as_window(shared[r["k"]], r["window_start"], w.size)
                             for r in beyond])
        for row in finite:  # not written yet: open, and past the key's finite events
            if identity(row) not in shown:
                assert row["window_end"] > horizon
                assert all(r["e"] is None for r in run.kept if r["k"] == row["k"]
                           and r["t"] < row["window_end"]
                           and (r["e"] is None or r["e"] > row["window_start"]))
        return
    want = [r for r in finite if r["window_end"] <= horizon]
    for row in shared.values():
        start = row["window_start"]
        while start + w.size <= horizon:
            want.append(as_window(row, start, w.size))
            start += w.hop
    assert_same(got, want)


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths, size=sizes, hop=sizes, align=st.integers(-3, 3),
       changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_windows_are_the_batch_result(
        data: Stream, ends: list[int | None], size: int, hop: int, align: int,
        changes: bool) -> None:
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    batches = with_ends(data[0], ends)
    run = simulate(revised(kernel, 10 ** 12, changes), batches, data[1], False)
    check_revisions(run)
    assert run.late == 0
    assert len(run.kept) == sum(b.num_rows for b in batches)
    check_latest(run, kernel, changes)
    if not changes:
        assert all(r["final"] for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths, size=sizes, hop=sizes, align=st.integers(-3, 3),
       allowed=st.integers(0, 8), changes=st.booleans())
def test_rows_beyond_the_allowed_lateness_are_counted_and_the_rest_applied(
        data: Stream, ends: list[int | None], size: int, hop: int, align: int,
        allowed: int, changes: bool) -> None:
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    batches = with_ends(data[0], ends)
    allowed_ticks = allowed * SECOND // 2 + 1
    run = simulate(revised(kernel, allowed_ticks, changes), batches, data[1], False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in batches)
    for row, mark in run.late_rows:
        assert row["t"] + allowed_ticks < mark * 1000 + 1
    check_latest(run, kernel, changes)


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths, size=sizes, hop=sizes, align=st.integers(-3, 3))
def test_early_rows_leave_the_final_rows_as_they_were(
        data: Stream, ends: list[int | None], size: int, hop: int, align: int) -> None:
    """`emit="changes"` alone (Spark's late filter on): the rows with `final` true are
    the rows the stream writes without revisions, one per window and its last row; the
    late rows are the same."""
    kernel = hopping_kernel(size, hop, align * SECOND // 2)
    batches = with_ends(data[0], ends)
    early = simulate(revised(kernel, None, True), batches, data[1], True)
    check_revisions(early)
    plain = simulate_plain(StreamKernel(kernel, INTERVALS, "t", "integer", ORDER, "spec"),
                           batches, "k", data[1])
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final")}
              for r in written(early) if r["final"]]
    assert_same(finals, [r for b in plain.emitted for r in b.to_pylist()])
    last: dict[Any, Row] = {}
    for row in written(early):
        assert not last.get(identity(row), {"final": False})["final"]
        last[identity(row)] = row
    assert early.late == plain.late and early.applied == 0


def test_a_late_event_revises_each_window_it_overlaps() -> None:
    """Hopping(4 s, 2 s), lateness 1 s, allowed lateness 10 s: events [1, 2) and
    [2, 3) give [-2, 2), [0, 4), [2, 6); a late event [3, 7) overlaps [0, 4), [2, 6)
    (written again as revision 1), and [4, 8), [6, 10), which it makes."""
    kernel = hopping_kernel(4 * SECOND, 2 * SECOND, 0)
    rows = [("a", 1, 2, 1.0), ("a", 2, 3, 2.0), ("a", 11, 12, 4.0)]
    batches = [pa.table({"k": [r[0] for r in rows], "t": [r[1] * SECOND for r in rows],
                         "v": [r[3] for r in rows],
                         "e": [r[2] * SECOND for r in rows]}).cast(INTERVALS),
               INTERVALS.empty_table(),  # the watermark is 10 s
               pa.table({"k": ["a"], "t": [3 * SECOND], "v": [8.0], "e": [7 * SECOND]})
               .cast(INTERVALS),
               INTERVALS.empty_table()]
    run = simulate(revised(kernel, 10 * SECOND, False), batches, SECOND, False)
    shown = [sorted((r["window_start"] // SECOND, r["revision"], r["count"]) for r in rows)
             for rows in run.written]
    assert shown == [[], [(-2, 0, 1), (0, 0, 2), (2, 0, 1)],
                     [(0, 1, 3), (2, 1, 2), (4, 0, 1), (6, 0, 1)], []]
    assert (run.applied, run.late) == (1, 0)


def test_an_open_ended_event_is_in_every_window_from_its_start_and_stays_kept() -> None:
    """Tumbling(2 s) over an open-ended event at 1 s: each window from [0, 2) on is
    written as the watermark passes its end, and a late event [3, 4) within the allowed
    lateness revises [2, 4) long after the open-ended event began."""
    kernel = hopping_kernel(2 * SECOND, 2 * SECOND, 0)
    first = pa.table({"k": ["a", "a"], "t": [1 * SECOND, 7 * SECOND], "v": [1.0, 2.0],
                      "e": pa.array([None, 8 * SECOND], pa.int64())}).cast(INTERVALS)
    late = pa.table({"k": ["a"], "t": [3 * SECOND], "v": [4.0],
                     "e": [4 * SECOND]}).cast(INTERVALS)
    run = simulate(revised(kernel, 10 * SECOND, False),
                   [first, INTERVALS.empty_table(), late, INTERVALS.empty_table()],
                   SECOND, False)  # the watermark is 6 s
    shown = [sorted((r["window_start"] // SECOND, r["revision"], r["count"]) for r in rows)
             for rows in run.written]
    assert shown == [[], [(0, 0, 1), (2, 0, 1), (4, 0, 1)], [(2, 1, 2)], []]
    assert run.late == 0
