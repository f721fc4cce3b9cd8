"""The pane kernel (`runtime.streaming.panes`) with the aggregations whose partials pick a
row or keep exact sums or sets (`runtime.aggregates.partials`), without Spark: first, last,
max_by, min_by (`by` a second column), count_distinct, integer and decimal sums, and
string min/max and first/last, on random events in random micro-batches with disorder,
late rows and a restart after every batch (simulator.py). Ties in time are frequent and
broken by random tie-break columns (`PaneKernel(..., inputs=..., order=...)`, every
aggregated column among them, as the planner's default holds every other atomic column:
rows tied in all of them are indistinguishable). The rows emitted equal the brute-force
oracle's windows (oracle_intervals.hopping) over the accepted events that end at or
before the last horizon; integer sums stay exact where a pane's int64 sums would wrap;
the state holds one row per open pane, never rows."""

from __future__ import annotations

import itertools
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match, sort_output
from oracle_intervals import hopping as hopping_oracle
from simulator import simulate
from test_stream_panes import as_dates, check_late, in_days
from test_stream_simulated import SECOND, accepted, emitted

import wisp as ws
from wisp.plan.intervals import HoppingWindows
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.streaming.panes import PANE, PaneKernel
from wisp.runtime.windows.resumable import KernelState

INPUT = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("o", pa.int64()), pa.field("v", pa.float64()),
                   pa.field("b", pa.float64()), pa.field("iv", pa.int64()),
                   pa.field("dv", pa.decimal128(20, 3)), pa.field("sv", pa.string())])
AGGS = [ws.count(), ws.first("v"), ws.last("v"), ws.max_by("v", "b"), ws.min_by("v", "b"),
        ws.count_distinct("v"), ws.count_distinct("sv"), ws.sum("iv"), ws.sum("dv"),
        ws.min("sv"), ws.max("sv"), ws.first("sv"), ws.last("sv")]
CLASSES = {"v": "float", "iv": "integer", "dv": "decimal", "sv": "ordered"}
OUTPUTS = {"count": pa.int64(), "count_distinct_v": pa.int64(),
           "count_distinct_sv": pa.int64(), "sum_iv": pa.int64(),
           "sum_dv": pa.decimal128(30, 3)}
"""The output types that are not the input's."""
JOBS = tuple(built_in_job(a.fn, a.col, CLASSES[a.col] if a.col else "none",
                          OUTPUTS.get(a.output_name) or INPUT.field(a.col).type, None,
                          by=a.by) for a in AGGS)
OUTPUT = pa.schema([pa.field("k", pa.string()),
                    *[pa.field(f, pa.int64()) for f in ("window_start", "window_end", "time")],
                    *[pa.field(a.output_name, j.output_type)
                      for a, j in zip(AGGS, JOBS, strict=True)]])
DATE_INPUT = INPUT.set(1, pa.field("t", pa.date32()))
READ = ("v", "b", "iv", "dv", "sv")
BIG = 1 << 62

fields = st.fixed_dictionaries({
    "o": st.sampled_from([None, 0, 1]),
    "v": st.sampled_from([None, float("nan"), -0.0, 0.0, 0.5, 1.5, -2.0]),
    "b": st.sampled_from([None, float("nan"), -0.0, 0.0, 1.0, 2.0]),
    "iv": st.one_of(st.none(), st.integers(-3, 3)),
    "dv": st.one_of(st.none(), st.integers(-5, 5), st.integers(10 ** 18, 10 ** 20 - 1)).map(
        lambda u: None if u is None else Decimal(u).scaleb(-3)),
    "sv": st.sampled_from([None, "", "a", "b", "é", "😀"]),
})
"""A row's columns beyond key and time: few values, so ties and duplicates abound (and
decimals whose unscaled sums leave 64 bits)."""
item = st.tuples(st.sampled_from(["a", "b", None]),
                 st.integers(1, 30).map(lambda s: s * SECOND // 2), fields,
                 st.none() | fields, st.sampled_from([BIG, BIG - 1, BIG + 12_345]))
"""One event, or two at one key and time whose `iv`s are near +2**62 and -2**62 (their
pane's int64 sums wrap, their total is small): they share a batch, so both come or
both are late."""

Item = tuple[str | None, int, dict[str, Any], dict[str, Any] | None, int]
Stream = tuple[list[pa.Table], int, tuple[str, ...]]


def rows_of(items: list[Item]) -> list[dict[str, Any]]:
    rows = []
    for key, t, one, other, big in items:
        if other is None:
            rows.append({"k": key, "t": t, **one})
            continue
        rows.append({"k": key, "t": t, **one, "iv": big + (one["iv"] or 0)})
        rows.append({"k": key, "t": t, **other, "iv": -big + (other["iv"] or 0)})
    return rows


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=INPUT)


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    """Events in micro-batches (then a final batch without data), a lateness, and the
    tie-break columns: every aggregated column and perhaps `o`, in a random order."""
    items = draw(st.lists(item, min_size=1, max_size=25))
    cuts = sorted(draw(st.lists(st.integers(0, len(items)), max_size=8)))
    bounds = [0, *cuts, len(items)]
    batches = [table(rows_of(items[a:b])) for a, b in itertools.pairwise(bounds)]
    lateness = draw(st.integers(0, 12)) * SECOND // 2 + 1000
    extra = ["o"] if draw(st.booleans()) else []
    order = tuple(draw(st.permutations([*READ, *extra])))
    return [*batches, table([])], lateness, order


def pane_kernel(size: int, hop: int, align: int, order: tuple[str, ...],
                date: bool = False) -> PaneKernel:
    """Windows of `size`, `hop` and `align` half seconds (days for date time), ties
    broken by `order`."""
    inputs = pa.schema([INPUT.field(name) for name in dict.fromkeys([*READ, *order])])
    if date:
        output = pa.schema([OUTPUT.field("k"), *[pa.field(f, pa.date32()) for f in (
            "window_start", "window_end", "time")], *list(OUTPUT)[4:]])
        return PaneKernel(("k",), "t", "date", 0, HoppingWindows(size, hop, align), JOBS,
                          output, inputs=inputs, order=order)
    window = HoppingWindows(size=size * SECOND // 2, hop=hop * SECOND // 2,
                            align=align * SECOND // 2)
    return PaneKernel(("k",), "t", "integer", 0, window, JOBS, OUTPUT, inputs=inputs,
                      order=order)


def oracle_rows(rows: list[dict[str, Any]], kernel: PaneKernel, horizon: int
                ) -> list[dict[str, Any]]:
    """The oracle's windows over `rows` (window order: time, then `kernel.order`) that
    end at or before `horizon`."""
    w = kernel.window
    return [r for r in hopping_oracle(rows, time="t", end=None, key=["k"], order=None,
                                      columns=["k", "t", *kernel.order], size=w.size,
                                      hop=w.hop, align=w.align, output="windows", aggs=AGGS)
            if r["window_end"] is not None and r["window_end"] <= horizon]


def assert_same_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Equal rows: exact (sums, strings, counts), floats NaN to NaN and `-0.0` to `0.0`."""
    assert len(got) == len(want)
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=0.0)


@settings(max_examples=200, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       align=st.integers(-3, 3), tumbling=st.booleans(), date=st.booleans())
def test_picks_distinct_counts_and_exact_sums_on_a_stream_emit_the_oracle_rows(
        data: Stream, size: int, hop: int, align: int, tumbling: bool, date: bool) -> None:
    """Every non-empty window ending at or before the last horizon is emitted once, with
    the oracle's aggregates over the accepted events (time in ticks or in days); a late
    row is late by Spark's rule; no row waits in the state."""
    batches, lateness, order = data
    if date:  # each half second a day
        batches, lateness, _ = as_dates((batches, lateness, False))
    kernel = pane_kernel(size, size if tumbling else hop, align, order, date)
    stream = StreamKernel(kernel, DATE_INPUT if date else INPUT, "t",
                          "date" if date else "integer", ("t", *order), "spec")
    result = simulate(stream, batches, "k", lateness, spark_filter=False)
    check_late(result, stream, batches, lateness)
    assert result.pending == 0
    horizon = kernel.first_start(result.watermarks[-1] * 1000 + 1)
    got, rows = emitted(result), accepted(result)
    if date:
        got, rows = in_days(got), in_days(rows)
    assert_same_rows(got, oracle_rows(rows, kernel, horizon))


@settings(max_examples=100, deadline=None)
@given(items=st.lists(item.map(lambda i: ("a", *i[1:])), min_size=1, max_size=25),
       cuts=st.lists(st.integers(0, 50), max_size=6), size=st.integers(1, 8),
       hop=st.integers(1, 8), order=st.permutations([*READ, "o"]),
       rng=st.randoms(use_true_random=False))
def test_whole_runs_in_any_order_and_any_pieces_equal_the_oracle(
        items: list[Item], cuts: list[int], size: int, hop: int, order: list[str],
        rng: random.Random) -> None:
    """One key's rows in any order, in any pieces (the rows of a pair near ±2**62 apart
    too, so a pane's state holds a sum beyond 64 bits), the state through bytes between
    them, then the end of input: every non-empty window, as the oracle."""
    kernel = pane_kernel(size, hop, 0, tuple(order))
    rows = rows_of(items)
    rng.shuffle(rows)
    state: KernelState | None = None
    outs: list[dict[str, Any]] = []
    bounds = sorted({0, len(rows), *[c for c in cuts if c < len(rows)]})
    for a, b in itertools.pairwise(bounds):
        out, state = kernel.step(state, table(rows[a:b]), -float("inf"))
        outs += out.to_pylist()
        state = KernelState.from_bytes(state.to_bytes())
        panes = state.rows.column(PANE).to_pylist()
        assert panes == sorted(set(panes))  # one row per pane, whatever its rows
    assert outs == []  # no promise, nothing final
    assert state is not None
    outs += kernel.finish(state).to_pylist()
    assert_same_rows(outs, oracle_rows(rows, kernel, 2 ** 62))


def test_the_state_is_one_row_per_open_pane() -> None:
    """A thousand rows in three panes carry three rows, whatever the aggregations pick
    or count; the windows emitted pick by time then tie-break columns, and emitted
    panes leave the state."""
    kernel = pane_kernel(4, 4, 0, ("o", *READ))  # tumbling windows of 2 s
    rows = [{"k": "a", "t": i * 6 * SECOND // 1000, "o": -i, "v": float(i % 7),
             "b": float(i % 5), "iv": BIG if i % 2 else -BIG + 1,
             "dv": Decimal(i).scaleb(-3), "sv": f"s{i % 11}"} for i in range(1000)]
    rows += [{**rows[0], "o": 1, "v": -1.0, "sv": "first"}]  # ties row 0 in time, after it
    out, state = kernel.step(None, table(rows), -float("inf"))
    assert out.num_rows == 0
    assert state.rows.column(PANE).to_pylist() == [0, 1, 2]
    state = KernelState.from_bytes(state.to_bytes())
    out, state = kernel.step(state, table([]), 4 * SECOND)
    got = out.to_pylist()
    assert [(r["window_start"], r["window_end"], r["count"]) for r in got] == [
        (0, 2 * SECOND, 335), (2 * SECOND, 4 * SECOND, 333)]
    assert (got[0]["first_v"], got[0]["first_sv"]) == (0.0, "s0")  # o = 0 before o = 1
    assert (got[0]["last_v"], got[0]["last_sv"]) == (333 % 7, f"s{333 % 11}")
    assert got[0]["max_by_v"] == 4.0  # the earliest row with b = 4
    assert got[0]["min_by_v"] == 0.0  # the earliest row with b = 0: row 0, not its tie
    assert (got[0]["count_distinct_v"], got[0]["count_distinct_sv"]) == (8, 12)
    assert got[0]["sum_iv"] == 167 * BIG + 168 * (-BIG + 1)  # rows 0..333 and the tie
    assert got[0]["sum_dv"] == sum((Decimal(i).scaleb(-3) for i in range(334)), Decimal(0))
    assert (got[0]["min_sv"], got[0]["max_sv"]) == ("first", "s9")
    assert state.rows.column(PANE).to_pylist() == [2]
    assert kernel.wake(state) == 6 * SECOND
