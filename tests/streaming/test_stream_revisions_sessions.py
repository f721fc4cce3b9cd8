"""Revisions of sessions on the rows-carrying operator (`on_late="update"`,
`emit="changes"`), without Spark: each key's handler over random micro-batches under
Spark's rules, its state through its stored form after every batch (a restart),
against the independent session oracle over the rows applied."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_dynamic import sessions as session_oracle
from plan.scenarios import POINTS
from plan.schema import source
from simulator import simulate as simulate_plain
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

import wisp as ws
import wisp.spec.aggregates as A
import wisp.spec.windows as W
from wisp.plan.planner import plan
from wisp.plan.source import Inputs
from wisp.runtime.streaming.operator import StreamKernel, StreamState
from wisp.runtime.streaming.revised import RevisedKernel, RevisedState, SessionWindows
from wisp.runtime.windows.sessions import SessionKernel

IDENTITY = ("k", "window_start", "window_end")
Row = dict[str, Any]


@dataclass
class Run:
    """What a simulated stream wrote, batch by batch; its counts; the rows applied;
    each batch's watermark (ms)."""

    written: list[list[Row]] = field(default_factory=list)
    late: int = 0
    applied: int = 0
    kept: list[Row] = field(default_factory=list)
    late_rows: list[tuple[Row, int]] = field(default_factory=list)
    watermark: int = 0


def session_kernel(gap: int, cap: int | None) -> SessionKernel:
    return SessionKernel(("k",), "t", None, "integer", 0, gap, cap, JOBS, OUTPUT, 5)


def revised(gap: int, cap: int | None, allowed: int | None, changes: bool) -> RevisedKernel:
    return RevisedKernel(SessionWindows(session_kernel(gap, cap)), INPUT, "t", "integer",
                         ("t", "v"), "spec", allowed, changes, 1)


def simulate(kernel: RevisedKernel, batches: list[pa.Table], lateness: int,
             filtered: bool) -> Run:
    """Spark's rules (tests/streaming/simulator.py): the watermark moves after each
    batch to the newest time less the lateness; with `filtered` (emit="changes" alone)
    Spark drops the rows at or below the watermark of the batch before; each key with
    rows runs its data handler, then each key whose timer is due its timer handler;
    every state through its stored value after each call."""
    stored: dict[Any, tuple[Any, ...]] = {}
    timers: dict[Any, int] = {}
    run = Run()
    previous = 0
    newest: int | None = None

    def keep(value: Any, state: RevisedState, timer: int | None) -> None:
        stored[value] = state.to_row(kernel.spec)
        timers.pop(value, None)
        if timer is not None:
            timers[value] = timer

    def load(value: Any) -> RevisedState | None:
        row = stored.get(value)
        return None if row is None else RevisedState.from_row(row, kernel.spec)

    for batch in batches:
        ticks = kernel.ticks(batch)
        if batch.num_rows:
            top = int(ticks.max()) // 1000
            newest = top if newest is None else max(newest, top)
        if filtered and previous > 0:
            on_time = ticks > previous * 1000
            run.late += int((~on_time).sum())
            batch = batch.filter(pa.array(on_time))
        out: list[Row] = []
        for value in dict.fromkeys(batch.column("k").to_pylist()):
            rows = batch.filter(pa.array([k == value for k in batch.column("k").to_pylist()]))
            state = load(value)
            applied, late = kernel.split_late(state, rows, run.watermark)
            run.kept += applied.to_pylist()
            run.late_rows += [(r, run.watermark) for r in late.to_pylist()]
            step = kernel.on_rows(state, rows, run.watermark)
            run.late += step.counted
            run.applied += step.applied
            keep(value, step.state, step.timer)
            out += [r for b in step.outputs for r in b.to_pylist()]
        for value, timer in sorted(timers.items(), key=lambda item: repr(item[0])):
            if timer <= run.watermark:
                step = kernel.on_timer(load(value), run.watermark)
                keep(value, step.state, step.timer)
                out += [r for b in step.outputs for r in b.to_pylist()]
        run.written.append(out)
        previous = run.watermark
        if newest is not None:
            run.watermark = max(run.watermark, newest - lateness // 1000)
    return run


def identity(row: Row) -> tuple[Any, ...]:
    return tuple(row[c] for c in IDENTITY)


def replaced(row: Row) -> list[tuple[Any, ...]]:
    """The windows a row replaces (none for a kind without `replaces`)."""
    return [(row["k"], r["window_start"], r["window_end"]) for r in row.get("replaces", [])]


def latest(rows: list[Row]) -> list[Row]:
    """Each window's row of the highest revision, unless a row of a higher revision
    replaces the window; without `revision`, `final` and `replaces` (written here from
    the documented rule, not from wisp's code)."""
    best: dict[tuple[Any, ...], Row] = {}
    for row in rows:
        if identity(row) not in best or row["revision"] > best[identity(row)]["revision"]:
            best[identity(row)] = row
    dropped = {w for row in rows for w in replaced(row)
               if w in best and best[w]["revision"] < row["revision"]}
    return [{k: v for k, v in r.items() if k not in ("revision", "final", "replaces")}
            for w, r in best.items() if w not in dropped]


def check_revisions(run: Run) -> None:
    """In the order written: a window's revisions increase, by one when its row replaces
    no other window; a row's revision is above that of each window it replaces; once a
    window's row is final, every later one is; a window replaced is never written
    again unless a later row replaces its replacement."""
    last: dict[tuple[Any, ...], Row] = {}
    for rows in run.written:
        for row in rows:
            before = last.get(identity(row))
            gone = [last[w] for w in replaced(row) if w in last]
            assert len(gone) == len(replaced(row))  # replaces only windows written
            assert all(g["revision"] < row["revision"] for g in gone)
            if before is not None:
                assert row["revision"] > before["revision"]
                assert row["final"] or not before["final"]
                if not replaced(row):
                    assert row["revision"] == before["revision"] + 1
            elif not replaced(row):
                assert row["revision"] == 0
            last[identity(row)] = row


def check_latest(run: Run, gap: int, cap: int | None, changes: bool) -> None:
    """The latest rows against the oracle's sessions over the rows applied: with
    `changes`, all of them, open ones too; else those final at the last watermark,
    besides written sessions that a late row merged into a session still open (each is
    replaced once that session is final, and none overlaps a final session)."""
    want = session_oracle(run.kept, time="t", key=["k"], order="v", columns=["k", "t", "v"],
                          gap=gap, max_duration=cap, aggs=AGGS)
    got = latest(written(run))
    if changes:
        assert_same(got, want)
        return
    horizon = run.watermark * 1000 + 1
    final = [r for r in want if r["window_end"] < horizon
             or (cap is not None and r["window_start"] + cap <= horizon)]
    still_open = [r for r in want if r not in final]
    waiting = [r for r in got if any(
        o["k"] == r["k"] and o["window_start"] < r["window_end"]
        and r["window_start"] < o["window_end"] for o in still_open)]
    assert_same([r for r in got if r not in waiting], final)


def written(run: Run) -> list[Row]:
    return [r for rows in run.written for r in rows]


gaps = st.integers(1, 6).map(lambda g: g * SECOND // 2)
caps = st.one_of(st.none(), st.integers(2, 12).map(lambda c: c * SECOND // 2))


@settings(max_examples=150, deadline=None)
@given(data=streams(), gap=gaps, cap=caps, changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_sessions_are_the_batch_result(
        data: Stream, gap: int, cap: int | None, changes: bool) -> None:
    """An allowed lateness longer than the stream: no row is late, and the latest rows
    (merged sessions replacing those they merged) equal the oracle's sessions over every
    row (with `changes` every session, open ones too; else those final by the last
    watermark)."""
    batches, lateness, _ = data
    run = simulate(revised(gap, cap, 10 ** 12, changes), batches, lateness, False)
    check_revisions(run)
    assert run.late == 0
    assert len(run.kept) == sum(b.num_rows for b in batches)
    check_latest(run, gap, cap, changes)
    if not changes:
        assert all(r["final"] for r in written(run))


@settings(max_examples=150, deadline=None)
@given(data=streams(), gap=gaps, cap=caps, allowed=st.integers(0, 8),
       changes=st.booleans())
def test_rows_beyond_the_allowed_lateness_are_counted_and_the_rest_applied(
        data: Stream, gap: int, cap: int | None, allowed: int, changes: bool) -> None:
    """A short allowed lateness: every row is applied or counted late; a row counted late
    lies more than the allowed lateness below the watermark of its batch; the latest
    rows equal the oracle's over the rows applied."""
    batches, lateness, _ = data
    allowed_ticks = allowed * SECOND // 2 + 1
    run = simulate(revised(gap, cap, allowed_ticks, changes), batches, lateness, False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in batches)
    for row, mark in run.late_rows:
        assert row["t"] + allowed_ticks < mark * 1000 + 1
    check_latest(run, gap, cap, changes)


@settings(max_examples=150, deadline=None)
@given(data=streams(), gap=gaps, cap=caps)
def test_early_rows_leave_the_final_rows_as_they_were(data: Stream, gap: int,
                                                      cap: int | None) -> None:
    """`emit="changes"` alone (Spark's late filter on): the rows with `final` true are
    the rows the stream writes without revisions, and the late rows are the same."""
    batches, lateness, _ = data
    early = simulate(revised(gap, cap, None, True), batches, lateness, True)
    check_revisions(early)
    plain = simulate_plain(StreamKernel(session_kernel(gap, cap), INPUT, "t", "integer",
                                        ("t", "v"), "spec"), batches, "k", lateness)
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final", "replaces")}
              for r in written(early) if r["final"]]
    assert_same(finals, [r for b in plain.emitted for r in b.to_pylist()])
    assert early.late == plain.late and early.applied == 0


def test_a_late_row_that_bridges_two_sessions_replaces_both() -> None:
    """Gap 2 s, lateness 1 s, allowed lateness 10 s: sessions [1, 3) and [4, 6) are
    written; a late row at 2.5 s merges them into [1, 6), revision 1, which replaces
    both; once the watermark is 29 s, a row at 5 s is counted late."""
    kernel = revised(2 * SECOND, None, 10 * SECOND, False)
    batches = [table([("a", 1 * SECOND, 1.0), ("a", 4 * SECOND, 2.0),
                      ("a", 9 * SECOND, 4.0)]),  # then the watermark is 8 s
               table([]),  # [1, 3) and [4, 6) are final
               table([("a", SECOND * 5 // 2, 8.0)]),  # late, bridges the two
               table([("a", 30 * SECOND, 16.0)]),  # then the watermark is 29 s
               table([("a", 5 * SECOND, 32.0)]),  # beyond the allowed lateness
               table([])]
    run = simulate(kernel, batches, SECOND, False)
    half = SECOND // 2
    shown = [[(r["window_start"] // half, r["window_end"] // half, r["revision"],
               r["final"], r["count"], [(x["window_start"] // half, x["window_end"] // half)
                                        for x in r["replaces"]])
              for r in rows] for rows in run.written]
    assert shown == [[], [(2, 6, 0, True, 1, []), (8, 12, 0, True, 1, [])],
                     [(2, 12, 1, True, 3, [(2, 6), (8, 12)])], [],
                     [(18, 22, 0, True, 1, [])], []]
    assert (run.applied, run.late) == (1, 1)
    assert latest(written(run))[0]["count"] == 3


def test_the_state_keeps_only_sessions_within_the_allowed_lateness() -> None:
    """Once the watermark passes a session's end plus the allowed lateness, its rows and
    its entry leave the state, and the key has no timer left."""
    kernel = revised(SECOND, None, 2 * SECOND, True)
    step = kernel.on_rows(None, table([("a", i * 3 * SECOND, 1.0) for i in range(4)]), 0)
    assert step.state.rows.num_rows == 4
    step = kernel.on_timer(RevisedState.from_row(step.state.to_row("spec"), "spec"), 20_000)
    state = RevisedState.from_row(step.state.to_row("spec"), "spec")
    assert state.rows.num_rows == 0 and state.emitted.num_rows == 0
    assert step.timer is None
    assert [r["final"] for b in step.outputs for r in b.to_pylist()] == [True] * 4


@settings(max_examples=100, deadline=None)
@given(data=streams(), gap=gaps, cap=caps, ends=st.lists(
    st.one_of(st.none(), st.integers(0, 12)), min_size=1, max_size=4),
    allowed=st.one_of(st.just(10 ** 12), st.integers(0, 8).map(
        lambda a: a * SECOND // 2 + 1)), changes=st.booleans())
def test_sessions_of_interval_events_with_revisions(
        data: Stream, gap: int, cap: int | None, ends: list[int | None], allowed: int,
        changes: bool) -> None:
    """Interval events `[t, e)` (some open-ended) reach to their end: the latest rows
    equal the oracle's sessions over the rows applied (open ones with `changes`)."""
    batches = with_ends(data[0], ends)
    kernel = SessionKernel(("k",), "t", "e", "integer", 0, gap, cap, JOBS, OUTPUT, 5)
    revising = RevisedKernel(SessionWindows(kernel), INTERVALS, "t", "integer",
                             ("t", "e", "v"), "spec", allowed, changes, 1)
    run = simulate(revising, batches, data[1], False)
    check_revisions(run)
    assert len(run.kept) + run.late == sum(b.num_rows for b in batches)
    want = session_oracle(run.kept, time="t", key=["k"], order="v",
                          columns=["k", "t", "e", "v"], gap=gap, max_duration=cap,
                          end="e", aggs=AGGS)
    got = latest(written(run))
    if changes:
        assert_same(got, want)
        return
    horizon = run.watermark * 1000 + 1
    final = [r for r in want if (r["window_end"] is not None and r["window_end"] < horizon)
             or (cap is not None and r["window_start"] + cap <= horizon)]
    final_ids = {identity(r) for r in final}
    assert_same([r for r in got if identity(r) in final_ids], final)
    inf = float("inf")
    for row in (r for r in got if identity(r) not in final_ids):
        assert any(o["k"] == row["k"] and o["window_start"] < (row["window_end"] or inf)
                   and row["window_start"] < (o["window_end"] or inf)
                   for o in want if o not in final)


def test_a_checkpoint_without_revisions_is_refused() -> None:
    """A key's state stored by the query without revisions (format 2) is refused by
    the query with them, and the other way round."""
    plain = StreamKernel(session_kernel(SECOND, None), INPUT, "t", "integer", ("t", "v"),
                         "spec")
    with pytest.raises(ws.WispInputError, match="must hold state of format 3, found "
                                                "format 2"):
        RevisedState.from_row(plain.empty().to_row("spec"), "spec")
    stored = revised(SECOND, None, SECOND, False).empty().to_row("spec")
    with pytest.raises(ws.WispInputError, match="must hold state of format 2, found "
                                                "format 3"):
        StreamState.from_row(stored, "spec")


def test_a_query_without_a_key_keeps_one_group() -> None:
    """No key columns: the rows carry none, and `revision`, `final` and `replaces`
    follow `time` at the start."""
    schema = pa.schema([pa.field("t", pa.int64()), pa.field("v", pa.float64())])
    output = pa.schema([f for f in OUTPUT if f.name != "k"])
    kernel = SessionKernel((), "t", None, "integer", 0, SECOND, None, JOBS, output, 5)
    revising = RevisedKernel(SessionWindows(kernel), schema, "t", "integer", ("t", "v"),
                             "spec", SECOND, False, 0)
    rows = pa.table({"t": [0, 3 * SECOND], "v": [1.0, 2.0]}, schema=schema)
    step = revising.on_rows(None, rows, 1_500)
    out = [r for b in step.outputs for r in b.to_pylist()]
    assert [list(r)[:7] for r in out] == [["window_start", "window_end", "time", "revision",
                                           "final", "replaces", "count"]]
    assert [(r["window_start"], r["count"], r["final"]) for r in out] == [(0, 1, True)]



@pytest.mark.parametrize("window", [W.Session("5s"), W.Tumbling("10s")],
                         ids=["rows carried", "pane partials"])
def test_early_rows_with_late_rows_emitted_are_refused(window: object) -> None:
    """`emit="changes"` with `on_late="emit"` is refused when planned, on the operator
    that carries rows as on pane partials."""
    described = dataclasses.replace(source(POINTS, "ts", key="k"), lateness=SECOND,
                                    on_late="emit", emit="changes")
    with pytest.raises(ws.WispUnsupportedError, match="`emit` must be 'final' with "
                                                      "on_late='emit'"):
        plan(Inputs(described), window, (A.count(),), None)
