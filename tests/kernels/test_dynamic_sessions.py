"""The session kernel (no Spark) against the brute-force oracle and by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_dynamic import sessions as oracle_sessions

import wisp as ws
from wisp.kernels import sessions as sk


def kernel_rows(times: list[Any], ends: list[Any] | None, gap: Any,
                max_duration: Any) -> list[tuple[Any, Any, int]]:
    """(window_start, window_end or None, count) per session."""
    dtype = np.float64 if any(isinstance(t, float) for t in times) else np.int64
    ticks = np.array(times, dtype=dtype)
    if ends is None:
        reach = ticks
    else:
        reach = np.array([sk.forever(ticks) if e is None else e for e in ends], dtype=dtype)
    found = sk.sessions(ticks, reach, gap, max_duration)
    return [(s.item(), e.item() if k else None, int(h - lo_))
            for s, e, k, lo_, h in zip(found.start, found.end, found.end_known, found.lo,
                                       found.hi, strict=True)]


def oracle_rows(times: list[Any], ends: list[Any] | None, gap: Any,
                max_duration: Any) -> list[tuple[Any, Any, int]]:
    rows = [{"t": t, "e": None if ends is None else ends[i], "i": i}
            for i, t in enumerate(times)]
    out = oracle_sessions(rows, time="t", key=[], order="i", columns=["t", "e", "i"],
                          gap=gap, max_duration=max_duration,
                          end=None if ends is None else "e", aggs=[ws.count()])
    return [(r["window_start"], r["window_end"], r["count"]) for r in out]


@st.composite
def point_and_interval(draw: st.DrawFn) -> tuple[list[int], list[int | None] | None]:
    times = sorted(draw(st.lists(st.integers(-40, 40), max_size=20)))
    if not draw(st.booleans()):
        return times, None
    ends = [None if draw(st.integers(0, 9)) == 0 else t + draw(st.integers(0, 15))
            for t in times]
    return times, ends


@settings(max_examples=400)
@given(data=point_and_interval(), gap=st.integers(1, 8),
       max_duration=st.one_of(st.none(), st.integers(1, 20)))
def test_sessions_match_the_oracle(data: tuple[list[int], list[int | None] | None], gap: int,
                                   max_duration: int | None) -> None:
    times, ends = data
    assert kernel_rows(times, ends, gap, max_duration) == \
        oracle_rows(times, ends, gap, max_duration)


@settings(max_examples=100)
@given(times=st.lists(st.integers(-40, 40), max_size=15).map(sorted),
       gap=st.sampled_from([0.5, 1.25, 3.0]),
       max_duration=st.one_of(st.none(), st.sampled_from([2.5, 7.0])))
def test_sessions_on_float_time(times: list[int], gap: float,
                                max_duration: float | None) -> None:
    floats = [t / 4 for t in times]
    assert kernel_rows(floats, None, gap, max_duration) == \
        oracle_rows(floats, None, gap, max_duration)


def test_sessions_by_hand() -> None:
    # an event exactly `gap` after the last one joins its session (as session_window)
    assert kernel_rows([0, 10, 20, 31], None, 10, None) == [(0, 30, 3), (31, 41, 1)]
    # max_duration 15: the event at 20 is past 0 + 15 and opens a new session
    assert kernel_rows([0, 10, 20, 31], None, 10, 15) == [(0, 15, 2), (20, 30, 1),
                                                          (31, 41, 1)]
    # an event exactly at first + max_duration opens a new session
    assert kernel_rows([0, 5], None, 10, 5) == [(0, 5, 1), (5, 10, 1)]
    # an interval event [0, 100) keeps the session open until 100 + gap
    assert kernel_rows([0, 5, 50, 102], [100, 5, 50, 102], 1, None) == [(0, 101, 3),
                                                                         (102, 103, 1)]
    # an open interval event keeps it open forever, unless max_duration cuts it
    assert kernel_rows([0, 500], [None, 500], 1, None) == [(0, None, 2)]
    assert kernel_rows([0, 500], [None, 500], 1, 100) == [(0, 100, 1), (500, 501, 1)]
    assert kernel_rows([], None, 1, None) == []


def test_sessions_saturate_at_the_end_of_integer_time() -> None:
    top = np.iinfo(np.int64).max
    assert kernel_rows([top - 3], None, 10, None) == [(top - 3, None, 1)]
