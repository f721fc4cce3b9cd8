"""Many keys in one stored value (`runtime.streaming.buckets`), without Spark: the operator
grouped by bucket writes, batch by batch, exactly the rows (and late rows) the
operator grouped by key writes, through a restart after every batch; keys that Spark
groups together (every NaN, `-0.0` and `0.0`) share one state."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simulator import simulate, simulate_buckets, simulate_partials
from test_stream_panes import DATE_INPUT, as_dates, pane_kernel
from test_stream_simulated import (
    FLAGGED,
    INPUT,
    JOBS,
    OUTPUT,
    SECOND,
    Stream,
    flagged,
    frames,
    streams,
    table,
)

from wisp.engine.processor import PanePacker
from wisp.errors import WispInputError
from wisp.plan.frames import RangeFrame, RowsFrame
from wisp.runtime.streaming.bucket_state import BucketState
from wisp.runtime.streaming.buckets import KeyBuckets
from wisp.runtime.streaming.operator import StreamKernel, table_bytes, table_of
from wisp.runtime.streaming.packed_states import pack, packable, unpack
from wisp.runtime.streaming.pane_buckets import PaneBuckets
from wisp.runtime.streaming.panes import PaneKernel
from wisp.runtime.windows.resumable import KernelState
from wisp.runtime.windows.running import RunningKernel
from wisp.runtime.windows.sessions import SessionKernel

KEY_SCHEMA = pa.schema([INPUT.field("k")])


def shown(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as sorted text (NaN equals NaN there)."""
    return sorted(repr(sorted(r.items())) for r in rows)


def bucket_map(spread: list[int]) -> Any:
    labels = dict(zip(["a", "b", None], spread, strict=True))
    return lambda value: labels[value]


def check_same_as_per_key(stream: StreamKernel, data: Stream, spread: list[int],
                          spark_filter: bool | None = None) -> None:
    batches, lateness, emit_late = data
    by_key = simulate(stream, batches, "k", lateness, emit_late, spark_filter=spark_filter)
    buckets = KeyBuckets(stream, KEY_SCHEMA)
    by_bucket = simulate_buckets(buckets, batches, "k", lateness, emit_late,
                                 bucket_map(spread))
    assert [len(rows) for rows in by_bucket.emitted] == by_key.batch_rows
    assert shown([r for rows in by_bucket.emitted for r in rows]) == shown(
        [r for b in by_key.emitted for r in b.to_pylist()])
    assert by_bucket.late == by_key.late
    assert shown([r for rows in by_bucket.late_rows for r in rows]) == shown(
        [r for t, _ in by_key.late_rows for r in t.to_pylist()])
    assert by_bucket.pending == by_key.pending


@settings(max_examples=120, deadline=None)
@given(data=streams(), size=st.integers(1, 8), hop=st.integers(1, 8),
       spread=st.lists(st.integers(0, 2), min_size=3, max_size=3),
       places=st.lists(st.integers(1, 6), min_size=1, max_size=3), date=st.booleans())
def test_pane_windows_by_bucket_are_the_per_key_rows(
        data: Stream, size: int, hop: int, spread: list[int], places: list[int],
        date: bool) -> None:
    """Late rows emitted: the rows go to the buckets as they are. Counted: each place
    (task) reduces its rows to pane partials per bucket first, and the buckets add up
    the partials of every place. Either way, batch by batch, the per-key rows (Spark's
    late filter off: a row is late once a window holding it is closed for its key)."""
    data = as_dates(data) if date else data
    stream = StreamKernel(pane_kernel(size, hop, 0, date), DATE_INPUT if date else INPUT,
                          "t", "date" if date else "integer", ("t", "v"), "spec")
    if data[2]:
        check_same_as_per_key(stream, data, spread, spark_filter=False)
        return
    batches, lateness, _ = data
    by_key = simulate(stream, batches, "k", lateness, spark_filter=False)
    by_bucket = simulate_partials(PaneBuckets(stream, KEY_SCHEMA), batches, "k", lateness,
                                  bucket_map(spread), places)
    assert [len(rows) for rows in by_bucket.emitted] == by_key.batch_rows
    assert shown([r for rows in by_bucket.emitted for r in rows]) == shown(
        [r for b in by_key.emitted for r in b.to_pylist()])
    assert by_bucket.late == by_key.late


@settings(max_examples=80, deadline=None)
@given(data=streams(), start=st.integers(-8, 0), end=st.integers(0, 4),
       spread=st.lists(st.integers(0, 2), min_size=3, max_size=3))
def test_rows_waiting_for_the_watermark_by_bucket_are_the_per_key_rows(
        data: Stream, start: int, end: int, spread: list[int]) -> None:
    """A kernel fed in time order: rows wait in each key's state within the bucket's."""
    stream = frames(RangeFrame(start * SECOND // 2, end * SECOND // 2, "both"))
    check_same_as_per_key(stream, data, spread)


@settings(max_examples=60, deadline=None)
@given(data=streams(), first=st.integers(-4, 0),
       spread=st.lists(st.integers(0, 2), min_size=3, max_size=3))
def test_rows_frames_by_bucket_are_the_per_key_rows(data: Stream, first: int,
                                                     spread: list[int]) -> None:
    check_same_as_per_key(frames(RowsFrame(first, 0, first == 0)), data, spread)


@settings(max_examples=60, deadline=None)
@given(data=streams(), gap=st.integers(1, 6), cap=st.one_of(st.none(), st.integers(2, 12)),
       spread=st.lists(st.integers(0, 2), min_size=3, max_size=3))
def test_sessions_by_bucket_are_the_per_key_rows(data: Stream, gap: int, cap: int | None,
                                                 spread: list[int]) -> None:
    kernel = SessionKernel(("k",), "t", None, "integer", 0, gap * SECOND // 2,
                           None if cap is None else cap * SECOND // 2, JOBS, OUTPUT, 5)
    check_same_as_per_key(StreamKernel(kernel, INPUT, "t", "integer", ("t", "v"), "spec"),
                          data, spread)


@settings(max_examples=60, deadline=None)
@given(data=streams(), since=st.booleans(),
       flags=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=4),
       spread=st.lists(st.integers(0, 2), min_size=3, max_size=3))
def test_running_aggregates_by_bucket_are_the_per_key_rows(
        data: Stream, since: bool, flags: list[bool | None], spread: list[int]) -> None:
    """The cumulative window and `Since(predicate)` (accumulators per key)."""
    kernel = RunningKernel(("k",), "t", "integer", 0, JOBS, OUTPUT, since, "events", "p")
    stream = StreamKernel(kernel, FLAGGED, "t", "integer", ("t", "v", "p"), "spec")
    batches, lateness, emit_late = data
    check_same_as_per_key(stream, (flagged(batches, flags), lateness, emit_late), spread)


def test_rows_waiting_in_a_bucket_of_format_1_are_read() -> None:
    """Format 1 kept each key's waiting rows beside its state; they are read into the
    bucket's one table and fed as before."""
    stream = frames(RangeFrame(-SECOND, 0, "both"))
    buckets = KeyBuckets(stream, KEY_SCHEMA)
    rows = table([("a", SECOND, 1.0), ("b", 2 * SECOND, 2.0)])
    state = buckets.on_rows(None, rows, 0, emit_late=False).state
    pending = buckets.pending_table(state)
    per_key = {k: pending.filter(pa.compute.equal(pending.column("k"), k[0]))
               for k in state.entries}
    old = pa.table({
        "k": pa.array([e.values["k"] for e in state.entries.values()], pa.string()),
        "kernel": pa.array([None] * 2, pa.binary()),
        "pending": pa.array([table_bytes(per_key[k]) for k in state.entries], pa.binary()),
        "fed": pa.array([0, 0], pa.int64()),
        "timer": pa.array([e.timer for e in state.entries.values()], pa.int64()),
    }).replace_schema_metadata({b"wisp_bucket_version": b"1", b"wisp_spec": b"spec"})
    read = buckets.from_bytes(table_bytes(old))
    assert buckets.pending_rows(read) == 2
    step = buckets.on_timer(read, 10_000)
    assert sorted((r["k"], r["count"]) for b in step.outputs for r in b.to_pylist()) == [
        ("a", 1), ("b", 1)]
    assert buckets.pending_rows(step.state) == 0
    future = pa.table(old.columns, names=old.column_names).replace_schema_metadata(
        {b"wisp_bucket_version": b"3", b"wisp_spec": b"spec"})
    with pytest.raises(WispInputError, match=r"must hold state of format 2, found "
                                             r"format '3'"):
        buckets.from_bytes(table_bytes(future))


def float_keys(keys: list[float | None], times: list[int]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.float64()), "t": pa.array(times, pa.int64()),
                     "v": pa.array([1.0] * len(keys), pa.float64())})


def test_every_nan_is_one_key_and_minus_zero_is_zero() -> None:
    """NaNs of different bits share one key, `-0.0` and `0.0` another, null a third;
    the windows carry the key as Spark groups it (NaN, 0.0)."""
    schema = pa.schema([pa.field("k", pa.float64()), INPUT.field("t"), INPUT.field("v")])
    kernel = pane_kernel(4, 4, 0)
    output = kernel.schema.set(0, pa.field("k", pa.float64()))
    kernel = PaneKernel(("k",), "t", "integer", 0, kernel.window, kernel.aggregates, output)
    stream = StreamKernel(kernel, schema, "t", "integer", ("t", "v"), "s")
    buckets = KeyBuckets(stream, pa.schema([schema.field("k")]))
    other_nan = float(np.frombuffer(np.array([0x7FF8000000000001], np.int64).tobytes())[0])
    rows = float_keys([math.nan, other_nan, -0.0, 0.0, None, 0.0],
                      [SECOND // 2, SECOND, SECOND // 2, SECOND, SECOND, SECOND // 4])
    step = buckets.on_rows(None, rows, 0, emit_late=False)
    assert len(step.state.entries) == 3
    state = buckets.from_bytes(buckets.to_bytes(step.state))
    more = float_keys([other_nan, -0.0], [SECOND // 2, SECOND // 2])
    step = buckets.on_rows(state, more, 0, emit_late=False)  # found in the stored keys
    assert len(step.state.entries) == 3
    state = buckets.from_bytes(buckets.to_bytes(step.state))
    step = buckets.on_timer(state, 10_000)
    found = sorted((repr(r["k"]), r["count"]) for b in step.outputs for r in b.to_pylist())
    assert found == [("0.0", 4), ("None", 1), ("nan", 3)]
    assert step.timer is None


def test_state_of_another_query_is_refused() -> None:
    stream = frames(RangeFrame(-SECOND, 0, "both"))
    buckets = KeyBuckets(stream, KEY_SCHEMA)
    step = buckets.on_rows(None, pa.table({"k": ["a"], "t": [SECOND], "v": [1.0]}), 0,
                           emit_late=False)
    blob = buckets.to_bytes(step.state)
    other = KeyBuckets(StreamKernel(stream.kernel, INPUT, "t", "integer", ("t", "v"),
                                    "another"), KEY_SCHEMA)
    with pytest.raises(WispInputError, match=r"`checkpointLocation` must belong to this "
                                             r"query.*its spec 'spec', this query's "
                                             r"'another'"):
        other.from_bytes(blob)
    assert buckets.from_bytes(blob).entries.keys() == {("a",)}
    assert BucketState().timer() is None


def test_late_rows_reduced_to_one_pane_count_each_row() -> None:
    """Two rows of one key in a pane whose window its key has closed arrive together,
    reduced to one partial: both are late, counted one by one."""
    stream = StreamKernel(pane_kernel(4, 4, 0), INPUT, "t", "integer", ("t", "v"), "spec")
    batches = [table([("a", t * SECOND, 1.0)]) for t in (1, 10, 11)] + [
        table([("a", SECOND // 2, 2.0), ("a", 3 * SECOND // 2, 3.0)]), table([])]
    by_key = simulate(stream, batches, "k", 1000, spark_filter=False)
    by_bucket = simulate_partials(PaneBuckets(stream, KEY_SCHEMA), batches, "k", 1000,
                                  lambda value: 0, [5])
    assert by_key.late == by_bucket.late == 2
    assert [(r["window_start"], r["count"]) for rows in by_bucket.emitted
            for r in rows] == [(0, 1)]  # [0, 2) holds the row at 1 s alone


def test_late_rows_of_a_key_without_open_panes_are_counted() -> None:
    """Key a's one window is written by its timer; rows of a later batch in it are late,
    and its bucket has no open pane left to add anything to."""
    stream = StreamKernel(pane_kernel(4, 4, 0), INPUT, "t", "integer", ("t", "v"), "spec")
    batches = [table([("a", SECOND, 1.0)]), table([("b", 10 * SECOND, 1.0)]),
               table([("b", 11 * SECOND, 1.0)]),
               table([("a", SECOND // 2, 2.0), ("a", SECOND, 3.0)]), table([])]
    by_key = simulate(stream, batches, "k", 1000, spark_filter=False)
    by_bucket = simulate_partials(PaneBuckets(stream, KEY_SCHEMA), batches, "k", 1000,
                                  lambda value: int(value == "b"), [5])
    assert by_key.late == by_bucket.late == 2
    assert [(r["k"], r["count"]) for rows in by_bucket.emitted for r in rows] == [("a", 1)]


def test_pane_bucket_state_of_another_query_or_format_is_refused() -> None:
    """A bucket of pane partials refuses the state of another query, and the state its
    keys had one by one (`KeyBuckets`) before."""
    stream = StreamKernel(pane_kernel(4, 4, 0), INPUT, "t", "integer", ("t", "v"), "spec")
    buckets = PaneBuckets(stream, KEY_SCHEMA)
    blob = buckets.to_bytes(buckets.on_timer(None, 0).state)
    assert buckets.from_bytes(blob).keys.num_rows == 0
    other = PaneBuckets(StreamKernel(stream.kernel, INPUT, "t", "integer", ("t", "v"),
                                     "another"), KEY_SCHEMA)
    with pytest.raises(WispInputError, match=r"must belong to this query.*its spec 'spec'"):
        other.from_bytes(blob)
    key_by_key = KeyBuckets(stream, KEY_SCHEMA)
    old = key_by_key.to_bytes(key_by_key.on_rows(None, table([("a", SECOND, 1.0)]), 0,
                                                 emit_late=False).state)
    with pytest.raises(WispInputError, match=r"`checkpointLocation` must hold state of "
                                             r"format 1 of this kind of query"):
        buckets.from_bytes(old)


def test_a_bucket_keeps_one_row_per_key_and_open_pane() -> None:
    """Partials of one key and pane from two places in each of two batches: the bucket's
    state holds that pane once, with every row counted."""
    stream = StreamKernel(pane_kernel(4, 4, 0), INPUT, "t", "integer", ("t", "v"), "spec")
    buckets = PaneBuckets(stream, KEY_SCHEMA)
    rows = table([("a", SECOND // 4, 1.0), ("a", SECOND // 2, 2.0)])
    packer = PanePacker(pane_kernel(4, 4, 0), INPUT, "b")
    state = None
    for _batch in range(2):
        places = [table_of(blob) for part in (rows.slice(0, 1), rows.slice(1, 1))
                  for record in packer(iter(part.append_column(
                      "b", pa.array([0], pa.int32())).to_batches()))
                  for blob in record.column(1).to_pylist()]
        state = buckets.on_partials(state, pa.concat_tables(places), 0).state
    assert state is not None
    assert state.panes.column("__wisp_rows").to_pylist() == [4]


def test_kernel_states_are_packed_into_one_table_unless_they_differ() -> None:
    """States whose rows share a schema are stored as one table (a slice a key back);
    one carrying partials keeps its own bytes, and so do the others beside it."""
    rows = table([("a", SECOND, 1.0), ("a", 2 * SECOND, -0.5), ("b", SECOND, None)])
    first = KernelState(rows.slice(0, 2), {"done": 1, "inf": float("inf")})
    second = KernelState(rows.slice(2, 1), {"done": 0})
    packed = pack([first, None, second])
    assert packed.rows is not None
    back = unpack(pa.table(packed.columns), packed.rows)
    assert back[1] is None
    assert [(s.rows.to_pylist(), dict(s.scalars)) for s in back if s is not None] == [
        (first.rows.to_pylist(), dict(first.scalars)),
        (second.rows.to_pylist(), dict(second.scalars))]
    with_partials = KernelState(rows.slice(0, 1), {}, pa.table({"n": [1]}))
    assert not packable([first, with_partials])
    mixed = pack([first, with_partials])
    assert mixed.rows is None
    again = unpack(pa.table(mixed.columns), None)
    assert again[1] is not None and again[1].partials is not None
    assert again[1].partials.to_pylist() == [{"n": 1}]
