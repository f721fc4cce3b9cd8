"""The tick kernel (`Since`, `Trailing` over predicate or calendar ticks) resumes: a key's
rows cut anywhere, the state through bytes at every cut, give the rows of one uncut run;
the carried rows stay within the window's periods; the mapInArrow function feeds long
runs in pieces and short ones whole, with the same rows (no Spark)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match
from resumable_check import cut_run

import wisp as ws
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.windows import periods as runtime_periods
from wisp.runtime.windows.periods import HIDDEN_NEWEST, HIDDEN_TICK, TickKernel
from wisp.runtime.windows.resumable import KernelState
from wisp.spec.windows import CalendarTick

HOUR = 3_600_000_000
DAY = 24 * HOUR
BASE = 1_709_856_000_000_000  # 2024-03-08 00:00Z: New York's spring change follows

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "v", "float", pa.float64(), None),
        built_in_job("variance", "v", "float", pa.float64(), None),
        built_in_job("sum", "i", "integer", pa.int64(), None),
        built_in_job("min", "s", "ordered", pa.string(), None),
        built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None))
NAMES = ("count", "count_v", "sum_v", "mean_v", "max_v", "first_v", "last_v",
         "variance_v", "sum_i", "min_s", "collect_i")


FLOATS = ("sum_v", "mean_v", "variance_v")


def assert_resumes(tick_kernel: TickKernel, table: pa.Table, cuts: list[int]) -> None:
    """`resumable_check.assert_resumes` with the float sums and moments compared to a
    relative 1e-9 of their scale: those kernels (certified prefix differences, blocked
    scans) give a frame's sum to a few units in the last place, depending on the whole
    array they read (as for keys computed together or alone), so the last bits may
    move with the cuts; every other value compares exactly."""
    assert_same(cut_run(tick_kernel, table, cuts), [tick_kernel.run_group(table)], table)


def assert_same(got: list[pa.RecordBatch], want: list[pa.RecordBatch], table: pa.Table
                ) -> None:
    """The same rows, in any order; floats as `assert_resumes` says."""
    whole, resumed = canonical(want), canonical(got)
    magnitude = sum(abs(v) for v in table.column("v").to_pylist()
                    if v is not None and not math.isnan(v)) + 1.0
    scales = {"sum_v": magnitude, "mean_v": magnitude, "variance_v": magnitude ** 2}
    assert [exact(r) for r in resumed] == [exact(r) for r in whole]
    assert_rows_match(resumed, whole, rel=1e-9, scales=scales)


def exact(row: dict[str, Any]) -> str:
    return repr([v for k, v in row.items() if k not in FLOATS])


def canonical(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    found = [row for b in batches for row in b.to_pylist()]
    return sorted(found, key=lambda r: (exact(r), [
        "null" if r[f] is None else f"{r[f]:.6e}" for f in FLOATS]))


def kernel(*, calendar: CalendarTick | None = None, n: int = 1, partial: bool = False,
           emit: str = "events", trailing: bool = False,
           jobs: tuple[AggregateJob, ...] = JOBS) -> TickKernel:
    time_type = pa.int64() if calendar is None else pa.timestamp("us", tz="UTC")
    schema = pa.schema([pa.field("k", pa.string()),
                        *[pa.field(f, time_type) for f in ("window_start", "window_end",
                                                           "time")],
                        *[pa.field(name, job.output_type) for name, job in zip(
                            NAMES, jobs, strict=False)]])
    return TickKernel(keys=("k",), time="t",
                      time_kind="integer" if calendar is None else "timestamp",
                      time_scale=0, calendar=calendar, n=n, partial=partial, emit=emit,
                      trailing=trailing, aggregates=jobs, schema=schema)


ACCUMULATED = JOBS[:-1]
"""Every aggregation but `collect`: all held by accumulators, so `Since` over calendar
ticks carries its open period as them (`TickKernel.accumulates`)."""


def events(keys: list[str], times: list[int], flags: list[bool | None] | None,
           values: list[float | None], calendar: bool, newest: int | None = None
           ) -> pa.Table:
    """Input rows sorted by key then time (the order is the tie-break)."""
    time_type = pa.timestamp("us", tz="UTC") if calendar else pa.int64()
    m = len(times)
    data: dict[str, Any] = {
        "k": pa.array(keys, pa.string()), "t": pa.array(times, time_type),
        "v": pa.array(values, pa.float64()),
        "i": pa.array([None if j % 5 == 3 else j * 7 - 20 for j in range(m)], pa.int64()),
        "s": pa.array([None if j % 4 == 1 else f"s{(j * 37) % 11:02d}" for j in range(m)],
                      pa.string())}
    if flags is not None:
        data[HIDDEN_TICK] = pa.array(flags, pa.bool_())
    if calendar:
        top = max(times, default=0) if newest is None else newest
        data[HIDDEN_NEWEST] = pa.array([top] * m, time_type)
    return pa.table(data)


# no -0.0: the sign of a zero sum depends on the frame-sum path (certified prefix
# differences or blocked scans), chosen from the whole array, not from the frame
values_st = st.one_of(st.none(), st.just(math.nan),
                      st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
                      .map(lambda x: x + 0.0),
                      st.sampled_from([0.0, 1.5, 1e6]))


@st.composite
def predicate_input(draw: st.DrawFn) -> tuple[pa.Table, list[int]]:
    m = draw(st.integers(0, 60))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5]), min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    rate = draw(st.sampled_from([0.0, 0.1, 0.3, 0.8]))
    flags = [draw(st.one_of(st.none(), st.booleans().map(lambda b: b and rate > 0)))
             if draw(st.floats(0, 1)) > rate else True for _ in range(m)]
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    return events(["a"] * m, times, flags, vals, calendar=False), cuts


@st.composite
def calendar_input(draw: st.DrawFn) -> tuple[pa.Table, list[int]]:
    m = draw(st.integers(1, 50))  # (the whole-run path takes no empty calendar run)
    # steps of a quarter hour up to two days, ties and exact ticks included
    gaps = draw(st.lists(st.sampled_from([0, 0, HOUR // 4, HOUR, 5 * HOUR, DAY, 2 * DAY,
                                          DAY // 3]), min_size=m, max_size=m))
    first = BASE + draw(st.sampled_from([0, HOUR, 13 * HOUR + 1]))
    times = list(itertools.accumulate(gaps, initial=first))[1:]
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    beyond = draw(st.sampled_from([0, 0, 1, HOUR, 3 * DAY + 5]))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    newest = max(times, default=0) + beyond
    return events(["a"] * m, times, None, vals, calendar=True, newest=newest), cuts


ticks_st = st.sampled_from([ws.daily(), ws.daily("America/New_York"),
                            ws.hourly("America/New_York"), ws.cron("0 */7 * * *"),
                            ws.weekly("Asia/Kathmandu")])


@settings(max_examples=150, deadline=None)
@given(data=predicate_input(), emit=st.sampled_from(["events", "ticks", "both"]))
def test_since_predicate_resumes(data: tuple[pa.Table, list[int]], emit: str) -> None:
    table, cuts = data
    assert_resumes(kernel(emit=emit), table, cuts)


@settings(max_examples=150, deadline=None)
@given(data=predicate_input(), n=st.integers(1, 4), partial=st.booleans())
def test_trailing_predicate_resumes(data: tuple[pa.Table, list[int]], n: int,
                                    partial: bool) -> None:
    table, cuts = data
    assert_resumes(kernel(n=n, partial=partial, trailing=True), table, cuts)


@settings(max_examples=120, deadline=None)
@given(data=calendar_input(), tick=ticks_st, emit=st.sampled_from(["events", "ticks", "both"]))
def test_since_calendar_resumes(data: tuple[pa.Table, list[int]], tick: CalendarTick,
                                emit: str) -> None:
    table, cuts = data
    assert_resumes(kernel(calendar=tick, emit=emit), table, cuts)


@settings(max_examples=120, deadline=None)
@given(data=calendar_input(), tick=ticks_st, emit=st.sampled_from(["events", "ticks", "both"]))
def test_since_calendar_as_accumulators_gives_the_rows_kernels_rows(
        data: tuple[pa.Table, list[int]], tick: CalendarTick, emit: str) -> None:
    """Carried as accumulators (running scans restarting at each period, read at each
    frame's last row; an empty period's tick row the empty window's), whole or cut
    anywhere with the state through bytes, the rows are those of the kernel that keeps
    the period's rows and aggregates frames (`collect` makes it keep them)."""
    table, cuts = data
    rows_kernel = kernel(calendar=tick, emit=emit)
    accumulated = kernel(calendar=tick, emit=emit, jobs=ACCUMULATED)
    assert accumulated.accumulates and not rows_kernel.accumulates
    want = [rows_kernel.run_group(table).drop_columns(["collect_i"])]
    assert_same([accumulated.run_group(table)], want, table)
    assert_same(cut_run(accumulated, table, cuts), want, table)


def test_a_long_period_as_accumulators_carries_one_row() -> None:
    """A thousand events within one day, daily ticks, fed seven at a time: the state
    stays one row (the key's values and the accumulators), not the period's rows."""
    m = 1000
    table = events(["a"] * m, [BASE + j * 60_000_000 for j in range(m)], None,
                   [float(j % 17) for j in range(m)], calendar=True)
    accumulated = kernel(calendar=ws.daily(), emit="both", jobs=ACCUMULATED)
    state: KernelState | None = None
    for begin in range(0, m, 7):
        _, state = accumulated.step(state, table.slice(begin, 7))
        assert state.rows.num_rows == 1
    want = [kernel(calendar=ws.daily(), emit="both").run_group(table)
            .drop_columns(["collect_i"])]
    assert_same(cut_run(accumulated, table, list(range(0, m, 7))), want, table)


@settings(max_examples=120, deadline=None)
@given(data=calendar_input(), tick=ticks_st, n=st.integers(1, 4), partial=st.booleans())
def test_trailing_calendar_resumes(data: tuple[pa.Table, list[int]], tick: CalendarTick,
                                   n: int, partial: bool) -> None:
    table, cuts = data
    assert_resumes(kernel(calendar=tick, n=n, partial=partial, trailing=True), table, cuts)


def test_empty_period_ticks_are_emitted_once_across_cuts() -> None:
    """Events days apart with hourly ticks, cut between every event and inside ties:
    each tick's row comes exactly once, empty periods with count 0, up to the tick
    closing the newest event of the whole input (two days past the key's last)."""
    times = [BASE + HOUR // 2, BASE + HOUR // 2, BASE + 2 * DAY, BASE + 2 * DAY + 1,
             BASE + 4 * DAY]
    table = events(["a"] * 5, times, None, [1.0, 2.0, 4.0, 8.0, 16.0], calendar=True,
                   newest=BASE + 6 * DAY - 1)
    tick_kernel = kernel(calendar=ws.hourly(), emit="ticks")
    for cuts in ([], [1], [0, 1, 2, 3, 4, 5], [2, 2, 4], [5, 5]):
        assert_resumes(tick_kernel, table, cuts)
        found = canonical(cut_run(tick_kernel, table, cuts))
        ends = [r["time"] for r in found]
        assert len(ends) == len(set(ends)) == 6 * 24  # BASE+1h .. BASE+6d
        assert sum(r["count"] for r in found) == 5
        # an event exactly on a tick closes that tick's period
        assert sorted(r["sum_v"] for r in found if r["count"]) == [3.0, 4.0, 8.0, 16.0]
        assert all(r["sum_v"] == 0.0 and r["max_v"] is None
                   for r in found if not r["count"])


def test_carried_rows_stay_within_the_periods() -> None:
    """Pieces of 4 rows: a predicate `Trailing(3, ...)` with a tick every 5th row
    carries at most 3 periods; calendar `Trailing(2, daily)` over hourly events at most
    2 days; `Since(daily)` at most 1 day, whatever the key's length."""
    m = 400
    flags: list[bool | None] = [j % 5 == 4 for j in range(m)]
    predicate = events(["a"] * m, list(range(m)), flags, [1.0] * m, calendar=False)
    hourly = events(["a"] * m, [BASE + j * HOUR for j in range(m)], None, [1.0] * m,
                    calendar=True)
    for tick_kernel, table, most in [
            (kernel(n=3, trailing=True), predicate, 15),
            (kernel(emit="ticks"), predicate, 5),
            (kernel(calendar=ws.daily(), n=2, trailing=True), hourly, 48),
            (kernel(calendar=ws.daily(), emit="both"), hourly, 24)]:
        state: KernelState | None = None
        largest = 0
        for begin in range(0, m, 4):
            _, state = tick_kernel.step(state, table.slice(begin, 4))
            largest = max(largest, state.rows.num_rows)
        assert 0 < largest <= most
        assert_resumes(tick_kernel, table, list(range(0, m, 4)))


def test_a_predicate_that_never_fires_carries_the_whole_key() -> None:
    """The documented unbounded case: `Since(pred)` without a true flag carries every
    row so far, and still gives the rows of one uncut run."""
    m = 50
    table = events(["a"] * m, list(range(m)), [None, False] * (m // 2), [1.0] * m,
                   calendar=False)
    tick_kernel = kernel()
    state: KernelState | None = None
    for begin in range(0, m, 10):
        _, state = tick_kernel.step(state, table.slice(begin, 10))
    assert state is not None and state.rows.num_rows == m
    assert_resumes(tick_kernel, table, [10, 20, 30, 40])


def test_a_state_serialises_its_scalars() -> None:
    """Daily ticks, events exactly on midnights: after four of them the tick of the
    newest (BASE + 3 days) is not final (a tie may follow), the ticks before it are
    emitted, and only the open period's row is carried."""
    table = events(["a"] * 6, [BASE + j * DAY for j in range(6)], None, [1.0] * 6,
                   calendar=True, newest=BASE + 9 * DAY)
    out, state = kernel(calendar=ws.daily(), emit="both").step(None, table.slice(0, 4))
    again = KernelState.from_bytes(state.to_bytes())
    assert dict(again.scalars) == {"first": BASE, "emitted": BASE + 2 * DAY}
    assert again.rows.equals(state.rows)
    assert again.rows.column("t").to_pylist() == table.column("t").to_pylist()[3:4]
    assert out.num_rows == 4 + 3  # the four events, the ticks BASE .. BASE + 2 days


@pytest.mark.parametrize("window", [
    dict(emit="both"), dict(emit="ticks"), dict(n=3, trailing=True),
    dict(calendar=ws.hourly(), emit="both"), dict(calendar=ws.daily(), emit="ticks"),
    dict(calendar=ws.daily("America/New_York"), n=2, trailing=True),
    dict(calendar=ws.hourly(), n=3, partial=True, trailing=True)])
def test_the_batch_driver_feeds_long_keys_in_pieces(
        window: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The mapInArrow function over batches of 7 rows, pieces of 10: one long key,
    short keys before and after; the rows equal each key's whole run."""
    monkeypatch.setattr(runtime_periods, "CHUNK_ROWS", 10)
    pieces: list[int] = []
    original = TickKernel.step

    def counted(self: TickKernel, state: KernelState | None, chunk: pa.Table
                ) -> tuple[pa.RecordBatch, KernelState]:
        pieces.append(chunk.num_rows)
        return original(self, state, chunk)

    monkeypatch.setattr(TickKernel, "step", counted)
    calendar = window.get("calendar") is not None
    sizes = {"a": 3, "b": 95, "c": 1, "d": 4, "e": 23}
    keys = [k for k, size in sizes.items() for _ in range(size)]
    rng = np.random.default_rng(7)
    times: list[int] = []
    for size in sizes.values():
        gaps = rng.integers(0, 3 * HOUR if calendar else 3, size)
        times += (np.cumsum(gaps) + (BASE if calendar else 0)).tolist()
    flags: list[bool | None] = [bool(f) for f in rng.random(len(keys)) < 0.2]
    table = events(keys, times, None if calendar else flags,
                   rng.normal(size=len(keys)).tolist(), calendar=calendar,
                   newest=max(times) + DAY if calendar else None)
    tick_kernel = kernel(**window)
    driven = list(tick_kernel(iter(table.to_batches(max_chunksize=7))))
    whole: list[pa.RecordBatch] = []
    begin = 0
    for size in sizes.values():
        whole.append(tick_kernel.run_group(table.slice(begin, size)))
        begin += size
    assert_same(driven, whole, table)
    assert {"b", "e"} <= {r["k"] for r in canonical(driven)}
    # the long keys b and e (and only they) went through `step`, each in several pieces
    # (fewer than pieces of 10: pieces wait while the state carries many rows)
    assert sum(pieces) == 95 + 23 and len(pieces) >= 4
