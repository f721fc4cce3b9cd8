"""User aggregators (`Spread`, `Trajectory`, `Total` of `tests/aggregators.py`) as running
accumulators on a stream, without Spark: random events in random micro-batches with
disorder, late rows and a restart after every batch (each key's state, the user's pickled
states among it, through its stored bytes) through the simulator of Spark's rules
(`simulator.py`), over the cumulative window and `Since(predicate)`. The rows emitted
equal the whole run's rows over the accepted events that are final at the last
watermark, and those equal the brute-force oracle (`finish(add(zero(), every value of
the window))`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from aggregators import Spread, Total, Trajectory, brute_force
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match, sort_output
from simulator import simulate
from test_stream_simulated import Stream, flagged, streams, whole_runs

import wisp as ws
from wisp.runtime.codecs.sorting import sort_order
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.running import RunningKernel

ORDER = ("t", "v", "p")
INPUT = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("v", pa.float64()), pa.field("p", pa.bool_()),
                   pa.field("n", pa.int64())])
TRAJECTORY = pa.struct([pa.field("change", pa.float64()), pa.field("span", pa.int64())])
USER: dict[str, tuple[ws.Aggregator, str, str, pa.DataType]] = {
    # the output column: the aggregator, its column, the column's value class, the type
    "spread_v": (Spread(), "v", "float", pa.float64()),
    "trajectory_v": (Trajectory(), "v", "float", TRAJECTORY),
    "total_n": (Total(), "n", "integer", pa.int64())}
JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        *(built_in_job("aggregate", col, value_class, output, None, name=name,
                       returns=aggregator.returns,
                       definition=ws.aggregate(aggregator, col).definition,
                       aggregator=aggregator)
          for name, (aggregator, col, value_class, output) in USER.items()))
OUTPUT = pa.schema([pa.field("k", pa.string()),
                    *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                        "time")],
                    pa.field("count", pa.int64()),
                    *[pa.field(name, spec[3]) for name, spec in USER.items()]])


def numbered(batches: list[pa.Table], flags: list[bool | None]) -> list[pa.Table]:
    """The batches with the tick column `p` (cycling through `flags`) and `n`: the
    row's time in half seconds, null where `v` is null (for `Total`)."""
    out = []
    for batch in flagged(batches, flags):
        halves = [t // 500_000 if v is not None else None for t, v in
                  zip(batch.column("t").to_pylist(), batch.column("v").to_pylist(),
                      strict=True)]
        out.append(batch.append_column("n", pa.array(halves, pa.int64())))
    return out


def brute_force_rows(rows: pa.Table, since: bool, emit: str) -> list[dict[str, Any]]:
    """Each output row's user columns by the oracle: the key's rows in Spark's order,
    a period closed after each row flagged `p` (`Since`), one brute-force `add` of the
    window's values up to and including the row."""
    ordered = rows.take(sort_order(rows, ("k", *ORDER))).to_pylist()
    out: list[dict[str, Any]] = []
    window: list[dict[str, Any]] = []
    for i, row in enumerate(ordered):
        if i and ordered[i - 1]["k"] != row["k"]:
            window = []
        window.append(row)
        if emit != "ticks" or row["p"]:
            out.append({name: brute_force(aggregator, [r[col] for r in window],
                                          [r["t"] for r in window])
                        for name, (aggregator, col, _, _) in USER.items()})
        if since and row["p"]:
            window = []
    return out


def flat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with `Trajectory`'s struct as a tuple (compared NaN-aware, as a Spark
    Row is)."""
    return [{c: tuple(x.values()) if isinstance(x, dict) else x for c, x in r.items()}
            for r in rows]


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert_rows_match(sort_output(flat(got), ["k"]), sort_output(flat(want), ["k"]),
                      rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(data=streams(), since=st.booleans(),
       flags=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=5),
       emit=st.sampled_from(["events", "ticks", "both"]))
def test_user_aggregators_as_running_accumulators_emit_the_whole_run_rows(
        data: Stream, since: bool, flags: list[bool | None], emit: str) -> None:
    """The cumulative window and `Since(predicate)`: the user's states carried pickled
    in each key's stored state from one micro-batch to the next give every row the
    result of one uninterrupted run."""
    batches, lateness, emit_late = data
    emit = emit if since else "events"
    kernel = RunningKernel(("k",), "t", "integer", 0, JOBS, OUTPUT, since, emit, "p")
    stream = StreamKernel(kernel, INPUT, "t", "integer", ORDER, "spec")
    result = simulate(stream, numbered(batches, flags), "k", lateness, emit_late)
    accepted = pa.concat_tables(result.accepted)
    whole = whole_runs(kernel, accepted, ORDER)
    oracle = brute_force_rows(accepted, since, emit)
    assert len(whole) == len(oracle)
    assert_rows_match(flat([{name: r[name] for name in USER} for r in whole]),
                      flat(oracle), rel=1e-12)
    bound = result.watermarks[-1] * 1000
    assert_same([r for b in result.emitted for r in b.to_pylist()],
                [r for r in whole if r["time"] <= bound])


def test_a_key_whose_state_is_carried_in_every_batch_gives_the_whole_run_rows() -> None:
    """One key, one row a batch, out of order within the lateness: every batch resumes
    the pickled `Trajectory` state (first value and time kept, last replaced)."""
    times = [2, 1, 4, 3, 6, 5, 30]
    batches = [pa.table({"k": ["a"], "t": [t * 1_000_000], "v": [float(t)]}) for t in times]
    kernel = RunningKernel(("k",), "t", "integer", 0, JOBS, OUTPUT)
    stream = StreamKernel(kernel, INPUT, "t", "integer", ORDER, "spec")
    result = simulate(stream, numbered([*batches, batches[0].slice(0, 0)], [False]), "k",
                      3_000_000)
    got = sorted((r for b in result.emitted for r in b.to_pylist()), key=lambda r: r["time"])
    assert [r["time"] // 1_000_000 for r in got] == [1, 2, 3, 4, 5, 6]
    assert [r["trajectory_v"] for r in got] == [
        {"change": float(t - 1), "span": (t - 1) * 1_000_000} for t in range(1, 7)]
    assert [r["spread_v"] for r in got] == [float(t - 1) for t in range(1, 7)]
    assert [r["total_n"] for r in got] == list(np.cumsum([2 * t for t in range(1, 7)]))
