"""Revisions on pane partials (`on_late="update"`, `emit="changes"`), without Spark:
each bucket's handler (`PaneBuckets.on_partials`, then its timer) over random
micro-batches, the state through its bytes after every batch (a restart), against the
independent oracle of hopping windows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from simulator import Store, newest
from test_stream_panes import assert_same_rows, oracle_rows, pane_kernel
from test_stream_simulated import INPUT, SECOND, Stream, streams, table

from wisp.engine.processor import PanePacker
from wisp.runtime.streaming.operator import StreamKernel, table_of
from wisp.runtime.streaming.pane_buckets import PaneBuckets

KEY_SCHEMA = pa.schema([INPUT.field("k")])
WINDOW = ("k", "window_start", "window_end")


@dataclass
class Run:
    """What a simulated stream wrote, batch by batch, and its counts."""

    written: list[list[dict[str, Any]]] = field(default_factory=list)
    late: int = 0
    applied: int = 0
    watermark: int = 0


def simulate(buckets: PaneBuckets, batches: list[pa.Table], lateness: int) -> Run:
    """One bucket (every key in it): each batch's rows reduced to pane partials where
    read, the handler, then the timer if due; the watermark (ms) moves after each batch
    to the newest time less the lateness, as Spark's does."""
    assert isinstance(buckets.stream.kernel, type(buckets.kernel))
    packer = PanePacker(buckets.kernel, buckets.stream.schema, "__bucket")
    store = Store(buckets)
    run = Run()
    newest_ms: int | None = None
    for batch in batches:
        newest_ms = newest(buckets.stream.ticks(batch), newest_ms)
        out: list[dict[str, Any]] = []
        if batch.num_rows:
            rows = batch.append_column("__bucket", pa.array([0] * batch.num_rows,
                                                            pa.int32()))
            partials = [table_of(blob) for record in packer(iter(rows.to_batches()))
                        for blob in record.column(1).to_pylist()]
            step = buckets.on_partials(store.load(0), pa.concat_tables(partials),
                                       run.watermark)
            run.late += step.counted
            run.applied += step.applied
            out += store.keep(0, step)
        out += store.timers_due(run.watermark)
        run.written.append(out)
        if newest_ms is not None:
            run.watermark = max(run.watermark, newest_ms - lateness // 1000)
    return run


def revised(size: int, hop: int, align: int, allowed: int | None, changes: bool
            ) -> PaneBuckets:
    stream = StreamKernel(pane_kernel(size, hop, align), INPUT, "t", "integer", ("t", "v"),
                          "spec")
    return PaneBuckets(stream, KEY_SCHEMA, allowed, changes)


def latest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each window's row of the highest revision, without `revision` and `final`."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        window = tuple(row[c] for c in WINDOW)
        if window not in best or row["revision"] > best[window]["revision"]:
            best[window] = row
    return [{k: v for k, v in r.items() if k not in ("revision", "final")}
            for r in best.values()]


def check_revisions(run: Run) -> None:
    """Per window, in the order written: revisions 0, 1, 2, ...; once a row is final,
    every later one is final too."""
    seen: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for rows in run.written:
        for row in rows:
            seen.setdefault(tuple(row[c] for c in WINDOW), []).append(row)
    for rows in seen.values():
        assert [r["revision"] for r in rows] == list(range(len(rows)))
        finals = [r["final"] for r in rows]
        assert finals == sorted(finals)  # False..., then True...


def all_rows(batches: list[pa.Table]) -> list[dict[str, Any]]:
    return [r for b in batches for r in b.to_pylist()]


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3), changes=st.booleans())
def test_with_room_for_every_late_row_the_latest_rows_are_the_batch_result(
        data: Stream, size: int, hop: int, align: int, changes: bool) -> None:
    """An allowed lateness longer than the stream: no row is late, every late row is
    applied, and each window's latest row equals the oracle's over every row (with
    `changes`, every window, open ones too; else those final by the last watermark)."""
    batches, lateness, _ = data
    buckets = revised(size, hop, align, 10 ** 9, changes)
    run = simulate(buckets, batches, lateness)
    check_revisions(run)
    assert run.late == 0
    written = [r for rows in run.written for r in rows]
    horizon = buckets.kernel.first_start(run.watermark * 1000 + 1)
    want = oracle_rows(all_rows(batches), buckets.kernel, 2 ** 62 if changes else horizon)
    assert_same_rows(latest(written), want)
    if not changes:
        assert all(r["final"] for r in written)


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3))
def test_early_rows_leave_the_final_rows_as_they_were(data: Stream, size: int, hop: int,
                                                      align: int) -> None:
    """`emit="changes"` alone: the rows with `final` true are the rows the stream writes
    without revisions (each window once, when final), each the last of its window, and
    the late rows counted are the same."""
    batches, lateness, _ = data
    early = simulate(revised(size, hop, align, None, True), batches, lateness)
    plain = simulate(revised(size, hop, align, None, False), batches, lateness)
    check_revisions(early)
    finals = [{k: v for k, v in r.items() if k not in ("revision", "final")}
              for rows in early.written for r in rows if r["final"]]
    assert_same_rows(finals, [r for rows in plain.written for r in rows])
    assert early.late == plain.late and early.applied == 0


def test_a_late_row_within_the_allowed_lateness_revises_its_window() -> None:
    """Tumbling windows of 10 s, lateness 1 s, allowed lateness 5 s: a row 3 s into
    [0, 10) after the window was written rewrites it as revision 1; once the watermark
    passes 15 s, a row in it is counted late and changes nothing."""
    buckets = revised(20, 20, 0, 5 * SECOND, False)  # half seconds: 10 s windows
    batches = [table([("a", 1 * SECOND, 1.0)]),
               table([("a", 12 * SECOND, 2.0)]),  # then the watermark is 11 s
               table([]),  # [0, 10) is final: written
               table([("a", 3 * SECOND, 4.0)]),  # late, within 5 s of its end
               table([("a", 31 * SECOND, 8.0)]),  # then the watermark is 30 s
               table([]),  # [10, 20) is final; [0, 10) leaves the state
               table([("a", 4 * SECOND, 16.0)]),  # late beyond the allowed lateness
               table([])]
    run = simulate(buckets, batches, 1 * SECOND)
    shown = [[(r["window_start"], r["revision"], r["final"], r["count"], r["sum_v"])
              for r in rows] for rows in run.written]
    assert shown == [[], [], [(0, 0, True, 1, 1.0)], [(0, 1, True, 2, 5.0)], [],
                     [(10 * SECOND, 0, True, 1, 2.0)], [], []]
    assert (run.applied, run.late) == (1, 1)


def test_the_state_keeps_only_windows_within_the_allowed_lateness() -> None:
    """Once the watermark is past a window's end plus the allowed lateness, its panes
    and its revision leave the state."""
    buckets = revised(2, 2, 0, 2 * SECOND, True)  # 1 s windows, kept 2 s
    store = Store(buckets)
    step = buckets.on_partials(None, partials(buckets, [("a", i * SECOND, 1.0)
                                                        for i in range(5)]), 0)
    store.keep(0, step)
    step = buckets.on_timer(store.load(0), 10_000)  # 10 s: every window retired
    state = buckets.from_bytes(buckets.to_bytes(step.state))
    assert state.panes.num_rows == 0
    assert state.emitted is not None and state.emitted.num_rows == 0
    assert step.timer is None


def partials(buckets: PaneBuckets, events: list[tuple[str, int, float]]) -> pa.Table:
    rows = table(events).append_column("__bucket", pa.array([0] * len(events), pa.int32()))
    packer = PanePacker(buckets.kernel, buckets.stream.schema, "__bucket")
    return pa.concat_tables([table_of(blob) for record in packer(iter(rows.to_batches()))
                             for blob in record.column(1).to_pylist()])
