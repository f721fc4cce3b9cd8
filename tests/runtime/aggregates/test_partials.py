"""The partial states of the mergeable aggregations (`runtime.aggregates.partials`), alone, without
Spark: for every algebra of `ALGEBRAS` and every value class it takes on stream panes
(`Definition.stream_panes`), on random rows with nulls, NaN, infinities, `-0.0`,
duplicates, ties in time and random tie-break columns, the laws the pane kernels rely
on hold:

- `add` of any split of a group's rows into parts, then `merge` of the parts in any
  order, finishes as one `add` of all the rows (the merge is commutative);
- `merge` is associative;
- a state without values (`n = 0`: a part whose values, or `by`s, are all null) is the
  identity of `merge`;
- `finish` is the brute-force oracle written here from the semantics
  (docs/aggregations.md, docs/semantics.md): window order is time, then the tie-break
  columns in Spark's ascending order (nulls first, NaN last, `-0.0` equal to `0.0`);
  integer and decimal sums are exact (an integer total beyond 64 bits raises
  `ArithmeticError`, though pane sums beyond them are fine), float results within a
  relative 1e-9;
- sketches (HLL, theta, KLL): the result is the sketch of all the group's values built
  at once, bytes for bytes for HLL and theta (wisp's sketches are canonical), by what
  it holds for KLL;
- the k-collections (`first_k`, `last_k`, `top_k`, `bottom_k`, over `k` from 1 to
  beyond a group's rows) and `histogram` finish as lists and maps the oracle computes
  from their rows in window order (top and bottom by Spark's order, equal values in
  window order; histogram entries in ascending order of value, NaN one value, `-0.0`
  counted as `0.0`);
- where the state is exact (counts; integer and decimal sums and means: `inverse_of`),
  `remove` undoes `add` exactly, and `Definition.invertible` says so.

The tie-break columns always hold the aggregation's column, as the planner's do (every
other atomic column): rows tied in them are indistinguishable, so the row picked among
them does not change the result.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import datasketches
import numpy as np
import pyarrow as pa
import pytest
from aggregators import Spread
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

import wisp as ws
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.aggregates.partials import (
    ALGEBRAS,
    Chunk,
    Columns,
    Layout,
    inverse_of,
    partial_of,
)
from wisp.runtime.aggregates.sketches import FAMILIES
from wisp.spec.aggregates import DEFINITIONS, K_LISTS

Row = dict[str, Any]
NAN = math.nan
INT64 = (-(1 << 63), (1 << 63) - 1)

# ------------------------------------------------------------------- the values

SMALL_INTS = st.integers(-6, 6)
BIG_INTS = st.one_of(SMALL_INTS, SMALL_INTS, SMALL_INTS, st.sampled_from(
    [1 << 62, (1 << 62) - 1, -(1 << 62), -(1 << 62) + 3, INT64[1], INT64[0], INT64[1] - 5]))
"""Near ±2**62 and the int64 bounds: pane sums leave 64 bits where totals fit, or not."""
FLOATS = st.one_of(st.integers(-24, 24).map(lambda x: x * 0.25),
                   st.sampled_from([NAN, -0.0, 0.0, math.inf, -math.inf]))
SMALL_DECIMALS = st.integers(-600, 600).map(lambda u: Decimal(u).scaleb(-2))
BIG_DECIMALS = st.one_of(
    st.integers(-30, 30), st.integers(10 ** 17, 10 ** 18 - 1),
    st.integers(-(10 ** 18) + 1, -(10 ** 17))).map(lambda u: Decimal(u).scaleb(-3))
"""decimal(18, 3) values whose sums leave 64 bits unscaled."""
STRINGS = st.text(alphabet="abé😀", max_size=2)
DATES = st.dates(dt.date(1969, 12, 25), dt.date(1970, 1, 5))

INTEGER = ("integer", pa.int32(), SMALL_INTS)
BIG_INTEGER = ("integer", pa.int64(), BIG_INTS)
FLOAT = ("float", pa.float64(), FLOATS)
DECIMAL = ("decimal", pa.decimal128(10, 2), SMALL_DECIMALS)
BIG_DECIMAL = ("decimal", pa.decimal128(18, 3), BIG_DECIMALS)
BOOLEAN = ("boolean", pa.bool_(), st.booleans())
STRING = ("ordered", pa.string(), STRINGS)
DATE = ("ordered", pa.date32(), DATES)
Values = tuple[str, pa.DataType, st.SearchStrategy[Any]]


@dataclass(frozen=True)
class Case:
    """One aggregation (`fn`, "aggregate" for the user's `Spread`) over a value column
    of `kind` (its value class and strategy of non-null values)."""

    fn: str
    value_class: str
    kind: pa.DataType
    values: st.SearchStrategy[Any]

    @property
    def algebra(self) -> str:
        return "aggregator" if self.fn == "aggregate" else DEFINITIONS[self.fn].algebra

    @property
    def output(self) -> pa.DataType:
        if self.fn in ("count", "count_distinct"):
            return pa.int64()
        if self.fn == "sum":
            if pa.types.is_decimal(self.kind):
                return pa.decimal128(min(38, self.kind.precision + 10), self.kind.scale)
            return pa.int64() if self.value_class == "integer" else pa.float64()
        if self.fn in ("mean", "variance", "stddev", "aggregate", "approx_quantile"):
            return pa.float64()
        if self.fn in SKETCHES:
            return pa.int64() if self.fn == "approx_count_distinct" else pa.binary()
        if self.fn in K_LISTS:
            return pa.list_(self.kind)
        if self.fn == "histogram":
            return pa.map_(self.kind, pa.int64())
        return self.kind  # min, max, first, last, max_by, min_by: the input's type

    @property
    def floating(self) -> bool:
        """Whether the result is a float computed in floats (compared within 1e-9)."""
        return bool(pa.types.is_floating(self.output))

    @property
    def by(self) -> bool:
        return self.fn in ("max_by", "min_by")

    def __repr__(self) -> str:
        return f"{self.fn}({self.kind})"


def cases(fns: Sequence[str], *kinds: Values) -> list[Case]:
    return [Case(fn, c, k, v) for fn in fns for c, k, v in kinds]


SKETCHES = ("hll_sketch", "theta_sketch", "kll_sketch", "approx_count_distinct",
            "approx_quantile")
SKETCH_SIZES = {"lg_k": 4, "k": 200}
"""Small hashing sketches (16 HLL buckets; theta: its least nominal entries, 32), so that
a group's few values reach the register and estimation modes; KLL sketches of the
default `k`, exact over the few values here (their compaction, random, is tested with
its error bounds in test_sketches.py)."""
THETA_LG_K = 5

CASES = [
    *cases(["count"], INTEGER, FLOAT, DECIMAL, BOOLEAN, STRING),
    *cases(["sum", "mean"], BIG_INTEGER, FLOAT, BIG_DECIMAL),
    *cases(["variance", "stddev"], INTEGER, FLOAT, DECIMAL),
    *cases(["min", "max"], BIG_INTEGER, FLOAT, BIG_DECIMAL, STRING, DATE),
    *cases(["first", "last", "max_by", "min_by", "count_distinct"],
           INTEGER, FLOAT, DECIMAL, BOOLEAN, STRING, DATE),
    *cases(["aggregate"], INTEGER, FLOAT, DECIMAL),
    *cases(["hll_sketch", "theta_sketch", "approx_count_distinct"], BIG_INTEGER, FLOAT,
           STRING),
    *cases(["kll_sketch", "approx_quantile"], BIG_INTEGER, FLOAT, BIG_DECIMAL),
    *cases(["first_k", "last_k", "histogram"], INTEGER, FLOAT, DECIMAL, BOOLEAN, STRING,
           DATE),
    *cases(["top_k", "bottom_k"], BIG_INTEGER, FLOAT, DECIMAL, STRING, DATE),
]
"""Every algebra over every value class it takes on stream panes."""


def test_the_cases_cover_every_algebra_and_its_stream_pane_classes() -> None:
    assert {case.algebra for case in CASES} == set(ALGEBRAS)
    for fn, definition in DEFINITIONS.items():
        if definition.algebra not in ALGEBRAS:
            continue
        covered = {case.value_class for case in CASES if case.fn == fn}
        assert covered == set(definition.stream_panes) - {"none", "other"}, fn


# ------------------------------------------------------------------- the rows

BY_KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "float": (pa.float64(), st.sampled_from([NAN, -0.0, 0.0, 1.0, 2.5, -1.0, math.inf])),
    "string": (pa.string(), st.sampled_from(["", "a", "b", "é"])),
}
"""`by` of max_by/min_by: few values (ties), NaN the greatest, `-0.0` equal to `0.0`."""
TIE_BREAKS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "o1": (pa.int64(), st.sampled_from([None, 0, 1])),
    "o2": (pa.float64(), st.sampled_from([None, NAN, -0.0, 0.0, 1.0])),
}


@dataclass(frozen=True)
class Setting:
    """One example's aggregation: the case, the `by` kind, the tie-break columns (the
    value column among them), float time or not, and the aggregation's index."""

    case: Case
    by_kind: str
    order: tuple[str, ...]
    float_time: bool
    index: int
    k: int = 3
    """The k-collections' `k`."""

    @property
    def job(self) -> AggregateJob:
        case = self.case
        if case.fn == "aggregate":
            spread = ws.aggregate(Spread(), "v")
            return built_in_job("aggregate", "v", case.value_class, pa.float64(), None,
                                definition=spread.definition, aggregator=Spread())
        sizes = {}
        if case.fn in SKETCHES:
            sizes = {"lg_k": THETA_LG_K if case.fn == "theta_sketch" else SKETCH_SIZES["lg_k"],
                     "k": SKETCH_SIZES["k"]}
        if case.fn in K_LISTS:
            sizes = {"k": self.k}
        return built_in_job(case.fn, "v", case.value_class, case.output, None,
                            by="b" if case.by else None, **sizes)

    def types(self) -> dict[str, pa.DataType]:
        kinds = {"v": self.case.kind, "b": BY_KINDS[self.by_kind][0]}
        kinds |= {name: kind for name, (kind, _) in TIE_BREAKS.items()}
        return kinds

    @property
    def layout(self) -> Layout:
        types = self.types()
        read = ["v", *(["b"] if self.case.by else [])]
        names = list(dict.fromkeys([*read, *self.order]))
        return Layout(pa.schema([pa.field(n, types[n]) for n in names]),
                      pa.float64() if self.float_time else pa.int64(), self.order)


@st.composite
def settings_of(draw: st.DrawFn, case: Case) -> Setting:
    others = ["o1", "o2", *(["b"] if case.by else [])]
    chosen = draw(st.lists(st.sampled_from(others), unique=True))
    order = draw(st.permutations([*chosen, "v"]))
    return Setting(case, draw(st.sampled_from(sorted(BY_KINDS))), tuple(order),
                   draw(st.booleans()), draw(st.sampled_from([0, 1, 12])),
                   draw(st.sampled_from([1, 2, 3, 20])))


def rows_of(setting: Setting, nulls: bool = False) -> st.SearchStrategy[Row]:
    """A row: time (few values: ties), value, `by`, tie-break columns; `nulls`: the
    counted column (`by` for max_by/min_by, else the value) null."""
    case = setting.case
    value = st.none() | case.values
    by = st.none() | BY_KINDS[setting.by_kind][1]
    if nulls:
        if case.by:
            by = st.none()
        else:
            value = st.none()
    return st.fixed_dictionaries({"t": st.integers(-2, 3), "v": value, "b": by,
                                  **{name: s for name, (_, s) in TIE_BREAKS.items()}})


def groups_of(setting: Setting, nulls: bool = False, min_size: int = 1
              ) -> st.SearchStrategy[list[list[Row]]]:
    """One to three groups of rows."""
    return st.lists(st.lists(rows_of(setting, nulls), min_size=min_size, max_size=12),
                    min_size=1, max_size=3)


# ------------------------------------------------------------ running the algebra


def chunk_of(setting: Setting, groups: Sequence[list[Row]]) -> Chunk:
    """The groups' rows as `add` reads them (each group non-empty)."""
    rows = [r for g in groups for r in g]
    types = setting.types()
    column = pa.array([r["v"] for r in rows], types["v"])
    by = pa.array([r["b"] for r in rows], types["b"]) if setting.case.by else None
    counted = column if by is None else by
    times = np.array([r["t"] for r in rows],
                     dtype=np.float64 if setting.float_time else np.int64)
    starts = np.cumsum([0, *[len(g) for g in groups[:-1]]]).astype(np.int64)
    order = tuple(pa.array([r[name] for r in rows], types[name]) for name in setting.order)
    return Chunk(column, counted.is_valid().to_numpy(zero_copy_only=False), times, starts,
                 by, order)


def state_schema(setting: Setting) -> pa.Schema:
    i, job = setting.index, setting.job
    fields = partial_of(job).fields(job, i, setting.layout)
    return pa.schema([pa.field(f"n{i}", pa.int64()),
                      *[pa.field(name, kind) for name, kind in fields]])


def as_table(setting: Setting, n: Any, columns: Columns) -> pa.Table:
    """States (`n` and the columns `add`/`merge` give) as a table of the state's types,
    as the pane kernel stores them."""
    schema = state_schema(setting)
    arrays = []
    for field in schema:
        values = n if field.name == f"n{setting.index}" else columns[field.name]
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values if values.type == field.type else values.cast(field.type))
        else:
            arrays.append(pa.array(values, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def add(setting: Setting, groups: Sequence[list[Row]]) -> pa.Table:
    """One state per group (`add` of one chunk)."""
    chunk = chunk_of(setting, groups)
    job = setting.job
    n = np.add.reduceat(chunk.valid.astype(np.int64), chunk.starts)
    return as_table(setting, n, partial_of(job).add(job, setting.index, chunk,
                                                    setting.layout))


def merge(setting: Setting, states: pa.Table, members: Sequence[list[int]]
          ) -> tuple[Columns, Any]:
    """The merge of each group of states (`members[g]`: its rows of `states`, in the
    order given), and its `n`."""
    i, job = setting.index, setting.job
    order = np.array([m for group in members for m in group], dtype=np.int64)
    starts = np.cumsum([0, *[len(g) for g in members[:-1]]]).astype(np.int64)
    n = np.add.reduceat(states.column(f"n{i}").to_numpy()[order], starts)
    return partial_of(job).merge(job, i, states, order, starts), n


def merged_table(setting: Setting, states: pa.Table, members: Sequence[list[int]]
                 ) -> pa.Table:
    return as_table(setting, *reversed(merge(setting, states, members)))


def finish(setting: Setting, states: pa.Table, members: Sequence[list[int]]) -> list[Any]:
    """Each group's result: its states merged, then finished."""
    columns, n = merge(setting, states, members)
    job = setting.job
    result: list[Any] = partial_of(job).finish(job, setting.index, columns, n).to_pylist()
    return [decoded(setting, r) for r in result]


def decoded(setting: Setting, result: Any) -> Any:
    """A result as compared: a KLL sketch's bytes as what it holds (its count and its
    values in order: the sketches compared hold at most `k` values, so they are exact,
    but their bytes keep the values in the order they came), anything else as is."""
    if setting.case.fn != "kll_sketch":
        return result
    sketch = datasketches.kll_doubles_sketch.deserialize(result)
    if sketch.is_empty():
        return (0, ())
    ranks = [(r + 0.5) / sketch.n for r in range(sketch.n)]
    return (sketch.n, tuple(sketch.get_quantiles(ranks, True)))


def each(count: int) -> list[list[int]]:
    return [[g] for g in range(count)]


def concat(setting: Setting, tables: Sequence[pa.Table]) -> pa.Table:
    return pa.concat_tables([t.cast(state_schema(setting)) for t in tables])


# ------------------------------------------------------------------- the oracle


def spark_key(value: Any) -> tuple[Any, ...]:
    """Spark's ascending order: null first, NaN after every number, `-0.0` = `0.0`."""
    if value is None:
        return (0,)
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    return (1, value)


def exact_sum(values: list[Any], zero: Any) -> Any:
    """The exact sum (`zero` over no values); floats with IEEE's NaN and infinities."""
    if not values:
        return zero
    if isinstance(zero, float):
        if any(math.isnan(v) for v in values) or {math.inf, -math.inf} <= set(values):
            return NAN
        if math.inf in values or -math.inf in values:
            return math.inf if math.inf in values else -math.inf
        return math.fsum(values)
    with localcontext() as context:
        context.prec = 100
        return sum(values, zero)


def variance(values: list[Any]) -> float | None:
    if len(values) < 2:
        return None
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        return NAN
    exact = [Fraction(v) for v in values]
    mean = sum(exact, Fraction(0)) / len(exact)
    return float(sum(((x - mean) ** 2 for x in exact), Fraction(0)) / (len(exact) - 1))


def oracle(setting: Setting, rows: list[Row]) -> Any:
    """One group's result, from its rows in window order."""
    fn = setting.case.fn
    ordered = sorted(rows, key=lambda r: (r["t"], *[spark_key(r[c]) for c in setting.order]))
    values = [r["v"] for r in ordered if r["v"] is not None]
    nan = any(isinstance(v, float) and math.isnan(v) for v in values)
    numbers = [v for v in values if not (isinstance(v, float) and math.isnan(v))]
    if fn == "count":
        return len(values)
    zero = {"integer": 0, "float": 0.0, "decimal": Decimal(0)}.get(setting.case.value_class)
    if fn == "sum":
        return exact_sum(values, zero)
    if fn == "mean":
        if not values:
            return None
        total = exact_sum(values, zero)
        return total / len(values) if isinstance(total, float) else float(
            Fraction(total) / len(values))
    if fn in ("variance", "stddev"):
        var = variance(values)
        return var if var is None or fn == "variance" else math.sqrt(var)
    if fn == "min":
        return None if not values else min(numbers) if numbers else NAN
    if fn == "max":
        return None if not values else NAN if nan else max(numbers)
    if fn == "first":
        return values[0] if values else None
    if fn == "last":
        return values[-1] if values else None
    if fn in ("max_by", "min_by"):
        best: Row | None = None
        for row in ordered:  # the earliest row with the extreme `by`
            if row["b"] is None:
                continue
            here = spark_key(row["b"])
            if best is None or (here > spark_key(best["b"]) if fn == "max_by"
                                else here < spark_key(best["b"])):
                best = row
        return None if best is None else best["v"]
    if fn == "count_distinct":
        return len({spark_key(v) for v in values})
    if fn in SKETCHES:
        return sketched(setting, values)
    if fn in K_LISTS:
        return k_list(fn, values, setting.k)
    if fn == "histogram":
        return histogram(values)
    assert fn == "aggregate"  # Spread: max - min, NaN the greatest
    if not values:
        return None
    if nan:
        return NAN
    return float(max(numbers)) - float(min(numbers))


def sketched(setting: Setting, values: list[Any]) -> Any:
    """A sketch aggregation's result over `values`: one sketch of them all, built
    directly in the order given (wisp's result is the canonical form, the same whatever
    the order and parts: the oracle's bytes are made canonical alone)."""
    job = setting.job
    family = FAMILIES[job.definition.algebra]
    column = pa.array(values, setting.case.kind)
    valid = np.ones(len(values), dtype=bool)
    sketch = family.new(job)
    family.update(sketch, family.values(job, column, valid))
    blob = family.combine(job, [sketch])
    return decoded(setting, family.result(job, [blob]).to_pylist()[0])
def k_list(fn: str, values: list[Any], k: int) -> list[Any]:
    """`first_k`/`last_k`/`top_k`/`bottom_k` of non-null values in window order: top and
    bottom by Spark's order, equal values in window order (a stable sort)."""
    if fn == "first_k":
        return values[:k]
    if fn == "last_k":
        return values[-k:]
    return sorted(values, key=spark_key, reverse=fn == "top_k")[:k]


def histogram(values: list[Any]) -> list[tuple[Any, int]]:
    """Each distinct value (NaN one, `-0.0` as `0.0`) and its count, ascending, as a
    map's entries."""
    counts: dict[tuple[Any, ...], int] = {}
    shown: dict[tuple[Any, ...], Any] = {}
    for value in values:
        key = spark_key(value)
        counts[key] = counts.get(key, 0) + 1
        shown[key] = 0.0 if isinstance(value, float) and value == 0 else value
    return [(shown[key], counts[key]) for key in sorted(counts)]


def overflows(setting: Setting, groups: Sequence[list[Row]]) -> bool:
    """Whether an integer sum's total of some group leaves 64 bits."""
    if setting.case.fn != "sum" or setting.case.value_class != "integer":
        return False
    return any(not INT64[0] <= oracle(setting, g) <= INT64[1] for g in groups)


def same(got: Any, want: Any, floating: bool, scale: float = 1.0) -> bool:
    """Equal results of one type: floats both NaN, equal (`-0.0` to `0.0`), or, computed
    in floats (`floating`), within a relative 1e-9 (absolute `1e-9 * scale` near 0);
    anything else exactly equal."""
    if got is None or want is None:
        return got is None and want is None
    if type(got) is not type(want):
        return False
    if isinstance(got, (list, tuple)):  # k-lists, a map's entries and each entry
        return len(got) == len(want) and all(
            same(a, b, floating, scale) for a, b in zip(got, want, strict=True))
    if isinstance(got, float):
        if math.isnan(got) or math.isnan(want):
            return math.isnan(got) and math.isnan(want)
        return got == want or (floating and math.isclose(got, want, rel_tol=1e-9,
                                                         abs_tol=1e-9 * scale))
    return bool(got == want)


def check(setting: Setting, got: list[Any], want: list[Any], what: str) -> None:
    scale = 100.0 if setting.case.fn == "variance" else 10.0
    for g, (a, b) in enumerate(zip(got, want, strict=True)):
        assert same(a, b, setting.case.floating, scale), (
            f"{setting.case!r} group {g}, {what}: got {a!r}, want {b!r} ({setting})")


def results(setting: Setting, groups: Sequence[list[Row]],
            run: Callable[[], list[Any]]) -> list[Any] | None:
    """`run()`, or None where it must raise `ArithmeticError` (an integer total beyond
    64 bits), checked."""
    if overflows(setting, groups):
        with pytest.raises(ArithmeticError, match="overflows a long"):
            run()
        return None
    return run()


# -------------------------------------------------------------------- the laws


def split(rng: random.Random, rows: list[Row], parts: int) -> list[list[Row]]:
    """The rows dealt at random into at most `parts` non-empty parts, shuffled."""
    shuffled = rows[:]
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(rows)), min(parts, len(rows)) - 1)) \
        if len(rows) > 1 else []
    bounds = [0, *cuts, len(rows)]
    return [shuffled[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=20, deadline=None)
@pytest.mark.parametrize("case", CASES, ids=repr)
@given(data=st.data(), rng=st.randoms(use_true_random=False), parts=st.integers(1, 4),
       chunks=st.integers(1, 3))
def test_any_split_merged_in_any_order_finishes_as_one_add_and_as_the_oracle(
        case: Case, data: st.DataObject, rng: random.Random, parts: int,
        chunks: int) -> None:
    """Each group's rows split into parts at random (states without values among them),
    the parts added in several chunks, their states merged in a random order: the same
    results as one `add` of each group's rows, and as the oracle."""
    setting = data.draw(settings_of(case))
    groups = data.draw(groups_of(setting))
    whole = add(setting, groups)
    assert whole.column(f"n{setting.index}").to_pylist() == [
        sum(1 for r in g if r["b" if case.by else "v"] is not None) for g in groups]
    expected = results(setting, groups, lambda: finish(setting, whole, each(len(groups))))
    if expected is not None:
        check(setting, expected, [oracle(setting, g) for g in groups], "one add")
    empty = data.draw(groups_of(setting, nulls=True, min_size=0).map(
        lambda more: (more + [[]] * len(groups))[:len(groups)]))
    pieces = [(g, part) for g, rows in enumerate(groups) for part in split(rng, rows, parts)]
    pieces += [(g, rows) for g, rows in enumerate(empty) if rows]  # n = 0 states
    rng.shuffle(pieces)
    tables, owners = [], []
    for c in range(chunks):
        chunk = pieces[c::chunks]
        if chunk:
            tables.append(add(setting, [rows for _, rows in chunk]))
            owners += [g for g, _ in chunk]
    states = concat(setting, tables)
    members = [[j for j, owner in enumerate(owners) if owner == g] for g in range(len(groups))]
    for group in members:
        rng.shuffle(group)
    got = results(setting, groups, lambda: finish(setting, states, members))
    if expected is not None and got is not None:
        check(setting, got, expected, "parts merged")


@settings(max_examples=12, deadline=None)
@pytest.mark.parametrize("case", CASES, ids=repr)
@given(data=st.data(), rng=st.randoms(use_true_random=False))
def test_merge_is_associative_and_a_state_without_values_is_its_identity(
        case: Case, data: st.DataObject, rng: random.Random) -> None:
    """Each group's rows in three parts a, b, c: merge(merge(a, b), c) and
    merge(a, merge(b, c)) finish alike; a state with `n = 0` merged with a, before or
    after, finishes as a alone; merged alone, as the oracle over no values."""
    setting = data.draw(settings_of(case))
    groups = data.draw(groups_of(setting))
    count = len(groups)
    thirds = [(t + [t[0]] * 3)[:3] for t in (split(rng, rows, 3) for rows in groups)]
    a, b, c = (add(setting, [t[k] for t in thirds]) for k in range(3))
    merged = [[r for part in t for r in part] for t in thirds]
    ab = merged_table(setting, concat(setting, [a, b]), [[g, count + g] for g in range(count)])
    bc = merged_table(setting, concat(setting, [b, c]), [[g, count + g] for g in range(count)])
    pairs = [[g, count + g] for g in range(count)]
    left = results(setting, merged, lambda: finish(setting, concat(setting, [ab, c]), pairs))
    right = results(setting, merged, lambda: finish(setting, concat(setting, [a, bc]), pairs))
    if left is not None and right is not None:
        check(setting, left, [oracle(setting, rows) for rows in merged], "(a b) c")
        check(setting, right, left, "a (b c) against (a b) c")
    empty = add(setting, data.draw(groups_of(setting, nulls=True).map(
        lambda more: (more * count)[:count])))
    assert empty.column(f"n{setting.index}").to_pylist() == [0] * count
    check(setting, finish(setting, empty, each(count)), [oracle(setting, [])] * count,
          "no values")
    alone = results(setting, [t[0] for t in thirds], lambda: finish(setting, a, each(count)))
    with_empty = concat(setting, [a, empty])
    for order in (pairs, [[count + g, g] for g in range(count)]):  # empty after, before
        got = results(setting, [t[0] for t in thirds], functools.partial(
            finish, setting, with_empty, order))
        if alone is not None and got is not None:
            check(setting, got, alone, "a with an empty state")


# ---------------------------------------------------------------- remove


INVERTIBLE = [
    *cases(["count"], INTEGER, FLOAT, DECIMAL, BOOLEAN, STRING),
    *cases(["sum", "mean"], INTEGER, BIG_INTEGER, DECIMAL, BIG_DECIMAL),
]
"""The states `remove` undoes exactly: counts, and exact sums (integers, decimals)."""


def test_the_invertible_states_are_the_exact_ones_and_the_definitions_say_so() -> None:
    """`inverse_of` finds a `remove` for the exact states only (never float sums nor
    moments), and a built-in's `Definition.invertible` is whether it has one for some
    value class it takes on stream panes."""
    for case in CASES:
        setting = Setting(case, "float", ("v",), False, 0)
        found = inverse_of(setting.job) is not None
        assert found is any(c.fn == case.fn and c.value_class == case.value_class
                            for c in INVERTIBLE), case
    for fn, definition in DEFINITIONS.items():
        if definition.algebra not in ALGEBRAS:
            continue
        jobs = [Setting(c, "float", ("v",), False, 0).job for c in CASES if c.fn == fn]
        assert definition.invertible is any(inverse_of(j) is not None for j in jobs), fn


def remove(setting: Setting, states: pa.Table, groups: Sequence[list[Row]]) -> pa.Table:
    """`states` (one per group) without each group's rows `groups[g]` (`remove`)."""
    i, job = setting.index, setting.job
    inverse = inverse_of(job)
    assert inverse is not None
    chunk = chunk_of(setting, groups)
    columns = {name: states.column(name).combine_chunks() for name in states.column_names
               if name != f"n{i}"}
    n = states.column(f"n{i}").to_numpy() - np.add.reduceat(
        chunk.valid.astype(np.int64), chunk.starts)
    return as_table(setting, n, inverse.remove(job, i, columns, chunk, setting.layout))


@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("case", INVERTIBLE, ids=repr)
@given(data=st.data(), rng=st.randoms(use_true_random=False))
def test_remove_undoes_add(case: Case, data: st.DataObject, rng: random.Random) -> None:
    """Each group's rows A and B (B: copies of A's rows and others, nulls among both):
    `add(A ∪ B)` then `remove(B)` is exactly `add(A)` (its finish the oracle's over A),
    and `add(B)` then `remove(B)` the state without values."""
    setting = data.draw(settings_of(case))
    kept = data.draw(groups_of(setting))
    removed = [data.draw(st.lists(st.sampled_from(rows) | rows_of(setting), min_size=1,
                                  max_size=12)) for rows in kept]
    both = [a + b for a, b in zip(kept, removed, strict=True)]
    for rows in both:
        rng.shuffle(rows)
    left = remove(setting, add(setting, both), removed)
    assert left.equals(add(setting, kept)), (left.to_pylist(), add(setting, kept).to_pylist())
    got = results(setting, kept, lambda: finish(setting, left, each(len(kept))))
    if got is not None:
        check(setting, got, [oracle(setting, rows) for rows in kept], "removed")
    nothing = remove(setting, add(setting, removed), removed)
    assert nothing.column(f"n{setting.index}").to_pylist() == [0] * len(removed)
    empty = add(setting, data.draw(groups_of(setting, nulls=True).map(
        lambda more: (more * len(removed))[:len(removed)])))
    assert nothing.equals(empty)
    check(setting, finish(setting, nothing, each(len(removed))),
          [oracle(setting, [])] * len(removed), "all removed")
