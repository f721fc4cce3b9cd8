"""The running kernel (cumulative windows and `Since(pred)` as accumulators): the same
rows as the row-carrying kernels (`FrameKernel` with `RunningFrame`, `TickKernel` with
predicate ticks) over several keys at once; a key cut anywhere, and streamed under
horizons, gives the uncut run bit for bit; its state stays a constant size; `collect`
and udafs are refused (no Spark)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import assert_resumes, cut_run, rows, stream_run

from wisp.errors import WispUnsupportedError
from wisp.plan.frames import RunningFrame
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.windows import running
from wisp.runtime.windows.frames import FrameKernel
from wisp.runtime.windows.periods import HIDDEN_TICK, TickKernel
from wisp.runtime.windows.resumable import KernelState
from wisp.runtime.windows.running import RunningKernel


def job(fn: str, column: str | None, value_class: str, output: pa.DataType
        ) -> AggregateJob:
    return built_in_job(fn, column, value_class, output, None)


DECIMAL = pa.decimal128(12, 2)
AGGREGATES: dict[str, AggregateJob] = {
    "count": job("count", None, "none", pa.int64()),
    "count_v": job("count", "v", "float", pa.int64()),
    "sum_v": job("sum", "v", "float", pa.float64()),
    "mean_v": job("mean", "v", "float", pa.float64()),
    "min_v": job("min", "v", "float", pa.float64()),
    "max_v": job("max", "v", "float", pa.float64()),
    "first_v": job("first", "v", "float", pa.float64()),
    "last_v": job("last", "v", "float", pa.float64()),
    "variance_v": job("variance", "v", "float", pa.float64()),
    "stddev_v": job("stddev", "v", "float", pa.float64()),
    "count_i": job("count", "i", "integer", pa.int64()),
    "sum_i": job("sum", "i", "integer", pa.int64()),
    "mean_i": job("mean", "i", "integer", pa.float64()),
    "min_i": job("min", "i", "integer", pa.int32()),
    "max_i": job("max", "i", "integer", pa.int32()),
    "variance_i": job("variance", "i", "integer", pa.float64()),
    "min_s": job("min", "s", "ordered", pa.string()),
    "max_s": job("max", "s", "ordered", pa.string()),
    "first_s": job("first", "s", "ordered", pa.string()),
    "last_s": job("last", "s", "ordered", pa.string()),
    "sum_d": job("sum", "d", "decimal", pa.decimal128(22, 2)),
    "mean_d": job("mean", "d", "decimal", pa.float64()),
    "min_d": job("min", "d", "decimal", DECIMAL),
    "max_d": job("max", "d", "decimal", DECIMAL),
    "stddev_d": job("stddev", "d", "decimal", pa.float64()),
    "min_b": job("min", "b", "boolean", pa.bool_()),
    "max_b": job("max", "b", "boolean", pa.bool_()),
    "last_b": job("last", "b", "boolean", pa.bool_()),
    "max_by_s_v": built_in_job("max_by", "s", "ordered", pa.string(), None, by="v"),
    "min_by_i_s": built_in_job("min_by", "i", "integer", pa.int32(), None, by="s"),
    "max_by_d_b": built_in_job("max_by", "d", "decimal", DECIMAL, None, by="b"),
    "min_by_v_i": built_in_job("min_by", "v", "float", pa.float64(), None, by="i"),
}
EWM: dict[str, AggregateJob] = {
    "ewm_v": built_in_job("ewm_mean", "v", "float", pa.float64(), None, half_life=2.0),
    "ewm_i": built_in_job("ewm_mean", "i", "integer", pa.float64(), None, half_life=0.5),
    "ewm_d": built_in_job("ewm_mean", "d", "decimal", pa.float64(), None, half_life=7.0),
}
"""Decayed sums in blocks: a resumed run (its carried sums decayed) and the batch
kernels agree with the uncut run to rounding."""
MOMENTS = ("variance_v", "stddev_v", "variance_i", "stddev_d")
"""Welford's update here, merged moments in the batch kernels: equal to rounding."""
ROUNDED = (*MOMENTS, "mean_d")
"""The batch kernels' decimal mean adds the values as floats, this kernel exactly."""
SUMS = ("sum_v", "mean_v")
"""Float sums: the batch kernels' certified prefix differences against this kernel's
sequential sums, equal (but for the sign of a zero) where every partial sum is exact."""
TIME_TYPES = {"integer": pa.int64(), "float": pa.float64(),
              "timestamp": pa.timestamp("us", tz="UTC")}


def schema(names: Sequence[str], time_kind: str = "integer") -> pa.Schema:
    time_type = TIME_TYPES[time_kind]
    return pa.schema([pa.field("k", pa.string()),
                      *[pa.field(f, time_type) for f in ("window_start", "window_end",
                                                         "time")],
                      *[pa.field(n, {**AGGREGATES, **EWM}[n].output_type) for n in names]])


def jobs(names: Sequence[str]) -> tuple[AggregateJob, ...]:
    return tuple({**AGGREGATES, **EWM}[n] for n in names)


def kernel(since: bool = False, emit: str = "events", time_kind: str = "integer",
           names: Sequence[str] = tuple(AGGREGATES)) -> RunningKernel:
    return RunningKernel(("k",), "t", time_kind, 0, jobs(names), schema(names, time_kind),
                         since=since, emit=emit)


def reference(since: bool, emit: str, time_kind: str = "integer",
              names: Sequence[str] = tuple(AGGREGATES)) -> FrameKernel | TickKernel:
    """The row-carrying kernel of the same window."""
    if since:
        return TickKernel(("k",), "t", time_kind, 0, None, 1, False, emit, False,
                          jobs(names), schema(names, time_kind))
    return FrameKernel(("k",), "t", time_kind, 0, RunningFrame(), jobs(names),
                       schema(names, time_kind))


def events(keys: Sequence[str], times: Sequence[int], values: Sequence[float | None],
           flags: Sequence[bool | None], ints: Sequence[int | None] | None = None,
           time_kind: str = "integer") -> pa.Table:
    """Input rows sorted by key then time (the order is the tie-break); `s`, `d` and `b`
    derived from the row's position, with nulls."""
    m = len(times)
    stamps: list[Any] = list(times)
    if time_kind == "float":
        stamps = [t / 4 for t in times]
    elif time_kind == "timestamp":
        stamps = [1_700_000_000_000_000 + t * 1_000_000 for t in times]
    return pa.table({
        "k": pa.array(keys, pa.string()), "t": pa.array(stamps, TIME_TYPES[time_kind]),
        "v": pa.array(values, pa.float64()),
        "i": pa.array(ints if ints is not None else
                      [None if j % 5 == 3 else (j * 37) % 23 - 11 for j in range(m)],
                      pa.int32()),
        "s": pa.array([None if j % 4 == 1 else f"s{(j * 37) % 11:02d}" for j in range(m)],
                      pa.string()),
        "d": pa.array([None if j % 6 == 2 else Decimal((j * 53) % 41 - 20) / 4
                       for j in range(m)], DECIMAL),
        "b": pa.array([None if j % 7 == 5 else (j * 5) % 3 == 0 for j in range(m)]),
        HIDDEN_TICK: pa.array(flags, pa.bool_())})


def canonical(batches: Sequence[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def same_value(a: Any, b: Any, rel: float, scale: float) -> bool:
    """Equal (NaN equal to NaN, 0.0 to -0.0), or floats within `rel` of `scale`."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=rel * scale)
    return type(a) is type(b) and a == b


def assert_matches(got: list[dict[str, Any]], want: list[dict[str, Any]],
                   table: pa.Table, exact_sums: bool) -> None:
    """Row by row in order: every column equal, but the moments (and the decimal mean)
    to a relative 1e-9 of the values' scale, and float sums too unless `exact_sums`."""
    assert len(got) == len(want)
    numbers = [float(x) for c in ("v", "i", "d") for x in table.column(c).to_pylist()
               if x is not None]
    magnitude = 1.0 + sum(abs(x) for x in numbers if math.isfinite(x))
    tolerant = ROUNDED if exact_sums else (*ROUNDED, *SUMS)
    for mine, theirs in zip(got, want, strict=True):
        assert list(mine) == list(theirs)
        for name, value in mine.items():
            rel = 1e-9 if name in tolerant else 0.0
            scale = magnitude ** 2 if name.startswith("variance") else magnitude
            assert same_value(value, theirs[name], rel, scale), (name, mine, theirs)


# halves in a small range: every partial sum is exact, in any order
exact_values = st.one_of(st.none(), st.just(math.nan), st.just(math.inf),
                         st.integers(-40, 40).map(lambda x: x / 2 + 0.0))
wide_values = st.one_of(st.none(), st.just(math.nan),
                        st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: x + 0.0))


@st.composite
def keyed_input(draw: st.DrawFn, values: st.SearchStrategy[float | None],
                max_rows: int = 25, max_keys: int = 5
                ) -> tuple[pa.Table, np.ndarray[Any, Any]]:
    """Several keys' runs one after another (ties in time, flags true, false or null at
    a drawn rate), and where each run begins. A test of one key's run draws one key
    (`max_keys=1`): the rows of keys it would not read cost most of an example's time."""
    sizes = draw(st.lists(st.integers(1, max_rows), min_size=1, max_size=max_keys))
    rate = draw(st.sampled_from([0.0, 0.1, 0.3, 0.8]))
    time_kind = draw(st.sampled_from(sorted(TIME_TYPES)))
    keys: list[str] = []
    times: list[int] = []
    for n, size in enumerate(sizes):
        gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5]), min_size=size,
                             max_size=size))
        times += list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
        keys += [f"k{n}"] * size
    m = len(times)
    flags = [draw(st.sampled_from([None, False])) if draw(st.floats(0, 1)) >= rate
             else True for _ in range(m)]
    vals = draw(st.lists(values, min_size=m, max_size=m))
    ints = draw(st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=m,
                         max_size=m))
    table = events(keys, times, vals, flags, ints, time_kind)
    return table, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def time_kind_of(table: pa.Table) -> str:
    found = table.schema.field("t").type
    return next(k for k, t in TIME_TYPES.items() if t == found)


window_st = st.sampled_from([(False, "events"), (True, "events"), (True, "ticks"),
                             (True, "both")])


@settings(max_examples=120, deadline=None)
@given(data=keyed_input(exact_values), window=window_st)
def test_the_rows_of_the_row_carrying_kernels(
        data: tuple[pa.Table, np.ndarray[Any, Any]], window: tuple[bool, str]) -> None:
    """Several keys through `run_group` with runs: the rows `FrameKernel(RunningFrame)`
    or `TickKernel` gives, value for value (float sums exact: every partial sum is)."""
    table, runs = data
    since, emit = window
    kind = time_kind_of(table)
    got = canonical([kernel(since, emit, kind).run_group(table, runs)])
    want = canonical([reference(since, emit, kind).run_group(table, runs)])
    assert_matches(got, want, table, exact_sums=True)


@settings(max_examples=100, deadline=None)
@given(data=keyed_input(wide_values), window=window_st)
def test_arbitrary_floats_agree_to_rounding(
        data: tuple[pa.Table, np.ndarray[Any, Any]], window: tuple[bool, str]) -> None:
    """Arbitrary floats: float sums, means and moments to a relative 1e-9 of the values'
    scale (sequential sums here, certified prefix differences in batch)."""
    table, runs = data
    since, emit = window
    kind = time_kind_of(table)
    got = canonical([kernel(since, emit, kind).run_group(table, runs)])
    want = canonical([reference(since, emit, kind).run_group(table, runs)])
    assert_matches(got, want, table, exact_sums=False)


@settings(max_examples=120, deadline=None)
@given(data=keyed_input(wide_values, max_rows=60, max_keys=1), window=window_st,
       cuts=st.lists(st.integers(0, 60), max_size=8))
def test_a_key_resumes_bit_for_bit(data: tuple[pa.Table, np.ndarray[Any, Any]],
                                   window: tuple[bool, str], cuts: list[int]) -> None:
    """One key cut anywhere (inside ties, twice at a place, at 0 and at the end), the
    state through bytes at every cut: the uncut run's rows exactly, float sums and
    moments included."""
    table, runs = data
    one = table.slice(0, int(runs[1]))
    assert_resumes(kernel(*window, time_kind_of(table)), one, cuts)


@settings(max_examples=100, deadline=None)
@given(data=keyed_input(wide_values, max_rows=60, max_keys=1), window=window_st,
       cuts=st.lists(st.integers(0, 60), max_size=8),
       slack=st.lists(st.floats(0, 1), max_size=4))
def test_a_stream_emits_every_row_at_once(
        data: tuple[pa.Table, np.ndarray[Any, Any]], window: tuple[bool, str],
        cuts: list[int], slack: list[float]) -> None:
    """Pieces with horizons, the state through bytes at every step: every row before
    the horizon is emitted by then, none twice, nothing waits for `wake` or `finish`,
    and the rows are the uncut run's."""
    table, runs = data
    one = table.slice(0, int(runs[1]))
    kind = time_kind_of(table)
    if kind == "timestamp":  # horizons are ticks: microseconds as integer time
        one, kind = one.set_column(1, "t", one.column("t").cast(pa.int64())), "integer"
    running_kernel = kernel(*window, kind)
    outputs = stream_run(running_kernel, one, "t", cuts, slack,
                         is_final=lambda row, h: bool(row["time"] < h))
    assert [repr(r) for r in rows(outputs)] == [
        repr(r) for r in rows([running_kernel.run_group(one)])]
    assert outputs[-1].num_rows == 0  # finish
    assert running_kernel.wake(KernelState(pa.table({}))) is None


def test_long_segments_and_long_keys() -> None:
    """Segments longer than `order_stats.SHORT` (scanned one by one) among short ones, in several
    keys at once and cut into pieces: the batch kernels' rows."""
    rng = np.random.default_rng(11)
    sizes = [300, 2, 1, 150, 40]
    m = sum(sizes)
    keys = [f"k{n}" for n, size in enumerate(sizes) for _ in range(size)]
    times = np.concatenate([np.sort(rng.integers(0, 2 * s, s)) for s in sizes]).tolist()
    values = [None if r < 0.1 else float(x) / 2 for r, x in
              zip(rng.random(m), rng.integers(-30, 30, m), strict=True)]
    flags: list[bool | None] = [bool(f) for f in rng.random(m) < 0.02]
    flags[5:10] = [True] * 5  # periods of one row
    table = events(keys, times, values, flags)
    runs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for since, emit in [(False, "events"), (True, "events"), (True, "ticks")]:
        got = canonical([kernel(since, emit).run_group(table, runs)])
        want = canonical([reference(since, emit).run_group(table, runs)])
        assert_matches(got, want, table, exact_sums=True)
        assert_resumes(kernel(since, emit), table.slice(0, 300), [1, 64, 65, 200, 299])


@pytest.mark.parametrize(("since", "names", "most"), [
    (False, tuple(AGGREGATES), 1), (True, tuple(AGGREGATES), 1),
    (False, ("count", "sum_v", "mean_i", "min_v", "max_i", "variance_v", "sum_d"), 0),
    (True, ("count", "sum_v", "mean_i", "min_v", "max_i", "variance_v", "sum_d"), 0)])
def test_the_state_stays_a_constant_size(since: bool, names: tuple[str, ...],
                                         most: int) -> None:
    """Three thousand rows of one key in pieces of 7, a flag every 500th row: the state
    carries at most one row (none without first/last or a min/max by rank) and a few
    hundred bytes, whatever the key's length; the rows are the uncut run's."""
    m = 3_000
    flags: list[bool | None] = [j % 500 == 499 for j in range(m)]
    table = events(["a"] * m, [j // 3 for j in range(m)],
                   [float(j % 17) - 8.5 for j in range(m)], flags)
    running_kernel = kernel(since, names=names)
    # the pieces `assert_resumes(running_kernel, table, range(0, m, 7))` feeds (`cut_run`:
    # an empty one, then pieces of 7), stepped once here: the state checked at every cut
    bounds = [0, *range(0, m, 7), m]
    state: KernelState | None = None
    sizes = []
    outputs = []
    for begin, stop in itertools.pairwise(bounds):
        out, state = running_kernel.step(state, table.slice(begin, stop - begin))
        outputs.append(out)
        state = KernelState.from_bytes(state.to_bytes())
        assert state.rows.num_rows <= most
        if stop > begin:
            sizes.append(len(state.to_bytes()))
    outputs.append(running_kernel.finish(state))
    assert max(sizes) < 4096 and max(sizes[200:]) <= max(sizes[:100]) + 64  # no growth
    assert [repr(r) for r in rows(outputs)] == [
        repr(r) for r in rows([running_kernel.run_group(table)])]


def test_a_state_holds_accumulators() -> None:
    """The carried scalars are the open window's accumulators; a closed period leaves an
    empty state."""
    table = events(["a"] * 4, [1, 2, 2, 5], [1.5, None, math.nan, 2.0],
                   [False, None, False, True])
    since = kernel(True, names=("count", "sum_i", "min_v", "last_s"))
    _, state = since.step(None, table.slice(0, 3))
    back = KernelState.from_bytes(state.to_bytes())
    assert back.scalars["start"] == 1 and back.scalars["0:count"] == 3
    assert back.scalars["1:sum"] == sum(table.column("i").to_pylist()[j] or 0
                                        for j in range(3))
    assert back.scalars["2:count"] == 2 and back.scalars["2:numbers"] == 1
    assert back.rows.num_rows == 1 and back.rows.column("k").to_pylist() == ["a"]
    out, closed = since.step(back, table.slice(3))
    assert out.column("count").to_pylist() == [4]
    assert out.column("window_start").to_pylist() == [1]
    assert closed.rows.num_rows == 0 and dict(closed.scalars) == {}


@pytest.mark.parametrize(("fn", "shown"), [("collect", "collect(i)"), ("udaf", "udaf(i)")])
def test_collect_and_udafs_are_refused(fn: str, shown: str) -> None:
    refused = (*jobs(("count",)), built_in_job(fn, "i", "integer", pa.list_(pa.int64()),
                                                (lambda v, t: 0) if fn == "udaf" else None))
    with pytest.raises(WispUnsupportedError) as error:
        RunningKernel(("k",), "t", "integer", 0, refused, schema(("count",)))
    assert str(error.value) == (
        "`aggregations` of a running window kept as accumulators must be count, sum, "
        "mean, variance, stddev, min, max, first, last, max_by, min_by, ewm_mean, "
        "hll_sketch, theta_sketch, kll_sketch, approx_count_distinct, approx_quantile, "
        f"first_k, last_k, top_k, bottom_k, found {shown} (its state would hold every value "
        "of the window, growing with the key's history)")


def test_a_long_sum_that_leaves_64_bits_fails_as_in_batch() -> None:
    """Integer sums are exact: one that leaves a long fails as the batch kernels do, in
    a whole run and in a resumed one; the mean of the same values (which does not fail)
    equals the batch kernels', with sums beyond 64 bits carried through bytes."""
    big = 1 << 61
    ints: list[int | None] = [big, big, big, None, big, -big, big, 3]
    table = events(["a"] * 8, list(range(8)), [1.0] * 8, [False] * 8)
    table = table.set_column(3, "i", pa.array(ints, pa.int64()))
    summed = kernel(names=("sum_i",))
    for run in (lambda: summed.run_group(table), lambda: cut_run(summed, table, [2, 5])):
        with pytest.raises(ArithmeticError, match=r"sum\(i\) overflows a long"):
            run()
    with pytest.raises(ArithmeticError):
        reference(False, "events", names=("sum_i",)).run_group(table)
    mean = kernel(names=("mean_i",))
    want = canonical([reference(False, "events", names=("mean_i",)).run_group(table)])
    assert canonical([mean.run_group(table)]) == want
    assert canonical(cut_run(mean, table, [4, 5, 6])) == want


def test_the_batch_driver_feeds_long_keys_in_pieces(monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    """The mapInArrow function over batches of 7 rows, pieces of 10: short keys several
    at a time, long ones through `step`; the rows of each key's whole run."""
    monkeypatch.setattr(running, "CHUNK_ROWS", 10)
    sizes = {"a": 3, "b": 95, "c": 1, "d": 4, "e": 23}
    keys = [k for k, size in sizes.items() for _ in range(size)]
    rng = np.random.default_rng(7)
    times = np.concatenate([np.cumsum(rng.integers(0, 3, s)) for s in sizes.values()])
    flags: list[bool | None] = [bool(f) for f in rng.random(len(keys)) < 0.2]
    table = events(keys, times.tolist(), rng.normal(size=len(keys)).tolist(), flags)
    for since, emit in [(False, "events"), (True, "both"), (True, "ticks")]:
        running_kernel = kernel(since, emit)
        driven = canonical(list(running_kernel(iter(table.to_batches(max_chunksize=7)))))
        whole = []
        begin = 0
        for size in sizes.values():
            whole += canonical([running_kernel.run_group(table.slice(begin, size))])
            begin += size
        assert [repr(r) for r in driven] == [repr(r) for r in whole]


def test_cumulative_windows_emit_only_events() -> None:
    with pytest.raises(ValueError, match="no running window emits 'ticks'"):
        kernel(False, "ticks")


def test_values_of_any_type_carry_in_their_own_type() -> None:
    """`first`/`last` of a list column and `min`/`max` of dates and binary strings carry
    their values in the state's one row: the batch kernels' rows, whole and resumed."""
    m = 12
    dates = [None if j % 5 == 2 else 19_000 + (j * 7) % 9 for j in range(m)]
    table = pa.table({
        "k": ["a"] * m, "t": pa.array([j // 2 for j in range(m)], pa.int64()),
        "l": pa.array([None if j % 4 == 0 else [j, None] for j in range(m)],
                      pa.list_(pa.int64())),
        "dt": pa.array(dates, pa.int32()).cast(pa.date32()),
        "bin": pa.array([None if j % 3 == 1 else bytes([65 + (j * 5) % 7]) for j in range(m)],
                        pa.binary()),
        HIDDEN_TICK: pa.array([j % 5 == 4 for j in range(m)])})
    chosen = (job("first", "l", "other", pa.list_(pa.int64())),
              job("last", "l", "other", pa.list_(pa.int64())),
              job("min", "dt", "ordered", pa.date32()), job("max", "dt", "ordered", pa.date32()),
              job("max", "bin", "ordered", pa.binary()), job("min", "bin", "ordered", pa.binary()))
    out = pa.schema([*schema(()), *[pa.field(f"a{j}", c.output_type)
                                    for j, c in enumerate(chosen)]])
    for since in (False, True):
        mine = RunningKernel(("k",), "t", "integer", 0, chosen, out, since=since)
        theirs = (TickKernel(("k",), "t", "integer", 0, None, 1, False, "events", False,
                             chosen, out) if since else
                  FrameKernel(("k",), "t", "integer", 0, RunningFrame(), chosen, out))
        want = canonical([theirs.run_group(table)])
        assert canonical([mine.run_group(table)]) == want
        assert canonical(cut_run(mine, table, [1, 4, 5, 9])) == want


def assert_close_rows(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want)
    for mine, theirs in zip(got, want, strict=True):
        assert list(mine) == list(theirs)
        for name, value in mine.items():
            assert same_value(value, theirs[name], 1e-9 if name in EWM else 0.0, 1.0), (
                name, mine, theirs)


@settings(max_examples=100, deadline=None)
@given(data=keyed_input(wide_values, max_rows=60), window=window_st,
       cuts=st.lists(st.integers(0, 60), max_size=8))
def test_ewm_mean_resumes_and_agrees_with_the_batch_kernels(
        data: tuple[pa.Table, np.ndarray[Any, Any]], window: tuple[bool, str],
        cuts: list[int]) -> None:
    """ewm_mean as accumulators (its decayed sums, their weight and time carried): the
    row-carrying kernels' rows, and a key cut anywhere gives the uncut run, to a
    relative 1e-9 (the decayed sums are cut into blocks at other places)."""
    table, runs = data
    since, emit = window
    kind = time_kind_of(table)
    names = (*EWM, "count_v")
    got = canonical([kernel(since, emit, kind, names).run_group(table, runs)])
    want = canonical([reference(since, emit, kind, names).run_group(table, runs)])
    assert_close_rows(got, want)
    one = table.slice(0, int(runs[1]))
    whole = kernel(since, emit, kind, names)
    assert_close_rows(canonical(cut_run(whole, one, cuts)), canonical([whole.run_group(one)]))
