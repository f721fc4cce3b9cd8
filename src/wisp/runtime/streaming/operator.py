"""The executor side of a query over a stream, without Spark: what one key's stateful
operator does with its rows, its state and the watermark (`engine/streaming.py` wraps it
in Spark's `StatefulProcessor`; tests drive it directly, micro-batch by micro-batch).

A key's state is the kernel's resumable state plus the rows that arrived ahead of the
watermark (`pending`). Spark drops a row whose time is at or below the watermark of the
batch before (it counts it as late), so during a batch whose watermark is `W` every row
still to come has time above `W`: the rows at or below `W` are complete. They are
sorted (time, then the tie-break columns, in Spark's order) and fed to the kernel with
the horizon `W + 1` tick (`resumable.Streamable`), which emits every output final under
that promise; the others wait. The key's one timer is set where its next output can be
final: the earliest pending row's time, or the kernel's `wake`.

A kernel that takes rows in any order (`TakesDisorder`: the pane partials of
`panes`) gets every new row at once instead: nothing waits in `pending`, and the
horizon tells it which outputs are final (`absorb`).

Ticks: the watermark is in milliseconds on a microsecond clock. Timestamp and date time
are microseconds; integer time is read as microseconds by the watermark (one tick, one
microsecond), so the same arithmetic holds for all of them. A watermark at or below 0
(no data yet, or only times before 1970: Spark's watermark starts at the epoch) gives
no horizon, and rows wait.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispInputError
from ..codecs.arrays import to_ticks
from ..codecs.sorting import sort_order
from ..windows.resumable import Horizon, KernelState, Streamable

STREAM_STATE_VERSION = 2
TICKS_PER_MS = 1000


@dataclass(frozen=True)
class StreamState:
    """One key's state between micro-batches: the kernel's state (None before its first
    step), the rows waiting for the watermark (in the kernel's input schema) and `fed`,
    the horizon the kernel was last fed up to (0: never): a row below it is late."""

    kernel: KernelState | None
    pending: pa.Table
    fed: int = 0

    def to_row(self, spec: str) -> tuple[int, str, bytes | None, bytes, int]:
        """The value the stateful operator stores: format version, the query's spec
        hash, the kernel state's bytes, the pending rows' Arrow IPC bytes, `fed`."""
        kernel = None if self.kernel is None else self.kernel.to_bytes()
        return (STREAM_STATE_VERSION, spec, kernel, table_bytes(self.pending), self.fed)

    @classmethod
    def from_row(cls, row: Sequence[Any], spec: str) -> StreamState:
        """A stored value read back; one made for another query is refused."""
        version, stored_spec, kernel, pending, fed = row
        check_stored(version, STREAM_STATE_VERSION, stored_spec, spec)
        state = None if kernel is None else KernelState.from_bytes(bytes(kernel))
        return cls(state, table_of(bytes(pending)), int(fed))


def check_stored(version: object, expected_version: int, spec: str, expected_spec: str
                 ) -> None:
    """Refuse stored state of another format or made for another query."""
    if str(version) != str(expected_version):
        raise WispInputError(f"`checkpointLocation` must hold state of format "
                             f"{expected_version}, found format {version!r}")
    if spec != expected_spec:
        raise WispInputError(
            "`checkpointLocation` must belong to this query, found a checkpoint made "
            f"for another query (its spec {spec!r}, this query's {expected_spec!r}): "
            "a changed window, aggregation, key, time or lateness needs a new "
            "checkpoint location")


def table_bytes(table: pa.Table) -> bytes:
    """A table as Arrow IPC stream bytes."""
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def table_of(blob: bytes) -> pa.Table:
    """The table `table_bytes` wrote."""
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def late_past_filter(count: int) -> RuntimeError:
    """The error when late rows reach the operator although Spark's late filter is on."""
    return RuntimeError(f"wisp: {count} late rows reached the stream operator past "
                        "Spark's watermark filter")


def spec_hash(text: str) -> str:
    """A short stable hash of a query's description (the spec stored with its state)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def batch_bytes(batch: pa.RecordBatch) -> bytes:
    """An output batch as Arrow IPC bytes (outputs cross Spark's pandas boundary as
    bytes, so that nulls, NaN and 64-bit integers arrive as they are)."""
    return table_bytes(pa.Table.from_batches([batch]))


def batches_of(blob: bytes) -> list[pa.RecordBatch]:
    batches: list[pa.RecordBatch] = table_of(blob).to_batches()
    return batches


State = TypeVar("State")


@dataclass(frozen=True)
class Step(Generic[State]):
    """What one handler call of an operator that counts its own late rows gives: the
    output batches, the new state, its timer (ms), the late rows counted and the late
    rows applied to windows already written (`on_late="update"`)."""

    outputs: list[pa.RecordBatch]
    state: State
    timer: int | None
    counted: int = 0
    applied: int = 0


@runtime_checkable
class TakesDisorder(Protocol):
    """A `Streamable` kernel that takes a key's rows in any order (the pane partials of
    `panes.PaneKernel`): every new row goes to it at once (`StreamKernel.absorb`), and
    it says itself which rows come too late for the key's state (a window that would
    hold them already closed), rather than the horizon the key was fed up to."""

    def late_times(self, state: KernelState | None, ticks: npt.NDArray[Any]
                   ) -> npt.NDArray[np.bool_]:
        """Which of the rows' times (ticks) come too late for the key's state."""
        ...


@dataclass(frozen=True)
class StreamKernel:
    """One key's stream logic around a `Streamable` kernel: `schema` is the kernel's
    input schema, `time` and `time_kind` its time column, `order` the columns that sort
    a key's rows (time first), `spec` the query's spec hash."""

    kernel: Streamable
    schema: pa.Schema
    time: str
    time_kind: str
    order: tuple[str, ...]
    spec: str

    def empty(self) -> StreamState:
        return StreamState(None, self.schema.empty_table())

    def split_late(self, state: StreamState | None, rows: pa.Table
                   ) -> tuple[pa.Table, pa.Table]:
        """A micro-batch's new rows of the key as (on time, late): a row is late when its
        time lies below the horizon the key's kernel was already fed up to, so that
        outputs it belongs to may have been emitted. Spark's own late filter (the
        default) drops every such row before the operator; with `on_late="emit"` it is
        off and they arrive here. A kernel that takes rows in any order takes a row as
        long as no window holding it was closed for the key (`TakesDisorder.late_times`;
        Spark's filter is off for it)."""
        if state is None or state.fed == 0 or rows.num_rows == 0:
            return rows, rows.slice(0, 0)
        ticks = self.ticks(rows)
        late = (self.kernel.late_times(state.kernel, ticks)
                if isinstance(self.kernel, TakesDisorder) else ticks < state.fed)
        if not late.any():
            return rows, rows.slice(0, 0)
        return rows.filter(pa.array(~late)), rows.filter(pa.array(late))

    def late_reason(self, state: StreamState) -> str:
        """Why rows below `state.fed` are late, naming the watermark they fell under."""
        ticks = state.fed - 1
        if self.time_kind in ("timestamp", "timestamp_ntz", "date"):
            moment = datetime(1970, 1, 1) + timedelta(microseconds=ticks)
            shown = (moment.date().isoformat() if self.time_kind == "date"
                     else moment.isoformat(sep=" "))
        else:
            shown = f"{ticks} (ticks)"
        if isinstance(self.kernel, TakesDisorder):
            return (f"a window holding it was already closed for its key, at the "
                    f"watermark {shown}")
        return (f"at or below the watermark {shown}, up to which the key's rows were "
                "already in windows")

    def on_rows(self, state: StreamState | None, rows: pa.Table, watermark_ms: int
                ) -> tuple[list[pa.RecordBatch], StreamState, int | None]:
        """A micro-batch's new rows of the key, none late (`split_late`): outputs, the
        state, the timer (ms)."""
        state = self.empty() if state is None else state
        pending = pa.concat_tables([state.pending, rows.select(self.schema.names)
                                    .cast(self.schema)])
        return self.advance(StreamState(state.kernel, pending, state.fed), watermark_ms)

    def on_timer(self, state: StreamState | None, watermark_ms: int
                 ) -> tuple[list[pa.RecordBatch], StreamState, int | None]:
        """The key's timer fired: what the watermark has made final."""
        return self.advance(self.empty() if state is None else state, watermark_ms)

    def advance(self, state: StreamState, watermark_ms: int
                ) -> tuple[list[pa.RecordBatch], StreamState, int | None]:
        """Feed the pending rows at or below the watermark to the kernel in order, with
        the horizon the watermark promises; keep the rest; set the next timer."""
        pending = state.pending
        if isinstance(self.kernel, TakesDisorder):
            return self.absorb(state, watermark_ms)
        ticks = self.ticks(pending)
        if watermark_ms <= 0:
            return [], state, self.timer(ticks, None)
        horizon: Horizon = watermark_ms * TICKS_PER_MS + 1
        ready = ticks < horizon
        chunk = pending.filter(pa.array(ready))
        rest = pending.filter(pa.array(~ready))
        chunk = chunk.take(sort_order(chunk, self.order)) if chunk.num_rows else chunk
        out, kernel_state = self.kernel.step(state.kernel, chunk, horizon)
        outputs = [out] if out.num_rows else []
        wake = self.kernel.wake(kernel_state)
        return (outputs, StreamState(kernel_state, rest, max(state.fed, int(horizon))),
                self.timer(self.ticks(rest), wake))

    def absorb(self, state: StreamState, watermark_ms: int
               ) -> tuple[list[pa.RecordBatch], StreamState, int | None]:
        """`advance` for a kernel that takes rows in any order (`TakesDisorder`): every
        pending row goes to the kernel at once, with the horizon the watermark promises
        (none before the first watermark: `-inf`, under which nothing is final)."""
        horizon: Horizon = watermark_ms * TICKS_PER_MS + 1 if watermark_ms > 0 \
            else -math.inf
        out, kernel_state = self.kernel.step(state.kernel, state.pending, horizon)
        fed = state.fed if watermark_ms <= 0 else max(state.fed, int(horizon))
        wake = self.kernel.wake(kernel_state)
        return ([out] if out.num_rows else [],
                StreamState(kernel_state, state.pending.slice(0, 0), fed),
                self.timer(np.zeros(0, dtype=np.int64), wake))

    def ticks(self, table: pa.Table) -> npt.NDArray[Any]:
        return to_ticks(table.column(self.time).combine_chunks(), self.time_kind)

    @staticmethod
    def timer(pending: npt.NDArray[Any], wake: Horizon | None) -> int | None:
        """The watermark (ms) at which the key can next emit: the earliest pending row
        is complete once the watermark reaches its time, the kernel's `wake` once the
        horizon (watermark + 1 tick) reaches it."""
        return due_timer(pending.min() if len(pending) else None, wake)


def due_timer(earliest: Any, wake: Horizon | None) -> int | None:
    """`StreamKernel.timer` from the earliest pending row's time (ticks; None: no row
    waits) and the kernel's `wake`."""
    due = [] if earliest is None else [int(np.floor(earliest))]
    if wake is not None:
        due.append(int(np.ceil(wake)) - 1)
    if not due:
        return None
    return -(-min(due) // TICKS_PER_MS)  # ceil: the watermark reaches it in ms
