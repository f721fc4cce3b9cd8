"""Feature sets on a stream without Spark: random micro-batches with disorder and late
rows, a restart after every batch (each key's state through its stored bytes), through
the simulator of Spark's rules (`simulator.py`). The rows emitted equal the oracle's
(`oracle.features`) over the accepted rows, for the events whose every window is final
at the last watermark: a `Range` window once the watermark passes the event's time +
end, a `Rows` window once its last row has been fed, the cumulative window at once."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle import features as oracle_features
from simulator import simulate
from test_stream_simulated import (
    AGGS,
    INPUT,
    JOBS,
    SECOND,
    Stream,
    accepted,
    check_late,
    emitted,
    streams,
)

import wisp as ws
from wisp.plan.frames import Frame, RangeFrame, RowsFrame, RunningFrame
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.features import FeaturesKernel

NAMES = ("count", "sum_v", "max_v", "mean_v")


def kernel(frames: list[Frame], labels: list[str]) -> StreamKernel:
    fields = [pa.field("k", pa.string()), pa.field("time", pa.int64())]
    fields += [pa.field(f"{name}_{label}", job.output_type)
               for name, job in zip(NAMES, JOBS, strict=True) for label in labels]
    features = FeaturesKernel(("k",), "t", "integer", 0, tuple(frames), JOBS,
                              pa.schema(fields), 5, order=("v",))
    return StreamKernel(features, INPUT, "t", "integer", ("t", "v"), "spec")


def final(rows: list[dict[str, Any]], windows: list[tuple[str, ws.Range | ws.Rows | None]],
          bound: int) -> list[dict[str, Any]]:
    """The oracle's rows (in key, then window order) whose every window is final at the
    watermark `bound` (µs): the event fed (time <= bound), each `Range` end passed
    (closed: end <= bound; open: end <= bound + 1 tick), each `Rows` window's last
    position among the key's fed events."""
    kept = []
    for _, group in itertools.groupby(rows, key=lambda r: r["k"]):
        members = list(group)
        fed = sum(1 for r in members if r["time"] <= bound)
        for i, row in enumerate(members):
            ok = row["time"] <= bound
            for _, window in windows:
                if isinstance(window, ws.Range):
                    end = row["time"] + window.end_ticks
                    ok &= end <= bound or (window.closed in ("left", "neither")
                                           and end <= bound + 1)
                elif isinstance(window, ws.Rows):
                    ok &= i + max(window.last_index, 0) < fed
            if ok:
                kept.append(row)
    return kept


@settings(max_examples=120, deadline=None)
@given(data=streams(), start=st.integers(-8, -1), end=st.integers(-2, 3),
       closed=st.sampled_from(["both", "left", "right", "neither"]),
       first=st.integers(-3, 0), last=st.integers(0, 2), cumulative=st.booleans())
def test_a_feature_set_on_a_stream_emits_the_final_batch_rows(
        data: Stream, start: int, end: int, closed: str, first: int, last: int,
        cumulative: bool) -> None:
    batches, lateness, emit_late = data
    assume(start != end or closed == "both")
    windows: list[tuple[str, ws.Range | ws.Rows | None]] = [
        ("r", ws.Range(start * SECOND // 2, end * SECOND // 2, closed=closed)),
        ("w", ws.Rows(first, last))]
    if cumulative:
        windows.append(("all", None))
    frames: list[Frame] = []
    for _, window in windows:
        if isinstance(window, ws.Range):
            frames.append(RangeFrame(window.start_ticks, window.end_ticks, window.closed))
        elif isinstance(window, ws.Rows):
            frames.append(RowsFrame(window.first_index, window.last_index, True))
        else:
            frames.append(RunningFrame())
    result = simulate(kernel(frames, [label for label, _ in windows]), batches, "k",
                      lateness, emit_late)
    check_late(result, batches, lateness, emit_late)
    want = oracle_features(accepted(result), time="t", key=["k"], order=None,
                           columns=["k", "t", "v"], windows=windows, aggs=AGGS)
    want = final(want, windows, result.watermarks[-1] * 1000)
    want = [{**r, **{f"sum_v_{label}": float(r[f"sum_v_{label}"])
                     for label, _ in windows}} for r in want]
    assert_rows_match(sort_output(emitted(result), ["k"]), sort_output(want, ["k"]),
                      rel=1e-9, scales={f"{n}_{label}": 10.0 for n in NAMES
                                        for label, _ in windows})
