"""Aggregations over items alive over ranges of positions (`kernels/stabbing.py`): the
sliding windows whose evictions are not oldest first (positions: firings), and the
hopping and snapshot windows over interval events (positions: runs of windows)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..kernels import stabbing as sb
from ..kernels import window_agg as wa
from .aggregate import AggregateJob, aggregate, scaled, to_arrow, udaf_array, udaf_values
from .codec import dense_ranks, numeric_values, validity

LISTED = ("quantile", "median", "count_distinct", "max_by", "min_by")
"""Aggregates computed over each position's listed items (`listed`)."""


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
    the items' times, for udafs). `memo` (optional) shares the valid counts and the
    numeric sums of a column between the aggregations of one call (mean reuses sum's
    sums, min and max the counts)."""
    n = len(ticks)
    memo = {} if memo is None else memo
    if job.column is None:
        return to_arrow(wa.Values(stab.counts(), np.ones(stab.m, dtype=bool)), None, job)
    if job.fn in LISTED or job.aggregator is not None:
        return listed(job, group, ticks, stab)
    column = group.column(job.column).combine_chunks()
    valid = validity(column)
    fn = job.fn
    if fn == "count":
        return to_arrow(wa.Values(stab.counts(valid), np.ones(stab.m, dtype=bool)),
                        column, job)
    if fn in ("first", "last"):
        return to_arrow(sb.alive_positions(stab, n, valid, fn), column, job)
    if fn == "collect":
        return to_arrow(sb.alive_collect(stab, valid), column, job)
    if fn == "udaf":
        assert job.func is not None
        results = sb.alive_apply(stab, job.func, udaf_values(job, column), ticks, valid)
        return udaf_array(job, results)
    if fn in ("min", "max") and job.value_class in ("ordered", "decimal"):
        return to_arrow(sb.alive_extreme_by_rank(stab, fn, dense_ranks(column), valid),
                        column, job)
    values = numeric_values(column, job.value_class)
    counts_key, sums_key = (job.column, "counts"), (job.column, "sums")
    if fn in ("min", "max", "mean") and counts_key not in memo:
        memo[counts_key] = stab.counts(valid)
    if fn in ("sum", "mean") and job.value_class in ("integer", "float") and (
            sums_key not in memo):  # their sums are the unscaled ones
        memo[sums_key] = sb.alive_sum(stab, values, valid).values
    if fn in ("min", "max"):
        return to_arrow(sb.alive_extreme(stab, fn, values, valid, memo[counts_key]),
                        column, job)
    if fn == "sum":
        if sums_key in memo:
            return to_arrow(wa.Values(memo[sums_key], np.ones(stab.m, dtype=bool)),
                            column, job)
        return to_arrow(sb.alive_sum(stab, values, valid), column, job)
    values = scaled(values, job, column)
    if fn == "mean":
        return to_arrow(sb.alive_mean(stab, values, valid, memo.get(sums_key),
                                      memo[counts_key]), column, job)
    if fn in ("variance", "stddev"):
        return to_arrow(sb.alive_moments(stab, fn, values, valid), column, job)
    raise AssertionError(f"no kernel for {fn}")
