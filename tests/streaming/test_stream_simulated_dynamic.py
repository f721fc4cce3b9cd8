"""Dynamic windows on a stream without Spark: anchors and events from two inputs, each
with its own lateness (the query's watermark is the minimum of the inputs'), or clock
ticks, in random micro-batches with disorder, late rows and a restart after every batch
(each key's state through its stored bytes), through the simulator of Spark's rules
(`simulator.py`). The rows emitted equal the independent oracle's (`oracle_dynamic`)
rows over the accepted rows that are final at the last watermark; late rows are counted
exactly; a broken obsolete promise fails the step that receives its anchor."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_dynamic import clock_anchors, dynamic_window, first_violation, group_sorted
from simulator import Simulation, simulate
from test_stream_simulated import AGGS, JOBS, OUTPUT

import wisp as ws
from wisp.plan.dynamic import ClockTicks
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.dynamic import END, KIND, OBSOLETE, START, TIME, BoundJob, windows_kernel

HALF = 500_000  # half a second in microsecond ticks
SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field(KIND, pa.int32()),
                    pa.field(TIME, pa.int64()), pa.field(START, pa.int64()),
                    pa.field(END, pa.int64()), pa.field(OBSOLETE, pa.int64()),
                    pa.field("v", pa.float64()), pa.field("seq", pa.int64())])
ORDER = (TIME, KIND, "seq")
CLOSED = ["both", "left", "right", "neither"]
ANCHOR, EVENT = 0, 1

values = st.one_of(st.none(), st.just(float("nan")),
                   st.integers(-40, 40).map(lambda x: x * 0.25))
offsets = st.one_of(st.none(), st.integers(-8, 6))
Row = dict[str, Any]


TIMES = (TIME, START, END, OBSOLETE, "window_start", "window_end", "time")


def as_float(schema: pa.Schema) -> pa.Schema:
    """`schema` with float time columns (float time: ticks are the values themselves)."""
    return pa.schema([pa.field(f.name, pa.float64()) if f.name in TIMES else f
                      for f in schema])


def kernel(start: BoundJob, end: BoundJob, obsolete: BoundJob, closed: str,
           clock: ClockTicks | None = None, kind: str = "integer",
           chunk_rows: int = 1 << 14) -> StreamKernel:
    """The stream's kernel; a `chunk_rows` of 1 folds every event no later anchor reaches
    into the waiting windows' states (`DynamicKernel.fold`)."""
    floats = kind == "float"
    dynamic = windows_kernel(keys=("k",), time_kind=kind, time_scale=0, closed=closed,
                             start=start, end=end, obsolete=obsolete, clock=clock,
                             check=clock is None and obsolete.kind != "none",
                             aggregates=JOBS, schema=as_float(OUTPUT) if floats else OUTPUT,
                             raises=True, chunk_rows=chunk_rows)
    return StreamKernel(dynamic, as_float(SCHEMA) if floats else SCHEMA, TIME, kind, ORDER,
                        "spec")


def floated(batches: list[pa.Table]) -> list[pa.Table]:
    return [b.cast(as_float(SCHEMA)) for b in batches]


def table(rows: Sequence[Row]) -> pa.Table:
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type)
                     for f in SCHEMA}, schema=SCHEMA)


@st.composite
def union_rows(draw: st.DrawFn) -> list[Row]:
    """Anchors (with start, end and obsolete columns a few half seconds from their
    time, sometimes null) and events, in arrival order (times in any order)."""
    rows: list[Row] = []
    for seq in range(draw(st.integers(1, 40))):
        k = draw(st.sampled_from(["a", "b", None]))
        t = draw(st.integers(1, 60)) * HALF
        if draw(st.booleans()):
            bounds = [draw(offsets) for _ in range(3)]
            steady = draw(st.booleans())  # an obsolete that keeps its promise, mostly
            rows.append({"k": k, KIND: ANCHOR, TIME: t, "seq": seq,
                         START: None if bounds[0] is None else t + bounds[0] * HALF,
                         END: None if bounds[1] is None else t + bounds[1] * HALF,
                         OBSOLETE: t - 10 * HALF if steady or bounds[2] is None
                         else t + bounds[2] * HALF})
        else:
            rows.append({"k": k, KIND: EVENT, TIME: t, "v": draw(values)})
    return rows


def batches_of(draw: st.DrawFn, rows: list[Row]) -> list[pa.Table]:
    """The rows cut into micro-batches, then the final batch without data."""
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=8)))
    bounds = [0, *cuts, len(rows)]
    return [*[table(rows[a:b]) for a, b in itertools.pairwise(bounds)], table([])]


def expected_late(batches: Sequence[pa.Table], lateness: dict[int, int]
                  ) -> tuple[int, int, list[Row]]:
    """(late rows, the last watermark in ms, the rows not late), from the rule: a row is
    late when its time
    is at or below the watermark of the batch before its own; a batch's watermark is
    the largest so far of the minimum, over the inputs, of the input's newest time (ms)
    minus its lateness (ms), 0 for an input without rows so far."""
    late, filter_mark, handler_mark = 0, 0, 0
    newest: dict[int, int] = {}
    kept: list[Row] = []
    for batch in batches:
        for row in batch.to_pylist():
            if filter_mark > 0 and row[TIME] <= filter_mark * 1000:
                late += 1
            else:
                kept.append(row)
            kind = row[KIND]
            newest[kind] = max(newest.get(kind, row[TIME] // 1000), row[TIME] // 1000)
        filter_mark = handler_mark
        handler_mark = max(handler_mark, min(newest[kind] - delay // 1000
                                             if kind in newest else 0
                                             for kind, delay in lateness.items()))
    return late, filter_mark, kept


def accepted(result: Simulation) -> list[Row]:
    rows: list[Row] = pa.concat_tables(result.accepted).to_pylist()
    return rows


def emitted(result: Simulation) -> list[Row]:
    rows: list[Row] = [r for b in result.emitted for r in b.to_pylist()]
    return rows  # a row emitted twice fails the comparison with the oracle (row counts)


def assert_same(got: list[Row], want: list[Row]) -> None:
    """Equal rows (the oracle's sum of no values is the integer 0: a double 0.0 here)."""
    want = [{**r, "sum_v": float(r["sum_v"])} if isinstance(r["sum_v"], int) else r
            for r in want]
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-9,
                      scales={"sum_v": 10.0, "mean_v": 10.0})


def is_final(row: Row, horizon: int, closed: str) -> bool:
    """Read from the semantics: no row at or after `horizon` lies in the window."""
    end = row["window_end"]
    if end is None:
        return False
    return end < horizon if closed in ("both", "right") else end <= horizon


def bound_of(job: BoundJob) -> Callable[[Row], Any]:
    if job.kind == "none":
        return lambda a: a[TIME]
    if job.kind == "offset":
        return lambda a: a[TIME] + job.offset
    return lambda a: a[job.column]


def bound_jobs(draw: st.DrawFn) -> tuple[BoundJob, BoundJob, BoundJob]:
    kinds = [draw(st.sampled_from(["none", "offset", "column"])) for _ in range(3)]
    amounts = [draw(st.integers(-6, 0)), draw(st.integers(-2, 6)), draw(st.integers(-9, -7))]
    start, end, obsolete = (BoundJob(kind, amount * HALF, column) for kind, amount, column
                            in zip(kinds, amounts, (START, END, OBSOLETE), strict=True))
    return start, end, obsolete


@st.composite
def anchored(draw: st.DrawFn) -> tuple[list[pa.Table], dict[int, int],
                                        tuple[BoundJob, BoundJob, BoundJob], str]:
    rows = draw(union_rows())
    lateness = {kind: draw(st.integers(0, 12)) * HALF + 1000 for kind in (ANCHOR, EVENT)}
    return batches_of(draw, rows), lateness, bound_jobs(draw), draw(st.sampled_from(CLOSED))


@settings(max_examples=150, deadline=None)
@given(data=anchored(), kind=st.sampled_from(["integer", "float"]),
       chunk_rows=st.sampled_from([1, 1 << 14]))
def test_anchors_from_a_second_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], dict[int, int], tuple[BoundJob, BoundJob, BoundJob],
                    str], kind: str, chunk_rows: int) -> None:
    """Anchors and events in different micro-batches, each input with its own lateness:
    an anchor's window is emitted once the watermark has passed the anchor and the
    window's end (its closed side exact), over the events accepted by then. Integer or
    float time; waiting windows carried as rows or, where events no later anchor reaches
    are folded into them (`chunk_rows` 1), as partial states."""
    batches, lateness, (start, end, obsolete), closed = data
    if kind == "float":
        batches = floated(batches)
        start, end, obsolete = (BoundJob(b.kind, float(b.offset), b.column)
                                for b in (start, end, obsolete))
    stream = kernel(start, end, obsolete, closed, None, kind, chunk_rows)
    late, last_mark, kept = expected_late(batches, lateness)
    bound = last_mark * 1000
    events = [r for r in kept if r[KIND] == EVENT]
    fed_anchors = [r for r in kept if r[KIND] == ANCHOR and r[TIME] <= bound]
    by_key = group_sorted(fed_anchors, time=TIME, key=["k"], order="seq",
                          columns=list(SCHEMA.names))
    broken = [found for members in by_key.values()
              if (found := first_violation(members, TIME, bound_of(start),
                                           bound_of(obsolete)))]
    if obsolete.kind != "none" and broken:
        with pytest.raises(ws.WispInputError) as caught:
            simulate(stream, batches, "k", 0, inputs=(KIND, lateness))
        assert str(caught.value).startswith((
            "`obsolete` must not decrease from one anchor to the next, found obsolete",
            "`start` must not be before an earlier anchor's obsolete")), caught.value
        return
    result = simulate(stream, batches, "k", 0, inputs=(KIND, lateness))
    assert (result.late, result.watermarks[-1]) == (late, last_mark)
    assert sorted(map(repr, accepted(result))) == sorted(map(repr, kept))
    want = dynamic_window(events, fed_anchors, time=TIME, key=["k"], order="v",
                          columns=list(SCHEMA.names), anchor_time=TIME, anchor_order="seq",
                          anchor_columns=list(SCHEMA.names), start=bound_of(start),
                          end=bound_of(end), obsolete=None, closed=closed, aggs=AGGS)
    want = [r for r in want if is_final(r, bound + 1, closed)]
    assert_same(emitted(result), want)


def test_a_broken_obsolete_promise_fails_when_its_anchor_arrives() -> None:
    """An anchor whose window starts before an earlier anchor's obsolete fails the step
    that receives it, with the batch query's message."""
    second = 2 * HALF
    batches = [table([{"k": "a", KIND: ANCHOR, TIME: 5 * second, "seq": 0,
                       OBSOLETE: 4 * second},
                      {"k": "a", KIND: EVENT, TIME: 11 * HALF, "v": 1.0},
                      {"k": "a", KIND: EVENT, TIME: 8 * second, "v": 1.0}]),
               table([{"k": "a", KIND: ANCHOR, TIME: 10 * second, "seq": 1,
                       OBSOLETE: 6 * second, START: 3 * second},
                      {"k": "a", KIND: EVENT, TIME: 9 * second, "v": 1.0}]),
               table([{"k": "a", KIND: ANCHOR, TIME: 30 * second, "seq": 2,
                       OBSOLETE: 7 * second, START: 30 * second},
                      {"k": "a", KIND: EVENT, TIME: 40 * second, "v": 1.0}])]
    stream = kernel(BoundJob("column", 0, START), BoundJob("offset", second, END),
                    BoundJob("column", 0, OBSOLETE), "both")
    lateness = {ANCHOR: 1000, EVENT: 1000}
    first = simulate(stream, [*batches[:2], table([])], "k", 0, inputs=(KIND, lateness))
    # the first anchor's window [start of time, 6 s] (the watermark 8.999 s passed it);
    # the second anchor waits: the anchors' own watermark (9.999 s) holds it back
    assert [(r["time"], r["count"]) for r in emitted(first)] == [(5 * second, 1)]
    with pytest.raises(ws.WispInputError) as caught:
        simulate(stream, [*batches, table([])], "k", 0, inputs=(KIND, lateness))
    assert str(caught.value) == (
        "`start` must not be before an earlier anchor's obsolete 4000000, found start "
        "3000000 at the anchor at time 10000000 (key {'k': 'a'})")


def test_an_anchor_stream_without_rows_holds_the_watermark_at_the_epoch() -> None:
    """Until the anchor input has rows, its watermark counts as 0 (as Spark counts an
    input that has seen no data), so the query's stays at 0: events wait, and an anchor
    that arrives late in event time is not late; once it has, the smaller watermark
    (the anchors', 2.5 s - 0.5 s) is the query's."""
    events = [{"k": "a", KIND: EVENT, TIME: t * HALF, "v": 1.0} for t in (2, 4, 30)]
    anchor = {"k": "a", KIND: ANCHOR, TIME: 5 * HALF, "seq": 0}
    stream = kernel(BoundJob("offset", -4 * HALF, START), BoundJob("none", 0, END),
                    BoundJob("none", 0, OBSOLETE), "both")
    result = simulate(stream, [table(events), table([]), table([anchor]), table([])],
                      "k", 0, inputs=(KIND, {ANCHOR: HALF, EVENT: HALF}))
    assert result.watermarks == [0, 0, 0, 2000]
    assert (result.late, emitted(result)) == (0, [])
    assert result.pending == 2  # the anchor at 2.5 s and the event at 15 s wait


def test_waiting_windows_held_as_states_on_a_stream_emit_the_rows_kept_as_rows() -> None:
    """Anchors every 5 s whose windows reach 15 s ahead, an event every half second,
    five rows a micro-batch, a restart after each: with the events no later anchor
    reaches folded into the waiting windows' states (`chunk_rows` 1), the same rows as
    with those events carried, and fewer rows carried at the end."""
    rows: list[Row] = []
    for t in range(1, 121):
        if t % 10 == 0:
            rows.append({"k": "a", KIND: ANCHOR, TIME: t * HALF, "seq": t})
        rows.append({"k": "a", KIND: EVENT, TIME: t * HALF, "v": float(t % 7) - 2.5})
    batches = [*[table(rows[i:i + 5]) for i in range(0, len(rows), 5)], table([])]
    bounds = (BoundJob("offset", -2 * HALF, START), BoundJob("offset", 30 * HALF, END),
              BoundJob("none", 0, OBSOLETE))
    lateness = {ANCHOR: HALF, EVENT: HALF}
    results = [simulate(kernel(*bounds, "both", chunk_rows=chunk_rows), batches, "k", 0,
                        inputs=(KIND, lateness)) for chunk_rows in (1 << 14, 1)]
    as_rows, as_states = (sorted(emitted(r), key=lambda r: r["time"]) for r in results)
    assert len(as_rows) == 8
    assert_same(as_states, as_rows)
    assert results[1].carried * 3 < results[0].carried  # measured: 6 rows against 35


@st.composite
def clocked(draw: st.DrawFn) -> tuple[list[pa.Table], int, ClockTicks,
                                       tuple[BoundJob, BoundJob], str]:
    rows: list[Row] = []
    for _ in range(draw(st.integers(1, 40))):
        rows.append({"k": draw(st.sampled_from(["a", "b", None])), KIND: EVENT,
                     TIME: draw(st.integers(1, 60)) * HALF, "v": draw(values)})
    every = draw(st.integers(1, 7)) * HALF
    align = draw(st.integers(-3, 3)) * HALF // 2
    first = draw(st.one_of(st.none(), st.integers(-5, 30).map(lambda s: s * HALF)))
    last = draw(st.one_of(st.none(), st.integers(10, 80).map(lambda s: s * HALF)))
    clock = ClockTicks(every, align, first, last, 10_000)
    start = BoundJob("offset", draw(st.integers(-6, 0)) * HALF, START)
    end = BoundJob("offset", draw(st.integers(0, 6)) * HALF, END)
    lateness = draw(st.integers(0, 12)) * HALF + 1000
    return batches_of(draw, rows), lateness, clock, (start, end), draw(st.sampled_from(CLOSED))


def clock_want(result: Simulation, clock: ClockTicks, start: BoundJob, end: BoundJob,
               closed: str) -> list[Row]:
    """Every key with an event at or below the last watermark ticks from its first event
    (or the clock's start) up to the watermark (or the clock's end); a tick's row once
    its window is final, over the events accepted."""
    bound = result.watermarks[-1] * 1000
    events = accepted(result)
    fed = [r for r in events if r[TIME] <= bound]
    if bound <= 0:
        fed = []
    last = bound if clock.end is None else min(bound, int(clock.end))
    anchors = clock_anchors(fed, time=TIME, key=["k"], every=clock.every, align=clock.align,
                            start=clock.start, end=last)
    want = dynamic_window(events, anchors, time=TIME, key=["k"], order="v",
                          columns=list(SCHEMA.names), anchor_time=TIME, anchor_order=None,
                          anchor_columns=["k", TIME], start=bound_of(start),
                          end=bound_of(end), obsolete=None, closed=closed, aggs=AGGS)
    return [r for r in want if is_final(r, bound + 1, closed)]


@settings(max_examples=150, deadline=None)
@given(data=clocked(), kind=st.sampled_from(["integer", "float"]))
def test_clock_anchors_on_a_stream_emit_the_ticks_the_watermark_passed(
        data: tuple[list[pa.Table], int, ClockTicks, tuple[BoundJob, BoundJob], str],
        kind: str) -> None:
    """Integer or float time (a float clock: the next float past a window's end)."""
    batches, lateness, clock, (start, end), closed = data
    if kind == "float":
        batches = floated(batches)
        clock = ClockTicks(float(clock.every), float(clock.align or 0),
                           None if clock.start is None else float(clock.start),
                           None if clock.end is None else float(clock.end), clock.max_ticks)
        start, end = (BoundJob(b.kind, float(b.offset), b.column) for b in (start, end))
    stream = kernel(start, end, BoundJob("none", 0, OBSOLETE), closed, clock, kind)
    result = simulate(stream, batches, "k", lateness)
    late, last_mark, _ = expected_late(batches, {EVENT: lateness})
    assert (result.late, result.watermarks[-1]) == (late, last_mark)
    assert_same(emitted(result), clock_want(result, clock, start, end, closed))


def test_a_watermark_jump_emits_every_tick_it_passes_in_one_step() -> None:
    """One event at 1 s, then one at 1001 s: the watermark jumps over 1000 ticks of a
    clock every second, all emitted by that batch; the ticks stop at the watermark, not
    at the key's last event (there is none on a stream)."""
    second = 2 * HALF
    clock = ClockTicks(second, 0, None, None, 10_000)
    stream = kernel(BoundJob("offset", -second, START), BoundJob("none", 0, END),
                    BoundJob("none", 0, OBSOLETE), "left", clock)
    rows = [{"k": "a", KIND: EVENT, TIME: second, "v": 2.0},
            {"k": "a", KIND: EVENT, TIME: 1001 * second, "v": 3.0}]
    result = simulate(stream, [table(rows[:1]), table(rows[1:]), table([]), table([])],
                      "k", second)
    sizes = [b.num_rows for b in result.emitted]
    assert result.watermarks == [0, 0, 1000_000, 1000_000]
    assert sizes == [1000]  # ticks 1 s .. 1000 s, in the step of the batch that jumped
    got = result.emitted[0].to_pylist()
    assert [r["time"] for r in got] == [s * second for s in range(1, 1001)]
    assert [r["count"] for r in got[:3]] == [0, 1, 0]  # [0, 1) empty, [1, 2) holds 2.0
    assert got[-1]["count"] == 0  # [999, 1000): the event at 1001 s is outside
    assert_same(emitted(result), clock_want(result, clock, BoundJob("offset", -second, START),
                                            BoundJob("none", 0, END), "left"))


def test_a_watermark_jump_over_more_than_max_ticks_fails() -> None:
    second = 2 * HALF
    clock = ClockTicks(second, 0, None, None, 100)
    stream = kernel(BoundJob("none", 0, START), BoundJob("none", 0, END),
                    BoundJob("none", 0, OBSOLETE), "both", clock)
    rows = [{"k": "a", KIND: EVENT, TIME: second, "v": 2.0},
            {"k": "a", KIND: EVENT, TIME: 1001 * second, "v": 3.0}]
    with pytest.raises(ws.WispInputError) as caught:
        simulate(stream, [table(rows[:1]), table(rows[1:]), table([])], "k", second)
    assert str(caught.value).startswith(
        "`every` must make at most max_ticks=100 clock ticks per key, found about 1,000 "
        "for one key (key {'k': 'a'})")


def test_a_clock_with_an_end_stops_and_sets_no_timer() -> None:
    """Ticks up to the clock's end; after its last tick the key sets no timer."""
    second = 2 * HALF
    clock = ClockTicks(second, 0, None, 3 * second, 100)
    stream = kernel(BoundJob("none", 0, START), BoundJob("none", 0, END),
                    BoundJob("none", 0, OBSOLETE), "both", clock)
    rows = [{"k": "a", KIND: EVENT, TIME: second, "v": 2.0},
            {"k": "a", KIND: EVENT, TIME: 50 * second, "v": 3.0}]
    state = None
    outputs, state, timer = stream.on_rows(state, table(rows), 60_000)
    assert [r["time"] for b in outputs for r in b.to_pylist()] == [second, 2 * second,
                                                                  3 * second]
    assert timer is None
    assert np.array_equal(stream.ticks(state.pending), np.array([], dtype=np.int64))
