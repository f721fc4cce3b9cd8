"""Aggregations over items alive over ranges of positions (`kernels/stabbing.py`): the
sliding windows whose evictions are not oldest first (positions: firings), and the
hopping and snapshot windows over interval events (positions: runs of windows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import stabbing as sb
from ...kernels import window_agg as wa
from ..codecs.arrays import dense_ranks, numeric_values, validity
from .aggregate import AggregateJob, aggregate, scaled, to_arrow, udaf_array, udaf_values


@dataclass(frozen=True)
class Alive:
    """What an alive kernel (`ALIVE_KERNELS`) reads: the job, one key's run (`group`,
    its items' `ticks`), the positions and the items alive there (`stab`), and the memo
    one call's aggregations share."""

    job: AggregateJob
    group: pa.Table
    ticks: npt.NDArray[Any]
    stab: sb.Stabbing
    memo: dict[tuple[str, str], Any]

    @property
    def column(self) -> pa.Array:
        assert self.job.column is not None
        return self.group.column(self.job.column).combine_chunks()

    def out(self, result: wa.Result, column: pa.Array) -> pa.Array:
        """A kernel's result as the job's output column."""
        return to_arrow(result, column, self.job)

    def counts(self, valid: npt.NDArray[np.bool_]) -> Any:
        """The valid counts at each position, once per column and call."""
        key = (self.job.column or "", "counts")
        if key not in self.memo:
            self.memo[key] = self.stab.counts(valid)
        return self.memo[key]

    def sums(self, values: npt.NDArray[Any], valid: npt.NDArray[np.bool_]) -> Any:
        """The unscaled sums at each position of an integer or float column, once per
        column and call (None for other columns: decimals' are scaled apart)."""
        key = (self.job.column or "", "sums")
        if key not in self.memo and self.job.value_class in ("integer", "float"):
            self.memo[key] = sb.alive_sum(self.stab, values, valid).values
        return self.memo.get(key)


AliveAggregate = Callable[[Alive], pa.Array]
"""An alive kernel: one aggregation at every position (`ALIVE_KERNELS`)."""


def listed(job: AggregateJob, group: pa.Table, ticks: npt.NDArray[Any], stab: sb.Stabbing
           ) -> pa.Array:
    """One aggregation per position over its alive items listed in arrival order, as
    frames `[offsets[i], offsets[i + 1])` of the listed rows (`aggregate`): exact for
    any aggregation, at a cost growing with the windows' sizes (O(total members))."""
    lists = sb.alive_collect(stab, np.ones(len(ticks), dtype=bool))
    taken = group.take(pa.array(lists.positions, pa.int64()))
    offsets = lists.offsets.astype(np.int64)
    return aggregate(job, taken, ticks[lists.positions], offsets[:-1], offsets[1:])


def aggregate_alive(job: AggregateJob, group: pa.Table, ticks: npt.NDArray[Any],
                    stab: sb.Stabbing, memo: dict[tuple[str, str], Any] | None = None
                    ) -> pa.Array:
    """One aggregation per position of `stab`, over the items alive there (`ticks`:
    the items' times, for udafs), by its algebra's alive kernel (`ALIVE_KERNELS`).
    `memo` (optional) shares the valid counts and the numeric sums of a column between
    the aggregations of one call (mean reuses sum's sums, min and max the counts)."""
    if job.column is None:
        return to_arrow(wa.Values(stab.counts(), np.ones(stab.m, dtype=bool)), None, job)
    kernel = ALIVE_KERNELS.get(job.definition.algebra)
    if kernel is None:
        raise AssertionError(f"no alive kernel for {job.label}")
    return kernel(Alive(job, group, ticks, stab, {} if memo is None else memo))


def lists_members(job: AggregateJob) -> bool:
    """Whether `aggregate_alive` computes `job` over each position's listed items
    (`listed`) rather than from the items' ranges of positions."""
    return ALIVE_KERNELS.get(job.definition.algebra) is _listed


def _listed(a: Alive) -> pa.Array:
    return listed(a.job, a.group, a.ticks, a.stab)


def _count(a: Alive) -> pa.Array:
    column = a.column
    return a.out(wa.Values(a.stab.counts(validity(column)), np.ones(a.stab.m, dtype=bool)),
                 column)


def _first_last(a: Alive, *, latest: bool) -> pa.Array:
    """`last` (`latest`) or `first`."""
    column = a.column
    return a.out(sb.alive_positions(a.stab, len(a.ticks), validity(column), latest=latest),
                 column)


def _collect(a: Alive) -> pa.Array:
    column = a.column
    return a.out(sb.alive_collect(a.stab, validity(column)), column)


def _udaf(a: Alive) -> pa.Array:
    assert a.job.func is not None
    column = a.column
    results = sb.alive_apply(a.stab, a.job.func, udaf_values(a.job, column), a.ticks,
                             validity(column))
    return udaf_array(a.job, results)


def _extreme(a: Alive, *, largest: bool) -> pa.Array:
    """`max` (`largest`) or `min`: of decimals and non-numeric columns by their dense
    ranks."""
    column = a.column
    valid = validity(column)
    if a.job.value_class in ("ordered", "decimal"):
        return a.out(sb.alive_extreme_by_rank(a.stab, dense_ranks(column), valid,
                                              largest=largest), column)
    values = numeric_values(column, a.job.value_class)
    return a.out(sb.alive_extreme(a.stab, values, valid, a.counts(valid), largest=largest),
                 column)


def _sum(a: Alive) -> pa.Array:
    column = a.column
    valid = validity(column)
    values = numeric_values(column, a.job.value_class)
    sums = a.sums(values, valid)
    if sums is not None:
        return a.out(wa.Values(sums, np.ones(a.stab.m, dtype=bool)), column)
    return a.out(sb.alive_sum(a.stab, values, valid), column)


def _mean(a: Alive) -> pa.Array:
    column = a.column
    valid = validity(column)
    values = numeric_values(column, a.job.value_class)
    counts = a.counts(valid)
    sums = a.sums(values, valid)
    return a.out(sb.alive_mean(a.stab, scaled(values, a.job, column), valid, sums, counts),
                 column)


def _moments(a: Alive, *, root: bool) -> pa.Array:
    """`variance` (`root`: `stddev`)."""
    column = a.column
    values = scaled(numeric_values(column, a.job.value_class), a.job, column)
    return a.out(sb.alive_moments(a.stab, values, validity(column), root=root), column)


ALIVE_KERNELS: dict[str, AliveAggregate] = {
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
    "time_weighted_mean": _mean,
    "quantile": _listed,
    "count_distinct": _listed,
    "max_by": _listed,
    "min_by": _listed,
    "aggregator": _listed,
    "hll": _listed,
    "theta": _listed,
    "kll": _listed,
    "first_k": _listed,
    "last_k": _listed,
    "top_k": _listed,
    "bottom_k": _listed,
    "histogram": _listed,
}
"""One aggregation at every position over the items alive there, by its algebra
(`Definition.algebra`; `count()` of rows aside, which has no column). Quantiles,
distinct counts, max_by/min_by, a user's aggregator, the sketches, the k-collections
and the histogram are computed over each position's listed items (`listed`). The
time-weighted mean comes here only where every item alive at a position lives
through all of its window (snapshot windows:
`SnapshotKernel.needs_members`), so that its weights are equal: the mean."""
