"""A bucket's keys stepped at once, for kernels that take a key's rows in order (every
kind but the pane partials): what `StreamKernel` does key by key, done once for all the
keys of the bucket where it does not depend on the key.

The rows waiting for the watermark are one table for the bucket (`BucketState.pending`,
key columns included), not a table per key. A handler call then reads the time column
once, splits off the late rows with one comparison (each row against its own key's fed
horizon), takes the rows the watermark made complete out of the bucket's table with one
filter, sorts them once by key then time and tie-break (stable: a key's waiting rows
before its new ones, as `StreamKernel.on_rows` orders them) and finds each key's
earliest waiting time for its timer with one reduction. Only the kernel's step stays
per key: its state is the key's own.

The keys stepped and the rows, outputs, states and timers are those of the per-key
operator: each key with new rows (even if all of them are late), then each other key
whose timer the watermark has reached (`KeyBuckets.due`); no step before the first
watermark (as `StreamKernel.advance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..codecs.grouping import Key, canonical, normalized
from ..codecs.sorting import sort_order
from ..windows.resumable import Horizon
from .bucket_state import BucketState, BucketStep, Entry
from .operator import TICKS_PER_MS, StreamKernel, StreamState, due_timer, late_past_filter

GROUP = "__wisp_group"
ROW = "__wisp_row"


@dataclass(frozen=True)
class Grouped:
    """A table's rows by key: each row's group (`ids`), and per group its canonical key
    and its key values, the groups numbered in the order their first row comes."""

    ids: npt.NDArray[np.int64]
    keys: list[Key]
    values: list[dict[str, Any]]


def grouped(table: pa.Table, names: list[str]) -> tuple[pa.Table, Grouped]:
    """The table with its key columns as Spark groups them (`normalized`), and its rows
    by key."""
    keys = normalized(table.select(names))
    for name in names:
        table = table.set_column(table.schema.get_field_index(name),
                                 table.schema.field(name), keys.column(name))
    numbered = keys.append_column(ROW, pa.array(np.arange(table.num_rows)))
    groups = numbered.group_by(names, use_threads=False).aggregate([(ROW, "list")])
    members = groups.column(f"{ROW}_list").combine_chunks()
    offsets = members.offsets.to_numpy()
    rows = members.values.to_numpy()  # each group's rows, in input order
    order = np.argsort(rows[offsets[:-1]], kind="stable")  # groups as they first come
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    ids = np.empty(table.num_rows, dtype=np.int64)
    ids[rows] = np.repeat(ranks, np.diff(offsets))
    found = groups.select(names).take(pa.array(order)).to_pylist()
    return table, Grouped(ids, [canonical(tuple(v.values())) for v in found], found)


def rows_at_once(stream: StreamKernel, names: list[str], state: BucketState,
                 table: pa.Table, watermark_ms: int, emit_late: bool) -> BucketStep:
    """A handler call of the bucket (its new rows, key columns included; none on its
    timer): the late rows of each key, the outputs, the state and the bucket's timer."""
    new = table.num_rows
    rows = table.select(stream.schema.names).cast(stream.schema)
    waiting = state.pending
    combined = rows if waiting is None or waiting.num_rows == 0 else pa.concat_tables(
        [waiting, rows])
    start = combined.num_rows - new  # the new rows come after the waiting ones
    if combined.num_rows == 0:
        return due_only(stream, state, watermark_ms)
    combined, groups = grouped(combined, names)
    entries = [state.entries.get(k) for k in groups.keys]
    ticks = stream.ticks(combined)
    late: list[tuple[pa.Table, str]] = []
    fed = np.array([0 if e is None else e.state.fed for e in entries], dtype=np.int64)
    new_ids = groups.ids[start:]
    late_rows = (ticks[start:] < fed[new_ids]) & (fed[new_ids] != 0)
    if late_rows.any():
        if not emit_late:  # Spark's filter let a late row through
            raise late_past_filter(int(late_rows.sum()))
        late = late_split(stream, combined.slice(start), new_ids, late_rows, entries)
        keep = np.concatenate([np.ones(start, dtype=bool), ~late_rows])
        combined = combined.filter(pa.array(keep))
        ticks, ids = ticks[keep], groups.ids[keep]
    else:
        ids = groups.ids
    touched = np.zeros(len(groups.keys), dtype=bool)
    touched[np.unique(new_ids)] = True
    known: list[Entry] = []
    for g, entry in enumerate(entries):
        if entry is None:  # a key's first rows
            entry = state.entries[groups.keys[g]] = Entry(groups.values[g],
                                                          stream.empty(), None)
        known.append(entry)
    stepped = [(k, e) for k, e, t in zip(groups.keys, known, touched, strict=True) if t]
    seen = {k for k, _e in stepped}
    stepped += [(k, e) for k, e in state.due(watermark_ms) if k not in seen]
    number = {k: g for g, k in enumerate(groups.keys)}
    outputs = advance(stream, state, combined, ticks, ids, number, stepped, watermark_ms)
    return BucketStep(late, outputs, state, state.timer())


def due_only(stream: StreamKernel, state: BucketState, watermark_ms: int) -> BucketStep:
    """A call without rows, new or waiting: the keys whose timer is due."""
    empty = stream.schema.empty_table()
    outputs = advance(stream, state, empty, np.zeros(0, dtype=np.int64),
                      np.zeros(0, dtype=np.int64), {}, state.due(watermark_ms),
                      watermark_ms)
    return BucketStep([], outputs, state, state.timer())


def late_split(stream: StreamKernel, rows: pa.Table, ids: npt.NDArray[np.int64],
               late: npt.NDArray[np.bool_], entries: list[Entry | None]
               ) -> list[tuple[pa.Table, str]]:
    """The late rows of each key that has some, with the reason, keys as they come."""
    found: list[tuple[pa.Table, str]] = []
    for g in dict.fromkeys(ids[late].tolist()):
        entry = entries[g]
        assert entry is not None
        found.append((rows.filter(pa.array(late & (ids == g))),
                      stream.late_reason(entry.state)))
    return found


def advance(stream: StreamKernel, state: BucketState, combined: pa.Table,
            ticks: npt.NDArray[Any], ids: npt.NDArray[np.int64], number: dict[Key, int],
            stepped: list[tuple[Key, Entry]], watermark_ms: int) -> list[pa.RecordBatch]:
    """Feed each stepped key its rows at or below the watermark in order, with the
    horizon the watermark promises; keep the rest in the bucket's table; set the
    stepped keys' timers (as `StreamKernel.advance`, key by key)."""
    groups = max(number.values(), default=-1) + 1
    if watermark_ms <= 0:  # no horizon: every row waits, no step
        state.pending = combined
        earliest = earliest_times(ticks, ids, groups)
        for key, entry in stepped:
            g = number.get(key)
            state.entries[key] = Entry(entry.values, entry.state, due_timer(
                None if g is None else earliest[g], None))
        return []
    horizon: Horizon = watermark_ms * TICKS_PER_MS + 1
    takes = np.zeros(groups, dtype=bool)
    for key, _entry in stepped:
        if key in number:
            takes[number[key]] = True
    ready = (ticks < horizon) & takes[ids]
    chunk = combined.filter(pa.array(ready))
    chunk_ids = ids[ready]
    if chunk.num_rows:
        keyed = chunk.append_column(GROUP, pa.array(chunk_ids))
        order = sort_order(keyed, (GROUP, *stream.order))
        chunk = chunk.take(order)
        chunk_ids = chunk_ids[order.to_numpy()]
    bounds = np.searchsorted(chunk_ids, np.arange(groups + 1))
    rest = ~ready
    state.pending = combined.filter(pa.array(rest))
    earliest = earliest_times(ticks[rest], ids[rest], groups)
    outputs: list[pa.RecordBatch] = []
    empty = chunk.slice(0, 0)
    for key, entry in stepped:
        g = number.get(key)
        rows = empty if g is None else chunk.slice(bounds[g], bounds[g + 1] - bounds[g])
        out, kernel_state = stream.kernel.step(entry.state.kernel, rows, horizon)
        if out.num_rows:
            outputs.append(out)
        timer = due_timer(None if g is None else earliest[g],
                          stream.kernel.wake(kernel_state))
        state.entries[key] = Entry(entry.values, StreamState(
            kernel_state, entry.state.pending, max(entry.state.fed, int(horizon))), timer)
    return outputs


def earliest_times(ticks: npt.NDArray[Any], ids: npt.NDArray[np.int64], groups: int
                   ) -> list[Any]:
    """Each group's earliest time among the rows (None: no row)."""
    found: list[Any] = [None] * groups
    if len(ticks) == 0:
        return found
    order = np.argsort(ids, kind="stable")
    ids, ticks = ids[order], ticks[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    for g, low in zip(ids[starts].tolist(), np.minimum.reduceat(ticks, starts),
                      strict=True):
        found[g] = low
    return found
