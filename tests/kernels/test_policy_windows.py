"""The policy kernels against the literal simulation of tests/oracle_spl.py, without
Spark: which tuples each emitted firing holds, and when it fires, for all nine sliding
combinations and the four tumbling policies, on in-order and out-of-order data."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_policies import simulate

import wisp as ws
from wisp.kernels import policies as k
from wisp.kernels import runs as kr
from wisp.spec.policies import Policy

SPECS = ("count", "time", "delta")


def policies(kind: str, size: int, d: float | int, shift: int,
             unit: float | int = 1) -> tuple[Any, Policy]:
    """The same policy as a spec (for the oracle) and resolved (for the kernel); the
    delta attribute is column "a"; time policies in multiples of `unit`."""
    if kind == "count":
        return ws.Count(size), ws.Count(size)
    if kind == "time":
        return (ws.Time(size * unit, align=shift * unit),
                ws.Time(size * unit, align=shift * unit))
    return ws.Delta("a", d), ws.Delta("a", d)


def tumbling_policy(kind: str, size: int, d: int, shift: int) -> tuple[Any, Policy]:
    """`policies`, and the punctuation policy on column "p"."""
    if kind == "punctuation":
        return ws.Punctuation("p"), ws.Punctuation("p")
    return policies(kind, size, d, shift)


def decode(windows: k.Windows) -> list[tuple[Any, list[int]]]:
    if isinstance(windows, k.Frames):
        return [(t, list(range(lo, hi))) for t, lo, hi in
                zip(windows.time.tolist(), windows.lo.tolist(), windows.hi.tolist(),
                    strict=True)]
    return [(t, [j for j in range(len(windows.qlo))
                 if windows.qlo[j] <= f < windows.qhi[j]])
            for f, t in enumerate(windows.time.tolist())]


def expected(times: list[Any], attrs: list[Any], window: Any,
             flags: list[bool] | None = None) -> list[tuple[Any, list[int]]]:
    rows = [{"t": t, "a": a, "p": (flags[i] if flags else False), "i": i}
            for i, (t, a) in enumerate(zip(times, attrs, strict=True))]
    sim = simulate(rows, time="t", window=window)
    return [(at, [w["i"] for w in contents]) for at, contents in sim.fired]


rows_st = st.lists(st.tuples(st.integers(-20, 20), st.integers(-6, 6)), min_size=0,
                   max_size=30)


@settings(max_examples=400, deadline=None)
@given(rows=rows_st, evict=st.sampled_from(SPECS), trigger=st.sampled_from(SPECS),
       size_e=st.integers(1, 5), size_t=st.integers(1, 5), d_e=st.integers(0, 4),
       d_t=st.integers(0, 4), shift=st.integers(-3, 3), partial=st.booleans(),
       in_order=st.booleans(), float_attr=st.booleans(), float_time=st.booleans())
def test_sliding_matches_simulation(rows: list[tuple[int, int]], evict: str, trigger: str,
                                    size_e: int, size_t: int, d_e: int, d_t: int,
                                    shift: int, partial: bool, in_order: bool,
                                    float_attr: bool, float_time: bool) -> None:
    if in_order:
        rows = sorted(rows)
    unit: float | int = 0.25 if float_time else 1  # exact in binary: no rounding
    times: list[Any] = [t * unit for t, _ in rows]
    attrs: list[Any] = [a * 0.7 if float_attr else a for _, a in rows]
    d_e_value: Any = d_e * 0.7 if float_attr else d_e
    d_t_value: Any = d_t * 0.7 if float_attr else d_t
    spec_e, pol_e = policies(evict, size_e, d_e_value, shift, unit)
    spec_t, pol_t = policies(trigger, size_t, d_t_value, shift, unit)
    window = ws.Sliding(spec_e, spec_t, partial=partial)
    got = k.sliding(np.array(times, dtype=np.float64 if float_time else np.int64),
                    {"a": np.array(attrs, dtype=np.float64 if float_attr else np.int64)},
                    pol_e, pol_t, partial)
    assert decode(got) == expected(times, attrs, window)


@settings(max_examples=300, deadline=None)
@given(rows=rows_st, kind=st.sampled_from([*SPECS, "punctuation"]), size=st.integers(1, 5),
       d=st.integers(0, 4), shift=st.integers(-3, 3), partial=st.booleans(),
       in_order=st.booleans(), flags=st.lists(st.booleans(), min_size=30, max_size=30))
def test_tumbling_matches_simulation(rows: list[tuple[int, int]], kind: str, size: int,
                                     d: int, shift: int, partial: bool, in_order: bool,
                                     flags: list[bool]) -> None:
    if in_order:
        rows = sorted(rows)
    times = [t for t, _ in rows]
    attrs = [a for _, a in rows]
    marks = flags[:len(rows)]
    spec, policy = tumbling_policy(kind, size, d, shift)
    got = k.tumbling(np.array(times, dtype=np.int64), {"a": np.array(attrs, dtype=np.int64)},
                     np.array(marks, dtype=bool), policy, partial)
    assert decode(got) == expected(times, attrs, ws.Tumbling(spec, partial=partial), marks)


@pytest.mark.parametrize("values, d, nxt", [
    ([17.1, 16.4, 16.0, 17.6], 1.5, [4, 4, 3, 4]),
    ([1, 3, 2, 5, 4], 1, [1, 3, 3, 5, 5]),
    ([5, 4, 3], 0, [3, 3, 3]),
])
def test_next_exceeding(values: list[Any], d: Any, nxt: list[int]) -> None:
    assert k.next_exceeding(np.array(values), d).tolist() == nxt


def test_chain_follows_pointers() -> None:
    assert kr.chain(np.array([2, 3, 4, 5, 5], dtype=np.int64)).tolist() == [0, 2, 4]
    assert kr.chain(np.array([1, 2, 3], dtype=np.int64)).tolist() == [0, 1, 2]
    assert kr.chain(np.zeros(0, dtype=np.int64)).tolist() == []


def test_exceeds_is_exact_near_the_int64_limits() -> None:
    big = np.iinfo(np.int64).max
    assert k.exceeds(np.array([big]), np.array([big - 5]), 4).tolist() == [True]
    assert k.exceeds(np.array([big]), np.array([big - 5]), 5).tolist() == [False]
    assert k.exceeds(np.array([big]), np.array([-big]), 10).tolist() == [True]


def decode_runs(windows: k.Windows, runs: list[int]) -> list[list[tuple[Any, list[int]]]]:
    """Each run's firings, as `decode` gives them, with positions counted from the
    run's start."""
    per_run: list[list[tuple[Any, list[int]]]] = [[] for _ in runs[:-1]]
    for (at, members), run in zip(decode(windows), windows.run.tolist(), strict=True):
        assert all(runs[run] <= j < runs[run + 1] for j in members)
        per_run[run].append((at, [j - runs[run] for j in members]))
    return per_run


runs_st = st.lists(st.lists(st.tuples(st.integers(-20, 20), st.integers(-6, 6)),
                            min_size=1, max_size=12), min_size=1, max_size=6)


def concatenated(groups: list[list[tuple[int, int]]]) -> tuple[list[int], list[int], list[int]]:
    """The runs one after another: times, attributes and where each run begins."""
    times = [t for group in groups for t, _ in group]
    attrs = [a for group in groups for _, a in group]
    runs = [0]
    for group in groups:
        runs.append(runs[-1] + len(group))
    return times, attrs, runs


@settings(max_examples=300, deadline=None)
@given(groups=runs_st, evict=st.sampled_from(SPECS), trigger=st.sampled_from(SPECS),
       size_e=st.integers(1, 4), size_t=st.integers(1, 4), d_e=st.integers(0, 4),
       d_t=st.integers(0, 4), shift=st.integers(-3, 3), partial=st.booleans(),
       float_time=st.booleans())
def test_sliding_restarts_at_every_run(groups: list[list[tuple[int, int]]], evict: str,
                                       trigger: str, size_e: int, size_t: int, d_e: int,
                                       d_t: int, shift: int, partial: bool,
                                       float_time: bool) -> None:
    """Several keys' runs in one call: each run's firings are the simulation of that
    run alone (the runs may overlap in time and attribute; some arrive out of order)."""
    unit: float | int = 0.25 if float_time else 1
    times, attrs, runs = concatenated(groups)
    ticks = [t * unit for t in times]
    spec_e, pol_e = policies(evict, size_e, d_e, shift, unit)
    spec_t, pol_t = policies(trigger, size_t, d_t, shift, unit)
    window = ws.Sliding(spec_e, spec_t, partial=partial)
    got = k.sliding(np.array(ticks, dtype=np.float64 if float_time else np.int64),
                    {"a": np.array(attrs, dtype=np.int64)}, pol_e, pol_t, partial,
                    np.array(runs, dtype=np.int64))
    want = [expected(ticks[a:b], attrs[a:b], window) for a, b in itertools.pairwise(runs)]
    assert decode_runs(got, runs) == want


@settings(max_examples=300, deadline=None)
@given(groups=runs_st, kind=st.sampled_from([*SPECS, "punctuation"]), size=st.integers(1, 4),
       d=st.integers(0, 4), shift=st.integers(-3, 3), partial=st.booleans(),
       flags=st.lists(st.booleans(), min_size=72, max_size=72))
def test_tumbling_restarts_at_every_run(groups: list[list[tuple[int, int]]], kind: str,
                                        size: int, d: int, shift: int, partial: bool,
                                        flags: list[bool]) -> None:
    times, attrs, runs = concatenated(groups)
    marks = flags[:len(times)]
    spec, policy = tumbling_policy(kind, size, d, shift)
    got = k.tumbling(np.array(times, dtype=np.int64), {"a": np.array(attrs, dtype=np.int64)},
                     np.array(marks, dtype=bool), policy, partial,
                     np.array(runs, dtype=np.int64))
    window = ws.Tumbling(spec, partial=partial)
    want = [expected(times[a:b], attrs[a:b], window, marks[a:b])
            for a, b in itertools.pairwise(runs)]
    assert decode_runs(got, runs) == want


def test_time_firings_of_a_run_near_the_int64_limits() -> None:
    """Firings whose distance from the run's first does not fit in int64 (each firing
    does): counted exactly from unsigned offsets."""
    big = np.iinfo(np.int64).max
    now = np.array([-big - 1, (1 << 62) - 5], dtype=np.int64)
    t = 1 << 62
    fired, runs = k.time_firings(now, np.array([0, 2], dtype=np.int64), ws.Time(t))
    assert fired.tolist() == [-(1 << 63), -(1 << 62), 0, 1 << 62]
    assert runs.tolist() == [0, 0, 0, 0]


@settings(max_examples=200)
@given(n=st.integers(0, 40), queries=st.lists(st.integers(-5, 90), max_size=30))
def test_firings_after_every_arrival_are_counted_without_a_search(n: int,
                                                                 queries: list[int]) -> None:
    """A count trigger of 1 fires after every arrival (stages 2i + 1): the firings
    before a stage are counted arithmetically, as the search over the stages finds."""
    stage = 2 * np.arange(n, dtype=np.int64) + 1
    query = np.array(queries, dtype=np.int64)
    np.testing.assert_array_equal(k.firings_before(stage, query, True),
                                  np.searchsorted(stage, query, side="left"))
    np.testing.assert_array_equal(k.firings_before(stage, query, False),
                                  np.searchsorted(stage, query, side="left"))


BIG = int(np.iinfo(np.int64).max)
extreme_times = st.one_of(st.integers(-20, 20), st.sampled_from([-BIG - 1, -BIG, BIG - 3, BIG]))


@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.lists(extreme_times, min_size=1, max_size=12), min_size=1,
                       max_size=6),
       t=st.one_of(st.integers(1, 6), st.just(BIG)), in_order=st.booleans())
def test_time_eviction_on_every_arrival(groups: list[list[int]], t: int,
                                        in_order: bool) -> None:
    """`Sliding(Time(t))` firing on every arrival, over integer times in several runs,
    near the int64 limits too: in time order (the search per firing) and out of it
    (each tuple followed to its eviction), each run as the simulation of it alone."""
    if in_order:
        groups = [sorted(group) for group in groups]
    times, _, runs = concatenated([[(time, 0) for time in group] for group in groups])
    ticks = np.array(times, dtype=np.int64)
    run_starts = np.array(runs, dtype=np.int64)
    got = k.sliding(ticks, {}, ws.Time(t), ws.Count(1), False, run_starts)
    assert (k._recent_in_order(ticks, run_starts, t) is not None) == (
        in_order or all(a <= b for group in groups for a, b in itertools.pairwise(group)))
    window = ws.Sliding(ws.Time(t), ws.Count(1))
    want = [expected(times[a:b], [0] * (b - a), window) for a, b in itertools.pairwise(runs)]
    assert decode_runs(got, runs) == want
