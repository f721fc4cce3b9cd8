"""The point-in-time feature kernel alone (no Spark): each label row's windows equal a
brute force over its key's events strictly before the label's time (at or before it
with `include_current`), ties in time included, label rows before a key's first event
and keys without events included; a key's run cut anywhere, the state through bytes at
every cut, gives the rows of the uncut run (the cumulative window folded into a partial
state where every aggregation has one); the carried events stay within reach."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import assert_resumes

from wisp.plan.features import FeatureFrame, PeriodsFrame
from wisp.plan.frames import RangeFrame, RowsFrame, RunningFrame
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.codecs.sorting import sort_order
from wisp.runtime.windows.label_features import EVENT, KIND, TIME, LabelFeaturesKernel
from wisp.runtime.windows.resumable import KernelState

HELD = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "i", "integer", pa.int64(), None),
        built_in_job("count_distinct", "i", "integer", pa.int64(), None))
ROWS_ONLY = (*HELD[:3], built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None))


def kernel(frames: Sequence[FeatureFrame], jobs: tuple[AggregateJob, ...],
           chunk_rows: int = 1 << 14) -> LabelFeaturesKernel:
    fields = [pa.field("k", pa.string()), pa.field("time", pa.int64()),
              pa.field("label", pa.string())]
    fields += [pa.field(f"{j}_{f}", job.output_type) for j, job in enumerate(jobs)
               for f in range(len(frames))]
    return LabelFeaturesKernel(("k",), "integer", 0, tuple(frames), jobs, pa.schema(fields),
                               carried=("__wisp_l0",), chunk_rows=chunk_rows, order=("i", "v"))


def union(keys: Sequence[str], times: Sequence[int], labels: Sequence[bool],
          values: Sequence[float | None], include_current: bool) -> pa.Table:
    """Label rows and events sorted as the kernel reads them: key, time, kind (a label
    row before the events of its time, after them with `include_current`), then the
    tie-break columns `i` and `v` (Spark's ascending order: nulls first, NaN last)."""
    m = len(times)
    kinds = [(2 if include_current else 0) if labels[j] else EVENT for j in range(m)]
    table = pa.table({
        "k": pa.array(keys, pa.string()), KIND: pa.array(kinds, pa.int32()),
        TIME: pa.array(times, pa.int64()),
        "v": pa.array([None if labels[j] else values[j] for j in range(m)], pa.float64()),
        "i": pa.array([None if labels[j] or j % 5 == 3 else j * 7 - 20 for j in range(m)],
                      pa.int64()),
        "__wisp_l0": pa.array([f"L{j}" if labels[j] else None for j in range(m)],
                              pa.string()),
        "f": pa.array([None if labels[j] or j % 7 == 6 else j % 3 == 0 for j in range(m)],
                      pa.bool_())})
    return table.take(sort_order(table, ("k", TIME, KIND, "i", "v")))


def brute(rows: list[dict[str, Any]]) -> list[Any]:
    v = [r["v"] for r in rows if r["v"] is not None]
    i = [r["i"] for r in rows if r["i"] is not None]
    numbers = [x for x in v if not math.isnan(x)]
    top = None if not v else (math.nan if len(numbers) < len(v) else max(numbers))
    return [len(rows), len(v), math.fsum(v) if v else 0.0, top, v[0] if v else None,
            i[-1] if i else None, len(set(i))]


def members(frame: FeatureFrame, before: list[dict[str, Any]], at: int
            ) -> list[dict[str, Any]]:
    """The events of `frame` at a label row at time `at`, given the events before it."""
    n = len(before)
    if isinstance(frame, PeriodsFrame):
        ticks = [p for p in range(n) if before[p]["f"]]
        return before[ticks[-frame.n] + 1 if len(ticks) >= frame.n else 0:]
    if isinstance(frame, RowsFrame):
        last = n - 1
        return [before[p] for p in range(last + frame.first, last + frame.last + 1)
                if 0 <= p < n]
    if isinstance(frame, RangeFrame):
        lo, hi = at + frame.start, at + frame.end
        left = frame.closed in ("both", "left")
        right = frame.closed in ("both", "right")
        return [r for r in before if (r[TIME] > lo or (left and r[TIME] == lo))
                and (r[TIME] < hi or (right and r[TIME] == hi))]
    return before


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


frames_st = st.lists(st.one_of(
    st.builds(RowsFrame, st.integers(-5, 1), st.integers(-1, 2), st.just(True)),
    st.builds(RangeFrame, st.sampled_from([-9, -4, -1, 0]), st.sampled_from([-1, 0, 3]),
              st.sampled_from(["both", "left", "right", "neither"])),
    st.just(RunningFrame()),
    st.builds(PeriodsFrame, st.integers(1, 3), st.just("f"))), min_size=1, max_size=4).filter(
        lambda fs: all(not isinstance(f, (RowsFrame, RangeFrame))
                       or (f.first <= f.last if isinstance(f, RowsFrame)
                           else f.start <= f.end) for f in fs))
values_st = st.one_of(st.none(), st.just(math.nan), st.integers(-20, 20).map(lambda x: x / 4))


@st.composite
def one_key(draw: st.DrawFn) -> tuple[list[int], list[bool], list[float | None], list[int]]:
    m = draw(st.integers(1, 50))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5]), min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    labels = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    values = draw(st.lists(values_st, min_size=m, max_size=m))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    return times, labels, values, cuts


@settings(max_examples=150, deadline=None)
@given(data=one_key(), frames=frames_st, include_current=st.booleans())
def test_each_label_row_equals_a_brute_force_over_earlier_events(
        data: tuple[list[int], list[bool], list[float | None], list[int]],
        frames: list[FeatureFrame], include_current: bool) -> None:
    times, labels, values, _ = data
    table = union(["a"] * len(times), times, labels, values, include_current)
    rows = table.to_pylist()
    out = kernel(frames, HELD).run_group(table).to_pylist()
    label_rows = [r for r in rows if r[KIND] != EVENT]
    assert [(r["time"], r["label"]) for r in out] == [(r[TIME], r["__wisp_l0"])
                                                      for r in label_rows]
    for found in out:
        at = found["time"]
        before = [r for r in rows if r[KIND] == EVENT and (
            r[TIME] < at or (include_current and r[TIME] == at))]
        for f, frame in enumerate(frames):
            want = brute(members(frame, before, at))
            got = [found[f"{j}_{f}"] for j in range(len(HELD))]
            assert all(same(x, y) for x, y in zip(got, want, strict=True)), (
                frame, at, got, want)


@settings(max_examples=150, deadline=None)
@given(data=one_key(), frames=frames_st, include_current=st.booleans(),
       held=st.booleans())
def test_a_run_cut_anywhere_gives_the_rows_of_the_whole_run(
        data: tuple[list[int], list[bool], list[float | None], list[int]],
        frames: list[FeatureFrame], include_current: bool, held: bool) -> None:
    times, labels, values, cuts = data
    table = union(["a"] * len(times), times, labels, values, include_current)
    features = kernel(frames, HELD if held else ROWS_ONLY, chunk_rows=1)
    assert_resumes(features, table, cuts)


def test_keys_without_events_and_several_keys_at_once() -> None:
    """A key with label rows only gets the empty windows' values; keys together equal
    keys alone."""
    keys = ["a"] * 6 + ["b"] * 3 + ["c"] * 5
    times = [0, 1, 1, 3, 4, 9, 2, 5, 6, 0, 0, 2, 2, 8]
    labels = [False, True, False, True, False, True, True, True, True,
              False, True, False, True, True]
    table = union(keys, times, labels, [float(j) for j in range(len(keys))], False)
    frames = (RangeFrame(-3, 0, "both"), RowsFrame(-1, 0, True), RunningFrame(),
              PeriodsFrame(2, "f"))
    features = kernel(frames, HELD)
    runs = np.array([0, 6, 9, 14], dtype=np.int64)
    together = features.run_group(table, runs).to_pylist()
    alone = [row for a, b in itertools.pairwise(runs.tolist())
             for row in features.run_group(table.slice(a, b - a)).to_pylist()]
    assert [repr(r) for r in together] == [repr(r) for r in alone]
    only_labels = [r for r in together if r["k"] == "b"]
    assert [(r["0_0"], r["2_2"], r["3_2"]) for r in only_labels] == [(0, 0.0, None)] * 3


def carried(features: LabelFeaturesKernel, table: pa.Table, piece: int) -> int:
    state: KernelState | None = None
    largest = 0
    for begin in range(0, table.num_rows, piece):
        _, state = features.step(state, table.slice(begin, piece))
        state = KernelState.from_bytes(state.to_bytes())
        largest = max(largest, state.rows.num_rows)
    return largest


def test_carried_events_stay_within_reach() -> None:
    """An event per tick, a label row every 10th: `Range(-50, 0)`, `Rows(-5, 0)` and the
    cumulative window carry about 50 events when every aggregation has a partial state;
    with `collect` every event."""
    m = 3000
    times = list(range(m))
    labels = [j % 10 == 0 for j in range(m)]
    table = union(["a"] * m, times, labels, [float(j % 7) for j in range(m)], False)
    frames = (RangeFrame(-50, 0, "both"), RowsFrame(-5, 0, True), RunningFrame())
    assert carried(kernel(frames, HELD), table, 64) <= 64 + 51
    assert carried(kernel(frames, ROWS_ONLY), table, 64) > m * 0.85
    assert_resumes(kernel(frames, HELD), table, list(range(0, m, 64)))
