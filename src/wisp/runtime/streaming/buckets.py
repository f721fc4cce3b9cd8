"""Many keys' stream states in one stored value: the stateful operator grouped by a hash
bucket of the key instead of by the key.

Spark's stateful operator for Python pays a cost per group and micro-batch (the
group's rows become their own pandas frame, the state server is told the group and
asked for the group's value, the value is written back), whatever the group holds; with
many keys a batch it adds up (BENCHMARKS.md has the figures). For a kernel whose
state per key is a handful of numbers (the pane partials of `panes`), such a
query groups its rows by `bucket = hash(key) mod plan.streaming.KEY_BUCKETS`
(`engine/streaming.py`, in Spark, whose hash gives every NaN one value and `-0.0` that
of `0.0`, as its grouping does), and one stored value per bucket holds the stream state
of each of its keys (`BucketState`).

(Pane partials reduced where the rows are read, late rows counted, keep a bucket's keys
and panes in two tables instead and handle them all at once: `pane_buckets`.)

Inside a bucket every key is handled exactly as the per-key operator handles it
(`StreamKernel`: its late rows split off, its rows fed, its own timer kept): the rows
of each key that has some, then each key whose timer the watermark has reached (in a
batch where the bucket has rows, and when the bucket's one timer, the earliest of its
keys' timers, fires). So the rows written are the per-key operator's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.grouping import Key, canonical, normalized
from .bucket_rows import rows_at_once
from .bucket_state import BucketState, BucketStep, Entry
from .operator import (
    StreamKernel,
    StreamState,
    TakesDisorder,
    check_stored,
    late_past_filter,
    table_bytes,
    table_of,
)
from .packed_states import pack, unpack

BUCKET_STATE_VERSION = 2
"""2: the waiting rows in one table for the bucket (1, still read: a table per key)."""
READ_VERSIONS = ("1", "2")
KERNEL = "kernel"
PENDING = "pending"
FED = "fed"
TIMER = "timer"
_SPEC_KEY = b"wisp_spec"
_VERSION_KEY = b"wisp_bucket_version"
_PENDING_KEY = b"wisp_pending"
_KERNEL_ROWS_KEY = b"wisp_kernel_rows"

@dataclass(frozen=True)
class KeyBuckets:
    """The stream logic of one bucket: `stream` is each key's logic, `keys` the key
    columns of the kernel's input (`key_schema` their types)."""

    stream: StreamKernel
    key_schema: pa.Schema

    @property
    def keys(self) -> list[str]:
        return list(self.key_schema.names)

    @property
    def at_once(self) -> bool:
        """Whether the bucket's keys are stepped at once (`bucket_rows`): every kernel
        but those taking rows in any order, which go key by key."""
        return not isinstance(self.stream.kernel, TakesDisorder)

    def on_rows(self, stored: BucketState | None, table: pa.Table, watermark_ms: int,
                emit_late: bool) -> BucketStep:
        """A micro-batch's rows of the bucket (key columns included), then every other
        key of the bucket whose timer the watermark has reached."""
        state = BucketState() if stored is None else stored
        if self.at_once:
            return rows_at_once(self.stream, self.keys, state, table, watermark_ms,
                                emit_late)
        late: list[tuple[pa.Table, str]] = []
        outputs: list[pa.RecordBatch] = []
        touched: set[Key] = set()
        for key, values, rows in self.split(table):
            touched.add(key)
            entry = state.entries.get(key)
            before = None if entry is None else entry.state
            rows, late_rows = self.stream.split_late(before, rows)
            if late_rows.num_rows:
                if not emit_late:  # Spark's filter let a late row through
                    raise late_past_filter(late_rows.num_rows)
                assert before is not None
                late.append((late_rows, self.stream.late_reason(before)))
            out, after, timer = self.stream.on_rows(before, rows, watermark_ms)
            outputs += out
            state.entries[key] = Entry(values, after, timer)
        outputs += self.due(state, watermark_ms, touched)
        return BucketStep(late, outputs, state, state.timer())

    def on_timer(self, stored: BucketState | None, watermark_ms: int) -> BucketStep:
        """The bucket's timer fired: every key whose timer the watermark has reached."""
        state = BucketState() if stored is None else stored
        if self.at_once:
            return self.on_rows(state, self.stream.schema.empty_table(), watermark_ms,
                                False)
        outputs = self.due(state, watermark_ms, set())
        return BucketStep([], outputs, state, state.timer())

    def due(self, state: BucketState, watermark_ms: int, skip: set[Key]
            ) -> list[pa.RecordBatch]:
        """Run the timer of each key (not in `skip`) whose timer is at or below the
        watermark, as the per-key operator's timer handler does."""
        outputs: list[pa.RecordBatch] = []
        for key, entry in state.due(watermark_ms):
            if key in skip:
                continue
            out, after, timer = self.stream.on_timer(entry.state, watermark_ms)
            outputs += out
            state.entries[key] = Entry(entry.values, after, timer)
        return outputs

    def split(self, table: pa.Table) -> Iterator[tuple[Key, dict[str, Any], pa.Table]]:
        """The table's rows per key, in the order the keys first appear: the canonical
        key, the key's values, its rows."""
        if table.num_rows == 0:
            return
        keys = normalized(table.select(self.keys))
        for name in self.keys:  # the rows carry the key as Spark groups it
            table = table.set_column(table.schema.get_field_index(name),
                                     table.schema.field(name), keys.column(name))
        numbered = keys.append_column("__wisp_row", pa.array(np.arange(table.num_rows)))
        groups = numbered.group_by(self.keys, use_threads=False).aggregate(
            [("__wisp_row", "list")])
        found = groups.select(self.keys).to_pylist()
        members = groups.column("__wisp_row_list").combine_chunks()
        offsets = members.offsets.to_numpy()
        rows = members.values.to_numpy()
        grouped = table.take(pa.array(rows))  # each key's rows together, in input order
        for g in np.argsort(rows[offsets[:-1]], kind="stable"):  # keys as they come
            values = found[g]
            yield (canonical(tuple(values.values())), values,
                   grouped.slice(offsets[g], offsets[g + 1] - offsets[g]))

    # ------------------------------------------------------------- stored form

    def to_bytes(self, state: BucketState) -> bytes:
        """The bucket's keys as one Arrow IPC table: the key columns, each key's kernel
        state (`packed_states`), `fed` and its timer; the state format, the query's
        spec hash, the bucket's waiting rows and its keys' kernel rows (Arrow IPC, when
        there are some) in the schema's metadata."""
        entries = list(state.entries.values())
        columns: dict[str, pa.Array] = {
            name: pa.array([e.values[name] for e in entries], self.key_schema.field(name).type)
            for name in self.keys}
        packed = pack([e.state.kernel for e in entries])
        columns.update(packed.columns)
        columns[FED] = pa.array([e.state.fed for e in entries], pa.int64())
        columns[TIMER] = pa.array([e.timer for e in entries], pa.int64())
        metadata = {_VERSION_KEY: str(BUCKET_STATE_VERSION).encode(),
                    _SPEC_KEY: self.stream.spec.encode()}
        pending = self.pending_table(state)
        if pending.num_rows:
            metadata[_PENDING_KEY] = table_bytes(pending)
        if packed.rows is not None:
            metadata[_KERNEL_ROWS_KEY] = packed.rows
        return table_bytes(pa.table(columns).replace_schema_metadata(metadata))

    def pending_table(self, state: BucketState) -> pa.Table:
        """Every row waiting in the bucket: its table's, and any a key holds itself."""
        tables = [t for t in [state.pending, *(e.state.pending for e in
                                               state.entries.values())]
                  if t is not None and t.num_rows]
        if not tables:
            return self.stream.schema.empty_table()
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def from_bytes(self, blob: bytes) -> BucketState:
        """The state `to_bytes` wrote (or format 1 wrote: each key's waiting rows in a
        column, moved to the bucket's table); state made for another query or of
        another format is refused."""
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
        metadata = table.schema.metadata or {}
        version = metadata.get(_VERSION_KEY, b"?").decode()
        expected = int(version) if version in READ_VERSIONS else BUCKET_STATE_VERSION
        check_stored(version, expected, metadata.get(_SPEC_KEY, b"").decode(),
                     self.stream.spec)
        state = BucketState()
        keys = table.select(self.keys).to_pylist()
        kernels = unpack(table, metadata.get(_KERNEL_ROWS_KEY))
        feds = table.column(FED).to_pylist()
        timers = table.column(TIMER).to_pylist()
        empty = self.stream.schema.empty_table()
        waiting = [table_of(metadata[_PENDING_KEY])] if _PENDING_KEY in metadata else []
        if PENDING in table.column_names:  # format 1
            waiting += [table_of(b) for b in table.column(PENDING).to_pylist()
                        if b is not None]
        for values, kernel, fed, timer in zip(keys, kernels, feds, timers, strict=True):
            stream_state = StreamState(kernel, empty, int(fed))
            state.entries[canonical(tuple(values.values()))] = Entry(values, stream_state,
                                                                     timer)
        if waiting:
            state.pending = waiting[0] if len(waiting) == 1 else pa.concat_tables(waiting)
        return state

    def pending_rows(self, state: BucketState) -> int:
        """The rows waiting in the bucket (its keys' states)."""
        rows: int = self.pending_table(state).num_rows
        return rows
