"""Sessions of several key runs found at once equal each run's sessions found alone:
the kernel function with `runs`, and the Arrow kernel over a stream with many short
keys and one key longer than a chunk."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from tables import assert_same_rows

from wisp.kernels import sessions as sk
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.sessions import SessionKernel

LONG = 2**63 - 1
run = st.lists(st.tuples(st.integers(-40, 40), st.sampled_from([0, 0, 1, 5, 30, None])),
               min_size=1, max_size=8).map(lambda r: sorted(r, key=lambda e: e[0]))


@settings(max_examples=400)
@given(runs=st.lists(run, min_size=1, max_size=6), gap=st.integers(0, 8),
       max_duration=st.one_of(st.none(), st.integers(1, 20)), points=st.booleans())
def test_sessions_of_several_runs(runs: list[list[tuple[int, int | None]]], gap: int,
                                  max_duration: int | None, points: bool) -> None:
    times = np.array([t for r in runs for t, _ in r], dtype=np.int64)
    reach = times if points else np.array(
        [LONG if d is None else t + d for r in runs for t, d in r], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum([len(r) for r in runs])]).astype(np.int64)
    got = sk.sessions(times, reach, gap, max_duration, starts)
    parts = [sk.sessions(times[a:b], reach[a:b], gap, max_duration)
             for a, b in itertools.pairwise(starts.tolist())]
    for field in ("lo", "hi"):
        want = np.concatenate([getattr(p, field) + a for p, a in zip(parts, starts[:-1],
                                                                     strict=True)])
        np.testing.assert_array_equal(getattr(got, field), want)
    for field in ("start", "end", "end_known"):
        np.testing.assert_array_equal(getattr(got, field),
                                      np.concatenate([getattr(p, field) for p in parts]))


@settings(max_examples=400)
@given(times=st.lists(st.one_of(st.integers(-40, 40), st.sampled_from([-LONG - 1, LONG])),
                      min_size=1, max_size=30).map(sorted),
       gap=st.integers(0, 8), max_duration=st.one_of(st.integers(1, 25), st.just(LONG)))
def test_capped_point_sessions_equal_the_session_by_session_walk(
        times: list[int], gap: int, max_duration: int) -> None:
    """Point events with a maximum duration, all sessions at once, against the walk that
    finds one session after another (still used for a very long uncapped session of
    interval events)."""
    ticks = np.array(times, dtype=np.int64)
    got = sk._capped_points(ticks, gap, max_duration, None)
    want = sk._capped(ticks, ticks, gap, max_duration)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


interval = st.tuples(st.one_of(st.integers(-40, 40), st.sampled_from([-LONG - 1, LONG - 9])),
                     st.sampled_from([0, 0, 1, 2, 5, 9, 30, None]))


@settings(max_examples=600)
@given(events=st.lists(interval, min_size=1, max_size=40).map(
           lambda r: sorted(r, key=lambda e: e[0])),
       gap=st.integers(0, 8), max_duration=st.one_of(st.integers(1, 25), st.just(LONG)),
       block=st.sampled_from([1, 2, 3, 8, sk.BLOCK]), floats=st.booleans())
def test_capped_interval_sessions_equal_the_session_by_session_walk(
        events: list[tuple[int, int | None]], gap: int, max_duration: int, block: int,
        floats: bool) -> None:
    """Interval events (open ones among them) with a maximum duration: the lifting over
    blocks of uncapped sessions (a block of 1 to 8 events walks every longer uncapped
    session, mixing both paths) against the walk alone."""
    times = np.array([t for t, _ in events], dtype=np.int64)
    reach = np.array([LONG if d is None else min(t + d, LONG) for t, d in events],
                     dtype=np.int64)
    if floats:
        times = times.astype(np.float64) / 4
        reach = np.where(reach == LONG, np.inf, reach.astype(np.float64) / 4)
        gap, max_duration = gap / 4, max_duration / 4  # type: ignore[assignment]
    got = sk._capped_intervals(times, reach, gap, max_duration, None, block)
    want = sk._capped(times, reach, gap, max_duration)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_capped_interval_sessions_of_a_long_key_run() -> None:
    """Many uncapped sessions over several blocks, and one longer than a block, against
    the walk."""
    rng = np.random.default_rng(11)
    times = np.cumsum(rng.integers(0, 100, 200_000)).astype(np.int64)
    times[120_000:160_000] = times[120_000] + np.arange(40_000)  # one uncapped session
    reach = times + rng.choice([0, 5, 50, 500], len(times))
    natural = np.diff(np.append(sk._natural(times, reach, 30)[0], len(times)))
    assert len(natural) > 1_000 and natural.max() > sk.BLOCK  # both paths are taken
    got = sk._capped_intervals(times, reach, 30, 400, None)
    want = sk._capped(times, reach, 30, 400)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_kernel_over_many_short_keys_and_one_long_key() -> None:
    rng = np.random.default_rng(3)
    keys = np.concatenate([np.repeat(np.arange(2000), 3), np.full(40_000, 5000)])
    times = np.concatenate([np.sort(rng.integers(0, 100, 3)) for _ in range(2000)]
                           + [np.sort(rng.integers(0, 400_000, 40_000))])
    table = pa.table({"k": keys, "t": times, "v": rng.normal(size=len(keys))})
    schema = pa.schema([("k", pa.int64()), ("window_start", pa.int64()),
                        ("window_end", pa.int64()), ("time", pa.int64()),
                        ("sum_v", pa.float64()), ("count", pa.int64())])
    jobs = (built_in_job("sum", "v", "float", pa.float64(), None),
            built_in_job("count", None, "none", pa.int64(), None))
    kernel = SessionKernel(("k",), "t", None, "integer", 1, 10, None, jobs, schema)
    streamed = pa.Table.from_batches(list(kernel(iter(table.to_batches(7_000)))))
    alone = pa.Table.from_batches([kernel.run_group(g) for g in
                                   key_runs(iter(table.to_batches(7_000)), ("k",))])
    assert streamed.num_rows == alone.num_rows > 2000
    assert_same_rows(streamed, alone, ["k", "window_start"])
