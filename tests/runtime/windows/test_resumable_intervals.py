"""The interval kernels (hopping and tumbling, snapshot, count-by-start-time windows)
resume: a key's events cut anywhere, the state through bytes at every cut, give the rows
of one uncut run; the carried events stay within the window's reach (open-ended events
stay while they live); the mapInArrow function feeds long runs in pieces and short ones
whole, with the same rows. Hopping and tumbling windows (`output="windows"`) stream:
told horizons, steps emit every window that ends at or before the horizon, and `wake`
says when the next one does; the other kinds take a horizon and ignore it (no Spark)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import cut_run, rows, stream_run

import wisp as ws
from wisp.plan.intervals import CountWindows, HoppingWindows, IntervalWindow, SnapshotWindows
from wisp.runtime.codecs.arrays import DAY
from wisp.runtime.windows import intervals as runtime_intervals
from wisp.runtime.windows.hopping import HORIZON_END, HORIZON_START, HoppingKernel
from wisp.runtime.windows.interval_kernels import interval_kernel
from wisp.runtime.windows.intervals import IntervalKernel
from wisp.runtime.windows.resumable import Horizon, KernelState
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
        aggregates=tuple(built_in_job(a.fn, a.col, CLASSES.get(a.col or "", "none"),
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


def end_of(draw: st.DrawFn, shape: str, t: int) -> int | None:
    """An event's end of the shape drawn (drawing only that shape's end: drawing every
    shape's end cost three draws an event for one kept)."""
    if shape == "open":
        return None
    if shape == "zero":
        return t
    if shape == "short":
        return t + draw(st.integers(1, 4))
    if shape == "long":
        return t + draw(st.integers(5, 80))
    return t + draw(st.integers(1, 20)) // 5 * 5 + 5  # boundary: a multiple of 5


@st.composite
def events_st(draw: st.DrawFn, key: str = "a", most: int = 40,
              shapes: tuple[str, ...] = ("open", "short", "long", "zero", "boundary"),
              least: int = 0) -> list[dict[str, Any]]:
    m = draw(st.integers(least, most))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 3, 7, 20]), min_size=m,
                         max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-30, 30))))[1:]
    out = []
    for t in times:
        shape = draw(st.sampled_from(shapes))
        e = end_of(draw, shape, t)
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


@settings(max_examples=200, deadline=None)
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


# ------------------------------------------------------------ streaming (horizons)


def window_final(row: dict[str, Any], horizon: Horizon) -> bool:
    """Independent of the kernel: a window `[window_start, window_end)` is final once
    every later event starts at or after its end (a later event, point or interval,
    starts at or after the horizon, so it overlaps no window ending by then); the row
    standing for the windows of open-ended events (a null end) never is."""
    return row["window_end"] is not None and row["window_end"] <= horizon


def never_final(row: dict[str, Any], horizon: Horizon) -> bool:
    return False


# `stream_run` compares rows exactly: without the moments, which merge along a tree
# shaped by the whole array (their last digit differs between a step and the uncut run)
EXACT = [a for a in FULL if a.output_name != INEXACT]


# tumbling (hop = size), overlapping (hop < size) and with gaps (hop > size)
streamed_windows_st = st.integers(1, 7).flatmap(lambda size: st.builds(
    lambda hop, align: HoppingWindows(size=size, hop=hop, align=align),
    st.one_of(st.just(size), st.integers(1, size), st.integers(size, size + 6)),
    st.integers(-20, 20)))
slack_st = st.lists(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)), max_size=4)


def assert_streams(kernel: IntervalKernel, table: pa.Table, cuts: list[int],
                   slack: list[float],
                   is_final: Callable[[dict[str, Any], Horizon], bool] = window_final
                   ) -> None:
    """`stream_run` (every final window emitted by each horizon, none twice), then the
    union of the outputs equals the uncut run."""
    outputs = stream_run(kernel, table, "t", cuts, slack, is_final)
    names = kernel.schema.names
    assert [repr(r) for r in canonical(rows(outputs), names)] == [
        repr(r) for r in canonical(rows([kernel.run_group(table)]), names)]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), window=streamed_windows_st, interval=st.booleans(),
       aggs=st.sampled_from([EXACT, SUMMABLE]), beyond=st.sampled_from([0, 0, 1, 50]),
       slack=slack_st)
def test_hopping_windows_stream(data: st.DataObject, window: HoppingWindows,
                                interval: bool, aggs: list[Aggregation], beyond: int,
                                slack: list[float]) -> None:
    """Point and interval events (open-ended, long, zero-length ones, ties), cut
    anywhere (empty pieces too), each piece told a horizon between its newest time and
    the next piece's first: every window ending at or before the horizon is emitted
    then (and at `wake`), none twice, and all of them make the uncut run's rows."""
    table = table_of(data.draw(events_st(least=1)), interval, beyond)
    cuts = data.draw(st.lists(st.integers(0, table.num_rows), max_size=10))
    assert_streams(make_kernel(window, aggs, interval), table, cuts, slack)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), window=streamed_windows_st, interval=st.booleans(),
       slack=slack_st)
def test_hopping_windows_stream_event_by_event(data: st.DataObject, window: HoppingWindows,
                                               interval: bool, slack: list[float]) -> None:
    """A piece per event (and an empty one first and last)."""
    table = table_of(data.draw(events_st(most=25, least=1)), interval,
                     data.draw(st.sampled_from([0, 3])))
    assert_streams(make_kernel(window, EXACT, interval), table,
                   list(range(table.num_rows + 1)), slack)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), window=windows_st, interval=st.booleans(), slack=slack_st)
def test_other_kinds_ignore_the_horizon(data: st.DataObject, window: IntervalWindow,
                                        interval: bool, slack: list[float]) -> None:
    """Snapshot, count and hopping `output="changes"` windows take a horizon and resume
    as without one (they never wake: only hopping `output="windows"` does)."""
    table = table_of(data.draw(events_st(most=25, least=1)), interval)
    cuts = data.draw(st.lists(st.integers(0, table.num_rows), max_size=8))
    kernel = make_kernel(window, SUMMABLE, interval)
    streams = isinstance(window, HoppingWindows) and window.output == "windows"
    assert_streams(kernel, table, cuts, slack, window_final if streams else never_final)
    if not streams:
        _, state = kernel.step(None, table, table.column("t").to_pylist()[-1] + 100)
        assert kernel.wake(state) is None


@settings(max_examples=100, deadline=None)
@given(data=st.data(), window=streamed_windows_st, interval=st.booleans(),
       beyond=st.sampled_from([0, 1, 50]))
def test_wake_is_the_first_horizon_that_emits(data: st.DataObject, window: HoppingWindows,
                                              interval: bool, beyond: int) -> None:
    """After every step (told the newest time or the next piece's first as horizon),
    a step with no events at `wake` emits a window and one at `wake - 1` none; with no
    wake, not even a far horizon makes a step emit."""
    table = table_of(data.draw(events_st(most=25, least=1)), interval, beyond)
    kernel = make_kernel(window, SUMMABLE, interval)
    cuts = sorted(data.draw(st.lists(st.integers(0, table.num_rows), max_size=6)))
    times = table.column("t").to_pylist()
    empty = table.slice(0, 0)
    state: KernelState | None = None
    for begin, stop in itertools.pairwise([0, *cuts, table.num_rows]):
        following = times[stop] if stop < len(times) else times[-1] + 10
        newest = times[stop - 1] if stop else following
        horizon = data.draw(st.sampled_from([newest, following]))
        _, state = kernel.step(state, table.slice(begin, stop - begin), horizon)
        wake = kernel.wake(state)
        if wake is None:
            assert kernel.step(state, empty, times[-1] + 1000)[0].num_rows == 0
            continue
        assert isinstance(wake, int) and wake > horizon
        assert kernel.step(state, empty, wake - 1)[0].num_rows == 0
        assert kernel.step(state, empty, wake)[0].num_rows > 0

def test_a_horizon_emits_the_windows_before_it() -> None:
    """Tumbling windows of 10 over points at 1, 12, 25: told the horizon 20 (no event
    before 20 is still to come), the step emits [10, 20) too, which the rows alone
    (newest start 12) leave open; `wake` is then the end of [20, 30)."""
    events = [{"k": "a", "t": t, "e": None, "v": 1.0, "i": 1, "s": "x"} for t in (1, 12, 25)]
    table = table_of(events, interval=False)
    kernel = make_kernel(HoppingWindows(size=10, hop=10), [ws.count()], interval=False)
    out, state = kernel.step(None, table.slice(0, 2))
    assert out.column("window_end").to_pylist() == [10]
    assert kernel.wake(state) == 20
    out, state = kernel.step(None, table.slice(0, 2), 20)
    assert out.column("window_end").to_pylist() == [10, 20]
    assert kernel.wake(state) is None  # nothing pending: only new events open windows
    out, state = kernel.step(state, table.slice(2, 1), 26)
    assert out.num_rows == 0
    assert kernel.wake(state) == 30
    out, state = kernel.step(state, table.slice(3, 0), 30)
    assert out.column("window_start").to_pylist() == [20]
    assert kernel.finish(state).num_rows == 0


def test_a_far_horizon_leaves_the_shared_row_to_finish() -> None:
    """An open-ended event at 0 and windows of one tick: the input's horizon is 1 (one
    tick after the newest start), so the uncut run has the window [0, 1) and one row for
    all windows from 1 on. A horizon far beyond emits [0, 1) only; `finish` emits the
    shared row, beginning at 1 as in the uncut run."""
    events = [{"k": "a", "t": 0, "e": None, "v": 1.0, "i": 1, "s": "x"}]
    table = table_of(events, interval=True)
    kernel = make_kernel(HoppingWindows(size=1, hop=1), [ws.count()], interval=True)
    out, state = kernel.step(None, table, 10**6)
    assert out.column("window_start").to_pylist() == [0]
    assert kernel.wake(state) is None
    state = KernelState.from_bytes(state.to_bytes())
    last = kernel.finish(state)
    assert last.column("window_start").to_pylist() == [1]
    assert last.column("window_end").to_pylist() == [None]
    assert rows([out, last]) == rows([kernel.run_group(table)])


def test_date_time_horizons_are_in_microseconds() -> None:
    """Date time runs in days, but a horizon (and `wake`) is in the column's ticks:
    microseconds, a day's events at its midnight. A horizon inside a day promises the
    events from the next day on."""
    schema = pa.schema([("k", pa.string()), ("window_start", pa.date32()),
                        ("window_end", pa.date32()), ("time", pa.date32()),
                        ("count", pa.int64())])
    kernel = interval_kernel(("k",), "t", None, "date", 0, HoppingWindows(size=2, hop=1),
                             (built_in_job("count", None, "none", pa.int64(), None),),
                             schema)
    assert isinstance(kernel, HoppingKernel)
    table = pa.table({"k": ["a", "a"], "t": pa.array([0, 3], pa.int32()).cast(pa.date32())})
    out, state = kernel.step(None, table.slice(0, 1))
    assert out.num_rows == 0
    assert kernel.wake(state) == 1 * DAY  # the end of day -1's window [-1, 1)
    out, state = kernel.step(state, table.slice(1, 0), DAY // 2)  # rounds up to day 1
    assert [d.toordinal() for d in out.column("window_start").to_pylist()] == [
        719163 - 1]  # 1969-12-31
    assert kernel.wake(state) == 2 * DAY
    out, state = kernel.step(state, table.slice(1, 1), 3 * DAY)
    assert out.num_rows == 1  # [0, 2)
    assert kernel.wake(state) == 4 * DAY


def test_float_horizons_round_up_to_a_tick() -> None:
    """Interval windows need exact ticks (no float time column), but a float horizon
    still promises the ticks at or above it; NaN and minus infinity promise nothing."""
    kernel = make_kernel(HoppingWindows(size=3, hop=2), [ws.count()], interval=False)
    assert isinstance(kernel, HoppingKernel)
    assert [kernel.bound(h) for h in (2.5, 3.0, -0.5, 7)] == [3, 3, 0, 7]
    assert kernel.bound(math.nan) is None and kernel.bound(-math.inf) is None
    assert kernel.bound(None) is None
    changes = make_kernel(HoppingWindows(size=3, hop=2, output="changes"), [ws.count()],
                          interval=False)
    assert changes.bound(5) is None
