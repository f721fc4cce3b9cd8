"""Kernel states through bytes, and the batch driver of resumable kernels."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from wisp.runtime.resumable import STATE_VERSION, KernelState


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
