"""Kernel states through bytes, and the batch driver of resumable kernels."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from wisp.runtime.windows.resumable import STATE_VERSION, KernelState, pending, resumed


def test_a_state_survives_bytes_with_its_rows_and_scalars() -> None:
    rows = pa.table({"k": ["a", None], "t": pa.array([1, 2], pa.int64()),
                     "v": pa.array([0.5, math.nan])})
    scalars = {"n": 3, "newest": -(2**63), "x": math.inf, "y": -math.inf, "z": math.nan,
               "label": "s", "flag": True, "none": None}
    back = KernelState.from_bytes(KernelState(rows, scalars).to_bytes())
    assert back.rows.schema == rows.schema
    assert repr(back.rows.to_pydict()) == repr(rows.to_pydict())  # NaN kept
    assert back.rows.schema.metadata is None
    assert {k: v for k, v in back.scalars.items() if k != "z"} == {
        k: v for k, v in scalars.items() if k != "z"}
    assert math.isnan(back.scalars["z"])  # type: ignore[arg-type]


def test_an_empty_state_survives_bytes() -> None:
    rows = pa.table({"t": pa.array([], pa.int64())})
    back = KernelState.from_bytes(KernelState(rows).to_bytes())
    assert back.rows.num_rows == 0 and back.rows.schema == rows.schema and back.scalars == {}


def test_a_state_of_another_format_is_refused() -> None:
    blob = KernelState(pa.table({"t": [1]})).to_bytes()
    assert KernelState.from_bytes(blob).scalars == {}
    table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    metadata = dict(table.schema.metadata)
    metadata[b"wisp.state.version"] = b"999"
    sink = pa.BufferOutputStream()
    changed = table.replace_schema_metadata(metadata)
    with pa.ipc.new_stream(sink, changed.schema) as writer:
        writer.write_table(changed)
    with pytest.raises(ValueError, match="kernel state of format 999, expected 1"):
        KernelState.from_bytes(sink.getvalue().to_pybytes())
    assert STATE_VERSION == 1


class Tail:
    """A toy resumable kernel: it carries every row (a state that cannot be bounded),
    outputs each row once, and records how many rows each step reads."""

    keys = ("k",)

    def __init__(self) -> None:
        self.read: list[int] = []

    def step(self, state: KernelState | None, chunk: pa.Table
             ) -> tuple[pa.RecordBatch, KernelState]:
        rows = pending(state, chunk)
        self.read.append(rows.num_rows)
        return pa.RecordBatch.from_pydict({"t": chunk.column("t").to_pylist()},
                                          schema=OUT), KernelState(rows)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"t": []}, schema=OUT)

    def run_group(self, group: pa.Table, runs: object = None) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"t": group.column("t").to_pylist()}, schema=OUT)


OUT = pa.schema([pa.field("t", pa.int64())])


def _batches(n: int, size: int) -> list[pa.RecordBatch]:
    keys = ["a"] * n + ["b"] * 3
    times = [*range(n), 0, 1, 2]
    return [pa.RecordBatch.from_pydict({"k": keys[i:i + size], "t": times[i:i + size]})
            for i in range(0, len(keys), size)]


def test_the_driver_gives_every_row_once_and_reads_an_unbounded_state_linearly() -> None:
    kernel = Tail()
    n = 20_000
    out = [t for b in resumed(kernel, iter(_batches(n, 100)), limit=50)
           for t in b.column("t").to_pylist()]
    assert sorted(out) == sorted([*range(n), 0, 1, 2])
    # a step per piece would read about n**2 / (2 * 50) rows: 4,000,000 here
    assert sum(kernel.read) < 3 * n
    assert len(kernel.read) < 20


def test_the_driver_steps_every_piece_while_the_state_is_small() -> None:
    class Nothing(Tail):
        def step(self, state: KernelState | None, chunk: pa.Table
                 ) -> tuple[pa.RecordBatch, KernelState]:
            out, _ = super().step(None, chunk)
            return out, KernelState(chunk.slice(0, 0))

    kernel = Nothing()
    list(resumed(kernel, iter(_batches(1_000, 100)), limit=50))
    assert len(kernel.read) >= 1_000 // 100  # no piece waited
