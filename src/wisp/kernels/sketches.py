"""Sketches over many frames `[lo, hi)` of one sequence of values at once, and the
canonical bytes of an HLL sketch: the algorithms of the sketch aggregations, over any
sketch `Sketching` makes (`runtime/aggregates/sketches.py` gives the library's families,
reads the values from Arrow and writes the results back).

- `frame_items`: the sketches whose union is each frame's sketch; by `two_stacks` when
  neither bound ever decreases (sliding and running frames: each value added about
  twice whatever the frames' length, one union a frame), else each frame's values added
  anew. `suffixes` keeps the stored suffix sketches of a segment within
  `SUFFIX_BUDGET`.
- `canonical_hll`: a compact HLL sketch's bytes made a function of its content alone.

Nothing here reads Arrow; `job` is passed through to the family untouched.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

Mask = npt.NDArray[np.bool_]
T = TypeVar("T")


class Sketching(Protocol):
    """How sketches of one kind are made, fed and stored (`job`: the caller's
    description of the aggregation, passed through)."""

    def new(self, job: Any) -> Any:
        """An empty sketch."""
        ...

    def update(self, sketch: Any, values: Any) -> None:
        """`values` (a slice of the values) added to `sketch`."""
        ...

    def blob(self, sketch: Any) -> bytes:
        """The sketch's bytes."""
        ...

    def load(self, job: Any, blob: bytes) -> Any:
        """The sketch of `blob`."""
        ...

    def max_bytes(self, job: Any) -> int:
        """The most bytes a sketch's blob takes."""
        ...


HLL_MODE_BYTE = 7
"""HLL serialized preamble: the byte whose low two bits are the mode (0: a list of
coupons, 1: a hash set of them, 2: the array of registers)."""
HLL_FLAGS_BYTE = 5
HLL_OUT_OF_ORDER = 16
"""The flag that tells a reader the registers were merged (out of order): it estimates
from the registers alone (the composite estimator) instead of the accumulator the
update order built (HIP)."""
HLL_HIP_BYTES = slice(8, 16)
"""Where the register mode keeps the update-order accumulator (zeroed: unread)."""
HLL_LIST_COUPONS = 8
HLL_LIST_COUNT_BYTE = 6
HLL_SET_COUNT = slice(8, 12)
HLL_SET_COUPONS = 12

SUFFIX_BUDGET = 64 << 20
"""The bytes of stored suffix sketches a frame kernel keeps at most for one segment; past
it, it keeps every `stride`-th and adds the few values between."""


def round_half_up(estimates: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Estimates rounded as Spark's `hll_sketch_estimate` rounds them (half up)."""
    rounded: npt.NDArray[np.int64] = np.floor(estimates + 0.5).astype(np.int64)
    return rounded


def canonical_hll(blob: bytes) -> bytes:
    """A compact HLL sketch's bytes made a function of its content alone: the coupons of
    the list and set modes sorted (their order is the updates'), the register mode's
    update-order accumulator zeroed, and every mode marked out of order, so that every
    reader estimates from the registers (the composite estimator), and a union of such
    sketches does too, even where it grows from coupons to registers."""
    data = bytearray(blob)
    mode = data[HLL_MODE_BYTE] & 3
    data[HLL_FLAGS_BYTE] |= HLL_OUT_OF_ORDER
    if mode == 2:
        data[HLL_HIP_BYTES] = bytes(HLL_HIP_BYTES.stop - HLL_HIP_BYTES.start)
        return bytes(data)
    if mode == 0:
        start, count = HLL_LIST_COUPONS, data[HLL_LIST_COUNT_BYTE]
    else:
        start = HLL_SET_COUPONS
        (count,) = struct.unpack("<i", bytes(data[HLL_SET_COUNT]))
    end = start + 4 * count
    coupons = np.frombuffer(bytes(data[start:end]), dtype="<u4")
    data[start:end] = np.sort(coupons).tobytes()
    return bytes(data)


def valid_bounds(valid: Mask, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Row positions as positions among the valid rows (how many valid rows precede)."""
    before: npt.NDArray[np.int64] = np.r_[0, np.cumsum(valid, dtype=np.int64)]
    found: npt.NDArray[np.int64] = before[positions]
    return found


DIRECT_VALUES = 16
"""Frames of at most this many values are sketched from their values directly: adding
them costs less than reading a stored suffix and a union."""


def frame_items(family: Sketching, job: Any, values: Any,
                lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
                finish: Callable[[list[Any]], T]) -> list[T]:
    """`finish` of the sketches whose union is the sketch of `values[lo[j]:hi[j]]`, for
    every frame `j`: by `two_stacks` when neither bound ever decreases (sliding and
    running frames), else each frame's values added anew."""
    if len(lo) > 1 and ((np.diff(lo) < 0).any() or (np.diff(hi) < 0).any()):
        out = []
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            sketch = family.new(job)
            family.update(sketch, values[a:b])
            out.append(finish([sketch]))
        return out
    return two_stacks(family, job, values, lo, hi, finish)


def two_stacks(family: Sketching, job: Any, values: Any,
               lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
               finish: Callable[[list[Any]], T]) -> list[T]:
    """Frames whose bounds never decrease, each value added about twice whatever the
    frames' length: the run is cut at pivots so that each frame spans one; the frames
    spanning pivot `p` read the sketch of `values[lo:p]` (a suffix of the segment
    before `p`, stored for each `lo` a frame starts at) and the one sketch of
    `values[p:hi]` (growing as `hi` does), one union a frame. A new pivot is the `hi`
    of the first frame starting past the last one, so segments never overlap. A frame
    of at most `DIRECT_VALUES` values is sketched from its values instead."""
    empty = finish([])
    out: list[T] = []
    pivot = -1
    stored: dict[int, bytes] = {}
    marks: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
    front: Any = None
    end = 0
    for j, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
        if a >= b:
            out.append(empty)
            continue
        if b - a <= DIRECT_VALUES:
            direct = family.new(job)
            family.update(direct, values[a:b])
            out.append(finish([direct]))
            continue
        if a > pivot or front is None:
            starts = np.unique(lo[j:j + int(np.searchsorted(lo[j:], b))])
            marks, stored = suffixes(family, job, values, a, b, starts)
            pivot, front, end = b, family.new(job), b
        if b > end:
            family.update(front, values[end:b])
            end = b
        parts: list[Any] = []
        if a < pivot:
            at = int(np.searchsorted(marks, a))
            mark = int(marks[at]) if at < len(marks) else pivot
            if mark < pivot:
                parts.append(family.load(job, stored[mark]))
            if mark > a:
                between = family.new(job)
                family.update(between, values[a:mark])
                parts.append(between)
        if b > pivot:
            parts.append(front)
        out.append(finish(parts))
    return out


def suffixes(family: Sketching, job: Any, values: Any, a: int, b: int,
             starts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], dict[int, bytes]]:
    """The sketches of `values[s:b]` for the frame starts `s` in `[a, b)`, added from
    `b` down, kept for every `stride`-th start (all of them unless they would pass
    `SUFFIX_BUDGET`): the marks kept and their sketches' bytes."""
    stride = max(1, math.ceil(len(starts) * family.max_bytes(job) / SUFFIX_BUDGET))
    marks = starts[::-1][::stride][::-1]
    stored: dict[int, bytes] = {}
    sketch = family.new(job)
    upper = b
    for mark in marks[::-1].tolist():
        family.update(sketch, values[mark:upper])
        stored[mark] = family.blob(sketch)
        upper = mark
    return marks, stored
