"""All keys of a bucket at once: pane partials of many keys in one table.

`buckets.KeyBuckets` runs each key of a bucket through its own `StreamKernel`,
which costs a fixed amount of Python per key and micro-batch (its panes combined, its
windows written, its state's bytes), so many keys cost seconds a batch.
For the pane partials of `panes` (rows already reduced where they were read,
late rows counted) a bucket instead keeps two tables, whatever its number of keys (and
a third with revisions, below):

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

Revisions (`allowed`: `on_late="update"`; `changes`: `emit="changes"`): a key also keeps
`kept`, the first window whose state it still keeps (`done` less the windows the
allowed lateness still holds), and the bucket a table `emitted` of the next revision of
each window written and still kept. A row is late (counted) when its earliest window is
before `kept`; a row in a closed window that is still kept is applied ("late
applied"), and every closed window it falls in is written again, `final` true, with the
next revision. With `changes`, every open window that a micro-batch's rows changed is
written too, `final` false. Panes are dropped once every window holding them is before
`kept`; the key's timer also wakes it when its oldest kept window leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispInputError
from ..codecs.grouping import normalized
from .operator import TICKS_PER_MS, Step, StreamKernel, check_stored, table_bytes, table_of
from .panes import PANE, ROW, ROWS, PaneKernel, counting_up

PANE_BUCKET_VERSION = 1
KEY_ID = "__wisp_key"
DONE = "done"
TIMER = "timer"
KEPT = "kept"
WINDOW = "window"
REVISION = "revision"
FINAL = "final"
REVISED_VERSION = 2
"""The state format of a bucket that keeps revisions (a third table, `emitted`)."""
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
    emitted: pa.Table | None = None
    """With revisions: the next revision of each window written and still kept (the
    key's row in `keys`, the window, the revision)."""

    def timer(self) -> int | None:
        """The bucket's timer: its keys' earliest."""
        timers = self.keys.column(TIMER).drop_null().to_numpy()
        return int(timers.min()) if len(timers) else None


PaneStep = Step[PaneBucket]
"""What one handler call of a bucket gives."""


@dataclass(frozen=True)
class PaneBuckets:
    """The stream logic of one bucket of pane partials: `stream` holds the pane kernel
    and the query's spec, `key_schema` the key columns."""

    stream: StreamKernel
    key_schema: pa.Schema
    allowed: int | None = None
    """`on_late="update"`: ticks of the time column a window is kept past its finality."""
    changes: bool = False
    """`emit="changes"`: open windows a micro-batch changed are written too."""

    @property
    def kernel(self) -> PaneKernel:
        assert isinstance(self.stream.kernel, PaneKernel)
        return self.stream.kernel

    @property
    def revisions(self) -> bool:
        """Whether a window may be written more than once."""
        return self.allowed is not None or self.changes

    def empty(self) -> PaneBucket:
        kept = [pa.field(KEPT, pa.int64())] if self.revisions else []
        keys = pa.schema([*self.key_schema, pa.field(DONE, pa.int64()),
                          pa.field(TIMER, pa.int64()), *kept])
        panes = pa.schema([pa.field(KEY_ID, pa.int64()), *self.kernel.pane_schema])
        emitted = EMITTED.empty_table() if self.revisions else None
        return PaneBucket(keys.empty_table(), panes.empty_table(), emitted)

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
        kept = keys.column(KEPT).fill_null(NONE).to_numpy()[ids] if self.revisions \
            else done
        late = (kept != NONE) & self.kernel.closed_panes(panes, kept)
        rows = partials.column(ROWS).to_numpy()
        counted = int(rows[late].sum())
        reopened = ~late & (done != NONE) & self.kernel.closed_panes(panes, done)
        touched = np.zeros(keys.num_rows, dtype=bool)
        touched[ids] = True
        fresh = partials.select(self.kernel.pane_schema.names).cast(
            self.kernel.pane_schema).filter(pa.array(~late))
        fresh = fresh.add_column(0, KEY_ID, pa.array(ids[~late], pa.int64()))
        changed = (ids[~late], panes[~late]) if self.revisions else None
        outputs, bucket = self.advance(keys, pa.concat_tables([state.panes, fresh]),
                                       touched, watermark_ms, state.emitted, changed)
        return PaneStep(outputs, bucket, bucket.timer(), counted, int(rows[reopened].sum()))

    def on_timer(self, stored: PaneBucket | None, watermark_ms: int) -> PaneStep:
        """The bucket's timer fired: every key whose timer the watermark has reached."""
        state = self.empty() if stored is None else stored
        outputs, bucket = self.advance(state.keys, state.panes,
                                       np.zeros(state.keys.num_rows, dtype=bool),
                                       watermark_ms, state.emitted)
        return PaneStep(outputs, bucket, bucket.timer(), 0)

    def advance(self, keys: pa.Table, panes: pa.Table, touched: Mask, watermark_ms: int,
                emitted: pa.Table | None = None,
                changed: tuple[IntArray, IntArray] | None = None
                ) -> tuple[list[pa.RecordBatch], PaneBucket]:
        """Advance the touched keys and those whose timer is due to the horizon of
        `watermark_ms`: their final windows, their `done` and timers (with revisions:
        `changed`, the keys and panes of the batch's rows applied, whose closed windows
        are written again and, with `changes`, whose open windows are written early)."""
        if self.revisions:
            return self.revise(keys, panes, touched, watermark_ms, emitted, changed)
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

    def revise(self, keys: pa.Table, panes: pa.Table, touched: Mask, watermark_ms: int,
               emitted: pa.Table | None, changed: tuple[IntArray, IntArray] | None
               ) -> tuple[list[pa.RecordBatch], PaneBucket]:
        """`advance` with revisions (see the module's docstring): the windows written are
        those the horizon makes final, the closed windows still kept that the batch's
        rows fell in (again, `final` true) and, with `changes`, the open windows they
        fell in (`final` false); each with its next revision."""
        kernel = self.kernel
        panes = self.combined(panes)
        emitted = EMITTED.empty_table() if emitted is None else emitted
        timers = keys.column(TIMER).fill_null(NONE).to_numpy()
        moved = touched | ((timers != NONE) & (timers <= watermark_ms))
        done = keys.column(DONE).fill_null(NONE).to_numpy().copy()
        kept = keys.column(KEPT).fill_null(NONE).to_numpy().copy()
        owner = panes.column(KEY_ID).to_numpy()
        first, final = kernel.window_range(panes.column(PANE).to_numpy())
        pair_key: list[IntArray] = []
        pair_window: list[IntArray] = []
        if changed is not None and len(changed[0]):
            key, c_first, c_final = changed[0], *kernel.window_range(changed[1])
            spans = np.maximum(c_final - c_first + 1, 0)  # every window of each pane
            rows = np.repeat(np.arange(len(key)), spans)
            window = counting_up(c_first, spans)
            key = key[rows]
            closed = done[key]  # before this step: the windows already written
            reopen = (closed != NONE) & (window < closed)
            pair_key.append(key[reopen])
            pair_window.append(window[reopen])
            if self.changes:
                pair_key.append(key[~reopen])
                pair_window.append(window[~reopen])
        last = None
        if watermark_ms > 0:
            horizon = watermark_ms * TICKS_PER_MS + 1
            last = kernel.final_window(kernel.first_start(horizon))
            retired = last if self.allowed is None else kernel.final_window(
                kernel.first_start(horizon - self.allowed))
            own_done = done[owner]
            mine = moved[owner]
            low = np.where(own_done != NONE, np.maximum(first, own_done), first)
            high = np.minimum(final, last)
            spans = np.where(mine, np.maximum(high - low + 1, 0), 0)
            rows = np.repeat(np.arange(len(low)), spans)
            pair_key.append(owner[rows])
            pair_window.append(counting_up(low, spans))
            has_panes = np.zeros(len(done), dtype=bool)
            has_panes[owner] = True
            advanced = moved & has_panes
            done = np.where(advanced, np.where(done != NONE, np.maximum(done, last + 1),
                                               last + 1), done)
            kept = np.where(advanced, np.where(kept != NONE, np.maximum(kept, retired + 1),
                                               retired + 1), kept)
            kept = np.where(kept != NONE, np.minimum(kept, done), kept)
        outputs: list[pa.RecordBatch] = []
        out_key, out_window = unique_pairs(pair_key, pair_window)
        if not self.changes and len(out_key):
            closed_now = done[out_key]
            keep = (closed_now != NONE) & (out_window < closed_now)
            out_key, out_window = out_key[keep], out_window[keep]
        if len(out_key):
            revision, emitted = next_revisions(emitted, out_key, out_window)
            is_final = (done[out_key] != NONE) & (out_window < done[out_key])
            outputs.append(self.written(keys, panes, owner, first, final, out_key,
                                        out_window, revision, is_final))
        if last is not None:
            mine = moved[owner]
            keep = ~mine | (kept[owner] == NONE) | (final >= kept[owner])
            panes = panes.filter(pa.array(keep))
            owner, first = owner[keep], first[keep]
            held = emitted.column(KEY_ID).to_numpy()
            window = emitted.column(WINDOW).to_numpy()
            emitted = emitted.filter(pa.array((kept[held] == NONE) | (window >= kept[held])))
        timers = np.where(moved, self.timers(owner, first, done, kept), timers)
        keys = with_column(with_column(with_column(keys, DONE, done), TIMER, timers),
                           KEPT, kept)
        return outputs, PaneBucket(keys, panes, emitted)

    def written(self, keys: pa.Table, panes: pa.Table, owner: IntArray, first: IntArray,
                final: IntArray, out_key: IntArray, out_window: IntArray,
                revision: IntArray, is_final: Mask) -> pa.RecordBatch:
        """The rows of windows `out_window[i]` of keys `out_key[i]` (sorted by key, then
        window), each over every pane of its key that it holds, with its revision and
        whether it is final, after `time`."""
        lo = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(len(keys), np.iinfo(np.int64).min, dtype=np.int64)
        np.minimum.at(lo, out_key, out_window)
        np.maximum.at(hi, out_key, out_window)
        low = np.maximum(first, lo[owner])
        spans = np.maximum(np.minimum(final, hi[owner]) - low + 1, 0)
        rows = np.repeat(np.arange(len(owner)), spans)
        window = counting_up(low, spans)
        wanted = np.isin(pairs(owner[rows], window), pairs(out_key, out_window))
        batch = self.windows_of(keys, panes, owner, rows[wanted], window[wanted])
        at = len(self.key_schema) + 3
        columns = batch.columns
        columns[at:at] = [pa.array(revision, pa.int64()), pa.array(is_final, pa.bool_())]
        names = batch.schema.names
        names[at:at] = [REVISION, FINAL]
        return pa.RecordBatch.from_arrays(columns, names=names)

    def timers(self, owner: IntArray, first: IntArray, done: IntArray,
               kept: IntArray | None = None) -> IntArray:
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
        if kept is not None and self.allowed is not None:  # and where its oldest kept
            oldest = np.where(kept != NONE, np.maximum(earliest, kept), earliest)  # leaves
            due = np.minimum(due, self.kernel.least_horizon(oldest) - 1 + self.allowed)
        result[has] = -(-due[has] // TICKS_PER_MS)
        return result

    # ---------------------------------------------------------------- windows

    def windows(self, keys: pa.Table, panes: pa.Table, owner: IntArray, low: IntArray,
                spans: IntArray) -> pa.RecordBatch:
        """The windows `low[r] .. low[r] + spans[r] - 1` of each pane row `r`, one output
        row per key and window, aggregated over the pane rows each holds."""
        rows = np.repeat(np.arange(len(low)), spans)
        return self.windows_of(keys, panes, owner, rows, counting_up(low, spans))

    def windows_of(self, keys: pa.Table, panes: pa.Table, owner: IntArray, rows: IntArray,
                   window: IntArray) -> pa.RecordBatch:
        """One output row per key and window of the pairs (pane row `rows[i]`, window
        `window[i]`), aggregated over the pane rows paired with it; in (key, window)
        order."""
        kernel = self.kernel
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
                keys = pa.table({f.name: pa.nulls(1, pa.int64()) for f in keys.schema})
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
            for column in keys.schema.names[len(names):]:  # done, timer (, kept)
                added = added.append_column(column, pa.nulls(count, pa.int64()))
            keys = pa.concat_tables([keys, added.cast(keys.schema)])
        return keys, row_id[n:]

    # ------------------------------------------------------------- stored form

    def to_bytes(self, state: PaneBucket) -> bytes:
        """The bucket as two Arrow IPC tables (keys, then panes), each with a length
        prefix; the state format and the query's spec hash in the keys' metadata."""
        version = REVISED_VERSION if self.revisions else PANE_BUCKET_VERSION
        keys = state.keys.replace_schema_metadata({
            _VERSION_KEY: str(version).encode(), _SPEC_KEY: self.stream.spec.encode()})
        first, second = table_bytes(keys), table_bytes(state.panes)
        if not self.revisions:
            return len(first).to_bytes(8, "little") + first + second
        third = table_bytes(EMITTED.empty_table() if state.emitted is None
                            else state.emitted)
        return (len(first).to_bytes(8, "little") + first + len(second).to_bytes(8, "little")
                + second + third)

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
        version = REVISED_VERSION if self.revisions else PANE_BUCKET_VERSION
        check_stored(metadata.get(_VERSION_KEY, b"?").decode(), version,
                     metadata.get(_SPEC_KEY, b"").decode(), self.stream.spec)
        keys = keys.replace_schema_metadata(None)
        if not self.revisions:
            return PaneBucket(keys, table_of(blob[8 + size:]))
        rest = blob[8 + size:]
        second = int.from_bytes(rest[:8], "little")
        return PaneBucket(keys, table_of(rest[8:8 + second]), table_of(rest[8 + second:]))


EMITTED = pa.schema([pa.field(KEY_ID, pa.int64()), pa.field(WINDOW, pa.int64()),
                     pa.field(REVISION, pa.int64())])
"""The revisions kept: the next revision of each window written and still kept."""


def pairs(first: IntArray, second: IntArray) -> npt.NDArray[np.void]:
    """(first[i], second[i]) as one comparable value each (16 bytes), for membership and
    lookups of (key, window) pairs without a combined number that could overflow."""
    both = np.ascontiguousarray(np.stack([first, second], axis=1).astype(np.int64))
    found: npt.NDArray[np.void] = both.view(np.dtype((np.void, 16))).ravel()
    return found


def unique_pairs(keys: list[IntArray], windows: list[IntArray]) -> tuple[IntArray, IntArray]:
    """The distinct (key, window) pairs among the arrays, sorted by key then window."""
    if not keys:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key, window = np.concatenate(keys), np.concatenate(windows)
    order = np.lexsort((window, key))
    key, window = key[order], window[order]
    new = np.r_[True, (key[1:] != key[:-1]) | (window[1:] != window[:-1])] if len(key) \
        else np.zeros(0, dtype=bool)
    return key[new], window[new]


def next_revisions(emitted: pa.Table, key: IntArray, window: IntArray
                   ) -> tuple[IntArray, pa.Table]:
    """The revision each (key, window) is written with now (0 for a window not written
    before), and `emitted` with each one's next."""
    held = pairs(emitted.column(KEY_ID).to_numpy(), emitted.column(WINDOW).to_numpy())
    wanted = pairs(key, window)
    revision = np.zeros(len(key), dtype=np.int64)
    order = np.argsort(held, kind="stable")
    at = np.searchsorted(held[order], wanted)
    inside = at < len(held)
    found = np.zeros(len(key), dtype=bool)
    found[inside] = held[order][at[inside]] == wanted[inside]
    revision[found] = emitted.column(REVISION).to_numpy()[order][at[found]]
    others = emitted.filter(pa.array(~np.isin(held, wanted)))
    updated = pa.table({KEY_ID: pa.array(key, pa.int64()),
                        WINDOW: pa.array(window, pa.int64()),
                        REVISION: pa.array(revision + 1, pa.int64())}, schema=EMITTED)
    return revision, pa.concat_tables([others, updated])


def with_column(table: pa.Table, name: str, values: IntArray) -> pa.Table:
    """`table` with its column `name` set to `values` (`NONE` as null)."""
    return table.set_column(table.schema.get_field_index(name), name,
                            pa.array(values, pa.int64(), mask=values == NONE))
