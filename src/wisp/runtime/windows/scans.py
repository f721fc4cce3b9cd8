"""Running scans of aggregations as accumulators: each aggregation at every position of
a key's rows cut into segments (a cumulative window, a `Since` period, a session, a
policy-tumbling window so far), by its algebra (`SCANS`), with the accumulators carried
between pieces of a key (`Carry`, `carried`), so that a resumed run gives the uncut
one's outputs bit for bit (float sums and moments included, as each is added in row
order, once). The running, session, policy and tick kernels read them.

Counts and exact sums are prefix sums, float sums and Welford's second moments
sequential scans, extremes running maxima, first and last by positions
(`kernels/segments.py`). A step puts the carried accumulators in front of the piece as
a virtual row 0 of the first segment, so a scan over `[carried, row, row, ...]`
continues the uncut one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import merging, moments, order_stats
from ...kernels import window_agg as wa
from ...kernels.runs import run_index
from ...kernels.segments import (
    BoolArray,
    FloatArray,
    IntArray,
    Segments,
    first_positions,
    float_scan,
    int_scan,
    last_positions,
    segment_max,
)
from ..aggregates import running_states
from ..aggregates.aggregate import (
    AggregateJob,
    aggregate,
    dump_state,
    load_state,
    naming_errors,
    scaled,
    to_arrow,
    udaf_values,
    user_array,
)
from ..codecs.arrays import dense_ranks, numeric_values, validity
from .resumable import KernelState, Scalar

_INT_MIN, _INT_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max
_CARRY_PREFIX = "__wisp_carry"
_CARRY = "__wisp_carry_{}__"
_CARRY_BY = "__wisp_carry_by_{}__"


def held_by_accumulators(aggregates: tuple[AggregateJob, ...]) -> bool:
    """Whether a few accumulators per key hold every aggregation
    (`Definition.accumulators`, lifetimes aside), so that a kernel may carry an open
    window as them instead of its rows (`plan.aggregations.accumulated` is the
    planner's side of this rule)."""
    return all(job.definition.accumulators and not job.lifetimes for job in aggregates)


def with_inputs(keys: tuple[str, ...], rows: pa.Table, last: pa.Table) -> pa.Table:
    """A carried state's one row (`carried`) with the input columns of `last`'s last
    row (not the keys, not what `carried` wrote), typed, so that a later step can make
    a chunk of no rows from it (`finish`, a stream's step without rows)."""
    found = last.slice(last.num_rows - 1)
    for name in input_names(keys, found):
        if name not in rows.column_names:
            rows = rows.append_column(name, found.column(name).combine_chunks())
    return rows


def input_names(keys: tuple[str, ...], table: pa.Table) -> list[str]:
    """The columns of a carried state's `table` that are input columns (not the keys,
    not the values `carried` wrote)."""
    return [c for c in table.column_names
            if c not in keys and not c.startswith(_CARRY_PREFIX)]



@dataclass(frozen=True)
class Carry:
    """The accumulators carried into a step (empty in a whole run): aggregate `j`'s
    scalars and carried value; `virtual` is 1 when they lead the scan as position 0."""

    scalars: Mapping[str, Scalar]
    values: pa.Table | None
    virtual: int

    def scalar(self, j: int, name: str, default: Scalar) -> Scalar:
        found = self.scalars.get(f"{j}:{name}")
        return default if found is None else found

    def lead(self, leaves: npt.NDArray[Any], j: int, name: str, default: Scalar
             ) -> npt.NDArray[Any]:
        """`leaves` after aggregate `j`'s carried accumulator `name` (a whole run:
        `leaves` themselves)."""
        return self.pad(leaves, self.scalar(j, name, default))

    def pad(self, leaves: npt.NDArray[Any], value: Scalar) -> npt.NDArray[Any]:
        """`leaves` after `value` in a step, themselves in a whole run; an integer
        beyond 64 bits makes them Python integers."""
        if not self.virtual:
            return leaves
        if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
            return np.concatenate([np.array([value], dtype=object), leaves.astype(object)])
        return np.concatenate([np.array([value], dtype=leaves.dtype), leaves])

    def column(self, j: int, column: pa.Array, name: str = "") -> pa.Array:
        """`column` after the carried value (a whole run: `column` itself); `name`: the
        carried column (default: aggregate `j`'s)."""
        if not self.virtual:
            return column
        name = name or _CARRY.format(j)
        if self.values is not None and self.values.num_rows and name in \
                self.values.column_names:
            carried = self.values.column(name).combine_chunks().cast(column.type)
        else:
            carried = pa.nulls(1, column.type)
        return pa.concat_arrays([carried, column])


@dataclass(frozen=True)
class Scanned:
    """One aggregation over every scanned position: its result, the column a `Take`
    result points into, its accumulators at the last position and (for a `Take`) the
    value there."""

    result: wa.Values | wa.Take | pa.Array
    """Per position; an Arrow array when already in the output type (a user's
    aggregator)."""
    column: pa.Array | None
    final: dict[str, Scalar]
    value: pa.Array | None = None
    by: pa.Array | None = None
    """max_by/min_by: the `by` value carried beside `value`."""


@dataclass(frozen=True)
class Scanning:
    """What a running scan (`SCANS`) reads: aggregation `j`'s job, the rows' values of
    its `column` (and of `by`, for max_by/min_by), the segments of the scanned
    positions, the carried accumulators and each position's time (`times`)."""

    job: AggregateJob
    j: int
    column: pa.Array
    segments: Segments
    carry: Carry
    times: npt.NDArray[Any] | None = None
    by: pa.Array | None = None

    def counted(self) -> tuple[BoolArray, IntArray, dict[str, Scalar]]:
        """The rows' validity, the running counts of valid values and the final count
        accumulator."""
        valid = validity(self.column)
        counts = int_scan(self.carry.lead(valid.astype(np.int64), self.j, "count", 0),
                          self.segments)
        return valid, counts, {f"{self.j}:count": int(counts[-1])}

    def values(self) -> npt.NDArray[Any]:
        return numeric_values(self.column, self.job.value_class)


ScanAggregate = Callable[[Scanning], Scanned]
"""A running scan: one aggregation at every scanned position (`SCANS`)."""


def scan(job: AggregateJob, j: int, column: pa.Array | None, m: int, segments: Segments,
         carry: Carry, times: npt.NDArray[Any] | None = None,
         by: pa.Array | None = None) -> Scanned:
    """Aggregation `j` at every position (the carried accumulators, if any, then the
    `m` rows' values of `column`; `times`: each position's time, for ewm_mean and a
    user's aggregator; `by`: the rows' `by` column, for max_by/min_by), by its
    algebra's scan (`SCANS`)."""
    if job.column is None:
        counts = int_scan(carry.lead(np.ones(m, np.int64), j, "count", 0), segments)
        return Scanned(wa.Values(counts, np.ones(len(counts), bool)), None,
                       {f"{j}:count": int(counts[-1])})
    assert column is not None
    scanner = SCANS.get(job.definition.algebra)
    if scanner is None:  # `refuse` turned it away first
        raise AssertionError(f"no running scan for {job.label}")
    return scanner(Scanning(job, j, column, segments, carry, times, by))


def _count(s: Scanning) -> Scanned:
    _, counts, final = s.counted()
    return Scanned(wa.Values(counts, np.ones(len(counts), bool)), s.column, final)


def _sums(s: Scanning) -> tuple[IntArray, npt.NDArray[Any], dict[str, Scalar]]:
    """The running counts and sums (exact for integers and decimals' unscaled values),
    and the final accumulators."""
    valid, counts, final = s.counted()
    values = s.values()
    j, segments, carry = s.j, s.segments, s.carry
    floating = s.job.value_class == "float"
    masked = np.where(valid, values, 0.0 if floating else 0)
    sums = (float_scan(carry.lead(masked, j, "sum", 0.0), segments) if floating
            else int_scan(carry.lead(masked.astype(values.dtype), j, "sum", 0), segments))
    final[f"{j}:sum"] = float(sums[-1]) if floating else int(sums[-1])
    return counts, sums, final


def _sum(s: Scanning) -> Scanned:
    _, sums, final = _sums(s)
    return Scanned(wa.Values(sums, np.ones(len(sums), bool)), s.column, final)


def _mean(s: Scanning) -> Scanned:
    counts, sums, final = _sums(s)
    divisor = 1.0 if s.job.value_class != "decimal" else float(10 ** s.column.type.scale)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        means = np.where(counts > 0, sums.astype(np.float64) / divisor
                         / np.maximum(counts, 1), 0.0)
    return Scanned(wa.Values(means, counts > 0), s.column, final)


def _extreme(largest: bool, s: Scanning) -> Scanned:
    """`max` (`largest`) or `min`: of decimals and non-numeric columns by their dense
    ranks (`scan_take`), of other numbers by running maxima (`scan_extreme`)."""
    if s.job.value_class in ("ordered", "decimal"):
        return scan_take(s.carry.column(s.j, s.column), s.segments,
                         partial(ranked_positions, largest))
    valid, counts, final = s.counted()
    return scan_extreme(largest, s.j, s.values(), valid, counts, s.segments, s.carry,
                        final, s.column)


def _moments(root: bool, s: Scanning) -> Scanned:
    """`stddev` (`root`) or `variance`."""
    valid, counts, final = s.counted()
    values = s.values()
    if s.job.value_class == "decimal":
        values = values.astype(np.float64) / float(10 ** s.column.type.scale)
    return scan_moments(root, s.j, values.astype(np.float64), valid, counts, s.segments,
                        s.carry, final, s.column)


def _take(pick: Pick, s: Scanning) -> Scanned:
    return scan_take(s.carry.column(s.j, s.column), s.segments, pick)


def _by(largest: bool, s: Scanning) -> Scanned:
    """`max_by` (`largest`) or `min_by`."""
    assert s.by is not None
    return scan_by(largest, s.carry.column(s.j, s.column),
                   s.carry.column(s.j, s.by, _CARRY_BY.format(s.j)), s.segments)


def _ewm(s: Scanning) -> Scanned:
    assert s.times is not None
    return scan_ewm(s.job, s.j, s.column, s.times, s.segments, s.carry)


def _user(s: Scanning) -> Scanned:
    return scan_user(s.job, s.j, s.column, s.segments, s.carry, s.times)


def scan_user(job: AggregateJob, j: int, column: pa.Array, segments: Segments,
              carry: Carry, times: npt.NDArray[Any] | None) -> Scanned:
    """A user's aggregator at every position: its state after each row's value, one
    `add` a row, restarting at each segment; the first segment resumes the carried
    state (`j:state`, pickled)."""
    assert job.aggregator is not None and times is not None
    values = udaf_values(job, column)
    valid = validity(column)
    if carry.virtual:
        values = np.concatenate([np.empty(1, dtype=values.dtype), values])
        valid = np.concatenate([[False], valid])
    carried = carry.scalar(j, "state", None)
    state = (merging.NOTHING_CARRIED if carried is None
             else load_state(job.aggregator, str(carried)))
    with naming_errors(job.aggregator):
        results, last = merging.running_results(job.aggregator, state, values, times,
                                                valid, segments.starts[:-1])
    return Scanned(user_array(job, results), None,
                   {f"{j}:state": dump_state(job.aggregator, last)})


def _bounded(s: Scanning) -> Scanned:
    """A bounded mergeable state (a k-collection, a sketch: `running_states`) at every
    position, resuming the carried state (`j:state`)."""
    carried = s.carry.scalar(s.j, "state", None)
    results, last = running_states.running_scan(
        s.job, s.column, s.segments.starts[:-1], None if carried is None else str(carried),
        bool(s.carry.virtual))
    return Scanned(results, None, {f"{s.j}:state": last})


def scan_extreme(largest: bool, j: int, values: npt.NDArray[Any], valid: BoolArray,
                 counts: IntArray, segments: Segments, carry: Carry,
                 final: dict[str, Scalar], column: pa.Array) -> Scanned:
    """`max` (`largest`) or `min` of numbers (booleans as 0/1): a running maximum per
    segment (of the values negated, or bit-flipped for integers, for `min`). NaN is the
    greatest float: `max` is NaN once one is seen; `min` skips NaN and is NaN only while
    every value is (a count of the non-NaN values tells)."""
    if values.dtype.kind == "f":
        if largest:
            leaves = carry.lead(np.where(valid, values, -np.inf), j, "best", -np.inf)
            best = segment_max(leaves, segments)
        else:
            numbers = valid & ~np.isnan(values)
            leaves = carry.lead(np.where(numbers, values, np.inf), j, "best", np.inf)
            best = -segment_max(-leaves, segments)
            seen = int_scan(carry.lead(numbers.astype(np.int64), j, "numbers", 0), segments)
            final[f"{j}:numbers"] = int(seen[-1])
        final[f"{j}:best"] = float(best[-1])
        if not largest:
            best = np.where(seen == 0, np.nan, best)
        return Scanned(wa.Values(best, counts > 0), column, final)
    data = values.astype(np.int64)
    if largest:
        best = segment_max(carry.lead(np.where(valid, data, _INT_MIN), j, "best", _INT_MIN),
                           segments)
    else:
        flipped = carry.lead(np.where(valid, data, _INT_MAX), j, "best", _INT_MAX)
        best = ~segment_max(~flipped, segments)
    final[f"{j}:best"] = int(best[-1])
    return Scanned(wa.Values(best, counts > 0), column, final)


def scan_moments(root: bool, j: int, values: FloatArray, valid: BoolArray,
                 counts: IntArray, segments: Segments, carry: Carry,
                 final: dict[str, Scalar], column: pa.Array) -> Scanned:
    """Sample `variance` (or `stddev`, its square `root`) by Welford's update,
    vectorised: the running means come from the sequential running sums
    (`mean_k = S_k / k`), each value adds `(x - mean_before)(x - mean_after)` (never
    negative) to the second moment `M2`, and `M2` is a sequential running sum of those.
    The result is `M2 / (k - 1)`, null below two values (`moments.sample`); NaN or an
    infinity among the values (a running sum that is not finite) makes it NaN, as
    Spark's update does. It agrees with the batch kernels' merged moments to rounding,
    not bit for bit."""
    masked = np.where(valid, values, 0.0)
    sums = float_scan(carry.lead(masked, j, "sum", 0.0), segments)
    x = carry.pad(masked, 0.0)
    here = carry.pad(valid, False)
    before_counts = segments.previous(counts, 0)
    before_sums = segments.previous(sums, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = sums / np.maximum(counts, 1)
        mean_before = before_sums / np.maximum(before_counts, 1)
        added = np.where(here & (before_counts > 0),
                         np.maximum((x - mean_before) * (x - mean), 0.0), 0.0)
        if carry.virtual:
            added[0] = float(carry.scalar(j, "m2", 0.0) or 0.0)
        m2 = float_scan(added, segments)
    # an infinity among the values (a running sum that is not finite): NaN
    result, enough = moments.sample(counts, np.where(np.isfinite(sums), m2, np.nan),
                                    root=root)
    final[f"{j}:sum"] = float(sums[-1])
    final[f"{j}:m2"] = float(m2[-1])
    return Scanned(wa.Values(result, enough), column, final)


Pick = Callable[[pa.Array, BoolArray, Segments], tuple[IntArray, BoolArray]]
"""Each position's picked position (of a valid value) in its segment up to it, and
whether any, given the column, its validity and the segments (`scan_take`)."""


def first_picked(column: pa.Array, valid: BoolArray, segments: Segments
                 ) -> tuple[IntArray, BoolArray]:
    """`first`: the first non-null value in row order."""
    return first_positions(valid, segments)


def last_picked(column: pa.Array, valid: BoolArray, segments: Segments
                ) -> tuple[IntArray, BoolArray]:
    """`last`: the last non-null value in row order."""
    return last_positions(valid, segments)


def ranked_positions(largest: bool, column: pa.Array, valid: BoolArray, segments: Segments
                     ) -> tuple[IntArray, BoolArray]:
    """`max` (`largest`) or `min` of any orderable column by dense ranks: a running
    maximum per segment, each segment lifted above the ones before."""
    ranks = dense_ranks(column)
    top = int(ranks.max(initial=0))
    keyed = np.where(valid, ranks if largest else top + 1 - ranks, 0)
    lift = run_index(segments.starts) * np.int64(top + 2)
    best = (np.maximum.accumulate(keyed + lift) - lift) if len(keyed) else keyed
    has = best > 0
    representative = np.zeros(top + 2, dtype=np.int64)
    present = np.nonzero(valid)[0]
    representative[keyed[present]] = present
    positions: IntArray = representative[best]
    return positions, has


def scan_take(column: pa.Array, segments: Segments, pick: Pick) -> Scanned:
    """`first`, `last` (non-null values in row order) and `min`/`max` of orderable
    non-numeric columns and decimals (`ranked_positions`), as `pick` picks them:
    positions into `column`, whose first value is the carried one in a step."""
    valid = validity(column)
    positions, has = pick(column, valid, segments)
    value = column.take(pa.array([positions[-1]], pa.int64())) if has[-1] else \
        pa.nulls(1, column.type)
    return Scanned(wa.Take(positions, has), column, {}, value)


def scan_by(largest: bool, column: pa.Array, by: pa.Array, segments: Segments) -> Scanned:
    """`max_by` (`largest`) or `min_by`: a running maximum per segment of
    `score * N + (N - 1 - pos)` (score: `by`'s dense rank, or its reverse for min_by;
    null `by` never counts), so the best `by` wins and, among equals, the earliest
    position; positions into `column`, whose first value is the carried one in a step
    (with `by`'s)."""
    valid = validity(by)
    n = len(valid)
    ranks = dense_ranks(by)
    top = int(ranks.max(initial=0))
    score = ranks if largest else top - ranks
    positions = np.arange(n, dtype=np.int64)
    keys = np.where(valid, score * n + (n - 1 - positions) + 1, 0)
    lift = run_index(segments.starts) * np.int64((top + 1) * n + 1)
    best = (np.maximum.accumulate(keys + lift) - lift) if n else keys
    has = best > 0
    picked = np.where(has, n - 1 - (best - 1) % max(n, 1), 0).astype(np.int64)
    last = pa.array([picked[-1]], pa.int64())
    value = column.take(last) if has[-1] else pa.nulls(1, column.type)
    carried_by = by.take(last) if has[-1] else pa.nulls(1, by.type)
    return Scanned(wa.Take(picked, has), column, {}, value, carried_by)


def scan_ewm(job: AggregateJob, j: int, column: pa.Array, times: npt.NDArray[Any],
             segments: Segments, carry: Carry) -> Scanned:
    """`ewm_mean`: decayed sums of the values and of their weights per segment
    (`order_stats.decayed_sums`), read at each position's last non-null row; the carried
    state (sum, weight, and the time they were taken at) leads as position 0 with its
    weight, so a resumed run continues the uncut one."""
    valid = validity(column)
    values = scaled(numeric_values(column, job.value_class), job, column).astype(np.float64)
    x = carry.lead(np.where(valid, values, 0.0), j, "ewm_sum", 0.0).astype(np.float64)
    w = carry.lead(valid.astype(np.float64), j, "ewm_weight", 0.0).astype(np.float64)
    t = times.copy()
    if carry.virtual:
        t[0] = carry.scalar(j, "ewm_time", t[0])
    heads = np.zeros(len(x), dtype=bool)
    heads[segments.starts[:-1]] = True
    sums = order_stats.decayed_sums(x, t, heads, job.half_life)
    weights = order_stats.decayed_sums(w, t, heads, job.half_life)
    at, has = last_positions(w > 0, segments)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(has, sums[at] / np.where(has, weights[at], 1.0), 0.0)
    final: dict[str, Scalar] = {f"{j}:ewm_sum": 0.0, f"{j}:ewm_weight": 0.0}
    if has[-1]:
        final = {f"{j}:ewm_sum": float(sums[at[-1]]), f"{j}:ewm_weight": float(weights[at[-1]]),
                 f"{j}:ewm_time": scalar_of(t[at[-1]])}
    return Scanned(wa.Values(result, has), column, final)


SCANS: dict[str, ScanAggregate] = {
    "count": _count,
    "sum": _sum,
    "mean": _mean,
    "min": partial(_extreme, False),
    "max": partial(_extreme, True),
    "first": partial(_take, first_picked),
    "last": partial(_take, last_picked),
    "variance": partial(_moments, False),
    "stddev": partial(_moments, True),
    "max_by": partial(_by, True),
    "min_by": partial(_by, False),
    "ewm_mean": _ewm,
    "aggregator": _user,
    **dict.fromkeys(running_states.RUNNING_SCANS, _bounded),
}
"""One aggregation's running scan, by its algebra (`Definition.algebra`; `count()` of
rows aside, which has no column): the aggregations a few accumulators hold
(`Definition.accumulators`), a user's aggregator by its own state."""



def scan_all(aggregates: tuple[AggregateJob, ...], table: pa.Table, segments: Segments,
             carry: Carry, times: npt.NDArray[Any]) -> list[Scanned]:
    """Every aggregation's scan over the scanned positions (`carry.virtual` then
    `table`'s rows; `times`: each position's time)."""
    found: list[Scanned] = []
    for j, job in enumerate(aggregates):
        column = None if job.column is None else table.column(job.column).combine_chunks()
        by = None if job.by is None else table.column(job.by).combine_chunks()
        found.append(scan(job, j, column, table.num_rows, segments, carry, times, by))
    return found


def result_at(scanned: Scanned, job: AggregateJob, positions: IntArray) -> pa.Array:
    """An aggregation's scanned result at `positions`, as its output column."""
    if isinstance(scanned.result, pa.Array):
        return scanned.result.take(pa.array(positions, pa.int64()))
    return to_arrow(_at(scanned.result, positions), scanned.column, job)


def carried(keys: tuple[str, ...], table: pa.Table, found: list[Scanned],
            scalars: dict[str, Scalar], keys_always: bool = False) -> KernelState:
    """The state a scan carries into the next step: `scalars` with every aggregation's
    accumulators at the last position, and one row (the key columns of `table`'s last
    row) with the values `first`, `last`, `max_by`/`min_by` and the `min`/`max` by rank
    carry, when one does (always, with `keys_always`)."""
    values: dict[str, pa.Array] = {}
    for j, scanned in enumerate(found):
        scalars.update(scanned.final)
        if scanned.value is not None:
            values[_CARRY.format(j)] = scanned.value
        if scanned.by is not None:
            values[_CARRY_BY.format(j)] = scanned.by
    m = table.num_rows
    rows = pa.table({}) if not values and not keys_always else pa.table(
        {**{k: table.column(k).slice(m - 1, 1).combine_chunks() for k in keys}, **values})
    return KernelState(rows, scalars)


def _at(result: wa.Values | wa.Take, anchors: IntArray) -> wa.Values | wa.Take:
    if isinstance(result, wa.Take):
        return wa.Take(result.positions[anchors], result.valid[anchors])
    return wa.Values(result.values[anchors], result.valid[anchors])


def scalar_of(tick: Any) -> Scalar:
    """A numpy tick as a plain scalar."""
    return float(tick) if isinstance(tick, np.floating) else int(tick)


@dataclass(frozen=True)
class Scans:
    """Running scans of the aggregations over scanned positions (`scan_all`), read at
    frames that are prefixes of their segments (a `Since` period, a policy-tumbling
    window so far): frame `[lo, hi)`'s result is the scan at `hi - 1`, and an empty
    frame's is the empty window's (`aggregate` over no rows, from `source`'s typed
    columns)."""

    aggregates: tuple[AggregateJob, ...]
    found: list[Scanned]
    source: pa.Table

    def at(self, lo: IntArray, hi: IntArray) -> list[pa.Array]:
        k = len(lo)
        has = hi > lo
        last = np.maximum(hi - 1, 0).astype(np.int64)
        empties = int((~has).sum())
        order = np.where(has, np.cumsum(has) - 1, int(has.sum()) + np.cumsum(~has) - 1)
        columns: list[pa.Array] = []
        for j, job in enumerate(self.aggregates):
            parts: list[pa.Array] = []
            if has.any():
                parts.append(result_at(self.found[j], job, last[has]))
            if empties:
                nothing = np.zeros(empties, dtype=np.int64)
                parts.append(aggregate(job, self.source, nothing[:0], nothing, nothing))
            if not parts:
                columns.append(pa.nulls(0, job.output_type))
                continue
            joined = pa.concat_arrays([p.cast(job.output_type) for p in parts])
            columns.append(joined.take(pa.array(order[:k], pa.int64())) if k else joined)
        return columns
