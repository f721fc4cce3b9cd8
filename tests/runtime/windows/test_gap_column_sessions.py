"""The session kernel with a per-row gap (`SessionKernel(gap_column=...)`, gap 0),
without Spark: against the brute-force oracle (tests/oracle_calendar.py) on random
sorted events, whole and resumed in pieces cut anywhere (the state through bytes), and
through the mapInArrow function feeding long runs in pieces."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_calendar import gap_sessions
from resumable_check import assert_resumes, rows

from wisp.runtime.windows.sessions import SessionKernel
from wisp.spec import aggregates

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("sum", "i", "integer", pa.int64(), None))


def kernel(max_duration: int | None, chunk_rows: int = 1 << 14) -> SessionKernel:
    schema = pa.schema([pa.field("k", pa.string()),
                        *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                           "time")],
                        pa.field("count", pa.int64()), pa.field("sum_i", pa.int64())])
    return SessionKernel(("k",), "t", None, "integer", 0, 0, max_duration, JOBS, schema,
                         chunk_rows, gap_column="g")


@st.composite
def gap_input(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    m = draw(st.integers(1, 50))
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5, 9, 20]), min_size=m,
                          max_size=m))
    times = list(itertools.accumulate(steps, initial=draw(st.integers(-10, 10))))[1:]
    found = [{"k": "a", "t": t, "g": draw(st.sampled_from([1, 2, 3, 7, 15])),
              "i": draw(st.one_of(st.none(), st.integers(-9, 9))), "n": n}
             for n, t in enumerate(times)]
    return found, draw(st.lists(st.integers(0, m), max_size=6))


def table(data: list[dict[str, Any]]) -> pa.Table:
    return pa.table({"k": [r["k"] for r in data], "t": pa.array([r["t"] for r in data],
                                                                pa.int64()),
                     "g": pa.array([r["g"] for r in data], pa.int64()),
                     "i": pa.array([r["i"] for r in data], pa.int64())})


@settings(max_examples=300, deadline=None)
@given(data=gap_input(), max_duration=st.one_of(st.none(), st.integers(1, 30)))
def test_gap_column_sessions_match_oracle_and_resume(
        data: tuple[list[dict[str, Any]], list[int]], max_duration: int | None) -> None:
    events, cuts = data
    session_kernel = kernel(max_duration)
    got = rows([session_kernel.run_group(table(events))])
    expected = gap_sessions(events, time="t", gap="g", key=["k"], order="n",
                            columns=["k", "t", "g", "i", "n"], max_duration=max_duration,
                            aggs=[aggregates.count(), aggregates.sum("i")])
    assert got == rows([pa.RecordBatch.from_pylist(
        [{c: r[c] for c in ("k", "window_start", "window_end", "time", "count", "sum_i")}
         for r in expected])])
    assert_resumes(session_kernel, table(events), cuts)


def test_long_runs_in_pieces_give_the_whole_runs_rows() -> None:
    events = [{"k": "a", "t": 3 * j, "g": 1 + (j % 4), "i": j, "n": j} for j in range(500)]
    whole = rows([kernel(None).run_group(table(events))])
    pieces = rows(list(kernel(None, chunk_rows=16)(iter(table(events).to_batches(
        max_chunksize=40)))))
    assert pieces == whole
    assert sum(r[4] for r in whole) == 500
