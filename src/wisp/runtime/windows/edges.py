"""Interval events paired from start/end edges on a stream (`wisp.from_edges` over a
streaming DataFrame): `EdgesKernel` wraps any interval kernel that a stream drives.

Batch pairs the edges in one query (`engine/edges.py`): per (key, id), in time order, a
start edge before an end edge at the same time, each start edge is closed by the edge
right after it when that is an end edge; otherwise it is open-ended (null end). A
stream cannot wait for the end edges, and need not: its rows pass the watermark in time
order, so when a step is fed under the horizon `H` (every later row has time >= H), a
start edge whose end edge has not come yet has its end (if any) at or after `H`. It is
alive on `[start, H)` for certain, and every window that ends at or before `H` sees it
exactly as the batch would. So each start edge goes to the wrapped kernel as an
open-ended event; when its end edge arrives (in a later step, its time at or after the
horizon the start was fed under), the end is set on that event in the kernel's carried
rows (`KernelState.rows`, in the kernel's input schema: the id and end columns are among
them) before the kernel takes its next chunk. An event the kernel no longer carries
(no window not yet emitted can hold it) needs no end.

The state: the wrapped kernel's, plus the open starts (per id, the time of the start
edge that the id's next end edge closes) as Arrow bytes in one scalar. An id whose
start never gets an end edge stays there for ever, as its open-ended event stays alive.

Fails as the batch does: a null or unknown edge value, an end edge whose id has no open
start (the edge before it, in the order above, is not a start edge: a start dropped as
late leaves its end edge without one). Two start edges of one id at one time, the
second closed: the batch's order between them is arbitrary, and so is which one this
closes (the latest carried).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispInputError
from ..codecs.arrays import to_ticks
from .resumable import Horizon, KernelState, Streamable

OPEN_SCALAR = "wisp.edges.open"
"""The scalar of the wrapper's state that holds the open starts (Arrow IPC, base64)."""


def _id_key(value: Any) -> Any:
    """A dict key for an id value: NaN ids are one id, as Spark groups them."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


@dataclass(frozen=True)
class EdgesKernel:
    """`inner` (an interval kernel reading `end` as the events' end) over edge rows: each
    chunk holds the `edge` column ("start"/"end") besides the inner kernel's columns, `id`
    among them; `time_kind` says how `time` reads as ticks. Stream only: a batch pairs
    its edges in Spark (`engine/edges.py`)."""

    inner: Streamable
    time: str
    end: str
    edge: str
    id: str
    time_kind: str

    @property
    def keys(self) -> tuple[str, ...]:
        return self.inner.keys

    # ------------------------------------------------------------ the state

    def _split(self, state: KernelState | None
               ) -> tuple[KernelState | None, dict[Any, tuple[Any, int]]]:
        """The inner kernel's state and the open starts: id key -> (id value, ticks)."""
        if state is None:
            return None, {}
        scalars = dict(state.scalars)
        blob = scalars.pop(OPEN_SCALAR, None)
        opened: dict[Any, tuple[Any, int]] = {}
        if isinstance(blob, str) and blob:
            table = pa.ipc.open_stream(pa.py_buffer(base64.b64decode(blob))).read_all()
            for value, ticks in zip(table.column("id").to_pylist(),
                                    table.column("ticks").to_pylist(), strict=True):
                opened[_id_key(value)] = (value, int(ticks))
        return KernelState(state.rows, scalars), opened

    def _joined(self, inner: KernelState, opened: dict[Any, tuple[Any, int]],
                id_type: pa.DataType) -> KernelState:
        table = pa.table({"id": pa.array([v for v, _ in opened.values()], id_type),
                          "ticks": pa.array([t for _, t in opened.values()], pa.int64())})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        blob = base64.b64encode(sink.getvalue().to_pybytes()).decode()
        return KernelState(inner.rows, {**inner.scalars, OPEN_SCALAR: blob})

    # ------------------------------------------------------------ the steps

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Pair the chunk's edges (with the open starts), set the ends of carried events
        that end edges close, and feed the chunk's start edges to the inner kernel."""
        inner, opened = self._split(state)
        self._check_edges(chunk)
        kinds = chunk.column(self.edge).to_pylist()
        ids = chunk.column(self.id).to_pylist()
        ticks = to_ticks(chunk.column(self.time).combine_chunks(), self.time_kind)
        times = chunk.column(self.time).to_pylist()
        # chunk rows come sorted by time (then tie-break): a start before an end at a time
        rank = np.array([0 if k == "start" else 1 for k in kinds], dtype=np.int64)
        order = np.lexsort((np.arange(len(kinds)), rank, ticks)) if len(kinds) else \
            np.zeros(0, dtype=np.int64)
        ends: list[Any] = [None] * len(kinds)
        in_chunk: dict[Any, int] = {}  # id key -> the chunk's open start row
        carried_ends: dict[Any, tuple[Any, int, Any]] = {}  # id key -> (id, start, end)
        for i in order.tolist():
            key = _id_key(ids[i])
            if kinds[i] == "start":
                in_chunk[key] = i
                opened.pop(key, None)
                continue
            if key in in_chunk:
                ends[in_chunk.pop(key)] = times[i]
            elif key in opened:
                value, start = opened.pop(key)
                carried_ends[key] = (value, start, times[i])
            else:
                raise WispInputError(
                    f"`edge` column {self.edge!r} must close an interval opened "
                    f"by a start edge of the same `id` ({self.id!r}), found an end edge "
                    f"without a start for id {'null' if ids[i] is None else ids[i]}")
        for key, i in in_chunk.items():
            opened[key] = (ids[i], int(ticks[i]))
        if inner is not None and carried_ends:
            inner = KernelState(self._closed(inner.rows, carried_ends), inner.scalars)
        starts = np.array([k == "start" for k in kinds], dtype=bool)
        fed = chunk.set_column(chunk.schema.get_field_index(self.end),
                               chunk.schema.field(self.end),
                               pa.array(ends, chunk.schema.field(self.end).type))
        fed = fed.filter(pa.array(starts)).drop_columns([self.edge])
        out, next_inner = self.inner.step(inner, fed, horizon)
        return out, self._joined(next_inner, opened, chunk.schema.field(self.id).type)

    def _check_edges(self, chunk: pa.Table) -> None:
        kinds = chunk.column(self.edge)
        valid = pa.compute.is_in(kinds, value_set=pa.array(["start", "end"]))
        if not pa.compute.all(pa.compute.fill_null(valid, False), min_count=0).as_py():
            raise WispInputError(
                f"`edge` column {self.edge!r} must hold 'start' or 'end', found "
                "a null or another value")

    def _closed(self, rows: pa.Table, closing: dict[Any, tuple[Any, int, Any]]
                ) -> pa.Table:
        """`rows` with the end set on the carried open-ended event each end edge closes
        (its id's latest carried start at the open start's time); an event no longer
        carried needs no end."""
        if rows.num_rows == 0:
            return rows
        ids = rows.column(self.id).to_pylist()
        ticks = to_ticks(rows.column(self.time).combine_chunks(), self.time_kind)
        ends = rows.column(self.end).to_pylist()
        for i in range(len(ids) - 1, -1, -1):
            key = _id_key(ids[i])
            found = closing.get(key)
            if found is not None and ends[i] is None and int(ticks[i]) == found[1]:
                ends[i] = found[2]
                del closing[key]
        index = rows.schema.get_field_index(self.end)
        return rows.set_column(index, rows.schema.field(self.end),
                               pa.array(ends, rows.schema.field(self.end).type))

    def wake(self, state: KernelState) -> Horizon | None:
        inner, _ = self._split(state)
        assert inner is not None
        return self.inner.wake(inner)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The inner kernel's end-of-input outputs (a stream never calls it)."""
        inner, _ = self._split(state)
        return self.inner.finish(inner)

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch | Iterator[pa.RecordBatch]:
        """One key's edge rows, sorted by time, paired and run whole (`runs` must be
        None: a stream feeds one key at a time; a batch pairs edges in Spark)."""
        if runs is not None and len(runs) > 2:
            raise WispInputError("`runs` must hold one key run for the edges kernel, "
                                 f"found {len(runs) - 1}")
        out, state = self.step(None, group)
        rest = self.finish(state)
        return pa.Table.from_batches([out, rest]).combine_chunks().to_batches()[0] \
            if rest.num_rows else out
