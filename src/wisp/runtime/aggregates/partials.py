"""Partial states of the mergeable aggregations, vectorised over groups of rows.

Each mergeable aggregation has one `Partial` here, found by its definition's `algebra`
key (`ALGEBRAS`, `partial_of`): its state's columns and their Arrow types (`fields`),
`add` (the states of groups of a chunk's rows, all groups at once), `merge` (the states
of groups of states) and `finish` (each state's result). A state is a row of columns
beside its group's `n` (the number of non-null values it holds, of `by` for
`max_by`/`min_by`), so a table of states is itself a table of groups: panes of a stream
(`streaming.panes`), the panes of a window, the parts of a key's open windows.

The laws every `Partial` keeps (tested alone, tests/runtime/aggregates/test_partials.py): `merge`
is associative, a state with `n = 0` is its identity, and `add` of any split of a group's
rows followed by `merge` gives `add` of them all, with the same `finish`. Where a state
is exact (counts; sums and means of integers and decimals) it is also `Invertible`:
`remove` of rows it holds gives exactly the state without them (`inverse_of`). Each
merge here is also commutative (the states arrive in any order): an aggregation that
depends on window order (`first`, `last`, `max_by`, `min_by`) keeps with its value the
time and the tie-break columns of the row it picked, and merging keeps the earliest or
latest of those (time, then tie-break columns in Spark's ascending order, nulls first,
NaN last).

- `count`: no columns beyond `n` (rows: the kernel's row count).
- `sum`/`mean`: the sum; exact for integers and decimals (a decimal(38, scale) of the
  unscaled sum, so pane sums never round or wrap), a double for floats.
- `variance`/`stddev`: the sum and the sum of squared deviations from the group's
  mean (Chan's parallel update on merge, `kernels.moments`); integers and decimals as
  doubles.
- `min`/`max`: integers and floats by numpy (the extreme of the numbers and a NaN
  count, NaN being the greatest); strings, dates and decimals by Arrow, in their type.
- `first`/`last`: the value, its time and tie-break columns.
- `max_by`/`min_by`: the value, `by`, its time and tie-break columns.
- `count_distinct`: the set of distinct values, as a list (NaN one value, `-0.0` as
  `0.0`, as Spark counts them).
- `first_k`/`last_k`/`top_k`/`bottom_k`: at most `k` values with their times and
  tie-break columns, as lists; `histogram`: distinct values and their counts, as two
  lists (`runtime.aggregates.k_lists`).
- a user's `Aggregator` (commutative): its state, pickled.
- `hll`, `theta`, `kll` (the sketches, `runtime.aggregates.sketches`): each group's sketch,
  serialized; merged by union, finished canonical.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import moments
from ...spec.aggregates import check_state
from ..codecs.arrays import decimal_from_unscaled, decimal_unscaled, null_mask, numeric_values
from ..codecs.grouping import normalized
from ..codecs.sorting import order_ranks
from .aggregate import AggregateJob, naming_errors, udaf_values, user_array
from .k_lists import Histogram, KList
from .sketches import FAMILIES, SketchPartial

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
Columns = dict[str, Any]
"""State columns by name: numpy arrays or Arrow arrays, one value per group."""

EXTREME_FILL: dict[tuple[bool, bool], Any] = {
    (False, True): np.inf, (True, True): -np.inf,
    (False, False): np.iinfo(np.int64).max, (True, False): np.iinfo(np.int64).min}
"""The value a group without numbers contributes to a min (False) or max (True), by
float or not."""
EXACT_LIMIT = float(1 << 62)
"""Group sums whose float estimate stays below this are exact in int64 (two's complement
wraps and unwraps: only the final sum must fit)."""


@dataclass(frozen=True)
class Layout:
    """What a state's columns are made of: the input columns' types, the time's tick
    type and the tie-break columns (window order after time)."""

    inputs: pa.Schema
    ticks: pa.DataType
    order: tuple[str, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """A chunk's rows in group order, as `add` reads them: the aggregation's column,
    which rows count (`valid`: non-null values, of `by` for max_by/min_by), `by`, the
    rows' times in ticks, the tie-break columns, and where each group begins."""

    column: pa.Array
    valid: Mask
    times: npt.NDArray[Any]
    starts: IntArray
    by: pa.Array | None = None
    order: tuple[pa.Array, ...] = ()

    @property
    def groups(self) -> int:
        return len(self.starts)

    def group_ids(self) -> IntArray:
        return group_ids(self.starts, len(self.valid))


class Partial(Protocol):
    """One aggregation's partial state (see the module's docstring); `ordered`: it
    picks a row by window order, so its states keep times and tie-break columns."""

    ordered: ClassVar[bool]

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        """The state's columns beyond `n{i}`, named with the aggregation's index."""
        ...

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        """The state of each group of `chunk`'s rows."""
        ...

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        """The state of each group of `states`' rows `order[starts[g]:starts[g + 1]]`."""
        ...

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        """Each merged state's result (`n`: its non-null values)."""
        ...


@runtime_checkable
class Invertible(Partial, Protocol):
    """A partial state that `remove` undoes exactly, for the jobs `invertible` accepts
    (counts; sums and means of integers and decimals, whose states are exact: a float
    sum's rounding is not undone by subtracting). It agrees with `Definition.invertible`:
    an aggregation is declared invertible when its state is for some value classes."""

    def invertible(self, job: AggregateJob) -> bool:
        """Whether `remove` undoes `add` exactly for `job`'s values."""
        ...

    def remove(self, job: AggregateJob, i: int, states: Columns, chunk: Chunk,
               layout: Layout) -> Columns:
        """Each state of `states` (one per group of `chunk`, as `add` gives them, each
        holding its group's rows among others) without its group of `chunk`'s rows: the
        state of the rows left (`n` is the caller's, as for `add`)."""
        ...


def inverse_of(job: AggregateJob) -> Invertible | None:
    """The partial state of `job`'s aggregation when `remove` undoes `add` exactly for
    its values, else None."""
    found = ALGEBRAS.get(job.definition.algebra)
    if isinstance(found, Invertible) and found.invertible(job):
        return found
    return None


def group_ids(starts: IntArray, length: int) -> IntArray:
    """The group of each of `length` rows, groups beginning at `starts`."""
    result: IntArray = np.repeat(np.arange(len(starts), dtype=np.int64),
                                 np.diff(np.r_[starts, length]))
    return result


def gathered(states: pa.Table, name: str, order: IntArray) -> npt.NDArray[Any]:
    values: npt.NDArray[Any] = states.column(name).to_numpy()[order]
    return values


def exact_sums(values: npt.NDArray[Any], starts: IntArray) -> npt.NDArray[Any]:
    """Each group's exact sum of integers (int64, or Python integers as objects where a
    sum leaves 64 bits). Groups must not be empty."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    if values.dtype != object:
        estimate = np.add.reduceat(values.astype(np.float64), starts)
        spread = np.add.reduceat(np.abs(values.astype(np.float64)), starts)
        error = spread * len(values) * 2.0 ** -52
        if (np.abs(estimate) + error < EXACT_LIMIT).all():
            wrapped: npt.NDArray[Any] = np.add.reduceat(values, starts)
            return wrapped
    ends = np.r_[starts[1:], len(values)]
    exact = np.array([sum(int(v) for v in values[a:b]) for a, b in
                      zip(starts.tolist(), ends.tolist(), strict=True)], dtype=object)
    if all(-(1 << 63) <= v < 1 << 63 for v in exact):
        return exact.astype(np.int64)
    return exact


def floats(values: FloatArray, valid: Mask, job: AggregateJob) -> pa.Array:
    return pa.array(np.where(valid, values, 0.0), pa.float64(),
                    mask=null_mask(valid)).cast(job.output_type)


def per_group(found: IntArray, rows: IntArray, groups: int) -> pa.Array:
    """Positions (Arrow, nullable) of each group's row: `rows[j]` for group `found[j]`,
    null for a group without one."""
    positions = np.full(groups, -1, dtype=np.int64)
    positions[found] = rows
    return pa.array(positions, pa.int64(), mask=positions < 0)


class Count:
    """`count()`/`count(col)`: the kernel's row and value counts are the state."""

    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        return []

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        return {}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        return {}

    def invertible(self, job: AggregateJob) -> bool:
        return True

    def remove(self, job: AggregateJob, i: int, states: Columns, chunk: Chunk,
               layout: Layout) -> Columns:
        return {}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        return pa.array(n, pa.int64()).cast(job.output_type)


@dataclass(frozen=True)
class Sum:
    """`sum` (`mean`: the sum over `n`): exact for integers and decimals, a double for
    floats."""

    mean: bool = False
    ordered: ClassVar[bool] = False

    @staticmethod
    def exact(job: AggregateJob) -> bool:
        return job.value_class in ("integer", "decimal", "boolean")

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        if not self.exact(job):
            return [(f"s{i}", pa.float64())]
        return [(f"s{i}", pa.decimal128(38, scale_of(layout.inputs.field(job.column).type)))]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        values = numeric_values(chunk.column, job.value_class)
        if not self.exact(job):
            data = np.where(chunk.valid, values.astype(np.float64), 0.0)
            with np.errstate(invalid="ignore"):  # inf - inf: NaN, as Spark
                return {f"s{i}": np.add.reduceat(data, chunk.starts)}
        sums = exact_sums(np.where(chunk.valid, values, 0), chunk.starts)
        return {f"s{i}": exact_column(sums, scale_of(chunk.column.type))}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        if not self.exact(job):
            with np.errstate(invalid="ignore"):
                return {f"s{i}": np.add.reduceat(gathered(states, f"s{i}", order), starts)}
        column = states.column(f"s{i}").combine_chunks()
        sums = exact_sums(decimal_unscaled(column)[order], starts)
        return {f"s{i}": exact_column(sums, column.type.scale)}

    def invertible(self, job: AggregateJob) -> bool:
        """Exact sums only: subtracting a float sum does not undo its rounding."""
        return self.exact(job)

    def remove(self, job: AggregateJob, i: int, states: Columns, chunk: Chunk,
               layout: Layout) -> Columns:
        if not self.exact(job):
            raise ValueError(f"wisp: {job.label} of floats has no exact remove")
        held = states[f"s{i}"]
        if isinstance(held, pa.ChunkedArray):
            held = held.combine_chunks()
        values = numeric_values(chunk.column, job.value_class)
        removed = exact_sums(np.where(chunk.valid, values, 0), chunk.starts)
        return {f"s{i}": exact_column(exact_differences(decimal_unscaled(held), removed),
                                      held.type.scale)}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        if not self.exact(job):
            sums = merged[f"s{i}"]
            if self.mean:
                with np.errstate(divide="ignore", invalid="ignore"):
                    return floats(sums / np.maximum(n, 1), n > 0, job)
            return pa.array(sums, pa.float64()).cast(job.output_type)
        column = merged[f"s{i}"]
        unscaled = decimal_unscaled(column)
        if self.mean:
            values = unscaled.astype(np.float64) / float(10 ** column.type.scale)
            with np.errstate(divide="ignore", invalid="ignore"):
                return floats(values / np.maximum(n, 1), n > 0, job)
        target = job.output_type
        if pa.types.is_decimal(target):
            return decimal_from_unscaled(unscaled, np.ones(len(unscaled), dtype=bool),
                                         target.precision, target.scale)
        if unscaled.dtype == object:
            raise ArithmeticError(
                f"wisp: sum({job.column}) overflows a long (64-bit) result, as Spark's "
                "ARITHMETIC_OVERFLOW reports in ANSI mode; cast the column to a decimal")
        return pa.array(unscaled, pa.int64()).cast(target)


def exact_differences(held: npt.NDArray[Any], removed: npt.NDArray[Any]
                      ) -> npt.NDArray[Any]:
    """`held - removed` of exact integers (int64, or Python integers as objects where a
    difference leaves 64 bits)."""
    if held.dtype != object and removed.dtype != object:
        with np.errstate(over="ignore"):
            wrapped: npt.NDArray[Any] = held - removed
        # it wrapped where the operands' signs differ and the result's is not held's
        if not (((held ^ removed) & (held ^ wrapped)) < 0).any():
            return wrapped
    exact = np.array([int(a) - int(b) for a, b in zip(held, removed, strict=True)],
                     dtype=object)
    if all(-(1 << 63) <= v < 1 << 63 for v in exact):
        return exact.astype(np.int64)
    return exact


def scale_of(data_type: pa.DataType) -> int:
    """A decimal type's scale (0 for integers)."""
    return int(data_type.scale) if pa.types.is_decimal(data_type) else 0


def exact_column(sums: npt.NDArray[Any], scale: int) -> pa.Array:
    """Exact sums (unscaled integers) as a decimal(38, scale) column of states."""
    return decimal_from_unscaled(sums, np.ones(len(sums), dtype=bool), 38, scale)


@dataclass(frozen=True)
class Moments:
    """`variance` (`stddev`: its root): the sum and the sum of squared deviations from
    the group's mean, as doubles (decimals by their value)."""

    root: bool = False
    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        return [(f"s{i}", pa.float64()), (f"m{i}", pa.float64())]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        values = udaf_values(job, chunk.column).astype(np.float64)
        _, sums, _, m2 = moments.of_groups(values, chunk.valid, chunk.starts)
        return {f"s{i}": sums, f"m{i}": m2}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        count, sums, m2 = (gathered(states, f"{part}{i}", order) for part in "nsm")
        _, total, m2_total = moments.merge_groups(count, sums, m2, starts)
        return {f"s{i}": total, f"m{i}": m2_total}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        return floats(*moments.sample(n, merged[f"m{i}"], root=self.root), job)


@dataclass(frozen=True)
class Extreme:
    """`min`/`max` (`largest`): integers and floats as numbers with a NaN count (NaN is
    the greatest), other orderable types in their own type, by Arrow."""

    largest: bool
    ordered: ClassVar[bool] = False

    @staticmethod
    def numeric(job: AggregateJob) -> bool:
        return job.value_class in ("integer", "float")

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        if not self.numeric(job):
            return [(f"x{i}", layout.inputs.field(job.column).type)]
        kind = pa.float64() if job.value_class == "float" else pa.int64()
        return [(f"x{i}", kind), (f"nan{i}", pa.int64())]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        if not self.numeric(job):
            return {f"x{i}": self.arrow_extremes(chunk.column, chunk.valid,
                                                 chunk.group_ids(), chunk.groups)}
        floating = job.value_class == "float"
        values = numeric_values(chunk.column, job.value_class)
        data = values.astype(np.float64 if floating else np.int64)
        nan = chunk.valid & np.isnan(data) if floating else np.zeros(len(data), dtype=bool)
        number = chunk.valid & ~nan
        reduce = np.maximum if self.largest else np.minimum
        fill = EXTREME_FILL[(self.largest, floating)]
        return {f"x{i}": reduce.reduceat(np.where(number, data, fill), chunk.starts),
                f"nan{i}": np.add.reduceat(nan.astype(np.int64), chunk.starts)}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        if not self.numeric(job):
            column = states.column(f"x{i}").combine_chunks().take(pa.array(order))
            return {f"x{i}": self.arrow_extremes(column, column.is_valid().to_numpy(
                zero_copy_only=False), group_ids(starts, len(order)), len(starts))}
        reduce = np.maximum if self.largest else np.minimum
        return {f"x{i}": reduce.reduceat(gathered(states, f"x{i}", order), starts),
                f"nan{i}": np.add.reduceat(gathered(states, f"nan{i}", order), starts)}

    def arrow_extremes(self, column: pa.Array, valid: Mask, groups: IntArray,
                       count: int) -> pa.Array:
        kept = np.flatnonzero(valid)
        table = pa.table({"g": pa.array(groups[kept]), "x": column.take(pa.array(kept))})
        how = "max" if self.largest else "min"
        found = table.group_by("g", use_threads=False).aggregate([("x", how)])
        slots = per_group(found.column("g").to_numpy(), np.arange(found.num_rows), count)
        return found.column(f"x_{how}").combine_chunks().take(slots)

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        extreme = merged[f"x{i}"]
        if not self.numeric(job):
            return extreme.cast(job.output_type)
        if job.value_class == "float":
            nans = merged[f"nan{i}"]
            extreme = np.where(nans > 0 if self.largest else nans == n, np.nan, extreme)
            return floats(extreme, n > 0, job)
        return pa.array(extreme, pa.int64(), mask=null_mask(n > 0)).cast(job.output_type)


def by_ranks(by: pa.Array) -> IntArray:
    """Each value's dense rank, ascending (equal values one rank, NaN the greatest)."""
    ranks = pc.rank(by, sort_keys="ascending", tiebreaker="dense")
    return np.asarray(ranks.to_numpy(zero_copy_only=False), dtype=np.int64)


@dataclass(frozen=True)
class Pick:
    """`first`/`last` (`latest`), `max_by`/`min_by` (`by`, `largest`): the value of the
    row picked, with what ranks it (`by`, then time and tie-break columns)."""

    latest: bool = False
    by: bool = False
    largest: bool = False
    ordered: ClassVar[bool] = True

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        fields = [(f"v{i}", layout.inputs.field(job.column).type)]
        if self.by:
            assert job.by is not None
            fields.append((f"b{i}", layout.inputs.field(job.by).type))
        fields.append((f"k{i}", layout.ticks))
        return fields + [(f"o{i}_{j}", layout.inputs.field(name).type)
                         for j, name in enumerate(layout.order)]

    def names(self, i: int, order: int) -> list[str]:
        """The state's columns: value, `by`, time, `order` tie-break columns."""
        return ([f"v{i}"] + ([f"b{i}"] if self.by else []) + [f"k{i}"]
                + [f"o{i}_{j}" for j in range(order)])

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        columns: list[pa.Array] = [chunk.column]
        if self.by:
            assert chunk.by is not None
            columns.append(chunk.by)
        columns += [pa.array(chunk.times, layout.ticks), *chunk.order]
        names = self.names(i, len(chunk.order))
        rows = pa.table([*columns, pa.array(chunk.valid.astype(np.int64))],
                        names=[*names, f"n{i}"])
        return self.picked(i, rows, names, np.arange(len(chunk.valid)), chunk.starts)

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        order_columns = sum(1 for name in states.column_names if name.startswith(f"o{i}_"))
        names = self.names(i, order_columns)
        return self.picked(i, states, names, order, starts)

    def picked(self, i: int, rows: pa.Table, names: list[str], order: IntArray,
               starts: IntArray) -> Columns:
        """The columns `names` of each group's picked row (null where none counts)."""
        groups = group_ids(starts, len(order))
        counts = rows.column(f"n{i}").to_numpy()[order]
        candidates = order[counts > 0]
        owners = groups[counts > 0]
        slots = per_group(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          len(starts))
        if len(candidates):
            taken = rows.take(pa.array(candidates))
            keys = [taken.column(name).combine_chunks()
                    for name in names[names.index(f"k{i}"):]]
            sequence = order_ranks(keys)
            if self.latest:
                sequence = -sequence
            sort_keys: tuple[IntArray, ...] = (sequence,)
            if self.by:
                ranks = by_ranks(taken.column(f"b{i}").combine_chunks())
                sort_keys = (sequence, -ranks if self.largest else ranks)
            chosen = np.lexsort((*sort_keys, owners))
            firsts = chosen[np.r_[True, owners[chosen][1:] != owners[chosen][:-1]]]
            slots = per_group(owners[firsts], candidates[firsts], len(starts))
        return {name: rows.column(name).combine_chunks().take(slots) for name in names}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        result: pa.Array = merged[f"v{i}"].cast(job.output_type)
        return result


class Distinct:
    """`count_distinct`: each group's set of distinct values, as a list."""

    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        return [(f"d{i}", pa.list_(layout.inputs.field(job.column).type))]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        kept = np.flatnonzero(chunk.valid)
        return {f"d{i}": self.sets(chunk.column.take(pa.array(kept)),
                                   chunk.group_ids()[kept], chunk.groups)}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        lists = states.column(f"d{i}").combine_chunks().take(pa.array(order))
        lengths = np.asarray(lists.value_lengths().fill_null(0).to_numpy(
            zero_copy_only=False), dtype=np.int64)
        owners = np.repeat(group_ids(starts, len(order)), lengths)
        return {f"d{i}": self.sets(lists.flatten(), owners, len(starts))}

    @staticmethod
    def sets(values: pa.Array, owners: IntArray, groups: int) -> pa.Array:
        """Each group's distinct `values` (owned by group `owners[j]`) as a list."""
        table = normalized(pa.table({"v": values})).append_column("g", pa.array(owners))
        distinct = table.group_by(["g", "v"], use_threads=False).aggregate([])
        distinct = distinct.take(pa.array(np.argsort(distinct.column("g").to_numpy(),
                                                     kind="stable")))
        counts = np.bincount(distinct.column("g").to_numpy(), minlength=groups)
        offsets = pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32), pa.int32())
        return pa.ListArray.from_arrays(offsets, distinct.column("v").combine_chunks())

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        lengths = merged[f"d{i}"].value_lengths().fill_null(0)
        return lengths.cast(pa.int64()).cast(job.output_type)


class UserState:
    """A user's commutative `Aggregator`: its state per group, pickled."""

    ordered: ClassVar[bool] = False

    def fields(self, job: AggregateJob, i: int, layout: Layout
               ) -> list[tuple[str, pa.DataType]]:
        return [(f"u{i}", pa.binary())]

    def add(self, job: AggregateJob, i: int, chunk: Chunk, layout: Layout) -> Columns:
        return {f"u{i}": user_partials(job, chunk.column, chunk.valid, chunk.times,
                                       chunk.starts)}

    def merge(self, job: AggregateJob, i: int, states: pa.Table, order: IntArray,
              starts: IntArray) -> Columns:
        return {f"u{i}": merged_partials(job, states.column(f"u{i}").to_pylist(), order,
                                         starts)}

    def finish(self, job: AggregateJob, i: int, merged: Columns, n: IntArray) -> pa.Array:
        aggregator = job.aggregator
        assert aggregator is not None
        with naming_errors(aggregator):
            results = [aggregator.finish(pickle.loads(blob)) for blob in merged[f"u{i}"]]
        return user_array(job, results)


def user_partials(job: AggregateJob, column: pa.Array, valid: Mask,
                  times: npt.NDArray[Any], starts: IntArray) -> list[bytes]:
    """A user aggregator's state of each group of rows (groups begin at `starts`), over
    its non-null values, pickled. The aggregator is commutative (the planner gives panes
    no other), so rows arriving in any order make the same state."""
    aggregator = job.aggregator
    assert aggregator is not None
    values = udaf_values(job, column)
    ends = np.r_[starts[1:], len(values)]
    blobs: list[bytes] = []
    with naming_errors(aggregator):
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            kept = valid[a:b]
            state = aggregator.add(aggregator.zero(), values[a:b][kept], times[a:b][kept])
            blobs.append(check_state(aggregator, "add", state))
    return blobs


def merged_partials(job: AggregateJob, blobs: list[Any], order: IntArray,
                    starts: IntArray) -> list[bytes]:
    """The merge of the pickled states `blobs[order[starts[g]:starts[g + 1]]]` of each
    group `g`, pickled again."""
    aggregator = job.aggregator
    assert aggregator is not None
    ends = np.r_[starts[1:], len(order)]
    merged: list[bytes] = []
    with naming_errors(aggregator):
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
            state = aggregator.zero()
            for position in order[a:b].tolist():
                state = aggregator.merge(state, pickle.loads(blobs[position]))
            merged.append(check_state(aggregator, "merge", state))
    return merged


ALGEBRAS: dict[str, Partial] = {
    "count": Count(),
    "sum": Sum(),
    "mean": Sum(mean=True),
    "variance": Moments(),
    "stddev": Moments(root=True),
    "min": Extreme(largest=False),
    "max": Extreme(largest=True),
    "first": Pick(),
    "last": Pick(latest=True),
    "max_by": Pick(by=True, largest=True),
    "min_by": Pick(by=True, largest=False),
    "count_distinct": Distinct(),
    "aggregator": UserState(),
    **{algebra: SketchPartial(family) for algebra, family in FAMILIES.items()},
    "first_k": KList(),
    "last_k": KList(latest=True),
    "top_k": KList(by_value=True, largest=True),
    "bottom_k": KList(by_value=True, largest=False),
    "histogram": Histogram(),
}
"""The partial state of each mergeable aggregation, by its definition's `algebra`."""


def partial_of(job: AggregateJob) -> Partial:
    """The partial state of `job`'s aggregation (the planner sends no other here)."""
    return ALGEBRAS[job.definition.algebra]
