"""One aggregation over every frame `[lo, hi)` of a key's run (`kernels/window_agg.py`),
and the picklable description of an aggregation the executors get (`AggregateJob`)."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..errors import WispError, WispInputError
from ..kernels import merging, order_stats
from ..kernels import window_agg as wa
from ..spec.aggregates import (
    AGGREGATOR_METHODS,
    Aggregator,
    Definition,
    aggregator_error,
    check_state,
    definition_of,
)
from .codec import decimal_from_unscaled, dense_ranks, null_mask, numeric_values, validity
from .limits import check_blob


@dataclass(frozen=True)
class AggregateJob:
    """What the executor needs to know about one aggregation (picklable)."""

    fn: str
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
    half_life: float = 0.0
    """ewm_mean: the half-life in ticks."""
    definition: Definition | None = None
    """What the aggregation is (its capabilities); None: the built-in `fn`'s."""
    aggregator: Aggregator | None = None
    """A user's mergeable aggregation (`spec.aggregates.Aggregator`)."""

    def __post_init__(self) -> None:
        if self.definition is None:
            object.__setattr__(self, "definition", definition_of(self.fn))

    @property
    def capabilities(self) -> Definition:
        """`definition`, always set."""
        assert self.definition is not None
        return self.definition


def aggregate(job: AggregateJob, group: pa.Table, ticks: npt.NDArray[Any],
              lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64],
              memo: dict[tuple[str, ...], Any] | None = None) -> pa.Array:
    """One aggregation over every frame of one key's run. `memo` (optional) shares the
    column conversions, valid counts and float sums between the aggregations of one
    call (mean reuses sum's frame sums)."""
    if job.column is None:
        return to_arrow(wa.count_rows(lo, hi), None, job)
    if job.aggregator is not None:
        column = group.column(job.column).combine_chunks()
        with naming_errors(job.aggregator):
            results = merging.frame_results(job.aggregator, udaf_values(job, column), ticks,
                                            validity(column), lo, hi)
        return user_array(job, results)
    memo = {} if memo is None else memo
    name = job.column
    if ("column", name) not in memo:
        column = group.column(name).combine_chunks()
        memo[("column", name)] = column, validity(column)
    column, valid = memo[("column", name)]
    fn = job.fn
    if fn in ("sum", "mean") and job.value_class == "float":
        if ("sum", name) not in memo:
            values = numeric_values(column, job.value_class)
            memo[("sum", name)] = wa.frame_sum(values, valid, lo, hi)
        sums = memo[("sum", name)]
        if fn == "sum":
            return to_arrow(sums, column, job)
        return to_arrow(wa.frame_mean(values=np.zeros(0), valid=valid, lo=lo, hi=hi,
                                      sums=sums.values), column, job)
    if fn == "count":
        return to_arrow(wa.count_valid(valid, lo, hi), column, job)
    if fn in ("max_by", "min_by"):
        assert job.by is not None
        by = group.column(job.by).combine_chunks()
        return to_arrow(wa.frame_extreme_by(fn, dense_ranks(by), validity(by), lo, hi),
                        column, job)
    if fn == "count_distinct":
        counts = order_stats.frame_count_distinct(dense_ranks(column), valid, lo, hi)
        return to_arrow(wa.Values(counts, np.ones(len(counts), dtype=bool)), column, job)
    if fn in ("quantile", "median"):
        return to_arrow(quantiles(job, column, valid, lo, hi), column, job)
    if fn == "ewm_mean":  # the planner gives it running frames only
        values = scaled(numeric_values(column, job.value_class), job, column)
        result, has = order_stats.frame_ewm_mean(values.astype(np.float64), valid,
                                                 ticks, lo, hi,
                                                 job.half_life)
        return to_arrow(wa.Values(result, has), column, job)
    if fn in ("first", "last"):
        return to_arrow(wa.frame_first_last(fn, valid, lo, hi), column, job)
    if fn == "collect":
        return to_arrow(wa.frame_collect(valid, lo, hi), column, job)
    if fn == "udaf":
        assert job.func is not None
        results = wa.frame_apply(job.func, udaf_values(job, column), ticks, valid, lo, hi)
        return udaf_array(job, results)
    if fn in ("min", "max") and job.value_class in ("ordered", "decimal"):
        return to_arrow(wa.frame_extreme_by_rank(fn, dense_ranks(column), valid, lo, hi),
                        column, job)
    values = numeric_values(column, job.value_class)
    if fn in ("min", "max"):
        return to_arrow(wa.frame_extreme(fn, values, valid, lo, hi), column, job)
    if fn == "sum":
        return to_arrow(wa.frame_sum(values, valid, lo, hi), column, job)
    values = scaled(values, job, column)
    if fn == "mean":
        return to_arrow(wa.frame_mean(values, valid, lo, hi), column, job)
    if fn in ("variance", "stddev"):
        return to_arrow(wa.frame_moments(fn, values, valid, lo, hi), column, job)
    raise AssertionError(f"no kernel for {fn}")


def quantiles(job: AggregateJob, column: pa.Array, valid: npt.NDArray[np.bool_],
              lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> wa.Values:
    """`quantile`/`median` of a numeric column (decimals by their unscaled integers)."""
    values = numeric_values(column, job.value_class)
    divisor = 1.0
    if job.value_class == "decimal":
        divisor = float(10 ** column.type.scale)
        if values.dtype == object:  # beyond 64 bits: ordered as floats
            values = values.astype(np.float64)
    interpolation = "linear" if job.fn == "median" else job.interpolation
    result, has = order_stats.frame_quantile(values, valid, lo, hi, job.q, interpolation, divisor)
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
                f"wisp: {job.fn}({job.column}) overflows a long (64-bit) result, as Spark's "
                "ARITHMETIC_OVERFLOW reports in ANSI mode; cast the column to a decimal")
        values = values.astype(np.int64)
    return pa.array(values.astype(np.int64), pa.int64(),
                    mask=null_mask(result.valid)).cast(target)
