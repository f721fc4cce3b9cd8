"""Arrow <-> numpy conversion for the kernels: time columns as ticks, value columns as
numpy values with validity masks, results back to Arrow arrays of the output types."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

DAY = 86_400_000_000


def tick_range_message(time: str) -> str:
    """The error of a window whose bound would leave the 64-bit tick range."""
    return (f"wisp: `time` column {time!r} must keep every window bound within the 64-bit "
            "tick range, found a bound beyond it (a time too close to the limits of the "
            "range for this window; for a decimal time, cast to a decimal with fewer "
            "decimal places)")


def validity(array: pa.Array) -> npt.NDArray[np.bool_]:
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def null_mask(valid: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
    """The `mask` argument of `pa.array` for `valid` (None when nothing is null: no
    validity bitmap to build)."""
    return None if valid.all() else ~valid


def decimal_unscaled(array: pa.Array) -> npt.NDArray[Any]:
    """The unscaled integers of a decimal128 array (nulls as 0): int64 when every value
    fits in 64 bits, else exact Python integers (an object array)."""
    array = array.cast(pa.decimal128(38, array.type.scale)) if array.type.bit_width != 128 \
        else array
    words = np.frombuffer(array.buffers()[1], dtype=np.int64).reshape(-1, 2)
    words = words[array.offset:array.offset + len(array)]
    low, high = words[:, 0].copy(), words[:, 1]
    valid = validity(array)
    if np.any((high != (low >> 63)) & valid):
        exact = np.array([(int(h) << 64) + (int(lo) & 0xFFFF_FFFF_FFFF_FFFF)
                          for lo, h in zip(low, high, strict=True)], dtype=object)
        exact[~valid] = 0
        return exact
    low[~valid] = 0
    return low


def decimal_from_unscaled(unscaled: npt.NDArray[Any], valid: npt.NDArray[np.bool_],
                          precision: int, scale: int) -> pa.Array:
    """A decimal128 array from unscaled integers (int64, or Python ints up to 128 bits)."""
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    if unscaled.dtype == object:
        for i, value in enumerate(unscaled):
            number = int(value) if valid[i] else 0
            low = number & 0xFFFF_FFFF_FFFF_FFFF
            words[i, 0] = low - (1 << 64) if low >= 1 << 63 else low
            words[i, 1] = number >> 64
    else:
        words[:, 0] = unscaled
        words[:, 1] = unscaled >> 63
    array = pa.Array.from_buffers(pa.decimal128(precision, scale), len(unscaled),
                                  [None, pa.py_buffer(words.tobytes())])
    return with_nulls(array, valid)


def with_nulls(array: pa.Array, valid: npt.NDArray[np.bool_]) -> pa.Array:
    if valid.all():
        return array
    return pc.if_else(pa.array(valid), array, pa.scalar(None, array.type))


def decimal_ticks(array: pa.Array) -> npt.NDArray[np.int64]:
    """A decimal time (or delta attribute) as 64-bit ticks of 10^-scale. A value whose
    ticks leave 64 bits (a decimal(38, 18) of 9.3 or more) fails the query: windows
    are computed on 64-bit ticks."""
    unscaled = decimal_unscaled(array)
    if unscaled.dtype == object:
        precision, scale = array.type.precision, array.type.scale
        raise OverflowError(
            f"wisp: a decimal({precision}, {scale}) time or attribute holds a value whose "
            f"ticks (units of 10^-{scale}) leave 64 bits; windows are computed on 64-bit "
            f"ticks: cast the column to a decimal with fewer decimal places, e.g. "
            f"decimal(38, {min(scale, 6)})")
    result: npt.NDArray[np.int64] = unscaled
    return result


def to_ticks(array: pa.Array, kind: str) -> npt.NDArray[Any]:
    """A non-null time column as ticks: int64 microseconds, int64 units, or float64."""
    if kind in ("timestamp", "timestamp_ntz"):
        return np.asarray(array.cast(pa.int64()).to_numpy(zero_copy_only=False),
                          dtype=np.int64)
    if kind == "date":
        days = np.asarray(array.cast(pa.int32()).to_numpy(zero_copy_only=False),
                          dtype=np.int64)
        return days * DAY
    if kind == "decimal":
        return decimal_ticks(array)
    if kind == "float":
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=np.float64)
    return np.asarray(array.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.int64)


def from_ticks(ticks: npt.NDArray[Any], valid: npt.NDArray[np.bool_], kind: str,
               scale: int) -> pa.Array:
    """Ticks back to the output time type (see `engine.columns.output_time_type`)."""
    mask = null_mask(valid)
    if kind == "timestamp":
        return pa.array(ticks.astype(np.int64), pa.int64(), mask=mask).cast(
            pa.timestamp("us", tz="UTC"))
    if kind == "timestamp_ntz":
        return pa.array(ticks.astype(np.int64), pa.int64(), mask=mask).cast(
            pa.timestamp("us"))
    if kind == "date":
        days = (ticks.astype(np.int64) // DAY).astype(np.int32)
        return pa.array(days, pa.int32(), mask=mask).cast(pa.date32())
    if kind == "decimal":
        return decimal_from_unscaled(ticks.astype(np.int64), valid, 38, scale)
    if kind == "float":
        return pa.array(ticks.astype(np.float64), pa.float64(), mask=mask)
    return pa.array(ticks.astype(np.int64), pa.int64(), mask=mask)


def numeric_values(array: pa.Array, value_class: str) -> npt.NDArray[Any]:
    """A value column as numpy (nulls filled with 0): int64 for integers, booleans and
    decimals (unscaled), float64 for floating point."""
    if value_class == "decimal":
        return decimal_unscaled(array)
    target, zero, dtype = ((pa.float64(), 0.0, np.float64) if value_class == "float"
                           else (pa.int64(), 0, np.int64))
    cast = array if array.type == target else array.cast(target)
    filled = cast if cast.null_count == 0 else pc.fill_null(cast, zero)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=dtype)


def dense_ranks(array: pa.Array) -> npt.NDArray[np.int64]:
    """Each value's dense rank in ascending order (equal values share a rank)."""
    ranks = pc.rank(array, sort_keys="ascending", tiebreaker="dense")
    return np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)


def ticks_or_zero(array: pa.Array, kind: str) -> npt.NDArray[Any]:
    """A time column that may hold nulls as ticks (nulls as 0; see `validity`)."""
    if array.null_count == 0:
        return to_ticks(array, kind)
    if kind == "decimal":
        return decimal_ticks(array)
    if kind == "float":
        return np.asarray(pc.fill_null(array, 0.0).to_numpy(zero_copy_only=False),
                          dtype=np.float64)
    if kind == "date":
        days = pc.fill_null(array.cast(pa.int32()), 0)
        return np.asarray(days.to_numpy(zero_copy_only=False), dtype=np.int64) * DAY
    filled = pc.fill_null(array.cast(pa.int64()), 0)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)
