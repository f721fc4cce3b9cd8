"""Revisions of CountByStartTime windows on the rows-carrying operator
(`on_late="update"`, `emit="changes"`), without Spark: each key's handler over random
micro-batches under Spark's rules, its state through its stored form after every batch
(a restart), against the independent oracle over the rows applied."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_intervals import count_by_start_time as count_oracle
from simulator import simulate as simulate_plain
from test_stream_revisions_sessions import Run, check_revisions, latest, simulate, written
from test_stream_simulated import (
    AGGS,
    INPUT,
    INTERVALS,
    JOBS,
    OUTPUT,
    SECOND,
    Stream,
    assert_same,
    streams,
    table,
    with_ends,
)

from wisp.plan.intervals import CountWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.revised import CountByStartWindows, RevisedKernel
from wisp.runtime.windows.counts import CountKernel
from wisp.runtime.windows.interval_kernels import interval_kernel

Row = dict[str, Any]
lengths = st.lists(st.one_of(st.none(), st.integers(0, 12)), min_size=1, max_size=4)


def count_kernel(n: int, intervals: bool) -> CountKernel:
    kernel = interval_kernel(("k",), "t", "e" if intervals else None, "integer", 0,
                             CountWindows(n=n), JOBS, OUTPUT)
    assert isinstance(kernel, CountKernel)
    return kernel


def order(intervals: bool) -> tuple[str, ...]:
    return ("t", "e", "v") if intervals else ("t", "v")


def revised(n: int, intervals: bool, allowed: int | None, changes: bool) -> RevisedKernel:
    return RevisedKernel(CountByStartWindows(count_kernel(n, intervals)),
                         INTERVALS if intervals else INPUT, "t", "integer", order(intervals),
                         "spec", allowed, changes, 1)


def identity(row: Row) -> tuple[Any, ...]:
    return (row["k"], row["window_start"], row["window_end"])


def check_latest(run: Run, n: int, intervals: bool, changes: bool) -> None:
    """The latest rows against the oracle's windows over the rows applied: with
    `changes` all of them; else those final at the last watermark (their last start at
    or below it), besides written windows that a new start time shifted into windows
    still open (each replaced once those are final: not a window any more, and
    overlapping one still open)."""
    columns = ["k", "t", "e", "v"] if intervals else ["k", "t", "v"]
    want = count_oracle(run.kept, time="t", end="e" if intervals else None, key=["k"],
                        order=None, columns=columns, n=n, aggs=AGGS)
    got = latest(written(run))
    if changes:
        assert_same(got, want)
        return
    bound = run.watermark * 1000
    final = [r for r in want if r["time"] <= bound]
    still_open = [r for r in want if r["time"] > bound]
    final_ids = {identity(r) for r in final}
    every = {identity(r) for r in want}
    assert_same([r for r in got if identity(r) in final_ids], final)
    for row in (r for r in got if identity(r) not in final_ids):
        assert identity(row) not in every
        assert any(o["k"] == row["k"] and o["window_start"] < row["window_end"]
                   and row["window_start"] < o["window_end"] for o in still_open)


def batches_of(data: Stream, intervals: bool, ends: list[int | None]) -> list[pa.Table]:
    return with_ends(data[0], ends) if intervals else data[0]


@settings(max_examples=150, deadline=None)
@given(data=streams(), n=st.integers(1, 4), intervals=st.booleans(), ends=lengths,
       changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_windows_are_the_batch_result(
        data: Stream, n: int, intervals: bool, ends: list[int | None],
        changes: bool) -> None:
    batches = batches_of(data, intervals, ends)
    run = simulate(revised(n, intervals, 10 ** 12, changes), batches, data[1], False)
    check_revisions(run)
    assert run.late == 0
    assert len(run.kept) == sum(b.num_rows for b in batches)
    check_latest(run, n, intervals, changes)
    if not changes:
        assert all(r["final"] for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), n=st.integers(1, 4), intervals=st.booleans(), ends=lengths,
       allowed=st.integers(0, 8), changes=st.booleans())
def test_rows_beyond_the_allowed_lateness_are_counted_and_the_rest_applied(
        data: Stream, n: int, intervals: bool, ends: list[int | None], allowed: int,
        changes: bool) -> None:
    batches = batches_of(data, intervals, ends)
    allowed_ticks = allowed * SECOND // 2 + 1
    run = simulate(revised(n, intervals, allowed_ticks, changes), batches, data[1], False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in batches)
    for row, mark in run.late_rows:
        assert row["t"] + allowed_ticks < mark * 1000 + 1
    check_latest(run, n, intervals, changes)


@settings(max_examples=150, deadline=None)
@given(data=streams(), n=st.integers(1, 4), intervals=st.booleans(), ends=lengths)
def test_early_rows_leave_the_final_rows_as_they_were(
        data: Stream, n: int, intervals: bool, ends: list[int | None]) -> None:
    """`emit="changes"` alone (Spark's late filter on): the rows with `final` true are
    the rows the stream writes without revisions, and the late rows are the same."""
    batches = batches_of(data, intervals, ends)
    early = simulate(revised(n, intervals, None, True), batches, data[1], True)
    check_revisions(early)
    plain = simulate_plain(StreamKernel(count_kernel(n, intervals),
                                        INTERVALS if intervals else INPUT, "t", "integer",
                                        order(intervals), "spec"), batches, "k", data[1])
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final", "replaces")}
              for r in written(early) if r["final"]]
    assert_same(finals, [r for b in plain.emitted for r in b.to_pylist()])
    assert early.late == plain.late and early.applied == 0


def test_a_late_start_time_shifts_the_windows_over_it() -> None:
    """CountByStartTime(2), lateness 1 s, allowed lateness 10 s: windows [1, 3] and
    [3, 5] are written; a late row at 2 s makes [1, 2] and [2, 3] (replacing [1, 3]) and
    [3, 5] stays as it was."""
    kernel = revised(2, False, 10 * SECOND, False)
    batches = [table([("a", 1 * SECOND, 1.0), ("a", 3 * SECOND, 2.0),
                      ("a", 5 * SECOND, 4.0), ("a", 9 * SECOND, 8.0)]),
               table([]),  # the watermark is 8 s: [1, 3], [3, 5], [5, 9]... final
               table([("a", 2 * SECOND, 16.0)]),
               table([])]
    run = simulate(kernel, batches, SECOND, False)
    shown = [[(r["window_start"] // SECOND, r["time"] // SECOND, r["revision"],
               r["count"], [x["window_start"] // SECOND for x in r["replaces"]])
              for r in rows] for rows in run.written]
    assert shown == [[], [(1, 3, 0, 2, []), (3, 5, 0, 2, [])], [(1, 2, 1, 2, [1]),
                                                                (2, 3, 1, 2, [1])], []]
    assert (run.applied, run.late) == (1, 0)
