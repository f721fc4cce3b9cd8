"""The sketch aggregations on the executors: HyperLogLog ("hll": `hll_sketch`,
`approx_count_distinct`), theta ("theta": `theta_sketch`) and KLL quantiles ("kll":
`kll_sketch`, `approx_quantile`), built with the sketch library whose binary formats
Spark's sketch functions read.

Each algebra has its `Family` here (how a sketch is made, fed, stored and combined) and
from it a partial state (`SketchPartial`, registered in `partials.ALGEBRAS`), a frame
kernel (`frame_sketches`, in `aggregate.FRAME_KERNELS`, over the frames' algorithm of
`kernels/sketches.py`) and, through the listed path, an alive kernel.

What the values are, as the library hashes them:

- integers as 64-bit integers, as Spark's `hll_sketch_agg` and `theta_sketch_agg` hash
  int and bigint columns; strings by their UTF-8 bytes, as Spark hashes strings (the
  empty string counts for nothing, as in Spark); floats as doubles, `-0.0` as `0.0`
  and every NaN as one value (the library's canonical doubles; Spark's theta sketch
  hashes doubles so too, its HLL sketch refuses them);
- KLL: numbers as doubles (decimals by their value); NaN is not a value the sketch
  holds (a window of NaN alone has no quantile, as an empty one).

Every HLL and theta sketch wisp outputs is canonical: a function of the set of values
alone, whatever their order and whatever the parts they were split into and merged
from, so a stream's result is a batch's, bytes for bytes (`Hll.combine`,
`Theta.combine`). A KLL sketch is exact while a window holds at most `k` values, and
then canonical too (its values written in ascending order, `Kll.combine`); beyond, the
library compacts it at random: within the sketch's normalized rank error, its bytes
(and quantiles) may differ between runs, as Spark's own.

Empty windows give the empty sketch's bytes (Spark's `hll_sketch_agg`,
`theta_sketch_agg` and `kll_sketch_agg_double` give it for a group without values,
never null), an estimate of 0, and no quantile (null).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels.sketches import (
    HLL_FLAGS_BYTE,
    HLL_HIP_BYTES,
    HLL_MODE_BYTE,
    HLL_OUT_OF_ORDER,
    canonical_hll,
    frame_items,
    round_half_up,
    valid_bounds,
)
from ..codecs.arrays import numeric_values, validity

if TYPE_CHECKING:
    from .aggregate import AggregateJob, Frames
    from .partials import Chunk, Columns, IntArray, Layout

Mask = npt.NDArray[np.bool_]


def sketch_library() -> Any:
    """The sketch library (`datasketches`), imported on first use: an executor that never
    runs a sketch aggregation need not have it (docs/cluster.md)."""
    return importlib.import_module("datasketches")

def hashed_values(job: AggregateJob, column: pa.Array, valid: Mask) -> list[Any]:
    """The valid values of `column` as Python values the hashing sketches take: integers
    as ints (hashed as 64-bit integers), floats as floats, strings as str."""
    kept = column.filter(pa.array(valid, pa.bool_())) if not valid.all() else column
    if job.value_class == "integer":
        kept = kept.cast(pa.int64())
    elif job.value_class == "float":
        kept = kept.cast(pa.float64())
    values: list[Any] = kept.to_pylist()
    return values


def double_values(job: AggregateJob, column: pa.Array, valid: Mask
                  ) -> npt.NDArray[np.float64]:
    """The valid values of a numeric column as doubles (decimals by value), what a KLL
    sketch holds (NaN among them: the sketch skips it)."""
    values = numeric_values(column, job.value_class)
    if job.value_class == "decimal":
        doubles = values.astype(np.float64) / float(10 ** column.type.scale)
    else:
        doubles = values.astype(np.float64)
    kept: npt.NDArray[np.float64] = doubles[valid]
    return kept


class Family(Protocol):
    """One kind of sketch: how the executors make, feed, store and combine it."""

    def values(self, job: AggregateJob, column: pa.Array, valid: Mask) -> Any:
        """The valid values of `column` in the form `update` takes (sliceable)."""
        ...

    def new(self, job: AggregateJob) -> Any:
        """An empty sketch to update."""
        ...

    def update(self, sketch: Any, values: Any) -> None:
        """Add `values` (a slice of `values()`) to `sketch`."""
        ...

    def blob(self, sketch: Any) -> bytes:
        """A sketch's bytes as states and stored suffixes keep them (not canonical)."""
        ...

    def load(self, job: AggregateJob, blob: bytes) -> Any:
        """The sketch `blob` (`blob` or `combine`) holds."""
        ...

    def combine(self, job: AggregateJob, parts: Sequence[Any]) -> bytes:
        """The bytes of the union of `parts` (sketches; none: the empty sketch), in the
        canonical form wisp outputs."""
        ...

    def max_bytes(self, job: AggregateJob) -> int:
        """About the most bytes one stored sketch takes (bounds the stored suffixes)."""
        ...

    def result(self, job: AggregateJob, combined: list[bytes]) -> pa.Array:
        """The job's output (`Definition.output`) of each `combine` result."""
        ...


class Hashing:
    """What the two hashing sketches share: their values and their read outputs."""

    def values(self, job: AggregateJob, column: pa.Array, valid: Mask) -> Any:
        return hashed_values(job, column, valid)

    def update(self, sketch: Any, values: Any) -> None:
        put = sketch.update
        for value in values:
            put(value)

    def estimate(self, job: AggregateJob, blob: bytes) -> float:
        """The estimate of a combined sketch."""
        raise NotImplementedError

    def result(self, job: AggregateJob, combined: list[bytes]) -> pa.Array:
        if job.definition.output == "binary":
            return pa.array(combined, pa.binary()).cast(job.output_type)
        estimates = np.array([self.estimate(job, blob) for blob in combined],
                             dtype=np.float64)
        return pa.array(round_half_up(estimates), pa.int64()).cast(job.output_type)


class Hll(Hashing):
    """HLL_8 sketches of `2 ** lg_k` registers, as Spark's `hll_sketch_agg` makes."""

    def new(self, job: AggregateJob) -> Any:
        return sketch_library().hll_sketch(job.lg_k, sketch_library().tgt_hll_type.HLL_8)

    def blob(self, sketch: Any) -> bytes:
        data: bytes = sketch.serialize_compact()
        return data

    def load(self, job: AggregateJob, blob: bytes) -> Any:
        return sketch_library().hll_sketch.deserialize(blob)

    @staticmethod
    def union(job: AggregateJob, parts: Sequence[Any]) -> Any:
        """The HLL_8 sketch of the union of `parts`."""
        union = sketch_library().hll_union(job.lg_k)
        for part in parts:
            union.update(part)
        return union.get_result(sketch_library().tgt_hll_type.HLL_8)

    def combine(self, job: AggregateJob, parts: Sequence[Any]) -> bytes:
        return canonical_hll(self.union(job, parts).serialize_compact())

    def estimate(self, job: AggregateJob, blob: bytes) -> float:
        return float(sketch_library().hll_sketch.deserialize(blob).get_estimate())

    def estimate_parts(self, job: AggregateJob, parts: Sequence[Any]) -> float:
        """`estimate` of `combine(parts)`, without the canonical bytes: a sketch of
        coupons (list and set modes) estimates from its coupons whatever their order,
        and one of registers is read as the canonical one is (marked out of order, its
        update-order accumulator zeroed)."""
        merged = parts[0] if len(parts) == 1 else self.union(job, parts)
        blob = merged.serialize_compact()
        if blob[HLL_MODE_BYTE] & 3 != 2:
            return float(merged.get_estimate())
        data = bytearray(blob)
        data[HLL_FLAGS_BYTE] |= HLL_OUT_OF_ORDER
        data[HLL_HIP_BYTES] = bytes(HLL_HIP_BYTES.stop - HLL_HIP_BYTES.start)
        return float(sketch_library().hll_sketch.deserialize(bytes(data)).get_estimate())

    def max_bytes(self, job: AggregateJob) -> int:
        return 40 + (1 << job.lg_k)


class Theta(Hashing):
    """Theta sketches of `2 ** lg_k` nominal entries (seed 9001, as Spark's)."""

    def new(self, job: AggregateJob) -> Any:
        return sketch_library().update_theta_sketch(job.lg_k)

    def blob(self, sketch: Any) -> bytes:
        data: bytes = sketch.compact().serialize()
        return data

    def load(self, job: AggregateJob, blob: bytes) -> Any:
        return sketch_library().compact_theta_sketch.deserialize(blob)

    def combine(self, job: AggregateJob, parts: Sequence[Any]) -> bytes:
        """The union trimmed to the nominal entries: the `2 ** lg_k` smallest hashes
        of the set and the next as theta, whatever the parts (ordered; not compressed:
        Spark reads both forms, and this one is quicker to write)."""
        union = sketch_library().theta_union(job.lg_k)
        for part in parts:
            union.update(part)
        data: bytes = union.get_result(True).serialize()
        return data

    def estimate(self, job: AggregateJob, blob: bytes) -> float:
        return float(sketch_library().compact_theta_sketch.deserialize(blob).get_estimate())

    def max_bytes(self, job: AggregateJob) -> int:
        return 24 + 8 * (2 << job.lg_k)


class Kll:
    """KLL sketches of doubles of accuracy `k`, as Spark's `kll_sketch_agg_double`
    makes; quantiles read as Spark's `kll_sketch_get_quantile_double` reads them (the
    inclusive search: the smallest value whose rank, counting itself, reaches `q`)."""

    def values(self, job: AggregateJob, column: pa.Array, valid: Mask) -> Any:
        return double_values(job, column, valid)

    def new(self, job: AggregateJob) -> Any:
        return sketch_library().kll_doubles_sketch(job.k)

    def update(self, sketch: Any, values: Any) -> None:
        if len(values):
            sketch.update(values)

    def blob(self, sketch: Any) -> bytes:
        data: bytes = sketch.serialize()
        return data

    def load(self, job: AggregateJob, blob: bytes) -> Any:
        return sketch_library().kll_doubles_sketch.deserialize(blob)

    def combine(self, job: AggregateJob, parts: Sequence[Any]) -> bytes:
        """The merge of `parts`; while it holds every value (at most `k`: not in
        estimation mode), made again from its values in ascending order, so that its
        bytes are a function of the values alone (the library keeps them in arrival
        order), as a stream's sketch must equal the batch's."""
        merged = self.merged(job, parts)
        if not merged.is_estimation_mode() and merged.n > 1:
            ordered = self.new(job)
            ordered.update(np.sort(np.array([item for item, _ in merged], np.float64)))
            merged = ordered
        return self.blob(merged)

    def max_bytes(self, job: AggregateJob) -> int:
        return 64 + 8 * 3 * job.k

    def result(self, job: AggregateJob, combined: list[bytes]) -> pa.Array:
        if job.definition.output == "binary":
            return pa.array(combined, pa.binary()).cast(job.output_type)
        return pa.array([self.read(job, self.load(job, blob)) for blob in combined],
                        job.output_type)

    @staticmethod
    def read(job: AggregateJob, sketch: Any) -> Any:
        """The job's quantile(s) read from `sketch` (the inclusive search, as Spark's
        `kll_sketch_get_quantile_double`); None for an empty sketch."""
        if sketch.is_empty():
            return None
        if job.qs is not None:
            return [float(v) for v in sketch.get_quantiles(list(job.qs), True)]
        return float(sketch.get_quantile(job.q, True))

    def read_parts(self, job: AggregateJob, parts: Sequence[Any]) -> Any:
        """`read` of `combine(parts)` without its canonical bytes: the quantiles of the
        merged sketch (the order of the values it holds does not change them)."""
        return self.read(job, self.merged(job, parts))

    def merged(self, job: AggregateJob, parts: Sequence[Any]) -> Any:
        """The merge of `parts` (the one part itself, unchanged)."""
        if len(parts) == 1:
            return parts[0]
        merged = self.new(job)
        for part in parts:
            merged.merge(part)
        return merged


FAMILIES: dict[str, Family] = {"hll": Hll(), "theta": Theta(), "kll": Kll()}
"""The sketch families, by algebra (`Definition.algebra`)."""


def family_of(job: AggregateJob) -> Family:
    return FAMILIES[job.definition.algebra]


def as_blobs(values: Any) -> list[bytes | None]:
    """A column of sketch bytes (Arrow or a list) as a list."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        found: list[bytes | None] = values.to_pylist()
        return found
    return list(values)


@dataclass(frozen=True)
class SketchPartial:
    """A sketch's partial state: one binary column, each group's sketch serialized
    (`h{i}`); `merge` unions, `finish` outputs the canonical sketch or what is read
    from it (`Family.result`)."""

    family: Family
    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        return [(f"h{i}", pa.binary())]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        values = self.family.values(job, chunk.column, chunk.valid)
        bounds = valid_bounds(chunk.valid, np.r_[chunk.starts, len(chunk.valid)])
        blobs = []
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            sketch = self.family.new(job)
            self.family.update(sketch, values[a:b])
            blobs.append(self.family.blob(sketch))
        return {f"h{i}": pa.array(blobs, pa.binary())}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        blobs = as_blobs(states.column(f"h{i}"))
        ends = np.r_[starts[1:], len(order)]
        merged = []
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            parts = [self.family.load(job, blob) for blob in
                     (blobs[j] for j in order[a:b].tolist()) if blob is not None]
            merged.append(self.family.combine(job, parts))
        return {f"h{i}": pa.array(merged, pa.binary())}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        combined = [self.family.combine(job, [] if blob is None
                                        else [self.family.load(job, blob)])
                    for blob in as_blobs(merged[f"h{i}"])]
        return self.family.result(job, combined)


def frame_sketches(f: Frames) -> pa.Array:
    """A sketch aggregation over every frame `[lo, hi)` of a key's run (a frame kernel,
    `aggregate.FRAME_KERNELS`). An HLL estimate is read from each frame's sketch without
    making its canonical bytes (`Hll.estimate_parts`), and quantiles likewise
    (`Kll.read_parts`)."""
    family = family_of(f.job)
    column = f.column
    values = family.values(f.job, column, validity(column))
    lo = valid_bounds(f.valid, f.lo)
    hi = valid_bounds(f.valid, f.hi)
    finish, output = finisher(family, f.job)
    return output(frame_items(family, f.job, values, lo, hi, finish))


def finisher(family: Family, job: AggregateJob
             ) -> tuple[Callable[[list[Any]], Any], Callable[[list[Any]], pa.Array]]:
    """How a result is made from the sketches whose union is a window's sketch, and how
    those results become the job's output column: an HLL estimate and KLL quantiles
    read from the merged parts (`Hll.estimate_parts`, `Kll.read_parts`), anything
    else from the canonical bytes (`Family.combine`, `Family.result`)."""
    if job.definition.output != "binary":
        if isinstance(family, Hll):
            return (partial(family.estimate_parts, job), lambda items: pa.array(
                round_half_up(np.array(items, dtype=np.float64)),
                pa.int64()).cast(job.output_type))
        if isinstance(family, Kll):
            return (partial(family.read_parts, job),
                    lambda items: pa.array(items, job.output_type))
    return partial(family.combine, job), partial(family.result, job)
