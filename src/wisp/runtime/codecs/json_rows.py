"""Output rows as JSON text that Spark parses back exactly, without a Python stage.

After Spark's stateful operator, its output could be turned back into rows by a second
Python stage (`mapInArrow`), which costs a Python worker per task and micro-batch even
when no window closed. Where the output holds few rows (the windows of pane partials,
not a row per event), the operator writes them instead as one JSON text of columns,
`{"c0": [...], "c1": [...], ...}`, which Spark's `from_json` reads in the JVM
(`engine/stream_rows.py`). Every value crosses exactly:

- integers and booleans as JSON numbers and booleans; strings as JSON strings;
- doubles and floats as Python writes them (the shortest text that reads back as the
  same value; `NaN`, `Infinity`, `-Infinity`, which Spark reads with
  `allowNonNumericNumbers`); `-0.0` stays `-0.0`;
- decimals as their exact text; binary as base64;
- timestamps (with or without time zone) as long microseconds; dates as days;
- null as `null`.

Nested and other types are not carried (`carries` says so); a stream reads none of
them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def carried(data_type: pa.DataType) -> bool:
    """Whether values of this Arrow type cross as JSON exactly."""
    t = pa.types
    return bool(t.is_integer(data_type) or t.is_floating(data_type)
                or t.is_boolean(data_type) or t.is_string(data_type)
                or t.is_large_string(data_type) or t.is_decimal(data_type)
                or t.is_binary(data_type) or t.is_large_binary(data_type)
                or t.is_date32(data_type)
                or (t.is_timestamp(data_type) and data_type.unit == "us"))


def carries(schema: pa.Schema) -> bool:
    """Whether every column of `schema` crosses as JSON exactly."""
    return all(carried(f.type) for f in schema)


def column_values(values: pa.ChunkedArray | pa.Array) -> list[Any]:
    """A column's values as JSON-ready Python values (see the module's list)."""
    data_type = values.type
    if pa.types.is_timestamp(data_type):
        values = pc.cast(values, pa.int64())
    elif pa.types.is_date32(data_type):
        values = pc.cast(values, pa.int32())
    elif pa.types.is_decimal(data_type):
        values = pc.cast(values, pa.string())
    elif pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type):
        return [None if v is None else base64.b64encode(v).decode("ascii")
                for v in values.to_pylist()]
    found: list[Any] = values.to_pylist()
    return found


def rows_json(batches: Sequence[pa.RecordBatch], schema: pa.Schema) -> str:
    """The batches' rows (cast to `schema`, whose types `carries`) as one JSON text of
    columns named `c0`, `c1`, ... in `schema`'s order."""
    table = pa.Table.from_batches([b if b.schema == schema else b.cast(schema)
                                   for b in batches], schema=schema)
    return json.dumps({f"c{i}": column_values(table.column(i))
                       for i in range(table.num_columns)},
                      allow_nan=True, separators=(",", ":"))
