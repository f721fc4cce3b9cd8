"""The dynamic-window kernels (no Spark) against the brute-force oracle: window frames
by binary search, clock ticks, the obsolete rules; several keys at once against each
key alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_dynamic import clock_times, first_violation
from tables import assert_same_rows

from wisp.kernels import dynamic as dk
from wisp.plan.dynamic import ClockTicks
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.dynamic import END, OBSOLETE, START, TIME, BoundJob, windows_kernel

CLOSED = ["both", "left", "right", "neither"]


def brute_frames(times: list[int], starts: list[int | None], ends: list[int | None],
                 closed: str) -> list[list[int]]:
    """For each window, the positions of the times inside it."""
    result = []
    for lo, hi in zip(starts, ends, strict=True):
        inside = []
        for p, u in enumerate(times):
            after = lo is None or (lo <= u if closed in ("both", "left") else lo < u)
            before = hi is None or (u <= hi if closed in ("both", "right") else u < hi)
            if after and before:
                inside.append(p)
        result.append(inside)
    return result


@settings(max_examples=300)
@given(times=st.lists(st.integers(-20, 20), max_size=25).map(sorted),
       windows=st.lists(st.tuples(st.one_of(st.none(), st.integers(-25, 25)),
                                  st.one_of(st.none(), st.integers(-25, 25))), max_size=12),
       closed=st.sampled_from(CLOSED))
def test_window_frames_match_brute_force(times: list[int],
                                         windows: list[tuple[int | None, int | None]],
                                         closed: str) -> None:
    starts = [w[0] for w in windows]
    ends = [w[1] for w in windows]
    lo, hi = dk.window_frames(
        np.array(times, dtype=np.int64), np.array([s or 0 for s in starts], dtype=np.int64),
        np.array([s is not None for s in starts], dtype=bool),
        np.array([e or 0 for e in ends], dtype=np.int64),
        np.array([e is not None for e in ends], dtype=bool), closed)
    expected = brute_frames(times, starts, ends, closed)
    # positions inside a window of sorted times are contiguous: [lo, hi)
    assert [list(range(a, b)) for a, b in zip(lo, hi, strict=True)] == expected


def test_window_frames_by_hand() -> None:
    times = np.array([0, 2, 2, 5, 9], dtype=np.int64)
    starts = np.array([2, 2, 6, 0], dtype=np.int64)
    ends = np.array([5, 5, 3, 0], dtype=np.int64)
    known = np.ones(4, dtype=bool)
    lo, hi = dk.window_frames(times, starts, known, ends, known, "both")
    assert (lo.tolist(), hi.tolist()) == ([1, 1, 4, 0], [4, 4, 4, 1])  # [6, 3] is empty
    lo, hi = dk.window_frames(times, starts, known, ends, known, "neither")
    assert (lo.tolist(), hi.tolist()) == ([3, 3, 4, 1], [3, 3, 4, 1])
    unknown = np.zeros(4, dtype=bool)
    lo, hi = dk.window_frames(times, starts, unknown, ends, unknown, "both")
    assert (lo.tolist(), hi.tolist()) == ([0] * 4, [5] * 4)


@settings(max_examples=300)
@given(first=st.integers(-60, 60), length=st.integers(0, 60), every=st.integers(1, 13),
       align=st.one_of(st.integers(-30, 30), st.integers(-(2**63), 2**63 - 1),
                       st.sampled_from([-(2**63), -(2**63) + 1, 2**63 - 2, 2**63 - 1])),
       chunk=st.integers(1, 7))
def test_clock_ticks_match_the_oracle(first: int, length: int, every: int, align: int,
                                      chunk: int) -> None:
    last = first + length
    expected = clock_times(first, last, every, align)
    assert dk.clock_ticks(first, last, every, align).tolist() == expected
    assert dk.clock_count(first, last, every, align) == len(expected)
    pieces = [dk.clock_ticks(first, last, every, align, skip=s, limit=chunk).tolist()
              for s in range(0, len(expected), chunk)]
    assert [t for p in pieces for t in p] == expected


def test_clock_ticks_by_hand() -> None:
    assert dk.clock_ticks(-7, 7, 5, 0).tolist() == [-5, 0, 5]  # floor-mod before zero
    assert dk.clock_ticks(-7, 7, 5, 1).tolist() == [-4, 1, 6]
    assert dk.clock_ticks(100, 2200, 500, 0).tolist() == [500, 1000, 1500, 2000]
    assert dk.clock_ticks(0, 2200, 500, 0).tolist() == [0, 500, 1000, 1500, 2000]
    # aligns far from the span (the tick indices from the align itself would not fit in
    # 64 bits): 2^63 - 3 is a multiple of 5, -2^63 is 1 above a multiple of 3
    assert dk.clock_ticks(-7, 7, 5, 2**63 - 3).tolist() == [-5, 0, 5]
    assert dk.clock_ticks(-7, 7, 3, -(2**63)).tolist() == [-5, -2, 1, 4, 7]
    assert dk.clock_ticks(-10**15, -10**15 + 2, 1, 2**63 - 1).tolist() == [
        -10**15, -10**15 + 1, -10**15 + 2]
    assert dk.clock_ticks(3, 4, 5, 0).tolist() == []
    assert dk.clock_ticks(0.1, 1.0, 0.25, 0.0).tolist() == [0.25, 0.5, 0.75, 1.0]
    year_9999 = 253_402_214_400_000_000
    assert dk.clock_ticks(year_9999, year_9999 + 10, 4, 0).tolist() == [
        year_9999, year_9999 + 4, year_9999 + 8]


def _kernel_violation(anchors: list[tuple[int, int | None, int | None]]
                      ) -> tuple[str, int] | None:
    times = [a[0] for a in anchors]
    found = dk.obsolete_violations(
        np.array([a[1] or 0 for a in anchors], dtype=np.int64),
        np.array([a[1] is not None for a in anchors], dtype=bool),
        np.array([a[2] or 0 for a in anchors], dtype=np.int64),
        np.array([a[2] is not None for a in anchors], dtype=bool))
    assert len(found) <= 1
    return None if not found else (found[0].rule, times[found[0].index])


@settings(max_examples=400)
@given(anchors=st.lists(st.tuples(st.integers(0, 10), st.one_of(st.none(), st.integers(-5, 15)),
                                  st.one_of(st.none(), st.integers(-5, 15))), max_size=8))
def test_obsolete_rules_match_the_oracle(anchors: list[tuple[int, Any, Any]]) -> None:
    anchors = sorted(anchors, key=lambda a: a[0])
    rows = [{"t": t, "s": s, "o": o} for t, s, o in anchors]
    expected = first_violation(rows, "t", lambda r: r["s"], lambda r: r["o"])
    assert _kernel_violation(anchors) == expected


@pytest.mark.parametrize(("anchors", "expected"), [
    ([(0, 0, 0), (5, 5, 5), (9, 9, 9)], None),
    ([(0, 0, 3), (5, 4, 5)], None),                     # a start at 4 >= the earlier 3
    ([(0, 0, 3), (5, 2, 5)], ("start", 5)),            # starts at 2 < 3
    ([(0, 0, 3), (5, 4, 2)], ("decrease", 5)),         # obsolete 2 after 3
    ([(0, 0, 3), (5, 4, None)], ("decrease", 5)),      # no bound after a bound
    ([(0, 0, None), (5, -9, 2)], None),                # no bound before: anything goes
    ([(0, 0, 3), (5, None, 4)], ("start", 5)),         # a window from the start of time
    ([(0, 0, 3), (5, 3, 3), (7, 1, 8)], ("start", 7)),
])
def test_obsolete_rules_by_hand(anchors: list[tuple[int, Any, Any]],
                                expected: tuple[str, int] | None) -> None:
    assert _kernel_violation(anchors) == expected


@settings(max_examples=300)
@given(keys=st.lists(st.lists(st.tuples(st.integers(0, 10),
                                        st.one_of(st.none(), st.integers(-5, 15)),
                                        st.one_of(st.none(), st.integers(-5, 15))),
                              min_size=1, max_size=6), min_size=1, max_size=5))
def test_obsolete_rules_per_key(keys: list[list[tuple[int, Any, Any]]]) -> None:
    """Several keys' anchors at once: each key's first violation, as the key alone
    gives it, and no rule reaching from one key's anchors into the next key's."""
    keys = [sorted(anchors, key=lambda a: a[0]) for anchors in keys]
    flat = [a for anchors in keys for a in anchors]
    owners = np.repeat(np.arange(len(keys)), [len(a) for a in keys]).astype(np.int64)
    found = dk.obsolete_violations(
        np.array([a[1] or 0 for a in flat], dtype=np.int64),
        np.array([a[1] is not None for a in flat], dtype=bool),
        np.array([a[2] or 0 for a in flat], dtype=np.int64),
        np.array([a[2] is not None for a in flat], dtype=bool), owners)
    got = {int(owners[v.index]): (v.rule, flat[v.index][0]) for v in found}
    assert len(got) == len(found)
    want = {k: v for k, anchors in enumerate(keys)
            if (v := _kernel_violation(anchors)) is not None}
    assert got == want


@settings(max_examples=300)
@given(keys=st.lists(st.lists(st.integers(-20, 20), min_size=0, max_size=8), min_size=1,
                     max_size=5),
       windows=st.lists(st.tuples(st.integers(0, 4), st.integers(-25, 25), st.integers(0, 12),
                                  st.booleans(), st.booleans()), max_size=10),
       closed=st.sampled_from(["both", "left", "right", "neither"]))
def test_window_frames_per_key(keys: list[list[int]],
                               windows: list[tuple[int, int, int, bool, bool]],
                               closed: str) -> None:
    """Windows of several keys at once find their own key's events only."""
    times = np.array([t for events in keys for t in sorted(events)], dtype=np.int64)
    runs = np.cumsum([0, *map(len, keys)]).astype(np.int64)
    owners = np.array([w[0] % len(keys) for w in windows], dtype=np.int64)
    starts = np.array([w[1] for w in windows], dtype=np.int64)
    ends = starts + np.array([w[2] for w in windows], dtype=np.int64)
    start_known = np.array([w[3] for w in windows], dtype=bool)
    end_known = np.array([w[4] for w in windows], dtype=bool)
    lo, hi = dk.window_frames(times, starts, start_known, ends, end_known, closed, runs,
                              owners)
    for i, key in enumerate(owners.tolist()):
        begin, stop = int(runs[key]), int(runs[key + 1])
        one_lo, one_hi = dk.window_frames(times[begin:stop], starts[i:i + 1],
                                          start_known[i:i + 1], ends[i:i + 1],
                                          end_known[i:i + 1], closed)
        assert (lo[i] - begin, hi[i] - begin) == (one_lo[0], one_hi[0])


@pytest.mark.parametrize("span", [50, 40_000])
def test_clock_windows_of_keys_together_equal_keys_alone(span: int) -> None:
    """Clock anchors for several keys at once: all keys' ticks in one batch when they
    are few (span 50), key by key in pieces of CHUNK ticks when there are many."""
    rng = np.random.default_rng(span)
    sizes = rng.integers(1, 6, 30)
    keys = np.repeat(np.arange(30), sizes)
    times = np.concatenate([np.sort(rng.integers(-span, span, s)) for s in sizes])
    table = pa.table({"k": keys, TIME: times, "v": rng.normal(size=len(keys))})
    schema = pa.schema([("k", pa.int64()), ("window_start", pa.int64()),
                        ("window_end", pa.int64()), ("time", pa.int64()),
                        ("count", pa.int64()), ("sum_v", pa.float64())])
    kernel = windows_kernel(
        keys=("k",), time_kind="integer", time_scale=0, closed="both",
        start=BoundJob("offset", -7, START), end=BoundJob("none", 0, END),
        obsolete=BoundJob("none", 0, OBSOLETE), clock=ClockTicks(3, 1, None, None),
        check=False, schema=schema,
        aggregates=(built_in_job("count", None, "none", pa.int64(), None),
                    built_in_job("sum", "v", "float", pa.float64(), None)))
    together = pa.Table.from_batches(list(kernel(iter(table.to_batches(1_000)))))
    alone = pa.Table.from_batches(
        [b for g in key_runs(iter(table.to_batches(1_000)), ("k",))
         for b in kernel.run_group(g)])
    assert together.num_rows == alone.num_rows > 0
    assert_same_rows(together, alone, ["k", "time"])
