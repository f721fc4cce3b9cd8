"""The session kernel resumes: a key's rows cut anywhere, the state through bytes at
every cut, give the sessions of one uncut run; streamed with horizons, every session
final at a horizon is out by then, `wake` is the least horizon that emits, and the
sessions are still the uncut run's; the carried rows are those of the open session;
the mapInArrow function feeds long runs in pieces and short ones whole, with the same
rows (no Spark)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from aggregators import Trajectory
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import (
    LeastWake,
    assert_resumes,
    cut_run,
    rows,
    slack_st,
    stream_run,
)
from tables import assert_same_rows

from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.resumable import Horizon, KernelState
from wisp.runtime.windows.sessions import SessionKernel
from wisp.spec.aggregates import USER_DEFINITION

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "v", "float", pa.float64(), None),
        built_in_job("sum", "i", "integer", pa.int64(), None),
        built_in_job("min", "s", "ordered", pa.string(), None),
        built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None))
NAMES = ("count", "count_v", "sum_v", "mean_v", "max_v", "first_v", "last_v", "sum_i",
         "min_s", "collect_i")
ACCUMULATED = (*JOBS[:-1],
               built_in_job("aggregate", "v", "float", pa.struct([
                   ("change", pa.float64()), ("span", pa.int64())]), None,
                   definition=USER_DEFINITION, aggregator=Trajectory()),
               built_in_job("max_by", "s", "ordered", pa.string(), None, by="i"),
               built_in_job("stddev", "v", "float", pa.float64(), None))
"""Aggregations all kept by accumulators (no collect): the kernel carries an open
session's accumulators, not its rows (`SessionKernel.accumulates`)."""
ACCUMULATED_NAMES = (*NAMES[:-1], "trajectory_v", "max_by_s", "stddev_v")


def kernel(*, intervals: bool, gap: int | float, max_duration: int | float | None,
           floats: bool = False, chunk_rows: int = 1 << 14,
           accumulated: bool = False) -> SessionKernel:
    time_type = pa.float64() if floats else pa.int64()
    jobs, names = (ACCUMULATED, ACCUMULATED_NAMES) if accumulated else (JOBS, NAMES)
    schema = pa.schema([pa.field("k", pa.string()),
                        *[pa.field(f, time_type) for f in ("window_start", "window_end",
                                                           "time")],
                        *[pa.field(name, job.output_type) for name, job in zip(
                            names, jobs, strict=True)]])
    made = SessionKernel(("k",), "t", "e" if intervals else None,
                         "float" if floats else "integer", 0, gap, max_duration, jobs,
                         schema, chunk_rows)
    assert made.accumulates == accumulated  # with or without max_duration
    return made


def events(keys: Sequence[str], times: Sequence[float], ends: Sequence[float | None],
           values: Sequence[float | None]) -> pa.Table:
    m = len(times)
    time_type = pa.float64() if any(isinstance(t, float) for t in times) else pa.int64()
    data: dict[str, Any] = {
        "k": keys, "t": pa.array(times, time_type), "e": pa.array(ends, time_type),
        "v": pa.array(values, pa.float64()),
        "i": pa.array([None if j % 5 == 3 else j * 7 - 20 for j in range(m)], pa.int64()),
        "s": pa.array([None if j % 4 == 1 else f"s{(j * 37) % 11:02d}" for j in range(m)],
                      pa.string())}
    return pa.table(data)


# small halves: sums exact in any order (the frame-sum path depends on the whole array)
values_st = st.one_of(st.none(), st.just(math.nan),
                      st.integers(-40, 40).map(lambda x: x / 2 + 0.0))


@st.composite
def session_input(draw: st.DrawFn) -> tuple[pa.Table, list[int]]:
    m = draw(st.integers(0, 60))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 9, 20]), min_size=m,
                         max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    lengths = draw(st.lists(st.sampled_from([0, 0, 1, 4, 12, 40, None]), min_size=m,
                            max_size=m))
    ends = [None if d is None else t + d for t, d in zip(times, lengths, strict=True)]
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    return events(["a"] * m, times, ends, vals), cuts


@settings(max_examples=200, deadline=None)
@given(data=session_input(), intervals=st.booleans(), gap=st.integers(0, 6),
       max_duration=st.one_of(st.none(), st.integers(1, 30)), accumulated=st.booleans())
def test_sessions_resume(data: tuple[pa.Table, list[int]], intervals: bool, gap: int,
                         max_duration: int | None, accumulated: bool) -> None:
    table, cuts = data
    assert_resumes(kernel(intervals=intervals, gap=gap, max_duration=max_duration,
                          accumulated=accumulated), table, cuts)


@settings(max_examples=150, deadline=None)
@given(data=session_input(), intervals=st.booleans(), gap=st.integers(0, 6),
       max_duration=st.one_of(st.none(), st.integers(1, 30)), accumulated=st.booleans())
def test_float_time_sessions_resume(data: tuple[pa.Table, list[int]], intervals: bool,
                                    gap: int, max_duration: int | None,
                                    accumulated: bool) -> None:
    """Float time: quarter ticks, an open interval event reaching +inf."""
    table, cuts = data
    quarter = table.set_column(1, "t", pa.array([t / 4 for t in table.column("t")
                                                 .to_pylist()], pa.float64()))
    quarter = quarter.set_column(2, "e", pa.array(
        [None if e is None else e / 4 for e in table.column("e").to_pylist()], pa.float64()))
    assert_resumes(kernel(intervals=intervals, gap=gap / 4, floats=True,
                          max_duration=None if max_duration is None else max_duration / 4,
                          accumulated=accumulated), quarter, cuts)


def test_cuts_inside_ties_and_at_every_row() -> None:
    """Runs of equal times cut inside, at 0, at the end and twice at the same place."""
    times = [0, 0, 0, 1, 1, 5, 5, 5, 5, 20, 20, 21, 40, 40]
    m = len(times)
    table = events(["a"] * m, times, [t + 2 for t in times], [float(j) for j in range(m)])
    for intervals, max_duration in itertools.product([False, True], [None, 3, 100]):
        session_kernel = kernel(intervals=intervals, gap=3, max_duration=max_duration)
        for cuts in ([], [0], [m], [1, 2], [4, 4, 7], list(range(m + 1)), [0, 0, m, m]):
            assert_resumes(session_kernel, table, cuts)
        found = rows(cut_run(session_kernel, table, list(range(m + 1))))
        assert sum(r[4] for r in found) == m  # every event in exactly one session


def test_the_state_is_the_open_session() -> None:
    """Sessions of 5 events, 100 apart, fed 3 rows at a time: the state never holds more
    than the open session's rows, and each step emits the sessions it closed."""
    m = 500
    times = [(j // 5) * 100 + j % 5 for j in range(m)]
    table = events(["a"] * m, times, [None] * m, [1.0] * m)
    session_kernel = kernel(intervals=False, gap=10, max_duration=None)
    state: KernelState | None = None
    emitted = 0
    for begin in range(0, m, 3):
        out, state = session_kernel.step(state, table.slice(begin, 3))
        state = KernelState.from_bytes(state.to_bytes())
        stop = min(begin + 3, m)
        assert state.rows.column("t").to_pylist() == times[(stop - 1) // 5 * 5:stop]
        emitted += out.num_rows
        assert emitted == (stop - 1) // 5
    last = session_kernel.finish(state)
    assert emitted + last.num_rows == m // 5
    assert last.column("count").to_pylist() == [5]


def test_max_duration_bounds_an_endless_session() -> None:
    """Events 1 apart (one uncapped session for ever), capped at 50: the carried rows
    stay within one capped session; open interval events too."""
    m = 1000
    for intervals in (False, True):
        table = events(["a"] * m, list(range(m)), [None] * m, [1.0] * m)
        session_kernel = kernel(intervals=intervals, gap=5, max_duration=50)
        state: KernelState | None = None
        largest = 0
        for begin in range(0, m, 7):
            _, state = session_kernel.step(state, table.slice(begin, 7))
            largest = max(largest, state.rows.num_rows)
        assert 0 < largest <= 50
        assert_resumes(session_kernel, table, list(range(0, m, 7)))


def test_an_endless_session_is_carried_whole() -> None:
    """The documented unbounded case: an open interval event keeps its session open, so
    the state holds every row since, and the result is still the uncut run's."""
    m = 60
    ends: list[int | float | None] = [None] + [j for j in range(1, m)]
    table = events(["a"] * m, [j * 100 for j in range(m)], ends, [1.0] * m)
    session_kernel = kernel(intervals=True, gap=1, max_duration=None)
    state: KernelState | None = None
    for begin in range(0, m, 10):
        out, state = session_kernel.step(state, table.slice(begin, 10))
        assert out.num_rows == 0
        assert state.rows.num_rows == begin + 10
    assert session_kernel.finish(state).column("count").to_pylist() == [m]
    assert_resumes(session_kernel, table, [5, 17, 17, 44])


def test_the_mapinarrow_function_feeds_long_runs_in_pieces() -> None:
    """One long key among short ones, through `__call__` with pieces of 64 rows: the rows
    equal those of every key run whole."""
    rng = np.random.default_rng(5)
    sizes = [3, 1, 700, 2, 5, 1_000, 4]
    keys = [f"k{n:02d}" for n, size in enumerate(sizes) for _ in range(size)]
    times: list[int | float] = []
    for size in sizes:
        times += np.sort(rng.integers(0, size * 4, size)).tolist()
    lengths = rng.choice([0, 1, 6], len(keys))
    ends: list[int | float | None] = [t + int(d) for t, d in zip(times, lengths,
                                                                 strict=True)]
    table = events(keys, times, ends, rng.integers(-9, 9, len(keys)).tolist())
    for intervals, max_duration in itertools.product([False, True], [None, 9]):
        session_kernel = kernel(intervals=intervals, gap=2, max_duration=max_duration,
                                chunk_rows=64)
        streamed = pa.Table.from_batches(
            list(session_kernel(iter(table.to_batches(max_chunksize=50)))))
        whole = pa.Table.from_batches(
            [session_kernel.run_group(g) for g in key_runs(iter(table.to_batches()), ("k",))])
        assert streamed.num_rows == whole.num_rows > 100
        assert_same_rows(streamed, whole, ["k", "window_start"])


def final_at(max_duration: int | float | None) -> Callable[[dict[str, Any], Horizon], bool]:
    """Whether a session is final at a horizon `h` (every row before `h` is in, every
    later one at or after it), from its own columns: a row joins a session while its
    time is at most `window_end` (the last reach + gap: a row exactly there joins) and,
    with a maximum duration, before `window_start + max_duration`; so no later row can
    join once `window_end < h`, or once that cap is at or before `h`. An open-ended
    session (no `window_end`) without a cap waits for the end."""
    def final(row: dict[str, Any], h: Horizon) -> bool:
        end = row["window_end"]
        if end is not None and end < h:
            return True
        return max_duration is not None and row["window_start"] + max_duration <= h
    return final


@st.composite
def stream_input(draw: st.DrawFn) -> tuple[pa.Table, list[int], list[float]]:
    """`session_input`, sometimes with an empty piece more (a cut repeated), and the
    slack placing each piece's horizon."""
    table, cuts = draw(session_input())
    if cuts and draw(st.booleans()):
        cuts.append(cuts[-1])
    return table, cuts, draw(slack_st)


def assert_streams(session_kernel: SessionKernel, table: pa.Table, cuts: Sequence[int],
                   slack: Sequence[float]) -> None:
    """Streamed with horizons (`stream_run`, every `wake` checked the least): the
    sessions of the uncut run, value for value."""
    out = stream_run(LeastWake(session_kernel), table, "t", cuts, slack,
                     final_at(session_kernel.max_duration))
    whole = rows([session_kernel.run_group(table)])
    assert [repr(r) for r in rows(out)] == [repr(r) for r in whole]


@settings(max_examples=150, deadline=None)
@given(data=stream_input(), intervals=st.booleans(), gap=st.integers(0, 6),
       max_duration=st.one_of(st.none(), st.integers(1, 30)))
def test_sessions_stream(data: tuple[pa.Table, list[int], list[float]], intervals: bool,
                         gap: int, max_duration: int | None) -> None:
    table, cuts, slack = data
    assert_streams(kernel(intervals=intervals, gap=gap, max_duration=max_duration),
                   table, cuts, slack)


@settings(max_examples=100, deadline=None)
@given(data=stream_input(), intervals=st.booleans(), gap=st.integers(0, 6),
       max_duration=st.one_of(st.none(), st.integers(1, 30)))
def test_float_time_sessions_stream(data: tuple[pa.Table, list[int], list[float]],
                                    intervals: bool, gap: int, max_duration: int | None
                                    ) -> None:
    """Float time: quarter ticks, an open interval event reaching +inf, horizons
    anywhere between."""
    table, cuts, slack = data
    quarter = table.set_column(1, "t", pa.array([t / 4 for t in table.column("t")
                                                 .to_pylist()], pa.float64()))
    quarter = quarter.set_column(2, "e", pa.array(
        [None if e is None else e / 4 for e in table.column("e").to_pylist()], pa.float64()))
    assert_streams(kernel(intervals=intervals, gap=gap / 4, floats=True,
                          max_duration=None if max_duration is None else max_duration / 4),
                   quarter, cuts, slack)


def test_a_session_closes_just_past_its_gap() -> None:
    """Points at 0 and 1, gap 3: a row at 4 would still join, so the session closes at
    horizon 5 (`wake`), not 4; capped at 3 it closes at 3; in float time just above
    4.0. An open-ended event keeps it open whatever the horizon, unless capped."""
    two = events(["a"] * 2, [0, 1], [None, None], [1.0, 2.0])
    session_kernel = kernel(intervals=False, gap=3, max_duration=None)
    out, state = session_kernel.step(None, two, 4)
    assert out.num_rows == 0 and session_kernel.wake(state) == 5
    joined, _ = session_kernel.step(state, events(["a"], [4], [None], [3.0]), 4)
    assert joined.num_rows == 0  # the row at 4 joined the open session
    out, state = session_kernel.step(state, two.slice(0, 0), 5)
    assert out.column("window_end").to_pylist() == [4]
    assert out.column("count").to_pylist() == [2]
    assert state.rows.num_rows == 0 and session_kernel.wake(state) is None
    capped = kernel(intervals=False, gap=3, max_duration=3)
    _, state = capped.step(None, two)
    assert capped.wake(state) == 3
    floats = kernel(intervals=False, gap=3.0, max_duration=None, floats=True)
    _, state = floats.step(None, events(["a"] * 2, [0.0, 1.0], [None, None], [1.0, 2.0]))
    assert floats.wake(state) == float(np.nextafter(4.0, np.inf))
    endless = events(["a"] * 2, [0, 1], [None, 2], [1.0, 2.0])
    session_kernel = kernel(intervals=True, gap=3, max_duration=None)
    out, state = session_kernel.step(None, endless, 1_000_000)
    assert out.num_rows == 0 and session_kernel.wake(state) is None
    capped = kernel(intervals=True, gap=3, max_duration=10)
    out, state = capped.step(None, endless, 9)
    assert out.num_rows == 0 and capped.wake(state) == 10
    assert capped.step(state, endless.slice(0, 0), 10)[0].column("count").to_pylist() == [2]


def test_an_endless_session_streams_in_linear_time() -> None:
    """A session that never breaks, fed with horizons: each chunk is appended (the
    carried reach says the session stays open) and it closes when the horizon passes
    its gap."""
    m = 300
    table = events(["a"] * m, list(range(m)), [None] * m, [1.0] * m)
    session_kernel = kernel(intervals=False, gap=5, max_duration=None)
    state: KernelState | None = None
    for begin in range(0, m, 10):
        out, state = session_kernel.step(state, table.slice(begin, 10), begin + 10)
        assert out.num_rows == 0 and state.rows.num_rows == begin + 10
        assert "reach" in state.scalars
        assert session_kernel.wake(state) == begin + 9 + 5 + 1
    assert state is not None
    out, state = session_kernel.step(state, table.slice(m, 0), m - 1 + 5 + 1)
    assert out.column("count").to_pylist() == [m]


def test_an_endless_session_of_accumulated_aggregates_carries_one_row() -> None:
    """Events one tick apart with gap 1 never break: kept as accumulators, the open
    session's state is one row whatever its length, and the session's outputs are
    those of the uncut run."""
    m = 3000
    table = events(["a"] * m, list(range(m)), [None] * m,
                   [float(j % 17) - 8.0 for j in range(m)])
    session_kernel = kernel(intervals=False, gap=1, max_duration=None, accumulated=True)
    state: KernelState | None = None
    for begin in range(0, m, 100):
        out, state = session_kernel.step(state, table.slice(begin, 100))
        assert out.num_rows == 0
        assert state.rows.num_rows == 1
        state = KernelState.from_bytes(state.to_bytes())
    assert rows([session_kernel.finish(state)]) == rows([session_kernel.run_group(table)])


def test_a_capped_session_of_accumulators_carries_one_row() -> None:
    """Events 1 apart capped at 50, every aggregation held by accumulators: the state is
    one row (the open session's start, reach and accumulators) whatever the session's
    length, and the capped sessions are the uncut run's."""
    m = 1000
    table = events(["a"] * m, list(range(m)), [None] * m, [1.0] * m)
    session_kernel = kernel(intervals=False, gap=5, max_duration=50, accumulated=True)
    state: KernelState | None = None
    for begin in range(0, m, 7):
        _, state = session_kernel.step(state, table.slice(begin, 7))
        assert state.rows.num_rows <= 1
    assert_resumes(session_kernel, table, list(range(0, m, 7)))
