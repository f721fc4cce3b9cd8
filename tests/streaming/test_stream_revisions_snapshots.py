"""Revisions of Snapshot windows on the rows-carrying operator (`on_late="update"`,
`emit="changes"`), without Spark: each key's handler over random micro-batches of
interval events under Spark's rules, its state through its stored form after every
batch (a restart), against the independent oracle over the rows applied."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_intervals import snapshot as snapshot_oracle
from simulator import simulate as simulate_plain
from test_stream_revisions_sessions import Run, check_revisions, latest, simulate, written
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

from wisp.plan.intervals import SnapshotWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.revised import RevisedKernel
from wisp.runtime.streaming.revised import SnapshotWindows as Revisable
from wisp.runtime.windows.interval_kernels import interval_kernel
from wisp.runtime.windows.snapshot import SnapshotKernel

Row = dict[str, Any]
ORDER = ("t", "e", "v")
lengths = st.lists(st.one_of(st.none(), st.integers(0, 12)), min_size=1, max_size=4)


def snapshot_kernel() -> SnapshotKernel:
    kernel = interval_kernel(("k",), "t", "e", "integer", 0, SnapshotWindows(), JOBS,
                             OUTPUT)
    assert isinstance(kernel, SnapshotKernel)
    return kernel


def revised(allowed: int | None, changes: bool) -> RevisedKernel:
    return RevisedKernel(Revisable(snapshot_kernel()), INTERVALS, "t", "integer", ORDER,
                         "spec", allowed, changes, 1)


def identity(row: Row) -> tuple[Any, ...]:
    return (row["k"], row["window_start"], row["window_end"])


def overlaps(a: Row, b: Row) -> bool:
    inf = float("inf")
    return a["k"] == b["k"] and a["window_start"] < (b["window_end"] or inf) \
        and b["window_start"] < (a["window_end"] or inf)


def check_latest(run: Run, changes: bool) -> None:
    """The latest rows against the oracle's windows over the rows applied: with
    `changes` all of them; else those final at the last watermark (ending at or before
    it + 1 tick), besides written windows that a late event split or covered into
    windows still open (each replaced once those are final)."""
    want = snapshot_oracle(run.kept, time="t", end="e", key=["k"], order=None,
                           columns=["k", "t", "e", "v"], aggs=AGGS)
    got = latest(written(run))
    if changes:
        assert_same(got, want)
        return
    horizon = run.watermark * 1000 + 1
    final = [r for r in want if r["window_end"] is not None and r["window_end"] <= horizon]
    still_open = [r for r in want if r not in final]
    final_ids = {identity(r) for r in final}
    every = {identity(r) for r in want}
    assert_same([r for r in got if identity(r) in final_ids], final)
    for row in (r for r in got if identity(r) not in final_ids):
        assert identity(row) not in every
        assert any(overlaps(row, o) for o in still_open)


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths, changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_windows_are_the_batch_result(
        data: Stream, ends: list[int | None], changes: bool) -> None:
    batches = with_ends(data[0], ends)
    run = simulate(revised(10 ** 12, changes), batches, data[1], False)
    check_revisions(run)
    assert run.late == 0
    assert len(run.kept) == sum(b.num_rows for b in batches)
    check_latest(run, changes)
    if not changes:
        assert all(r["final"] for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths, allowed=st.integers(0, 8), changes=st.booleans())
def test_rows_beyond_the_allowed_lateness_are_counted_and_the_rest_applied(
        data: Stream, ends: list[int | None], allowed: int, changes: bool) -> None:
    batches = with_ends(data[0], ends)
    allowed_ticks = allowed * SECOND // 2 + 1
    run = simulate(revised(allowed_ticks, changes), batches, data[1], False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in batches)
    for row, mark in run.late_rows:
        assert row["t"] + allowed_ticks < mark * 1000 + 1
    check_latest(run, changes)


@settings(max_examples=150, deadline=None)
@given(data=streams(), ends=lengths)
def test_early_rows_leave_the_final_rows_as_they_were(data: Stream,
                                                      ends: list[int | None]) -> None:
    """`emit="changes"` alone (Spark's late filter on): the rows with `final` true are
    the rows the stream writes without revisions, and the late rows are the same."""
    batches = with_ends(data[0], ends)
    early = simulate(revised(None, True), batches, data[1], True)
    check_revisions(early)
    plain = simulate_plain(StreamKernel(snapshot_kernel(), INTERVALS, "t", "integer", ORDER,
                                        "spec"), batches, "k", data[1])
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final", "replaces")}
              for r in written(early) if r["final"]]
    assert_same(finals, [r for b in plain.emitted for r in b.to_pylist()])
    assert early.late == plain.late and early.applied == 0


def test_a_late_event_splits_the_window_it_starts_in() -> None:
    """Events [1, 5) and [3, 9) give windows [1, 3), [3, 5), [5, 9); a late event
    [2, 4) splits [1, 3) into [1, 2) and [2, 3) and [3, 5) into [3, 4) and [4, 5)."""
    kernel = revised(30 * SECOND, False)
    rows = [("a", 1, 5, 1.0), ("a", 3, 9, 2.0), ("a", 20, 21, 0.0)]
    batches = [pa.table({"k": [r[0] for r in rows], "t": [r[1] * SECOND for r in rows],
                         "v": [r[3] for r in rows],
                         "e": [r[2] * SECOND for r in rows]}).cast(INTERVALS),
               INTERVALS.empty_table(),  # the watermark is 19 s: the three are final
               pa.table({"k": ["a"], "t": [2 * SECOND], "v": [4.0], "e": [4 * SECOND]})
               .cast(INTERVALS),
               INTERVALS.empty_table()]
    run = simulate(kernel, batches, SECOND, False)
    shown = [sorted((r["window_start"] // SECOND, r["window_end"] // SECOND, r["revision"],
                     r["count"], [x["window_start"] // SECOND for x in r["replaces"]])
                    for r in rows) for rows in run.written]
    assert shown == [[], [(1, 3, 0, 1, []), (3, 5, 0, 2, []), (5, 9, 0, 1, [])],
                     [(1, 2, 1, 1, [1]), (2, 3, 1, 2, [1]), (3, 4, 1, 3, [3]),
                      (4, 5, 1, 2, [3])], []]
    assert (run.applied, run.late) == (1, 0)
