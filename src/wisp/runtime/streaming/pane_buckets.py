"""All keys of a bucket at once: pane partials of many keys in one table.

`buckets.KeyBuckets` runs each key of a bucket through its own `StreamKernel`,
which costs a fixed amount of Python per key and micro-batch (its panes combined, its
windows written, its state's bytes), so many keys cost seconds a batch.
For the pane partials of `panes` (rows already reduced where they were read,
late rows counted) a bucket instead keeps two tables, whatever its number of keys:

- `keys`: the key columns and, per key, `done` (the first window not yet closed; null
  before its first) and `timer` (ms);
- `panes`: one row per key and open pane (the key's row in `keys`, the pane, its
  partials), in (key, pane) order.

Each step does for every key at once what `StreamKernel` and `PaneKernel` do for one
key's rows (`StreamKernel.on_rows` and `on_timer`, with the late rule of
`PaneKernel.late_panes`): a key with partials in the batch, or whose
timer the watermark has reached, is advanced to the batch's horizon; its partials in a
pane whose earliest window it already closed are late (counted); the others are added to
its panes; every window of an advanced key that the horizon makes final is written, from
the first it had not closed; its timer is set where its next window can be final. Keys
that are neither keep everything as it was. So the rows written in each batch and the
late count are those of a `StreamKernel` per key (tests/streaming/test_stream_buckets.py
compares them batch by batch, with the partials coming from several places).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispInputError
from ..codecs.grouping import normalized
from .operator import TICKS_PER_MS, StreamKernel, check_stored, table_bytes, table_of
from .panes import PANE, ROW, ROWS, PaneKernel, counting_up

PANE_BUCKET_VERSION = 1
KEY_ID = "__wisp_key"
DONE = "done"
TIMER = "timer"
NONE = np.iinfo(np.int64).min
"""`done` and `timer` of a key that has none, in numpy arrays."""
_SPEC_KEY = b"wisp_spec"
_VERSION_KEY = b"wisp_pane_bucket_version"

IntArray = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class PaneBucket:
    """One bucket's keys and their open panes (see the module's docstring)."""

    keys: pa.Table
    panes: pa.Table

    def timer(self) -> int | None:
        """The bucket's timer: its keys' earliest."""
        timers = self.keys.column(TIMER).drop_null().to_numpy()
        return int(timers.min()) if len(timers) else None


@dataclass(frozen=True)
class PaneStep:
    """What one handler call of a bucket gives: the output batches, the new state, its
    timer and the late rows counted."""

    outputs: list[pa.RecordBatch]
    state: PaneBucket
    timer: int | None
    counted: int = 0


@dataclass(frozen=True)
class PaneBuckets:
    """The stream logic of one bucket of pane partials: `stream` holds the pane kernel
    and the query's spec, `key_schema` the key columns."""

    stream: StreamKernel
    key_schema: pa.Schema

    @property
    def kernel(self) -> PaneKernel:
        assert isinstance(self.stream.kernel, PaneKernel)
        return self.stream.kernel

    def empty(self) -> PaneBucket:
        keys = pa.schema([*self.key_schema, pa.field(DONE, pa.int64()),
                          pa.field(TIMER, pa.int64())])
        panes = pa.schema([pa.field(KEY_ID, pa.int64()), *self.kernel.pane_schema])
        return PaneBucket(keys.empty_table(), panes.empty_table())

    # ------------------------------------------------------------------- steps

    def on_partials(self, stored: PaneBucket | None, partials: pa.Table, watermark_ms: int
                    ) -> PaneStep:
        """A micro-batch's pane partials of the bucket (key columns included; several
        rows of a key and pane perhaps), then every other key whose timer the watermark
        has reached."""
        state = self.empty() if stored is None else stored
        keys, ids = self.key_ids(state.keys, partials)
        panes = partials.column(PANE).to_numpy()
        done = keys.column(DONE).fill_null(NONE).to_numpy()[ids]
        late = (done != NONE) & self.kernel.closed_panes(panes, done)
        counted = int(partials.column(ROWS).to_numpy()[late].sum())
        touched = np.zeros(keys.num_rows, dtype=bool)
        touched[ids] = True
        fresh = partials.select(self.kernel.pane_schema.names).cast(
            self.kernel.pane_schema).filter(pa.array(~late))
        fresh = fresh.add_column(0, KEY_ID, pa.array(ids[~late], pa.int64()))
        outputs, bucket = self.advance(keys, pa.concat_tables([state.panes, fresh]),
                                       touched, watermark_ms)
        return PaneStep(outputs, bucket, bucket.timer(), counted)

    def on_timer(self, stored: PaneBucket | None, watermark_ms: int) -> PaneStep:
        """The bucket's timer fired: every key whose timer the watermark has reached."""
        state = self.empty() if stored is None else stored
        outputs, bucket = self.advance(state.keys, state.panes,
                                       np.zeros(state.keys.num_rows, dtype=bool),
                                       watermark_ms)
        return PaneStep(outputs, bucket, bucket.timer(), 0)

    def advance(self, keys: pa.Table, panes: pa.Table, touched: Mask, watermark_ms: int
                ) -> tuple[list[pa.RecordBatch], PaneBucket]:
        """Advance the touched keys and those whose timer is due to the horizon of
        `watermark_ms`: their final windows, their `done` and timers."""
        kernel = self.kernel
        panes = self.combined(panes)
        timers = keys.column(TIMER).fill_null(NONE).to_numpy()
        moved = touched | ((timers != NONE) & (timers <= watermark_ms))
        done = keys.column(DONE).fill_null(NONE).to_numpy().copy()
        owner = panes.column(KEY_ID).to_numpy()
        pane = panes.column(PANE).to_numpy()
        first, final = kernel.window_range(pane)
        outputs: list[pa.RecordBatch] = []
        if watermark_ms > 0:
            horizon = watermark_ms * TICKS_PER_MS + 1
            last = kernel.final_window(kernel.first_start(horizon))
            own_done = done[owner]
            mine = moved[owner]
            low = np.where(own_done != NONE, np.maximum(first, own_done), first)
            high = np.minimum(final, last)
            spans = np.where(mine, np.maximum(high - low + 1, 0), 0)
            if spans.sum():
                outputs.append(self.windows(keys, panes, owner, low, spans))
            has_panes = np.zeros(len(done), dtype=bool)
            has_panes[owner] = True
            advanced = moved & has_panes  # a key without panes keeps its `done`
            done = np.where(advanced, np.where(done != NONE, np.maximum(done, last + 1),
                                               last + 1), done)
            keep = ~mine | (final >= done[owner])
            panes = panes.filter(pa.array(keep))
            owner, first = owner[keep], first[keep]
        timers = np.where(moved, self.timers(owner, first, done), timers)
        keys = keys.set_column(keys.schema.get_field_index(DONE), DONE, pa.array(
            done, pa.int64(), mask=done == NONE))
        keys = keys.set_column(keys.schema.get_field_index(TIMER), TIMER, pa.array(
            timers, pa.int64(), mask=timers == NONE))
        return outputs, PaneBucket(keys, panes)

    def timers(self, owner: IntArray, first: IntArray, done: IntArray) -> IntArray:
        """Each key's timer (ms; `NONE`: none): where the earliest window it has not
        closed that holds one of its panes becomes final (`PaneKernel.wake`,
        `StreamKernel.timer`)."""
        result = np.full(len(done), NONE, dtype=np.int64)
        if not len(owner):
            return result
        earliest = np.full(len(done), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(earliest, owner, first)
        has = earliest != np.iinfo(np.int64).max
        k = np.where(done != NONE, np.maximum(earliest, done), earliest)
        due = self.kernel.least_horizon(k) - 1  # final once the watermark reaches it
        result[has] = -(-due[has] // TICKS_PER_MS)
        return result

    # ---------------------------------------------------------------- windows

    def windows(self, keys: pa.Table, panes: pa.Table, owner: IntArray, low: IntArray,
                spans: IntArray) -> pa.RecordBatch:
        """The windows `low[r] .. low[r] + spans[r] - 1` of each pane row `r`, one output
        row per key and window, aggregated over the pane rows each holds."""
        kernel = self.kernel
        rows = np.repeat(np.arange(len(low)), spans)
        window = counting_up(low, spans)
        order = np.lexsort((window, owner[rows]))
        members, window, key = rows[order], window[order], owner[rows][order]
        starts = np.flatnonzero(np.r_[True, (window[1:] != window[:-1])
                                      | (key[1:] != key[:-1])])
        at = pa.array(key[starts])
        columns = [keys.column(name).take(at).combine_chunks().cast(
            kernel.schema.field(name).type) for name in self.key_schema.names]
        return kernel.window_rows(columns, window[starts], panes, members, starts)

    # ------------------------------------------------------------------ keys

    def combined(self, panes: pa.Table) -> pa.Table:
        """One row per key and pane, in (key, pane) order."""
        owner = panes.column(KEY_ID).to_numpy()
        pane = panes.column(PANE).to_numpy()
        order = np.lexsort((pane, owner))
        return self.kernel.combine(panes, order, np.flatnonzero(np.r_[
            True, (pane[order][1:] != pane[order][:-1])
            | (owner[order][1:] != owner[order][:-1])]), (KEY_ID,))

    def key_ids(self, keys: pa.Table, partials: pa.Table) -> tuple[pa.Table, IntArray]:
        """Each partial's key as a row of `keys` (new keys appended, in the order they
        first come: no window closed, no timer)."""
        n, m = keys.num_rows, partials.num_rows
        names = self.key_schema.names
        if not names:  # a query without a key: one key
            if n == 0:
                keys = pa.table({DONE: pa.nulls(1, pa.int64()),
                                 TIMER: pa.nulls(1, pa.int64())})
            return keys, np.zeros(m, dtype=np.int64)
        both = pa.concat_tables([keys.select(names), normalized(
            partials.select(names)).cast(self.key_schema)])
        grouped = both.append_column(ROW, pa.array(np.arange(n + m))).group_by(
            names, use_threads=False).aggregate([(ROW, "list")])
        members = grouped.column(ROW + "_list").combine_chunks()
        offsets = members.offsets.to_numpy()
        rows = members.values.to_numpy()
        lowest = np.minimum.reduceat(rows, offsets[:-1]) if len(rows) else rows
        new = np.flatnonzero(lowest >= n)
        new = new[np.argsort(lowest[new], kind="stable")]
        group_id = lowest.copy()
        group_id[new] = n + np.arange(len(new))
        row_id = np.empty(n + m, dtype=np.int64)
        row_id[rows] = np.repeat(group_id, np.diff(offsets))
        if len(new):
            added = both.take(pa.array(lowest[new])).cast(self.key_schema)
            count = len(new)
            added = added.append_column(DONE, pa.nulls(count, pa.int64())).append_column(
                TIMER, pa.nulls(count, pa.int64()))
            keys = pa.concat_tables([keys, added.cast(keys.schema)])
        return keys, row_id[n:]

    # ------------------------------------------------------------- stored form

    def to_bytes(self, state: PaneBucket) -> bytes:
        """The bucket as two Arrow IPC tables (keys, then panes), each with a length
        prefix; the state format and the query's spec hash in the keys' metadata."""
        keys = state.keys.replace_schema_metadata({
            _VERSION_KEY: str(PANE_BUCKET_VERSION).encode(),
            _SPEC_KEY: self.stream.spec.encode()})
        first, second = table_bytes(keys), table_bytes(state.panes)
        return len(first).to_bytes(8, "little") + first + second

    def from_bytes(self, blob: bytes) -> PaneBucket:
        """The state `to_bytes` wrote; state made for another query is refused."""
        size = int.from_bytes(blob[:8], "little")
        try:
            keys = table_of(blob[8:8 + size])
        except (pa.ArrowInvalid, OSError) as error:  # another format, e.g. key by key
            raise WispInputError(f"`checkpointLocation` must hold state of format "
                                 f"{PANE_BUCKET_VERSION} of this kind of query, found state "
                                 "of another format") from error
        metadata = keys.schema.metadata or {}
        check_stored(metadata.get(_VERSION_KEY, b"?").decode(), PANE_BUCKET_VERSION,
                     metadata.get(_SPEC_KEY, b"").decode(), self.stream.spec)
        return PaneBucket(keys.replace_schema_metadata(None), table_of(blob[8 + size:]))
