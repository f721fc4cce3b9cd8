"""The interval kernels (hopping and tumbling, snapshot, count-by-start-time windows)
resume: a key's events cut anywhere, the state through bytes at every cut, give the rows
of one uncut run; the carried events stay within the window's reach (open-ended events
stay while they live); the mapInArrow function feeds long runs in pieces and short ones
whole, with the same rows (no Spark)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resumable_check import cut_run, rows

import wisp as ws
from wisp.plan.intervals import CountWindows, HoppingWindows, IntervalWindow, SnapshotWindows
from wisp.runtime import intervals as runtime_intervals
from wisp.runtime.aggregate import AggregateJob
from wisp.runtime.hopping import HORIZON_END, HORIZON_START
from wisp.runtime.interval_kernels import interval_kernel
from wisp.runtime.intervals import IntervalKernel
from wisp.runtime.resumable import KernelState
from wisp.spec.aggregates import Aggregation


def span(values: Any, times: Any) -> int | None:
    return int(max(times) - min(times)) if len(times) else None


def lifetimes_seen(values: Any, starts: Any, ends: Any) -> list[int]:
    """What a lifetimes udaf receives: the clipped starts, then the clipped ends."""
    return [int(x) for x in starts] + [int(x) for x in ends]


TYPES = {"v": pa.float64(), "i": pa.int64(), "s": pa.string()}
CLASSES = {"v": "float", "i": "integer", "s": "ordered"}
# every aggregate way: member lists (collect, udafs, time-weighted means) and the alive
# ranges of base groups (counts, sums, extremes, first/last, moments)
FULL: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("s"),
    ws.first("v"), ws.last("s"), ws.collect("i"), ws.sum("i"), ws.stddev("v"),
    ws.time_weighted_mean("v"), ws.udaf(span, "v", returns="long").alias("span_v"),
    ws.udaf(lifetimes_seen, "v", returns="array<long>", lifetimes=True)]
SUMMABLE: list[Aggregation] = [ws.count(), ws.count("v"), ws.sum("i"), ws.max("v"),
                               ws.first("s")]
INEXACT = "stddev_v"  # its moments merge along a tree shaped by the whole array


def output_type(agg: Aggregation) -> pa.DataType:
    if agg.fn == "count":
        return pa.int64()
    if agg.fn == "udaf":
        return pa.list_(pa.int64()) if agg.lifetimes else pa.int64()
    if agg.fn in ("mean", "stddev", "variance", "time_weighted_mean"):
        return pa.float64()
    if agg.fn == "collect":
        assert agg.col is not None
        return pa.list_(TYPES[agg.col])
    assert agg.col is not None
    return TYPES[agg.col]


def make_kernel(window: IntervalWindow, aggs: list[Aggregation], interval: bool
                ) -> IntervalKernel:
    fields = [pa.field("k", pa.string())]
    fields += [pa.field(c, pa.int64()) for c in ("window_start", "window_end", "time")]
    fields += [pa.field(a.output_name, output_type(a)) for a in aggs]
    return interval_kernel(
        keys=("k",), time="t", end="e" if interval else None, time_kind="integer",
        time_scale=0, window=window,
        aggregates=tuple(AggregateJob(a.fn, a.col, CLASSES.get(a.col or "", "none"),
                                      output_type(a), a.func, a.lifetimes) for a in aggs),
        schema=pa.schema(fields))


def table_of(events: list[dict[str, Any]], interval: bool, beyond: int = 0) -> pa.Table:
    """Events sorted by key then start (the list's order is the tie-break), with the
    horizon columns: the newest start and end of the whole input (`beyond`: as if
    another key's events came later)."""
    ordered = sorted(events, key=lambda r: (r["k"], r["t"]))
    data: dict[str, pa.Array] = {"k": pa.array([r["k"] for r in ordered], pa.string()),
                                 "t": pa.array([r["t"] for r in ordered], pa.int64())}
    if interval:
        data["e"] = pa.array([r["e"] for r in ordered], pa.int64())
    for c, kind in TYPES.items():
        data[c] = pa.array([r[c] for r in ordered], kind)
    newest = max((r["t"] for r in events), default=0) + beyond
    ends = [r["e"] for r in events if interval and r["e"] is not None]
    data[HORIZON_START] = pa.array([newest] * len(ordered), pa.int64())
    data[HORIZON_END] = pa.array([max(ends) + beyond if ends else None] * len(ordered),
                                 pa.int64())
    return pa.table(data)


@st.composite
def events_st(draw: st.DrawFn, key: str = "a", most: int = 40,
              shapes: tuple[str, ...] = ("open", "short", "long", "zero", "boundary")
              ) -> list[dict[str, Any]]:
    m = draw(st.integers(0, most))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 7, 20]), min_size=m,
                         max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-30, 30))))[1:]
    out = []
    for t in times:
        shape = draw(st.sampled_from(shapes))
        e = {"open": None, "short": t + draw(st.integers(1, 4)),
             "long": t + draw(st.integers(5, 80)), "zero": t,
             "boundary": t + draw(st.integers(1, 20)) // 5 * 5 + 5}[shape]
        out.append({
            "k": key, "t": t, "e": e,
            # small integers: sums are exact whichever way they are added
            "v": draw(st.one_of(st.none(), st.just(math.nan),
                                st.integers(-5, 5).map(float))),
            "i": draw(st.one_of(st.none(), st.integers(-9, 9))),
            "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", ""])))})
    return out


windows_st = st.one_of(
    st.builds(lambda size, hop, align: HoppingWindows(size=size, hop=hop, align=align),
              st.integers(1, 7), st.integers(1, 9), st.integers(-20, 20)),
    st.integers(1, 7).flatmap(lambda size: st.builds(
        lambda hop, align: HoppingWindows(size=size, hop=hop, align=align,
                                          output="changes"),
        st.integers(1, size), st.integers(-20, 20))),
    st.just(SnapshotWindows()),
    st.builds(lambda n: CountWindows(n=n), st.integers(1, 4)))


def canonical(found: list[tuple[Any, ...]], names: list[str]) -> list[tuple[Any, ...]]:
    """Rows with the inexact column rounded (to 9 significant digits), sorted."""
    at = names.index(INEXACT) if INEXACT in names else None

    def rounded(row: tuple[Any, ...]) -> tuple[Any, ...]:
        if at is None or row[at] is None or math.isnan(row[at]):
            return row
        return (*row[:at], float(f"{row[at]:.9g}"), *row[at + 1:])

    return sorted((rounded(r) for r in found), key=repr)


def assert_resumes(kernel: IntervalKernel, table: pa.Table, cuts: list[int]) -> None:
    whole = rows([kernel.run_group(table)]) if table.num_rows else []
    resumed = rows(cut_run(kernel, table, cuts))
    names = kernel.schema.names
    assert [repr(r) for r in canonical(resumed, names)] == [
        repr(r) for r in canonical(whole, names)]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), window=windows_st, interval=st.booleans(),
       aggs=st.sampled_from([FULL, SUMMABLE]), beyond=st.sampled_from([0, 0, 1, 50]))
def test_interval_windows_resume(data: st.DataObject, window: IntervalWindow,
                                 interval: bool, aggs: list[Aggregation],
                                 beyond: int) -> None:
    events = data.draw(events_st())
    table = table_of(events, interval, beyond)
    # cuts anywhere: at 0 and at the end, repeated (empty pieces), inside ties
    cuts = data.draw(st.lists(st.integers(0, table.num_rows), max_size=10))
    assert_resumes(make_kernel(window, aggs, interval), table, cuts)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), window=windows_st, interval=st.booleans())
def test_every_cut_resumes(data: st.DataObject, window: IntervalWindow,
                           interval: bool) -> None:
    """A cut before every event: one event per step."""
    table = table_of(data.draw(events_st(most=25)), interval, data.draw(
        st.sampled_from([0, 3])))
    assert_resumes(make_kernel(window, FULL, interval), table,
                   list(range(table.num_rows + 1)))


def test_state_is_bounded_by_the_window_reach() -> None:
    """Over short events the carried events stay within one window's reach; an
    open-ended event stays carried while it lives."""
    m = 3000
    times = np.arange(m, dtype=np.int64) // 2  # two events per tick
    events = [{"k": "a", "t": int(t), "e": int(t) + 3, "v": 1.0, "i": 1, "s": "x"}
              for t in times]
    events[0]["e"] = None  # open-ended: alive to the end of time
    table = table_of(events, interval=True)
    bounds = {HoppingWindows(size=10, hop=4): 2 * (10 + 4 + 3) + 1,
              HoppingWindows(size=10, hop=4, output="changes"): 2 * (10 + 2 * 4 + 3) + 1,
              SnapshotWindows(): 2 * 3 + 1, CountWindows(n=5): 2 * 5 + 1}
    for window, bound in bounds.items():
        kernel = make_kernel(window, FULL, interval=True)
        state: KernelState | None = None
        outputs = []
        for begin in range(0, m, 100):
            out, state = kernel.step(state, table.slice(begin, 100))
            outputs.append(out)
            state = KernelState.from_bytes(state.to_bytes())
            starts = state.rows.column("t").to_pylist()
            ends = state.rows.column("e").to_pylist()
            if not isinstance(window, CountWindows):
                assert ends[0] is None  # the open-ended event, still alive
            assert len(starts) <= bound, (window, len(starts))
        outputs.append(kernel.finish(state))
        expected = rows([kernel.run_group(table)])
        assert len(expected) > m // 10
        assert canonical(rows(outputs), kernel.schema.names) == canonical(
            expected, kernel.schema.names)


@pytest.mark.parametrize("window", [
    HoppingWindows(size=6, hop=2, align=1), HoppingWindows(size=5, hop=5),
    HoppingWindows(size=6, hop=2, output="changes"), SnapshotWindows(), CountWindows(n=3)])
@pytest.mark.parametrize("aggs", [FULL, SUMMABLE], ids=["full", "summable"])
@pytest.mark.parametrize("interval", [True, False], ids=["intervals", "points"])
def test_mapinarrow_feeds_long_runs_in_pieces(
        window: IntervalWindow, aggs: list[Aggregation], interval: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One long key among short ones, in small Arrow batches, with pieces of 16 events:
    the rows of each key's whole run, the long key's through `step`."""
    monkeypatch.setattr(runtime_intervals, "CHUNK_ROWS", 16)
    rng = np.random.default_rng(7)
    events: list[dict[str, Any]] = []
    for key, m in [("a", 3), ("b", 300), ("c", 1), ("d", 9), ("e", 40), ("f", 2)]:
        t = np.cumsum(rng.choice([0, 1, 2, 9], size=m)) - 20
        for j, x in enumerate(t.tolist()):
            shape = rng.integers(0, 6)
            end = None if shape == 0 and j % 7 == 0 else x + int(rng.integers(0, 30))
            events.append({"k": key, "t": x, "e": end, "v": float(rng.integers(-3, 4)),
                           "i": int(rng.integers(-5, 6)), "s": "xyz"[j % 3]})
    table = table_of(events, interval)
    kernel = make_kernel(window, aggs, interval)
    found = rows(list(kernel(iter(table.to_batches(max_chunksize=7)))))
    keys = table.column("k").to_pylist()
    expected = rows([kernel.run_group(table.slice(keys.index(k), keys.count(k)))
                     for k in dict.fromkeys(keys)])
    names = kernel.schema.names
    assert len(expected) > 50
    assert canonical(found, names) == canonical(expected, names)
    # the long key really went through `step`: its pieces are fewer rows than its run
    steps = []
    original = type(kernel).step

    def spy(self: IntervalKernel, state: KernelState | None, chunk: pa.Table
            ) -> tuple[pa.RecordBatch, KernelState]:
        steps.append(chunk.num_rows)
        return original(self, state, chunk)

    monkeypatch.setattr(type(kernel), "step", spy)
    again = rows(list(kernel(iter(table.to_batches(max_chunksize=7)))))
    assert canonical(again, names) == canonical(expected, names)
    assert len(steps) > 5 and max(steps) < 300
