"""The stateful processors Spark runs per key of a stream (`transformWithStateInPandas`):
thin shells around `runtime.streaming.operator.StreamKernel`, which holds the logic
(`BucketProcessor`: per bucket of keys, around `runtime.streaming.buckets.KeyBuckets`;
`PartialsProcessor`: per bucket of pane partials that `PanePacker` reduced where the
rows were read, around `runtime.streaming.pane_buckets.PaneBuckets`).

Per key, one `ValueState` holds the stream state (format version, the query's spec hash,
the kernel state's bytes, the pending rows' bytes, the horizon fed) and one event-time
timer is set where the key's next output can be final. Output batches leave either as
one JSON text of columns (`ROWS`, `runtime.codecs.json_rows`), which Spark reads back without a
Python stage (`engine/stream_rows.py`), when the processor has a `json_schema`, or as
Arrow IPC bytes in a binary column (`PAYLOAD`) with a flag (`LATE`: a batch of late rows,
under `on_late="emit"`), which `PayloadRows` turns back into rows after the operator;
`COUNTED` carries a count of late rows dropped and counted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from ..runtime.codecs.crossing import Crossing, decode, key_column, key_values
from ..runtime.codecs.json_rows import rows_json
from ..runtime.streaming.bucket_state import BucketStep
from ..runtime.streaming.buckets import KeyBuckets
from ..runtime.streaming.operator import (
    Step,
    StreamKernel,
    StreamState,
    batch_bytes,
    batches_of,
    late_past_filter,
    table_bytes,
    table_of,
)
from ..runtime.streaming.pane_buckets import PaneBuckets, PaneStep
from ..runtime.streaming.panes import PaneKernel
from ..runtime.streaming.revised import RevisedKernel, RevisedState

if TYPE_CHECKING:
    import pandas as pd

# pandas is imported where a handler builds its output, not with the module: Spark starts
# a fresh Python on the driver at every start of a stream only to run the processor's
# `init` (the state schemas), and pandas is most of that Python's start-up.

PAYLOAD = "payload"
LATE = "late"
COUNTED = "counted"
APPLIED = "applied"
ROWS = "rows_json"
LATE_REASON = "late_reason"
LATE_ROW = "late_row"
REASON_COLUMN = "__wisp_late_reason"
OPERATOR_SCHEMA = T.StructType([T.StructField(PAYLOAD, T.BinaryType()),
                                T.StructField(LATE, T.BooleanType()),
                                T.StructField(COUNTED, T.LongType()),
                                T.StructField(ROWS, T.StringType()),
                                T.StructField(APPLIED, T.LongType())])
"""The operator's rows: a payload (null: none), whether its rows are late rows, a
number of late rows counted and not emitted (rows reduced to pane partials), output
rows as JSON text (null: none), and a number of late rows applied to windows already
written (`on_late="update"`)."""
STATE_NAME = "wisp_stream"
STATE_SCHEMA = T.StructType([
    T.StructField("version", T.IntegerType()),
    T.StructField("spec", T.StringType()),
    T.StructField("kernel", T.BinaryType()),
    T.StructField("pending", T.BinaryType()),
    T.StructField("fed", T.LongType()),
    T.StructField("timer", T.LongType()),
])
"""The stored stream state (`StreamState.to_row`) and the key's timer (ms, or null):
kept in the state so that no call asks the state server for the key's timers."""


class StreamProcessor(StatefulProcessor):
    """Feeds each key's rows and timers to a `StreamKernel`; `emit_late`: late rows
    reach the operator (Spark's late filter is off) and leave as late batches."""

    def __init__(self, stream: StreamKernel, keys: Sequence[Crossing],
                 values: Sequence[Crossing], emit_late: bool) -> None:
        self.stream = stream
        self.keys = tuple(keys)
        self.values = tuple(values)
        self.emit_late = emit_late

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        table = self.keyed_rows(key, rows)
        state, previous = self.load()
        table, late = self.stream.split_late(state, table)
        if late.num_rows:
            if not self.emit_late:  # Spark's filter let a late row through
                raise late_past_filter(late.num_rows)
            assert state is not None
            yield late_payloads([(late, self.stream.late_reason(state))])
        outputs, state, timer = self.stream.on_rows(
            state, table, timerValues.getCurrentWatermarkInMs())
        yield from self.save(outputs, state, timer, previous)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        state, _fired = self.load()  # a timer that fired is gone
        outputs, state, timer = self.stream.on_timer(
            state, timerValues.getCurrentWatermarkInMs())
        yield from self.save(outputs, state, timer, None)

    def keyed_rows(self, key: Any, rows: Iterator[Any]) -> pa.Table:
        """A call's rows decoded, with the key's columns."""
        table = decode(list(rows), self.values)
        for crossing, value in zip(self.keys, key_values(key, self.keys), strict=True):
            table = table.append_column(crossing.name,
                                        key_column(value, crossing, table.num_rows))
        return table

    def load(self) -> tuple[StreamState | None, int | None]:
        """The key's state and its timer (one call to the state server)."""
        row = self.state.get()
        if row is None:
            return None, None
        timer = row[-1]
        return StreamState.from_row(tuple(row[:-1]), self.stream.spec), \
            None if timer is None else int(timer)

    def save(self, outputs: list[pa.RecordBatch], state: StreamState, timer: int | None,
             previous: int | None) -> Iterator[pd.DataFrame]:
        """Store the state with the new timer, moving the key's one timer if it changed."""
        self.state.update((*state.to_row(self.stream.spec), timer))
        move_timer(self.handle, previous, timer)
        if outputs:
            yield output_payloads(outputs)

    def close(self) -> None:
        pass


class RevisedProcessor(StreamProcessor):
    """`StreamProcessor` with revisions (`on_late="update"`, `emit="changes"`): each
    key's rows and timers go to a `RevisedKernel`, its state stored in the same shape
    (format 3: the rows kept and the windows written, `RevisedState`); late rows are
    counted (`COUNTED`) and late rows applied too (`APPLIED`)."""

    def __init__(self, revised: RevisedKernel, keys: Sequence[Crossing],
                 values: Sequence[Crossing]) -> None:
        self.revised = revised
        self.keys = tuple(keys)
        self.values = tuple(values)
        self.emit_late = False

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        table = self.keyed_rows(key, rows)
        state, previous = self.load_revised()
        step = self.revised.on_rows(state, table, timerValues.getCurrentWatermarkInMs())
        yield from self.save_revised(step.outputs, step.state, step.timer, previous,
                                     step.counted, step.applied)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        state, _fired = self.load_revised()  # a timer that fired is gone
        step = self.revised.on_timer(state, timerValues.getCurrentWatermarkInMs())
        yield from self.save_revised(step.outputs, step.state, step.timer, None)

    def load_revised(self) -> tuple[RevisedState | None, int | None]:
        row = self.state.get()
        if row is None:
            return None, None
        timer = row[-1]
        return RevisedState.from_row(tuple(row[:-1]), self.revised.spec), \
            None if timer is None else int(timer)

    def save_revised(self, outputs: list[pa.RecordBatch], state: RevisedState,
                     timer: int | None, previous: int | None, counted: int = 0,
                     applied: int = 0) -> Iterator[pd.DataFrame]:
        self.state.update((*state.to_row(self.revised.spec), timer))
        move_timer(self.handle, previous, timer)
        if outputs or counted or applied:
            yield output_payloads(outputs, counted, None, applied)


EARLIEST_TIMER_MS = 1
"""The earliest timer set. Spark's watermark starts at the epoch and never goes below
it, and a timer before the epoch never fires (the state store keeps timers in an order
where a negative time does not come before a positive one), so a key whose rows all lie
before 1970 would never be written: its timer is set at 1 ms instead, which the first
watermark past the epoch fires, and the key then writes what that watermark makes
final. (Until then the key's rows wait: no watermark at or below the epoch promises
anything.)"""


def move_timer(handle: StatefulProcessorHandle, previous: int | None,
               timer: int | None) -> None:
    """Move the group's one event-time timer from `previous` to `timer` (ms; None: no
    timer; never before `EARLIEST_TIMER_MS`), if it changed."""
    if timer is not None:
        timer = max(timer, EARLIEST_TIMER_MS)
    if previous is not None:
        previous = max(previous, EARLIEST_TIMER_MS)
    if timer == previous:
        return
    if previous is not None:
        handle.deleteTimer(previous)
    if timer is not None:
        handle.registerTimer(timer)


def output_payloads(outputs: list[pa.RecordBatch], counted: int = 0,
                    json_schema: pa.Schema | None = None, applied: int = 0) -> pd.DataFrame:
    """Output batches as payloads (not late), or with a `json_schema` as one JSON text
    of their rows in it; and `counted` late rows and `applied` ones in a row without
    payload."""
    import pandas as pd

    if json_schema is not None:
        text = rows_json(outputs, json_schema) if outputs else None
        return pd.DataFrame({PAYLOAD: [None], LATE: False, COUNTED: [counted],
                             ROWS: [text], APPLIED: [applied]})
    blobs: list[bytes | None] = [table_bytes(pa.Table.from_batches(run))
                                 for run in payload_runs(outputs)]
    counts = [0] * len(blobs)
    applies = [0] * len(blobs)
    if counted or applied:
        blobs.append(None)
        counts.append(counted)
        applies.append(applied)
    return pd.DataFrame({PAYLOAD: blobs, LATE: False, COUNTED: counts, ROWS: None,
                         APPLIED: applies})


PAYLOAD_BYTES = 4 << 20
"""Output batches of one schema share a payload (one Arrow IPC stream) up to about this
many bytes: fewer, larger values cross to the stage after the operator."""


def payload_runs(outputs: list[pa.RecordBatch]) -> list[list[pa.RecordBatch]]:
    """The batches in order, in runs of one schema and at most about `PAYLOAD_BYTES`."""
    runs: list[list[pa.RecordBatch]] = []
    size = 0
    for batch in outputs:
        if runs and runs[-1][-1].schema == batch.schema and size < PAYLOAD_BYTES:
            runs[-1].append(batch)
            size += batch.nbytes
        else:
            runs.append([batch])
            size = batch.nbytes
    return runs


def late_payloads(late: list[tuple[pa.Table, str]]) -> pd.DataFrame:
    """Late rows with the reason each is late, as payloads flagged late."""
    import pandas as pd

    blobs = [batch_bytes(b) for rows, reason in late
             for b in rows.append_column(REASON_COLUMN, pa.array(
                 [reason] * rows.num_rows, pa.string())).to_batches()]
    return pd.DataFrame({PAYLOAD: blobs, LATE: True, COUNTED: 0, ROWS: None, APPLIED: 0})


BUCKET_STATE_NAME = "wisp_bucket"
BUCKET_STATE_SCHEMA = T.StructType([T.StructField("keys", T.BinaryType()),
                                    T.StructField("timer", T.LongType())])
"""A bucket's stored value: its keys' states (`KeyBuckets.to_bytes`: the format and
the query's spec hash inside) and the bucket's timer (ms, or null)."""


class StoredBuckets(StatefulProcessor):
    """What the processors grouped by bucket share: one stored value per bucket (its
    `buckets`' bytes: `KeyBuckets` or `PaneBuckets`) and one event-time timer, at its
    keys' earliest."""

    buckets: Any
    json_schema: pa.Schema | None = None
    """With it, output rows leave as JSON text of this schema (see `output_payloads`)."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(BUCKET_STATE_NAME, BUCKET_STATE_SCHEMA)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        stored, _fired = self.load()  # a timer that fired is gone
        yield from self.save(self.buckets.on_timer(
            stored, timerValues.getCurrentWatermarkInMs()), None)

    def load(self) -> tuple[Any, int | None]:
        """The bucket's state (None: none yet) and its timer."""
        row = self.state.get()
        if row is None:
            return None, None
        blob, timer = row
        return self.buckets.from_bytes(bytes(blob)), None if timer is None else int(timer)

    def save(self, step: BucketStep | PaneStep, previous: int | None
             ) -> Iterator[pd.DataFrame]:
        """Store the bucket with its new timer, moving its one timer if it changed."""
        self.state.update((self.buckets.to_bytes(step.state), step.timer))
        move_timer(self.handle, previous, step.timer)
        counted = step.counted if isinstance(step, Step) else 0
        applied = step.applied if isinstance(step, Step) else 0
        if step.outputs or counted or applied:
            yield output_payloads(step.outputs, counted, self.json_schema, applied)

    def close(self) -> None:
        pass


class BucketProcessor(StoredBuckets):
    """Spark's operator grouped by key bucket (`runtime.streaming.buckets`): feeds each
    bucket's rows (key columns included) and its timer to `KeyBuckets`."""

    def __init__(self, buckets: KeyBuckets, columns: Sequence[Crossing],
                 emit_late: bool) -> None:
        self.buckets = buckets
        self.columns = tuple(columns)
        self.emit_late = emit_late

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        table = decode(list(rows), self.columns)
        stored, previous = self.load()
        step = self.buckets.on_rows(stored, table, timerValues.getCurrentWatermarkInMs(),
                                    self.emit_late)
        if step.late:
            yield late_payloads(step.late)
        yield from self.save(step, previous)


BUCKET = "wisp_bucket"
"""The group of a query whose keys share stored values (`runtime.streaming.buckets`)."""
PARTIALS = "wisp_partials"
PACKED_SCHEMA = T.StructType([T.StructField(BUCKET, T.IntegerType()),
                              T.StructField(PARTIALS, T.BinaryType())])
"""The rows `PanePacker` writes: a bucket and its rows' pane partials (Arrow IPC)."""
PACK_ROWS = 1 << 20
"""`PanePacker` reduces at most this many rows at once (a task's memory bound)."""


@dataclass(frozen=True)
class PanePacker:
    """Before the shuffle, where the rows are read (`mapInArrow`): each bucket's rows
    (`bucket`: the column holding it) reduced to one row of pane partials per key and
    pane (`PaneKernel.partials`), as one payload of Arrow bytes per bucket. `schema`:
    the kernel's input columns."""

    kernel: PaneKernel
    schema: pa.Schema
    bucket: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: list[pa.RecordBatch] = []
        rows = 0
        for batch in batches:
            if batch.num_rows:
                held.append(batch)
                rows += batch.num_rows
            if rows >= PACK_ROWS:
                yield self.pack(held)
                held, rows = [], 0
        if held:
            yield self.pack(held)

    def pack(self, batches: list[pa.RecordBatch]) -> pa.RecordBatch:
        table = pa.Table.from_batches(batches)
        labels = table.column(self.bucket).to_numpy()
        order = np.argsort(labels, kind="stable")
        rows = table.select(self.schema.names).cast(self.schema).take(pa.array(order))
        labels = labels[order]
        starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
        ends = np.r_[starts[1:], len(labels)]
        blobs = [table_bytes(self.kernel.partials(rows.slice(a, b - a)))
                 for a, b in zip(starts, ends, strict=True)]
        return pa.RecordBatch.from_arrays(
            [pa.array(labels[starts], pa.int32()), pa.array(blobs, pa.binary())],
            names=[BUCKET, PARTIALS])


class PartialsProcessor(StoredBuckets):
    """Spark's operator grouped by key bucket over rows `PanePacker` reduced to pane
    partials: each bucket's keys and panes in one stored value
    (`runtime.streaming.pane_buckets`). Spark's late filter is off (the operator's input has
    no event time); a key's late rows are those whose earliest window it had already
    closed, counted (`COUNTED`). Its windows leave as JSON text of `json_schema`."""

    def __init__(self, buckets: PaneBuckets, json_schema: pa.Schema) -> None:
        self.buckets = buckets
        self.json_schema = json_schema

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        tables = [table_of(bytes(blob)) for frame in rows for blob in frame[PARTIALS]]
        stored, previous = self.load()
        step = self.buckets.on_partials(stored, pa.concat_tables(tables),
                                        timerValues.getCurrentWatermarkInMs())
        yield from self.save(step, previous)


@dataclass(frozen=True)
class PayloadRows:
    """After the stateful operator: each payload's rows, in the output schema. With
    `late_rows` (under `on_late="emit"`), window rows get null late columns and late
    rows become rows of `late_rows.schema`."""

    schema: pa.Schema
    late_rows: LateRows | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            lates = batch.column(1).to_pylist()
            for blob, late in zip(batch.column(0).to_pylist(), lates, strict=True):
                if blob is None:  # a count of late rows alone
                    continue
                for found in batches_of(blob):
                    if late:
                        assert self.late_rows is not None
                        yield self.late_rows.rows(found)
                        continue
                    found = found.cast(self.schema) if found.schema != self.schema \
                        else found
                    yield found if self.late_rows is None else \
                        self.late_rows.windows(found)


@dataclass(frozen=True)
class LateRows:
    """The output rows of `on_late="emit"`: `schema` is the batch columns plus
    `late_reason` (a string) and `late_row` (a struct of the columns the query read);
    a late row fills the key columns, `late_reason` and `late_row`, a window row leaves
    the last two null."""

    schema: pa.Schema
    keys: tuple[str, ...]

    def windows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        columns = [*batch.columns, pa.nulls(n, self.schema.field(LATE_REASON).type),
                   pa.nulls(n, self.schema.field(LATE_ROW).type)]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        row_type = self.schema.field(LATE_ROW).type
        columns = []
        for field in self.schema:
            if field.name == LATE_ROW:
                columns.append(pa.StructArray.from_arrays(
                    [batch.column(f.name).cast(f.type) for f in row_type],
                    fields=list(row_type)))
            elif field.name == LATE_REASON:
                columns.append(batch.column(REASON_COLUMN).cast(field.type))
            elif field.name in self.keys:
                columns.append(batch.column(field.name).cast(field.type))
            else:
                columns.append(pa.nulls(n, field.type))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)
