"""Rows across Spark's pandas boundary, exactly.

Spark's stateful operator for Python (`transformWithStateInPandas`) hands each key's
rows over as pandas DataFrames. pandas would turn a null double into NaN, a nullable
long into a float (inexact past 2^53) and timestamps into its own zone-aware type. So
the engine sends each column as pandas carries it without loss (`engine/streaming.py`
builds the Spark side), and `decode` rebuilds the kernel's Arrow table here:

- `ticks`: a time as long microseconds (days for dates, the number for integer time),
  never null (null times are guarded before);
- `flagged`: a number or boolean with its nulls replaced by 0 and a boolean column
  `<label>_null` saying where they were (NaN stays NaN);
- `plain`: strings, binary and decimals, whose pandas objects keep None.

The grouping key arrives as a tuple of the same encodings (`key_values`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

Encoding = Literal["ticks", "flagged", "plain"]
NULL_SUFFIX = "_null"


@dataclass(frozen=True)
class Crossing:
    """How one kernel input column crosses: its name, Arrow type and encoding."""

    name: str
    arrow_type: pa.DataType
    encoding: Encoding
    label: str
    """The name it crosses under: a plain identifier (Spark's pandas rows pass through
    named tuples, which rename fields starting with an underscore)."""

    @property
    def wire(self) -> tuple[str, ...]:
        """The pandas columns that carry it."""
        if self.encoding == "flagged":
            return (self.label, self.label + NULL_SUFFIX)
        return (self.label,)


def decode(frames: Sequence[Any], crossings: Sequence[Crossing]) -> pa.Table:
    """The pandas frames of one key's rows as an Arrow table of `crossings`' columns."""
    import pandas as pd

    frame = frames[0] if len(frames) == 1 else pd.concat(list(frames), ignore_index=True)
    arrays = [decode_column([frame[w] for w in c.wire], c) for c in crossings]
    return pa.table(arrays, names=[c.name for c in crossings])


def decode_column(columns: Sequence[Any], crossing: Crossing) -> pa.Array:
    """One column from the pandas series that carry it."""
    kind = crossing.arrow_type
    if crossing.encoding == "plain":
        return pa.array(list(columns[0]), type=kind, from_pandas=True)
    values = np.asarray(columns[0].to_numpy())
    if crossing.encoding == "ticks":
        return from_wire_ticks(values.astype(np.int64), kind, None)
    mask = np.asarray(columns[1].to_numpy(), dtype=bool)
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return from_wire_ticks(values.astype(np.int64), kind, mask)
    return pa.array(values.astype(kind.to_pandas_dtype()), type=kind, mask=mask)


def from_wire_ticks(values: np.ndarray[Any, Any], kind: pa.DataType,
                    mask: np.ndarray[Any, Any] | None) -> pa.Array:
    """Long ticks (µs; days for dates; the number for integer time) as `kind`."""
    if pa.types.is_date(kind):
        return pa.array(values.astype(np.int32), pa.int32(), mask=mask).cast(kind)
    return pa.array(values, pa.int64(), mask=mask).cast(kind)


def key_values(key: Sequence[Any], crossings: Sequence[Crossing]) -> list[Any]:
    """The grouping key's values (in `crossings`' encodings) as Python values."""
    values: list[Any] = []
    position = 0
    for crossing in crossings:
        value = key[position]
        if crossing.encoding == "flagged":
            null = bool(key[position + 1])
            position += 2
            values.append(None if null else value)
        else:
            position += 1
            missing = value is None or (isinstance(value, float) and value != value)
            values.append(None if missing else value)
    return values


def key_column(value: Any, crossing: Crossing, rows: int) -> pa.Array:
    """A key column of `rows` rows holding `value` (as `key_values` gives it)."""
    kind = crossing.arrow_type
    if value is None:
        return pa.nulls(rows, kind)
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return from_wire_ticks(np.full(rows, int(value), dtype=np.int64), kind, None)
    if crossing.encoding == "flagged":
        scalar = np.asarray([value]).astype(kind.to_pandas_dtype())[0]
        return pa.array(np.full(rows, scalar), type=kind)
    return pa.array([value] * rows, type=kind)

