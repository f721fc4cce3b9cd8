"""Feature sets at label rows on a stream without Spark: label rows and events from two
inputs, each with its own lateness (the query's watermark is the smaller), in random
micro-batches with disorder, late rows and a restart after every batch, through the
simulator of Spark's rules (`simulator.py`). The rows emitted are one per accepted label
row at or below the last watermark, equal to the point-in-time oracle
(`oracle.point_in_time`) over the accepted events; late rows are counted exactly."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match, point_in_time, sort_output
from simulator import simulate
from test_stream_simulated_dynamic import HALF, expected_late

import wisp as ws
from wisp.plan.features import FeatureFrame
from wisp.plan.frames import RangeFrame, RowsFrame, RunningFrame
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.label_features import EVENT, KIND, TIME, LabelFeaturesKernel

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None))
AGGS = [ws.count(), ws.sum("v"), ws.max("v")]
WINDOWS: list[tuple[str, ws.Range | ws.Rows | None]] = [
    ("r", ws.Range(-4 * HALF, 0)), ("w", ws.Rows(-1, 0)), ("all", None)]
FRAMES: tuple[FeatureFrame, ...] = (RangeFrame(-4 * HALF, 0, "both"),
                                    RowsFrame(-1, 0, True), RunningFrame())
SCHEMA = pa.schema([pa.field("k", pa.string()), pa.field(KIND, pa.int32()),
                    pa.field(TIME, pa.int64()), pa.field("v", pa.float64()),
                    pa.field("seq", pa.int64()), pa.field("y", pa.string())])
Row = dict[str, Any]


def kernel(include_current: bool) -> StreamKernel:
    fields = [pa.field("k", pa.string()), pa.field("time", pa.int64()),
              pa.field("y", pa.string())]
    fields += [pa.field(f"{a.output_name}_{label}", job.output_type)
               for a, job in zip(AGGS, JOBS, strict=True) for label, _ in WINDOWS]
    features = LabelFeaturesKernel(("k",), "integer", 0, FRAMES, JOBS, pa.schema(fields),
                                   carried=("y",), order=("seq",))
    return StreamKernel(features, SCHEMA, TIME, "integer", (TIME, KIND, "seq"), "spec")


def table(rows: list[Row]) -> pa.Table:
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type)
                     for f in SCHEMA}, schema=SCHEMA)


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[pa.Table], dict[int, int], bool]:
    include_current = draw(st.booleans())
    label = 2 if include_current else 0
    rows: list[Row] = []
    for seq in range(draw(st.integers(1, 40))):
        k = draw(st.sampled_from(["a", "b", None]))
        t = draw(st.integers(1, 40)) * HALF
        if draw(st.booleans()):
            rows.append({"k": k, KIND: label, TIME: t, "y": f"L{seq}"})
        else:
            rows.append({"k": k, KIND: EVENT, TIME: t, "seq": seq,
                         "v": draw(st.one_of(st.none(), st.integers(-9, 9).map(float)))})
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=8)))
    bounds = [0, *cuts, len(rows)]
    batches = [*[table(rows[a:b]) for a, b in itertools.pairwise(bounds)], table([])]
    lateness = {EVENT: draw(st.integers(0, 6)) * HALF + 1000,
                label: draw(st.integers(0, 6)) * HALF + 1000}
    return batches, lateness, include_current


@settings(max_examples=100, deadline=None)
@given(data=streams())
def test_label_rows_on_a_stream_emit_the_final_batch_rows(
        data: tuple[list[pa.Table], dict[int, int], bool]) -> None:
    batches, lateness, include_current = data
    late, last_mark, kept = expected_late(batches, lateness)
    result = simulate(kernel(include_current), batches, "k", 0, inputs=(KIND, lateness))
    assert (result.late, result.watermarks[-1]) == (late, last_mark)
    bound = last_mark * 1000
    events = [{"k": r["k"], "t": r[TIME], "v": r["v"], "seq": r["seq"]} for r in kept
              if r[KIND] == EVENT]
    labels = [{"k": r["k"], "t": r[TIME], "y": r["y"]} for r in kept
              if r[KIND] != EVENT and r[TIME] <= bound]
    want = point_in_time(events, labels, time="t", key=["k"], order="seq",
                         columns=["k", "t", "v", "seq"], windows=WINDOWS, aggs=AGGS,
                         include_current=include_current, carried=["y"])
    want = [{**r, **{f"sum_v_{label}": float(r[f"sum_v_{label}"]) for label, _ in WINDOWS}}
            for r in want]
    got = [r for b in result.emitted for r in b.to_pylist()]
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]))
