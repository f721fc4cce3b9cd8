"""Aggregates of interval windows computed without listing any window's members.

A hopping or snapshot window's members are the events whose lifetime covers it: event
`i` covers the member sets (`Groups` base runs) `event_first[i] .. event_stop[i] - 1`.
Counts and exact sums come from a difference array, O(n + runs); every other aggregate
but `collect`, `udaf` and `time_weighted_mean` from a stabbing query on a segment tree,
O(n log runs) (`kernels/stabbing.py`). Neither grows with the number of events alive at
once, so open-ended events and events spanning many windows cost O(log) each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ..kernels import intervals as iv
from ..kernels import stabbing as sb
from ..kernels import window_agg as wa
from .arrow import AggregateJob, scaled, to_arrow
from .arrow_codec import dense_ranks, numeric_values, validity

MEMBER_LISTS = ("collect", "udaf", "time_weighted_mean")
"""Aggregates that need each window's members laid out (their cost grows with them)."""

LONG = 1 << 63


def needs_members(job: AggregateJob) -> bool:
    return job.fn in MEMBER_LISTS


def exact_sums(values: npt.NDArray[Any], valid: npt.NDArray[np.bool_],
               groups: iv.Groups) -> npt.NDArray[Any]:
    """Per base run, the exact sum of its members' integer values: in 64 bits when no
    sum can leave them, else in Python integers (a long result that overflows then
    fails in `to_arrow`, as Spark's ANSI sum does)."""
    masked = np.where(valid, values, 0)
    if masked.dtype != object:
        largest = max(abs(int(masked.max(initial=0))), abs(int(masked.min(initial=0))))
        if largest * len(masked) < LONG:
            return iv.group_sums(groups.event_first, groups.event_stop,
                                 masked.astype(np.int64), groups.base_count)
    delta = np.zeros(groups.base_count + 1, dtype=object)
    np.add.at(delta, groups.event_first, masked.astype(object))
    np.add.at(delta, groups.event_stop, -masked.astype(object))
    sums: npt.NDArray[Any] = np.cumsum(delta)[:groups.base_count]
    return sums


def stabbed(job: AggregateJob, group: pa.Table, groups: iv.Groups,
            where: sb.Cover) -> pa.Array:
    """One aggregation (not one of MEMBER_LISTS) per group of a hopping or snapshot
    window, from the members' cover `where` of the base runs."""
    runs = groups.base_of
    if job.column is None:
        counts = iv.member_counts(groups.event_first, groups.event_stop, groups.base_count)
        return to_arrow(_per_group(counts, None, runs), None, job)
    column = group.column(job.column).combine_chunks()
    valid = validity(column)
    counts = _valid_counts(valid, groups)
    present = counts > 0
    fn = job.fn
    if fn == "count":
        return to_arrow(_per_group(counts, None, runs), column, job)
    if fn in ("first", "last"):
        picked, has = sb.stab_positions(fn, valid, where)
        return to_arrow(wa.Take(picked[runs], has[runs]), column, job)
    if fn in ("min", "max") and job.value_class in ("ordered", "decimal"):
        return to_arrow(_extreme_by_rank(fn, dense_ranks(column), valid, where, runs),
                        column, job)
    values = numeric_values(column, job.value_class)
    exact = job.value_class in ("integer", "decimal")
    if fn == "sum":
        sums = exact_sums(values, valid, groups) if exact else sb.stab_sum(
            np.where(valid, values, 0.0), where)
        return to_arrow(_per_group(sums, None, runs), column, job)
    if fn in ("min", "max"):
        return to_arrow(_extreme(fn, values, valid, groups, where), column, job)
    if fn == "mean":
        if job.value_class == "integer":
            total = exact_sums(values, valid, groups).astype(np.float64)
        else:
            total = sb.stab_sum(np.where(valid, scaled(values, job, column), 0.0), where)
        with np.errstate(divide="ignore", invalid="ignore"):
            means = np.where(present, total / np.maximum(counts, 1), 0.0)
        return to_arrow(_per_group(means, present, runs), column, job)
    if fn in ("variance", "stddev"):
        n, _, m2 = sb.stab_moments(scaled(values, job, column).astype(np.float64), valid,
                                   where)
        enough = n >= 2
        with np.errstate(divide="ignore", invalid="ignore"):
            var = np.where(enough, m2 / np.maximum(n - 1, 1), 0.0)
        return to_arrow(_per_group(np.sqrt(var) if fn == "stddev" else var, enough, runs),
                        column, job)
    raise AssertionError(f"no stabbing aggregate for {fn}")


def _per_group(values: npt.NDArray[Any], valid: npt.NDArray[np.bool_] | None,
               runs: npt.NDArray[np.int64]) -> wa.Values:
    """Results per base run, laid out per group (group `g` shows base run `runs[g]`)."""
    shown = np.ones(len(runs), bool) if valid is None else valid[runs]
    return wa.Values(values[runs], shown)


def _valid_counts(valid: npt.NDArray[np.bool_], groups: iv.Groups) -> npt.NDArray[np.int64]:
    """Per base run, how many members have `valid` set."""
    return iv.group_sums(groups.event_first, groups.event_stop, valid.astype(np.int64),
                         groups.base_count)


def _extreme(kind: str, values: npt.NDArray[Any], valid: npt.NDArray[np.bool_],
             groups: iv.Groups, where: sb.Cover) -> wa.Values:
    """Numeric min/max: NaN is the greatest value (max propagates it; min is NaN only
    when every value is NaN), as in Spark."""
    runs = groups.base_of
    present = _valid_counts(valid, groups) > 0
    if values.dtype.kind == "f":
        ident = -np.inf if kind == "max" else np.inf
        found = sb.stab_extreme(kind, np.where(valid, values, ident), ident, where)
        if kind == "min":
            numbers = _valid_counts(valid & ~np.isnan(values), groups)
            found = np.where(present & (numbers == 0), np.nan, found)
        return _per_group(found, present, runs)
    info = np.iinfo(np.int64)
    ident_i = info.min if kind == "max" else info.max
    data = np.where(valid, values.astype(np.int64), ident_i)
    return _per_group(sb.stab_extreme(kind, data, ident_i, where), present, runs)


def _extreme_by_rank(kind: str, ranks: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_],
                     where: sb.Cover, runs: npt.NDArray[np.int64]) -> wa.Take:
    """min/max of any orderable type by dense rank: a position holding the extreme."""
    none = -1 if kind == "max" else int(np.iinfo(np.int64).max)
    best = sb.stab_extreme(kind, np.where(valid, ranks, none), none, where)
    has = best != none
    representative = np.zeros(int(ranks.max(initial=0)) + 1, dtype=np.int64)
    positions = np.nonzero(valid)[0]
    representative[ranks[positions]] = positions
    picked = representative[np.where(has, best, 0)]
    return wa.Take(picked[runs].astype(np.int64), has[runs])
