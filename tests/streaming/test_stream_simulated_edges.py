"""Interval events paired from start/end edges on a stream (`runtime/windows/edges.py`), without
Spark: random edges of several ids in random micro-batches, with disorder (sometimes
beyond the lateness: late edges), a restart after every batch (`simulator.py`). The rows
emitted equal the interval oracles' final rows over the accepted edges, paired here as
the batch pairs them (`paired`, a literal reading of `engine/edges.py`); where the
accepted edges hold an end edge without its start (its start was late), the stream
fails as the batch does."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_intervals import count_by_start_time as count_oracle
from oracle_intervals import hopping as hopping_oracle
from oracle_intervals import snapshot as snapshot_oracle
from simulator import Simulation, simulate
from test_stream_simulated import AGGS, JOBS, OUTPUT, SECOND, assert_same, emitted

from wisp.errors import WispInputError
from wisp.plan.intervals import CountWindows, HoppingWindows, SnapshotWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.edges import EdgesKernel
from wisp.runtime.windows.interval_kernels import interval_kernel

EDGES = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("v", pa.float64()), pa.field("id", pa.int64()),
                   pa.field("edge", pa.string()), pa.field("e", pa.int64())])
Edge = tuple[str | None, int, float | None, int | None, str]

values = st.one_of(st.none(), st.just(float("nan")),
                   st.integers(-40, 40).map(lambda x: x * 0.25))


@st.composite
def edge_lists(draw: st.DrawFn) -> list[Edge]:
    """Per (key, id) (a null id is an id of its own, as Spark groups it), start edges at
    rising times, each closed by an end edge at or after it or left open (the next start
    then leaves it open-ended, as in batch)."""
    edges: list[Edge] = []
    for key, ident in draw(st.lists(st.tuples(st.sampled_from(["a", "b", None]),
                                              st.one_of(st.none(), st.integers(0, 3))),
                                    min_size=1, max_size=5, unique=True)):
        t = draw(st.integers(1, 20))
        for _ in range(draw(st.integers(1, 4))):
            edges.append((key, t * SECOND // 2, draw(values), ident, "start"))
            length = draw(st.one_of(st.none(), st.integers(0, 10)))
            if length is not None:
                edges.append((key, (t + length) * SECOND // 2, None, ident, "end"))
                t += length
            t += draw(st.integers(1, 6))
    return edges


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[pa.Table], int]:
    """The edges in arrival order (time plus a random delay, at times beyond the lateness:
    some edges are late), cut into micro-batches, then the final batch without data."""
    edges = draw(edge_lists())
    lateness = draw(st.integers(0, 8)) * SECOND // 2 + 1000
    rng = random.Random(draw(st.integers(0, 2 ** 32)))
    spread = draw(st.sampled_from([0, lateness // 2, 4 * lateness, 20 * SECOND]))
    edges.sort(key=lambda e: e[1] + rng.randint(0, spread))
    cuts = sorted(draw(st.lists(st.integers(0, len(edges)), max_size=8)))
    bounds = [0, *cuts, len(edges)]
    return [table(edges[a:b]) for a, b in itertools.pairwise(bounds)] + [table([])], \
        lateness


def table(edges: list[Edge]) -> pa.Table:
    return pa.table({"k": [e[0] for e in edges], "t": [e[1] for e in edges],
                     "v": [e[2] for e in edges], "id": [e[3] for e in edges],
                     "edge": [e[4] for e in edges], "e": [None] * len(edges)},
                    schema=EDGES)


class Orphan(Exception):
    """An end edge with no start edge right before it (the batch query fails)."""


def paired(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batch pairing: per (key, id), edges in time order, a start before an end at
    the same time; a start's end is the next edge's time when that is an end edge."""
    out: list[dict[str, Any]] = []
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["k"], r["id"]), []).append(r)
    for group in groups.values():
        group.sort(key=lambda r: (r["t"], r["edge"] != "start"))
        for i, r in enumerate(group):
            before = group[i - 1]["edge"] if i else None
            if r["edge"] == "end" and before != "start":
                raise Orphan
            if r["edge"] == "start":
                after = group[i + 1] if i + 1 < len(group) else None
                end = after["t"] if after is not None and after["edge"] == "end" else None
                out.append({"k": r["k"], "t": r["t"], "e": end, "v": r["v"]})
    return out


def run(window: Any, batches: list[pa.Table], lateness: int
        ) -> tuple[Simulation | None, list[dict[str, Any]] | None]:
    """The simulation (None when it failed on an end edge without its start) and the
    batch pairing of the accepted edges the last watermark passed (None when the batch
    fails on them). Those edges decide every window that ends at or before the last
    horizon as all accepted edges do: an end edge not yet passed lies at or after it."""
    inner = interval_kernel(("k",), "t", "e", "integer", 0, window, JOBS, OUTPUT)
    kernel = EdgesKernel(inner, "t", "e", "edge", "id", "integer")
    stream = StreamKernel(kernel, EDGES, "t", "integer", ("t", "v"), "spec")
    result: Simulation | None = None
    try:
        result = simulate(stream, batches, "k", lateness)
    except WispInputError as error:
        if "must close an interval opened by a start edge of the same `id`" not in \
                str(error):
            raise
    rows, watermark = accepted_edges(batches, lateness)
    if result is not None:
        assert sorted(map(repr, pa.concat_tables(result.accepted).to_pylist())) == \
            sorted(map(repr, rows))
        assert result.watermarks[-1] == watermark
    try:
        pairs = paired([r for r in rows if r["t"] <= watermark * 1000])
    except Orphan:
        pairs = None
    return result, pairs


def accepted_edges(batches: list[pa.Table], lateness: int
                   ) -> tuple[list[dict[str, Any]], int]:
    """The edges Spark's late filter keeps (the rule, applied here independently: a row
    at or below the watermark of the batch before its own is dropped), and the
    watermark of the last batch (ms)."""
    rows: list[dict[str, Any]] = []
    newest: int | None = None
    previous = current = 0
    for batch in batches:
        seen = current
        for r in batch.to_pylist():
            if not (previous > 0 and r["t"] <= previous * 1000):
                rows.append(r)
        if batch.num_rows:
            top = max(batch.column("t").to_pylist()) // 1000
            newest = top if newest is None else max(newest, top)
        previous = current
        if newest is not None:
            current = max(current, newest - lateness // 1000)
    return rows, seen


def check(result: Simulation | None, pairs: list[dict[str, Any]] | None,
          want_of: Any) -> None:
    if pairs is None:
        assert result is None, "the batch fails on an orphan end edge; the stream did not"
        return
    assert result is not None, "the stream failed; the batch pairs every edge it passed"
    assert_same(emitted(result), want_of(pairs, result.watermarks[-1]))


@settings(max_examples=150, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3))
def test_hopping_windows_over_edges_on_a_stream_emit_the_batch_rows(
        data: tuple[list[pa.Table], int], size: int, hop: int, align: int) -> None:
    """Tumbling/hopping windows (output='windows') over paired edges: the windows ending
    at or before the last horizon equal the oracle's over the batch pairing."""
    batches, lateness = data
    window = HoppingWindows(size=size * SECOND // 2, hop=hop * SECOND // 2,
                            align=align * SECOND // 2)
    result, pairs = run(window, batches, lateness)

    def want(rows: list[dict[str, Any]], watermark: int) -> list[dict[str, Any]]:
        # the batch's horizon (windows from it on share one row) lies beyond the stream's
        # last horizon, the newest accepted edge being later than the watermark: a row
        # of another key just past that horizon puts the oracle's there too
        beyond = {"k": "~", "t": watermark * 1000 + 2, "e": None, "v": None}
        return [r for r in hopping_oracle([*rows, beyond], time="t", end="e", key=["k"],
                                          order=None, columns=["k", "t", "e", "v"],
                                          size=window.size, hop=window.hop,
                                          align=window.align, output="windows", aggs=AGGS)
                if r["k"] != "~" and r["window_end"] is not None
                and r["window_end"] <= watermark * 1000 + 1]
    check(result, pairs, want)


@settings(max_examples=150, deadline=None)
@given(data=streams())
def test_snapshot_windows_over_edges_on_a_stream_emit_the_batch_rows(
        data: tuple[list[pa.Table], int]) -> None:
    """Snapshot windows over paired edges: an end edge that arrives later is a window
    point the stream had not passed yet."""
    batches, lateness = data
    result, pairs = run(SnapshotWindows(), batches, lateness)

    def want(rows: list[dict[str, Any]], watermark: int) -> list[dict[str, Any]]:
        return [r for r in snapshot_oracle(rows, time="t", end="e", key=["k"], order=None,
                                           columns=["k", "t", "e", "v"], aggs=AGGS)
                if r["window_end"] is not None and r["window_end"] <= watermark * 1000 + 1]
    check(result, pairs, want)


@settings(max_examples=150, deadline=None)
@given(data=streams(), n=st.integers(1, 4))
def test_count_windows_over_edges_on_a_stream_emit_the_batch_rows(
        data: tuple[list[pa.Table], int], n: int) -> None:
    """CountByStartTime(n) over paired edges: a window once the watermark passes its last
    start time."""
    batches, lateness = data
    result, pairs = run(CountWindows(n=n), batches, lateness)

    def want(rows: list[dict[str, Any]], watermark: int) -> list[dict[str, Any]]:
        return [r for r in count_oracle(rows, time="t", end="e", key=["k"], order=None,
                                        columns=["k", "t", "e", "v"], n=n, aggs=AGGS)
                if r["time"] <= watermark * 1000]
    check(result, pairs, want)


def test_an_end_edge_closes_its_start_fed_in_an_earlier_batch() -> None:
    """Hand-written: id 1 starts at 1 s (fed open-ended), its end edge at 4 s arrives two
    batches later; tumbling 2 s windows: [0,2) and [2,4) hold it, [4,6) does not."""
    half = SECOND // 2
    batches = [table([("a", 2 * half, 1.0, 1, "start")]),
               table([("a", 6 * half, 5.0, 2, "start")]),
               table([("a", 8 * half, None, 1, "end"), ("a", 11 * half, None, 2, "end")]),
               table([("a", 30 * half, 7.0, 3, "start")]), table([])]
    window = HoppingWindows(size=4 * half, hop=4 * half, align=0)
    result, pairs = run(window, batches, 1000)
    assert result is not None and pairs is not None
    got = sorted((r["window_start"] // half, r["window_end"] // half, r["count"],
                  r["sum_v"]) for r in emitted(result))
    assert got == [(0, 4, 1, 1.0), (4, 8, 2, 6.0), (8, 12, 1, 5.0)]


def test_an_end_edge_without_its_start_fails_as_in_batch() -> None:
    batches = [table([("a", SECOND, None, 9, "end")]),
               table([("a", 5 * SECOND, 1.0, 8, "start")]), table([])]
    assert run(SnapshotWindows(), batches, 1000) == (None, None)
    inner = interval_kernel(("k",), "t", "e", "integer", 0, SnapshotWindows(), JOBS, OUTPUT)
    kernel = EdgesKernel(inner, "t", "e", "edge", "id", "integer")
    with pytest.raises(WispInputError, match="`edge` column 'edge' must close an interval "
                       r"opened by a start edge of the same `id` \('id'\), found an end "
                       "edge without a start for id 9"):
        kernel.step(None, batches[0], 10 * SECOND)


def test_an_unknown_edge_value_fails_as_in_batch() -> None:
    bad = table([("a", SECOND, 1.0, 1, "start")]).set_column(
        4, "edge", pa.array(["begin"]))
    with pytest.raises(WispInputError, match="`edge` column 'edge' must hold 'start' or "
                       "'end', found a null or another value"):
        run(SnapshotWindows(), [bad, table([("a", 5 * SECOND, 1.0, 2, "start")]),
                                table([])], 1000)


def test_a_late_end_edge_is_emitted_late_and_leaves_its_start_open_ended() -> None:
    """on_late='emit' (Spark's filter off): an end edge below the key's fed horizon is a
    late row; its start stays open-ended, as in the batch over the accepted edges."""
    batches = [table([("a", 10 * SECOND, 1.0, 1, "start")]),
               table([("a", 20 * SECOND, 2.0, 2, "start")]), table([]),
               table([("a", 15 * SECOND, None, 1, "end"), ("a", 31 * SECOND, 4.0, 3,
                                                          "start")]), table([])]
    inner = interval_kernel(("k",), "t", "e", "integer", 0,
                            HoppingWindows(size=10 * SECOND, hop=10 * SECOND, align=0),
                            JOBS, OUTPUT)
    kernel = EdgesKernel(inner, "t", "e", "edge", "id", "integer")
    stream = StreamKernel(kernel, EDGES, "t", "integer", ("t", "v"), "spec")
    result = simulate(stream, batches, "k", 1000, emit_late=True)
    assert result.late == 1
    late = pa.concat_tables([t for t, _ in result.late_rows]).to_pylist()
    assert [(r["t"], r["id"], r["edge"]) for r in late] == [(15 * SECOND, 1, "end")]
    got = sorted((r["window_start"] // SECOND, r["window_end"] // SECOND, r["count"],
                  r["sum_v"]) for r in emitted(result))
    # id 1 [10, open), id 2 [20, open); the watermark is 31 s - 1 ms
    assert got == [(10, 20, 1, 1.0), (20, 30, 2, 3.0)]
