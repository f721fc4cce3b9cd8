"""Resumable kernels: one key's rows in chunks, and a small state carried between them.

A kernel that is `Resumable` computes a key's windows from its rows in time order, a
chunk at a time:

    step(state | None, chunk) -> (outputs, state)   # the outputs final given the rows so far
    finish(state | None) -> outputs                  # end of input (batch only)

The state holds only what later outputs can still need (the rows within the window's
reach, an open session, pending anchors, a few counters), never the key's history, and
it serialises to bytes (`KernelState.to_bytes`: Arrow IPC with a format version) so that
a streaming operator can store it between micro-batches. Cutting a key's rows anywhere,
serialising and reloading the state at each cut, gives exactly the outputs of one uncut
run: each kernel's property test checks it (`tests/runtime/windows/resumable_check.py`).

In batch, `resumed` feeds each long key run through `step` in pieces of about
`CHUNK_ROWS` rows, so a key of any size runs in the memory of a few pieces plus the
state; short runs, several keys at once, keep the kernel's vectorised whole-run path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..codecs.batches import CHUNK_ROWS, KeyGroups
from ..limits import check_state

STATE_VERSION = 1
"""The format of a serialised state; a state of another format is refused."""
_VERSION_KEY = b"wisp.state.version"
_SCALARS_KEY = b"wisp.state.scalars"
_PARTIALS_KEY = b"wisp.state.partials"

Scalar = int | float | str | bool | None


@dataclass(frozen=True)
class KernelState:
    """What a kernel carries from one chunk of a key's rows to the next: `rows`, the input
    rows later outputs can still need (in the kernel's input schema), and `scalars`, a few
    plain values (counters, reference values, the newest time seen)."""

    rows: pa.Table
    scalars: Mapping[str, Scalar] = field(default_factory=dict)
    partials: pa.Table | None = None
    """Partial states of open windows (`runtime.aggregates.window_states`), where a kernel carries
    some windows as states instead of rows."""

    def to_bytes(self) -> bytes:
        """The state as Arrow IPC: the rows, with the format version, the scalars and
        the partials (as Arrow IPC of their own) in the schema's metadata."""
        metadata = dict(self.rows.schema.metadata or {})
        metadata[_VERSION_KEY] = str(STATE_VERSION).encode()
        metadata[_SCALARS_KEY] = scalars_json(self.scalars).encode()
        if self.partials is not None:
            metadata[_PARTIALS_KEY] = _ipc(self.partials)
        return _ipc(self.rows.replace_schema_metadata(metadata))

    @classmethod
    def from_bytes(cls, blob: bytes) -> KernelState:
        """The state `to_bytes` wrote; a `ValueError` for another format version."""
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
        metadata = dict(table.schema.metadata or {})
        version = metadata.pop(_VERSION_KEY, b"?").decode()
        if version != str(STATE_VERSION):
            raise ValueError(f"kernel state of format {version}, expected {STATE_VERSION}")
        scalars = scalars_of(metadata.pop(_SCALARS_KEY, b"{}").decode())
        partials = metadata.pop(_PARTIALS_KEY, None)
        return cls(table.replace_schema_metadata(metadata or None), scalars,
                   None if partials is None
                   else pa.ipc.open_stream(pa.py_buffer(partials)).read_all())


def scalars_json(scalars: Mapping[str, Scalar]) -> str:
    """A state's scalars as JSON text (NaN and the infinities tagged)."""
    return json.dumps({k: _encode(v) for k, v in scalars.items()})


def scalars_of(text: str) -> dict[str, Scalar]:
    """The scalars `scalars_json` wrote."""
    return {k: _decode(v) for k, v in json.loads(text).items()}


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _encode(value: Scalar) -> Scalar | dict[str, str]:
    """JSON has no NaN or infinities: those floats travel as tagged strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    return value


def _decode(value: object) -> Scalar:
    if isinstance(value, dict):
        return float(value["float"])
    assert value is None or isinstance(value, (int, float, str, bool))
    return value


class Resumable(Protocol):
    """A kernel that takes a key's rows in chunks (see the module's docstring)."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The key columns: rows of one key are contiguous in the kernel's input."""
        ...

    def step(self, state: KernelState | None, chunk: pa.Table
             ) -> tuple[pa.RecordBatch, KernelState]:
        """The outputs that are final once the key's rows so far (the state's and
        `chunk`'s, in order) are known, and the state for the rows that follow."""
        ...

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The outputs that only the end of the key's rows makes final."""
        ...

    def run_group(self, group: pa.Table, runs: npt.NDArray[np.int64] | None = None
                  ) -> pa.RecordBatch | Iterator[pa.RecordBatch]:
        """The outputs of whole key runs (`runs`: where each begins, then the length),
        as one batch or as batches made one at a time."""
        ...


Horizon = int | float
"""A time in ticks of the time column (int for integer, timestamp and date ticks; float
for float time)."""


class Streamable(Resumable, Protocol):
    """A resumable kernel that a stream can drive: besides its rows, a step may be told
    a `horizon`, a time before which no later row of the key can come (every later row
    has time >= horizon; a stream's watermark `W` promises `W + 1` tick). The outputs
    final under that promise are emitted, even those the rows alone do not make final
    (a `Range` window ending before the horizon, a session whose gap ends at or before
    it, a hopping window that ends at or before it). Without a horizon a step is the
    batch step (its horizon is the newest time of its rows).

    `wake(state)` is the smallest horizon at which a step with no new rows would emit
    something, None when no horizon would (nothing pending, or only what more rows
    decide): the stream sets its timer there."""

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """As `Resumable.step`, with the outputs final before `horizon` too."""
        ...

    def wake(self, state: KernelState) -> Horizon | None:
        """The smallest horizon at which `step(state, <no rows>, horizon)` emits a row."""
        ...


def pending(state: KernelState | None, chunk: pa.Table) -> pa.Table:
    """The state's rows followed by `chunk`'s: the rows a tail-recomputing step reads."""
    if state is None or state.rows.num_rows == 0:
        return chunk
    return pa.concat_tables([state.rows, chunk.select(state.rows.column_names)])


GATHER = 3
"""A long run's pieces wait until they hold `GATHER` times the rows the state carries
before a step reads them (see `resumed`)."""


def resumed(kernel: Resumable, batches: Iterator[pa.RecordBatch],
            limit: int = CHUNK_ROWS) -> Iterator[pa.RecordBatch]:
    """The kernel over a partition's batches sorted by key: runs shorter than `limit`
    several at a time through `run_group`, longer ones in pieces through `step`, then
    `finish`. Memory: a few pieces plus the carried state, whatever a key's size.

    A step reads the carried rows again (tail recompute), so pieces wait until they hold
    `GATHER` times the carried rows: where a state cannot be bounded (a session that
    never breaks, a reset that never comes) its steps then read each row a bounded number
    of times on average instead of once per piece, and where it is bounded by the
    window's reach nothing waits once the state is smaller than a piece.
    (`Resumed` pushed each batch, then closed.)"""
    feed = Resumed(kernel, limit)
    for batch in batches:
        yield from feed.push(batch)
    yield from feed.close()


class Resumed:
    """`resumed` driven by its input: `push` each batch of the partition as it comes, in
    order, for the outputs it makes final, then `close` for the rest; each call's
    outputs are to be read whole before the next call. A caller handed batches one at a
    time (a table function's `eval`) runs the kernel as `resumed` does, in the same
    memory."""

    def __init__(self, kernel: Resumable, limit: int = CHUNK_ROWS) -> None:
        self.kernel = kernel
        self.groups = KeyGroups(kernel.keys, limit)
        self.state: KernelState | None = None
        self.waiting: list[pa.Table] = []
        self.waiting_rows = 0

    def push(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """The outputs final once `batch`, the next of the input, is read."""
        for group in self.groups.push(batch):
            yield from self.take(*group)

    def close(self) -> Iterator[pa.RecordBatch]:
        """The outputs the end of the input makes final."""
        for group in self.groups.close():
            yield from self.take(*group)

    def take(self, table: pa.Table, starts: npt.NDArray[np.int64] | None, first: bool,
             last: bool) -> Iterator[pa.RecordBatch]:
        """The outputs of one item of `key_groups`: whole runs, or a long run's piece."""
        kernel = self.kernel
        if starts is not None:
            found = kernel.run_group(table, starts)
            for out in [found] if isinstance(found, pa.RecordBatch) else found:
                if out.num_rows:
                    yield out
            return
        if first:
            self.state, self.waiting, self.waiting_rows = None, [], 0
        self.waiting.append(table)
        self.waiting_rows += table.num_rows
        carried = 0 if self.state is None else self.state.rows.num_rows
        if not last and self.waiting_rows < GATHER * carried:
            return
        if self.state is not None:
            check_state(self.state.rows, self.waiting, kernel.keys)
        chunk = self.waiting[0] if len(self.waiting) == 1 else pa.concat_tables(self.waiting)
        self.waiting, self.waiting_rows = [], 0
        out, self.state = kernel.step(self.state, chunk)
        if out.num_rows:
            yield out
        if last:
            out, self.state = kernel.finish(self.state), None
            if out.num_rows:
                yield out
