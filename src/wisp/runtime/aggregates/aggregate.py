"""One aggregation over every frame `[lo, hi)` of a key's run (`kernels/window_agg.py`),
and the picklable description of an aggregation the executors get (`AggregateJob`)."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispError, WispInputError
from ...kernels import merging, order_stats
from ...kernels import window_agg as wa
from ...spec.aggregates import (
    AGGREGATOR_METHODS,
    Aggregator,
    Definition,
    aggregator_error,
    check_state,
    snake_case,
)
from ..codecs.arrays import decimal_from_unscaled, dense_ranks, null_mask, numeric_values, validity
from ..limits import check_blob
from .k_lists import FRAME_KERNELS as K_LIST_FRAMES
from .sketches import frame_sketches


@dataclass(frozen=True)
class AggregateJob:
    """What the executor needs to know about one aggregation (picklable): its
    `definition` (what it is: the runtime's registries dispatch on its `algebra`, never
    on a name) and what the plan resolved of it."""

    definition: Definition
    column: str | None
    value_class: str
    output_type: pa.DataType
    func: Callable[..., Any] | None
    lifetimes: bool = False
    name: str = ""
    """The output column (a udaf's name, in its errors)."""
    returns: str = ""
    """A udaf's declared type, as the user wrote it."""
    by: str | None = None
    """max_by/min_by: the column whose extreme row is picked."""
    q: float = 0.5
    """quantile: the probability (median: 0.5)."""
    interpolation: str = "linear"
    """quantile: numpy's method (`spec.aggregates.INTERPOLATIONS`; median: "linear")."""
    half_life: float = 0.0
    """ewm_mean: the half-life in ticks."""
    aggregator: Aggregator | None = None
    """A user's mergeable aggregation (`spec.aggregates.Aggregator`)."""
    k: int = 0
    """k-collections: how many values; KLL sketches: the sketch's `k`."""
    lg_k: int = 0
    """HLL and theta sketches: log2 of the buckets or nominal entries."""
    qs: tuple[float, ...] | None = None
    """approx_quantile over a list of probabilities: them (else `q`)."""

    @property
    def label(self) -> str:
        """How errors name it: `sum(v)`, `count()` (a user's aggregator by its
        snake-case class name), as `Aggregation.label`."""
        shown = (self.definition.name if self.aggregator is None
                 else snake_case(self.aggregator))
        return f"{shown}({self.column or ''})"


@dataclass(frozen=True)
class Frames:
    """What a frame kernel (`FRAME_KERNELS`) reads: the job, one key's run (`group`,
    its rows' `ticks`), the frames `[lo, hi)` and the memo one call's aggregations
    share; the job's column and its validity are converted once per call."""

    job: AggregateJob
    group: pa.Table
    ticks: npt.NDArray[Any]
    lo: npt.NDArray[np.int64]
    hi: npt.NDArray[np.int64]
    memo: dict[tuple[str, ...], Any]

    @property
    def converted(self) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
        assert self.job.column is not None
        key = ("column", self.job.column)
        if key not in self.memo:
            column = self.group.column(self.job.column).combine_chunks()
            self.memo[key] = column, validity(column)
        found: tuple[pa.Array, npt.NDArray[np.bool_]] = self.memo[key]
        return found

    @property
    def column(self) -> pa.Array:
        return self.converted[0]

    @property
    def valid(self) -> npt.NDArray[np.bool_]:
        return self.converted[1]

    def out(self, result: wa.Result) -> pa.Array:
        """A kernel's result as the job's output column."""
        return to_arrow(result, self.column, self.job)

    def values(self) -> npt.NDArray[Any]:
        return numeric_values(self.column, self.job.value_class)

    def float_sums(self) -> wa.Values:
        """The frame sums of a float column, once per call (mean reuses sum's)."""
        key = ("float_sums", self.job.column or "")
        if key not in self.memo:
            self.memo[key] = wa.frame_sum(self.values(), self.valid, self.lo, self.hi)
        sums: wa.Values = self.memo[key]
        return sums


FrameAggregate = Callable[[Frames], pa.Array]
"""A frame kernel: one aggregation over every frame (`FRAME_KERNELS`)."""


def aggregate(job: AggregateJob, group: pa.Table, ticks: npt.NDArray[Any],
              lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
              memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
    """One aggregation over every frame of one key's run, by its algebra's frame kernel
    (`FRAME_KERNELS`). `memo` (optional) shares the column conversions, valid counts
    and float sums between the aggregations of one call (mean reuses sum's frame
    sums)."""
    if job.column is None:
        return to_arrow(wa.count_rows(lo, hi), None, job)
    kernel = FRAME_KERNELS.get(job.definition.algebra)
    if kernel is None:
        raise AssertionError(f"no frame kernel for {job.label}")
    return kernel(Frames(job, group, ticks, lo, hi, {} if memo is None else memo))


def _count(f: Frames) -> pa.Array:
    return f.out(wa.count_valid(f.valid, f.lo, f.hi))


def _sum(f: Frames) -> pa.Array:
    if f.job.value_class == "float":
        return f.out(f.float_sums())
    return f.out(wa.frame_sum(f.values(), f.valid, f.lo, f.hi))


def _mean(f: Frames) -> pa.Array:
    if f.job.value_class == "float":
        return f.out(wa.frame_mean(values=np.zeros(0), valid=f.valid, lo=f.lo, hi=f.hi,
                                   sums=f.float_sums().values))
    return f.out(wa.frame_mean(scaled(f.values(), f.job, f.column), f.valid, f.lo, f.hi))


def _moments(f: Frames, *, root: bool) -> pa.Array:
    """`variance` (`root`: `stddev`)."""
    return f.out(wa.frame_moments(scaled(f.values(), f.job, f.column), f.valid, f.lo, f.hi,
                                  root=root))


def _extreme(f: Frames, *, largest: bool) -> pa.Array:
    """`max` (`largest`) or `min`: of decimals and non-numeric columns by their dense
    ranks."""
    if f.job.value_class in ("ordered", "decimal"):
        return f.out(wa.frame_extreme_by_rank(dense_ranks(f.column), f.valid, f.lo, f.hi,
                                              largest=largest))
    return f.out(wa.frame_extreme(f.values(), f.valid, f.lo, f.hi, largest=largest))


def _first_last(f: Frames, *, latest: bool) -> pa.Array:
    """`last` (`latest`) or `first`."""
    return f.out(wa.frame_first_last(f.valid, f.lo, f.hi, latest=latest))


def _extreme_by(f: Frames, *, largest: bool) -> pa.Array:
    """`max_by` (`largest`) or `min_by`."""
    assert f.job.by is not None
    by = f.group.column(f.job.by).combine_chunks()
    return f.out(wa.frame_extreme_by(dense_ranks(by), validity(by), f.lo, f.hi,
                                     largest=largest))


def _collect(f: Frames) -> pa.Array:
    return f.out(wa.frame_collect(f.valid, f.lo, f.hi))


def _count_distinct(f: Frames) -> pa.Array:
    counts = order_stats.frame_count_distinct(dense_ranks(f.column), f.valid, f.lo, f.hi)
    return f.out(wa.Values(counts, np.ones(len(counts), dtype=bool)))


def _quantile(f: Frames) -> pa.Array:
    return f.out(quantiles(f.job, f.column, f.valid, f.lo, f.hi))


def _ewm_mean(f: Frames) -> pa.Array:
    """The planner gives it running frames only."""
    values = scaled(f.values(), f.job, f.column)
    result, has = order_stats.frame_ewm_mean(values.astype(np.float64), f.valid, f.ticks,
                                             f.lo, f.hi, f.job.half_life)
    return f.out(wa.Values(result, has))


def _udaf(f: Frames) -> pa.Array:
    assert f.job.func is not None
    results = wa.frame_apply(f.job.func, udaf_values(f.job, f.column), f.ticks, f.valid,
                             f.lo, f.hi)
    return udaf_array(f.job, results)


def _aggregator(f: Frames) -> pa.Array:
    """A user's `Aggregator`: its states merged over each frame."""
    assert f.job.aggregator is not None
    with naming_errors(f.job.aggregator):
        results = merging.frame_results(f.job.aggregator, udaf_values(f.job, f.column),
                                        f.ticks, f.valid, f.lo, f.hi)
    return user_array(f.job, results)


FRAME_KERNELS: dict[str, FrameAggregate] = {
    "count": _count,
    "sum": _sum,
    "mean": _mean,
    "variance": partial(_moments, root=False),
    "stddev": partial(_moments, root=True),
    "min": partial(_extreme, largest=False),
    "max": partial(_extreme, largest=True),
    "first": partial(_first_last, latest=False),
    "last": partial(_first_last, latest=True),
    "collect": _collect,
    "udaf": _udaf,
    "quantile": _quantile,
    "count_distinct": _count_distinct,
    "max_by": partial(_extreme_by, largest=True),
    "min_by": partial(_extreme_by, largest=False),
    "ewm_mean": _ewm_mean,
    "aggregator": _aggregator,
    "hll": frame_sketches,
    "theta": frame_sketches,
    "kll": frame_sketches,
    **K_LIST_FRAMES,
}
"""One aggregation over every frame of a key's run, by its algebra
(`Definition.algebra`; `count()` of rows aside, which has no column). The time-weighted
mean has none: only the interval kernels, which clip lifetimes, compute it. The
k-collections' and the histogram's are `k_lists.FRAME_KERNELS`."""


def quantiles(job: AggregateJob, column: pa.Array, valid: npt.NDArray[np.bool_],
              lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> wa.Values:
    """`quantile`/`median` of a numeric column (decimals by their unscaled integers), at
    the job's `q` by its `interpolation` (a median's: 0.5, "linear")."""
    values = numeric_values(column, job.value_class)
    divisor = 1.0
    if job.value_class == "decimal":
        divisor = float(10 ** column.type.scale)
        if values.dtype == object:  # beyond 64 bits: ordered as floats
            values = values.astype(np.float64)
    result, has = order_stats.frame_quantile(values, valid, lo, hi, job.q, job.interpolation,
                                             divisor)
    return wa.Values(result, has)


def udaf_array(job: AggregateJob, results: list[Any]) -> pa.Array:
    """A udaf's results as an array of its declared type. A result Arrow cannot convert
    to that type is a `WispInputError` naming the udaf, its declared type and the
    result, not Arrow's bare error."""
    try:
        return pa.array(results, type=job.output_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
        bad = next((r for r in results if not _converts(r, job.output_type)), None)
        shown = "a result" if bad is None else f"the result {bad!r} ({type(bad).__name__})"
        raise WispInputError(
            f"`returns` of udaf {job.name!r} must be the type of its results, found "
            f"returns={job.returns!r} ({job.output_type}) and {shown}, which does not "
            "convert to it; return values of the declared type, or declare the type "
            "the function returns") from error


@contextmanager
def naming_errors(aggregator: Aggregator) -> Iterator[None]:
    """Turn an error raised inside a user aggregator's method into a `WispInputError`
    naming the aggregator and the method (found on the traceback: no cost per call)."""
    try:
        yield
    except WispError:
        raise
    except Exception as error:
        codes = {getattr(getattr(type(aggregator), name, None), "__code__", None): name
                 for name in (*AGGREGATOR_METHODS, "remove")}
        method = "add"
        trace = error.__traceback__
        while trace is not None:
            method = codes.get(trace.tb_frame.f_code, method)
            trace = trace.tb_next
        raise aggregator_error(aggregator, method, "run without error",
                               f"{type(error).__name__}: {error}") from error


def dump_state(aggregator: Aggregator, state: Any) -> str:
    """A user aggregator's state as text for a kernel's carried scalars (pickled,
    base64); a state that cannot be pickled is a `WispInputError` naming the
    aggregator, one past its share of the worker's memory cap a `WispMemoryError`."""
    blob = check_state(aggregator, "add", state)
    check_blob(type(aggregator).__name__, len(blob))
    return base64.b64encode(blob).decode("ascii")


def load_state(aggregator: Aggregator, text: str) -> Any:
    """The state `dump_state` wrote (wisp's own stream state, never input data)."""
    return pickle.loads(base64.b64decode(text.encode("ascii")))


def user_array(job: AggregateJob, results: list[Any]) -> pa.Array:
    """A user aggregator's `finish` results as an array of its declared type; a result
    that does not convert is a `WispInputError` naming the aggregator and `finish`."""
    assert job.aggregator is not None
    try:
        return pa.array(results, type=job.output_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
        bad = next((r for r in results if not _converts(r, job.output_type)), None)
        raise aggregator_error(
            job.aggregator, "finish", f"return values of its `returns` type "
            f"{job.returns!r} ({job.output_type}) or None",
            "a result" if bad is None else f"{bad!r} ({type(bad).__name__})") from error


def _converts(value: Any, data_type: pa.DataType) -> bool:
    try:
        pa.array([value], type=data_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True


def udaf_values(job: AggregateJob, column: pa.Array) -> npt.NDArray[Any]:
    """A column's values as a user function sees them: numbers as numpy numbers
    (decimals as float64), other types as numpy objects."""
    if job.value_class in ("ordered", "other"):
        values: npt.NDArray[Any] = column.to_numpy(zero_copy_only=False)
        return values
    return scaled(numeric_values(column, job.value_class), job, column)


def scaled(values: npt.NDArray[Any], job: AggregateJob, column: pa.Array) -> npt.NDArray[Any]:
    """Decimal values as float64 numbers (for mean, variance, stddev and udafs)."""
    if job.value_class == "decimal":
        return values.astype(np.float64) / float(10 ** column.type.scale)
    return values


def to_arrow(result: wa.Result, column: pa.Array | None, job: AggregateJob) -> pa.Array:
    if isinstance(result, wa.Take):
        assert column is not None
        positions = pa.array(result.positions, pa.int64(), mask=null_mask(result.valid))
        return column.take(positions).cast(job.output_type)
    if isinstance(result, wa.Lists):
        assert column is not None
        items = column.take(pa.array(result.positions, pa.int64()))
        offsets = pa.array(result.offsets.astype(np.int32), pa.int32())
        return pa.ListArray.from_arrays(offsets, items).cast(job.output_type)
    target = job.output_type
    if pa.types.is_decimal(target):
        unscaled = result.values
        if unscaled.dtype != object:
            unscaled = unscaled.astype(np.int64)
        return decimal_from_unscaled(unscaled, result.valid, target.precision, target.scale)
    if pa.types.is_boolean(target):
        return pa.array(result.values.astype(bool), pa.bool_(),
                        mask=null_mask(result.valid))
    if pa.types.is_floating(target):
        return pa.array(result.values.astype(np.float64), pa.float64(),
                        mask=null_mask(result.valid)).cast(target)
    values = result.values
    if values.dtype == object:
        limit = 1 << 63
        if any(not -limit <= int(v) < limit for v, ok in zip(values, result.valid,
                                                              strict=True) if ok):
            raise ArithmeticError(
                f"wisp: {job.label} overflows a long (64-bit) result, as Spark's "
                "ARITHMETIC_OVERFLOW reports in ANSI mode; cast the column to a decimal")
        values = values.astype(np.int64)
    return pa.array(values.astype(np.int64), pa.int64(),
                    mask=null_mask(result.valid)).cast(target)
