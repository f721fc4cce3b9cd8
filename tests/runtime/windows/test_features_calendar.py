"""Calendar periods in feature sets (`Since(ws.daily(...))`, `Trailing(n, ws.hourly())`),
the kernels alone (no Spark): each event's (or label row's) last `n` periods `(tick n
periods back, t]` against a brute force whose ticks come from the oracle's own calendar
(`oracle_fenl.calendar_ticks`, not the library's tick arithmetic), across New York's
daylight-saving changes; a key's run cut anywhere gives the rows of the uncut run."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_periods import calendar_ticks
from resumable_check import assert_resumes

import wisp as ws
from wisp.plan.features import CalendarFrame
from wisp.runtime.windows.features import FeaturesKernel
from wisp.runtime.windows.label_features import EVENT, KIND, TIME, LabelFeaturesKernel
from wisp.spec.windows import CalendarTick

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None))
HOUR = 3_600_000_000
START = int(dt.datetime(2024, 3, 9, tzinfo=dt.UTC).timestamp()) * 1_000_000
"""Two days before New York springs forward (2024-03-10)."""
TICKS: list[CalendarTick] = [ws.hourly(), ws.daily("America/New_York"),
                             ws.hourly("Asia/Kolkata")]


def frames_schema(n_frames: int, label: bool) -> pa.Schema:
    fields = [pa.field("k", pa.string()), pa.field("time", pa.timestamp("us", tz="UTC"))]
    if label:
        fields.append(pa.field("label", pa.string()))
    fields += [pa.field(f"{j}_{f}", job.output_type) for j, job in enumerate(JOBS)
               for f in range(n_frames)]
    return pa.schema(fields)


def window_start(tick: CalendarTick, n: int, t: int, lo: int, hi: int) -> int:
    """The tick `n` periods back from `t`'s period, from the oracle's ticks."""
    ticks = calendar_ticks(tick, lo, hi)
    closing = next(i for i, x in enumerate(ticks) if x >= t)
    return ticks[closing - n]


@st.composite
def hours(draw: st.DrawFn) -> tuple[list[int], list[float], list[int]]:
    m = draw(st.integers(1, 40))
    gaps = draw(st.lists(st.sampled_from([0, 1, HOUR // 2, HOUR, 5 * HOUR, 20 * HOUR]),
                         min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=START + draw(st.integers(0, 30)) * HOUR))
    values = [float(j % 5) for j in range(m)]
    return times[1:], values, draw(st.lists(st.integers(0, m), max_size=6))


def events_table(times: list[int], values: list[float]) -> pa.Table:
    return pa.table({"k": ["a"] * len(times), "t": pa.array(times, pa.timestamp("us", "UTC")),
                     "v": values})


@settings(max_examples=60, deadline=None)
@given(data=hours(), tick=st.sampled_from(TICKS), n=st.integers(1, 3))
def test_each_events_last_periods(data: tuple[list[int], list[float], list[int]],
                                  tick: CalendarTick, n: int) -> None:
    times, values, cuts = data
    table = events_table(times, values)
    kernel = FeaturesKernel(("k",), "t", "timestamp", 0, (CalendarFrame(n, tick),), JOBS,
                            frames_schema(1, False), 1 << 14)
    out = kernel.run_group(table).to_pylist()
    lo, hi = times[0] - 80 * HOUR * n, times[-1] + 30 * HOUR
    for i, row in enumerate(out):
        start = window_start(tick, n, times[i], lo, hi)
        members = [j for j in range(i + 1) if times[j] > start]
        assert (row["0_0"], row["1_0"]) == (len(members), float(sum(values[j]
                                                                      for j in members)))
    assert_resumes(kernel, table, cuts)


@settings(max_examples=60, deadline=None)
@given(data=hours(), tick=st.sampled_from(TICKS), n=st.integers(1, 3),
       include_current=st.booleans(), labels=st.lists(st.integers(0, 80), max_size=8))
def test_each_label_rows_last_periods_before_it(
        data: tuple[list[int], list[float], list[int]], tick: CalendarTick, n: int,
        include_current: bool, labels: list[int]) -> None:
    times, values, cuts = data
    label_times = [START + h * HOUR for h in labels]
    label_kind = 2 if include_current else 0
    rows: list[dict[str, Any]] = (
        [{"k": "a", KIND: EVENT, TIME: t, "v": v, "label": None}
         for t, v in zip(times, values, strict=True)] +
        [{"k": "a", KIND: label_kind, TIME: t, "v": None, "label": f"L{i}"}
         for i, t in enumerate(label_times)])
    rows.sort(key=lambda r: (r[TIME], r[KIND]))
    table = pa.table({"k": [r["k"] for r in rows],
                      KIND: pa.array([r[KIND] for r in rows], pa.int32()),
                      TIME: pa.array([r[TIME] for r in rows], pa.timestamp("us", "UTC")),
                      "v": pa.array([r["v"] for r in rows], pa.float64()),
                      "label": pa.array([r["label"] for r in rows], pa.string())})
    kernel = LabelFeaturesKernel(("k",), "timestamp", 0, (CalendarFrame(n, tick),), JOBS,
                                 frames_schema(1, True), carried=("label",))
    out = kernel.run_group(table).to_pylist()
    assert len(out) == len(label_times)
    lo = min([*times, *label_times]) - 80 * HOUR * n
    hi = max([*times, *label_times]) + 30 * HOUR
    for row in out:
        at = int(row["time"].timestamp() * 1_000_000)
        start = window_start(tick, n, at, lo, hi)
        members = [j for j, t in enumerate(times)
                   if start < t and (t < at or (include_current and t == at))]
        assert (row["0_0"], row["1_0"]) == (len(members), float(sum(values[j]
                                                                      for j in members)))
    assert_resumes(kernel, table, cuts)


def test_keys_far_apart_in_time_build_their_own_tick_tables() -> None:
    """Two keys ten years apart: the same rows as each key alone. Periods are
    `(previous tick, tick]`: the event at midnight (`START`) closes the day before, so
    the third event's two days hold the second and itself."""
    far = START + 10 * 365 * 24 * HOUR
    times = [START, START + HOUR, START + 30 * HOUR, far, far + 2 * HOUR]
    table = pa.table({"k": ["a", "a", "a", "b", "b"],
                      "t": pa.array(times, pa.timestamp("us", "UTC")),
                      "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
    kernel = FeaturesKernel(("k",), "t", "timestamp", 0, (CalendarFrame(2, ws.daily()),),
                            JOBS, frames_schema(1, False), 1 << 14)
    together = kernel.run_group(table, np.array([0, 3, 5], dtype=np.int64)).to_pylist()
    alone = [*kernel.run_group(table.slice(0, 3)).to_pylist(),
             *kernel.run_group(table.slice(3, 2)).to_pylist()]
    assert together == alone
    assert [r["0_0"] for r in together] == [1, 2, 2, 1, 2]
