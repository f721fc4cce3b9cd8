"""The policy kernel (sliding windows with eviction and trigger policies, policy-sized
tumbling windows) resumes: one key's rows cut anywhere, the state serialised and
reloaded at every cut, give exactly the rows of one uncut run and of the literal
simulation (tests/oracle_spl.py), with out-of-order times and attributes, ties and
nulls; the mapInArrow function feeds a long key in pieces and short keys whole; the
carried state stays within the window's reach."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_policies import simulate
from resumable_check import assert_resumes, cut_run, rows

import wisp as ws
import wisp.runtime.windows.policies as rp
from wisp import WispInputError
from wisp.runtime.codecs.batches import CHUNK_ROWS
from wisp.runtime.windows.resumable import KernelState
from wisp.spec.policies import Count, Delta, Policy, Punctuation, Time

SPECS = ("count", "time", "delta")
AGGREGATES = (
    built_in_job("count", None, "none", pa.int64(), None),
    built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None),
    built_in_job("sum", "v", "float", pa.float64(), None),
    built_in_job("mean", "v", "float", pa.float64(), None),
    built_in_job("min", "v", "float", pa.float64(), None),
    built_in_job("first", "v", "float", pa.float64(), None),
    built_in_job("last", "s", "ordered", pa.string(), None),
)
NAMES = ("count", "collect_i", "sum_v", "mean_v", "min_v", "first_v", "last_s")


def policy(kind: str, size: int, d: int, shift: int, unit: float | int,
           attr_unit: float | int) -> Policy:
    """The policy as the spec writes it and, numeric time, as the kernel takes it."""
    if kind == "count":
        return Count(size)
    if kind == "time":
        return Time(size * unit, align=shift * unit)
    if kind == "delta":
        return Delta("a", d * attr_unit)
    return Punctuation("p")


def make_kernel(mode: str, evict: Policy, trigger: Policy | None, partial: bool,
                float_time: bool, float_attr: bool, chunk_rows: int = CHUNK_ROWS,
                collect: bool = True) -> rp.SplKernel:
    """The kernel over `AGGREGATES` (without `collect`: all held by accumulators)."""
    time_type = pa.float64() if float_time else pa.int64()
    fields = [pa.field("k", pa.string()), pa.field("window_start", time_type),
              pa.field("window_end", time_type), pa.field("time", time_type)]
    chosen = [(name, job) for name, job in zip(NAMES, AGGREGATES, strict=True)
              if collect or job.definition.name != "collect"]
    fields += [pa.field(name, job.output_type) for name, job in chosen]
    delta = isinstance(evict, Delta) or isinstance(trigger, Delta)
    attrs = (("a", "float" if float_attr else "integer"),) if delta else ()
    return rp.SplKernel(("k",), "t", "float" if float_time else "integer", 0, mode, evict,
                        trigger, partial, attrs, tuple(job for _, job in chosen),
                        pa.schema(fields), chunk_rows)


def make_table(data: list[tuple[int, int, float | None, bool | None]], float_time: bool,
               float_attr: bool, key: str = "x") -> pa.Table:
    """One key's rows in arrival order: time `t`, delta attribute `a`, value `v`
    (nulls), flag `p` (nulls), row number `i`, string `s`."""
    unit: float | int = 0.25 if float_time else 1  # exact in binary: no rounding
    attr_unit: float | int = 0.5 if float_attr else 1
    return pa.table({
        "k": pa.array([key] * len(data), pa.string()),
        "t": pa.array([t * unit for t, _, _, _ in data],
                      pa.float64() if float_time else pa.int64()),
        "a": pa.array([a * attr_unit for _, a, _, _ in data],
                      pa.float64() if float_attr else pa.int64()),
        "v": pa.array([v for _, _, v, _ in data], pa.float64()),
        "p": pa.array([p for _, _, _, p in data], pa.bool_()),
        "i": pa.array(range(len(data)), pa.int64()),
        "s": pa.array([None if v is None else f"s{i % 3}"
                       for i, (_, _, v, _) in enumerate(data)], pa.string()),
    })


def oracle(table: pa.Table, window: ws.Sliding | ws.Tumbling) -> list[tuple[Any, list[int]]]:
    """The simulation's emitted firings: (time, the row numbers in the window)."""
    members = [{"t": r["t"], "a": r["a"], "p": r["p"], "i": r["i"]}
               for r in table.to_pylist()]
    fired = simulate(members, time="t", window=window).fired
    return sorted(((at, [w["i"] for w in contents]) for at, contents in fired), key=repr)


def firings(batches: list[pa.RecordBatch]) -> list[tuple[Any, list[int]]]:
    return sorted(((r["time"], r["collect_i"]) for b in batches for r in b.to_pylist()),
                  key=repr)


# values in quarters: float sums exact in any order (the sums of a window's values are
# as good as correctly rounded, not bit for bit the same whichever positions it holds)
row_st = st.tuples(st.integers(-12, 12), st.integers(-6, 6),
                   st.one_of(st.none(), st.integers(-400, 400).map(lambda x: x * 0.25)),
                   st.one_of(st.none(), st.booleans()))
data_st = st.lists(row_st, max_size=40)
cuts_st = st.lists(st.integers(0, 40), max_size=8)


@settings(max_examples=200, deadline=None)
@given(data=data_st, cuts=cuts_st, kind=st.sampled_from(["delta", "punctuation"]),
       d=st.integers(0, 4), partial=st.booleans(), in_order=st.booleans(),
       float_time=st.booleans(), float_attr=st.booleans())
def test_tumbling_as_accumulators_gives_the_rows_kernels_rows(
        data: list[Any], cuts: list[int], kind: str, d: int, partial: bool, in_order: bool,
        float_time: bool, float_attr: bool) -> None:
    """Delta- and punctuation-sized tumbling windows over aggregations all held by
    accumulators carry the open window as them (`SplKernel.accumulates`): whole or cut
    anywhere with the state through bytes, the rows of the kernel that keeps the
    window's tuples (`collect` makes it keep them), and a state of at most one row."""
    if in_order:
        data = sorted(data, key=lambda r: r[0])
    unit: float | int = 0.25 if float_time else 1
    attr_unit: float | int = 0.5 if float_attr else 1
    size_policy = policy(kind, 1, d, 0, unit, attr_unit)
    keeping = make_kernel("tumbling", size_policy, None, partial, float_time, float_attr)
    accumulated = make_kernel("tumbling", size_policy, None, partial, float_time,
                              float_attr, collect=False)
    assert accumulated.accumulates and not keeping.accumulates
    table = make_table(data, float_time, float_attr)
    want = rows([keeping.run_group(table).drop_columns(["collect_i"])])
    assert rows([accumulated.run_group(table)]) == want
    assert rows(cut_run(accumulated, table, cuts)) == want
    state: KernelState | None = None
    for begin in range(0, table.num_rows, 3):
        _, state = accumulated.step(state, table.slice(begin, 3))
        assert state.rows.num_rows <= 1


@settings(max_examples=250, deadline=None)
@given(data=data_st, cuts=cuts_st, evict=st.sampled_from(SPECS),
       trigger=st.sampled_from(SPECS), size_e=st.integers(1, 5), size_t=st.integers(1, 4),
       d_e=st.integers(0, 4), d_t=st.integers(0, 4), shift=st.integers(-3, 3),
       partial=st.booleans(), in_order=st.booleans(), float_time=st.booleans(),
       float_attr=st.booleans())
def test_sliding_resumes(data: list[Any], cuts: list[int], evict: str, trigger: str,
                         size_e: int, size_t: int, d_e: int, d_t: int, shift: int,
                         partial: bool, in_order: bool, float_time: bool,
                         float_attr: bool) -> None:
    """All nine combinations, cut anywhere (empty pieces, cuts at 0 and at the end,
    inside runs of equal times): the rows of one uncut run, and the simulation's
    firings."""
    if in_order:
        data = sorted(data, key=lambda r: r[0])
    unit: float | int = 0.25 if float_time else 1
    attr_unit: float | int = 0.5 if float_attr else 1
    pol_e = policy(evict, size_e, d_e, shift, unit, attr_unit)
    pol_t = policy(trigger, size_t, d_t, shift, unit, attr_unit)
    kernel = make_kernel("sliding", pol_e, pol_t, partial, float_time, float_attr)
    table = make_table(data, float_time, float_attr)
    assert_resumes(kernel, table, cuts)
    assert firings(cut_run(kernel, table, cuts)) == oracle(
        table, ws.Sliding(pol_e, pol_t, partial=partial))


@settings(max_examples=200, deadline=None)
@given(data=data_st, cuts=cuts_st, kind=st.sampled_from([*SPECS, "punctuation"]),
       size=st.integers(1, 5), d=st.integers(0, 4), shift=st.integers(-3, 3),
       partial=st.booleans(), in_order=st.booleans(), float_time=st.booleans(),
       float_attr=st.booleans())
def test_tumbling_resumes(data: list[Any], cuts: list[int], kind: str, size: int, d: int,
                          shift: int, partial: bool, in_order: bool, float_time: bool,
                          float_attr: bool) -> None:
    if in_order:
        data = sorted(data, key=lambda r: r[0])
    unit: float | int = 0.25 if float_time else 1
    attr_unit: float | int = 0.5 if float_attr else 1
    size_policy = policy(kind, size, d, shift, unit, attr_unit)
    kernel = make_kernel("tumbling", size_policy, None, partial, float_time, float_attr)
    table = make_table(data, float_time, float_attr)
    assert_resumes(kernel, table, cuts)
    assert firings(cut_run(kernel, table, cuts)) == oracle(
        table, ws.Tumbling(size_policy, partial=partial))


@settings(max_examples=120, deadline=None)
@given(data=data_st, cuts=cuts_st, trigger=st.sampled_from(SPECS), size=st.integers(1, 4),
       reach=st.integers(1, 5), shift=st.integers(-3, 3))
def test_recent_window_in_order_resumes(data: list[Any], cuts: list[int], trigger: str,
                                        size: int, reach: int, shift: int) -> None:
    """`Sliding(Time(t))` over integer time in time order (the kernel's shortcut for a
    count trigger of 1), and the same window fed late tuples at the cuts."""
    ordered = sorted(data, key=lambda r: r[0])
    for members in (ordered, [*ordered[len(ordered) // 2:], *ordered[:len(ordered) // 2]]):
        pol_t = policy(trigger, 1 if trigger == "count" else size, 1, shift, 1, 1)
        kernel = make_kernel("sliding", Time(reach), pol_t, False, False, False)
        table = make_table(members, False, False)
        assert_resumes(kernel, table, cuts)
        assert firings(cut_run(kernel, table, cuts)) == oracle(
            table, ws.Sliding(Time(reach), pol_t))


def states(kernel: rp.SplKernel, table: pa.Table, piece: int) -> list[KernelState]:
    """The state after each piece of `piece` rows."""
    state: KernelState | None = None
    found = []
    for begin in range(0, table.num_rows, piece):
        _, state = kernel.step(state, table.slice(begin, piece))
        found.append(state)
    return found


@settings(max_examples=150, deadline=None)
@given(data=st.lists(row_st, min_size=1, max_size=60), n=st.integers(1, 6),
       t=st.integers(1, 6), piece=st.integers(1, 9), in_order=st.booleans())
def test_state_stays_within_reach(data: list[Any], n: int, t: int, piece: int,
                                  in_order: bool) -> None:
    """Count eviction carries at most `n` tuples, time eviction the tuples at most `t`
    older than the clock and the last one, a count-sized tumbling window fewer than
    `n`; the scalars are the clock and the count of arrivals."""
    if in_order:
        data = sorted(data, key=lambda r: r[0])
    table = make_table(data, False, False)
    counted = states(make_kernel("sliding", Count(n), Count(2), False, False, False),
                     table, piece)
    assert all(s.rows.num_rows <= n for s in counted)
    timed = states(make_kernel("sliding", Time(t), Time(2), False, False, False), table,
                   piece)
    for done, state in enumerate(timed, start=1):
        seen = table.slice(0, done * piece).column("t").to_pylist()
        clock = max(seen)
        assert state.scalars["clock"] == clock
        assert state.scalars["arrived"] == len(seen)
        within = sum(1 for x in seen if clock - x <= t)
        assert state.rows.num_rows <= within + 1
        assert state.rows.column("i").to_pylist()[-1] == len(seen) - 1  # the last tuple
    tumbled = states(make_kernel("tumbling", Count(n), None, True, False, False), table,
                     piece)
    assert all(s.rows.num_rows < n for s in tumbled)


def test_rising_delta_eviction_keeps_the_values_within_d() -> None:
    """Rising attribute values under delta eviction: the state holds the tuples within
    `d` of the newest value, whatever the key's length."""
    table = make_table([(i, i, float(i), False) for i in range(1000)], False, False)
    kernel = make_kernel("sliding", Delta("a", 10), Count(3), False, False, False)
    for state in states(kernel, table, 37):
        assert state.rows.num_rows <= 11
        arrived = state.scalars["arrived"]
        assert isinstance(arrived, int)
        assert state.scalars["full"] is True or arrived <= 11


def test_time_trigger_waits_for_the_clock() -> None:
    """A time firing at or after the clock is not emitted by `step` (a later tuple at
    that time joins it); `finish` emits the first at or after the key's newest time."""
    table = make_table([(0, 0, 1.0, None), (5, 0, 2.0, None)], False, False)
    kernel = make_kernel("sliding", Count(10), Time(5), False, False, False)
    out, state = kernel.step(None, table)
    assert out.column("time").to_pylist() == [0]  # the firing at 5 waits
    more = make_table([(5, 0, 3.0, None)], False, False)
    out, state = kernel.step(state, more.set_column(5, "i", pa.array([2])))
    assert out.num_rows == 0
    last = kernel.finish(state)
    assert last.column("time").to_pylist() == [5]
    assert last.column("collect_i").to_pylist() == [[0, 1, 2]]


@pytest.mark.parametrize("mode", ["sliding", "tumbling"])
@settings(max_examples=60, deadline=None)
@given(data=st.lists(row_st, min_size=1, max_size=80),
       shorts=st.lists(st.lists(row_st, min_size=1, max_size=6), max_size=5),
       kind=st.sampled_from(SPECS), trigger=st.sampled_from(SPECS),
       chunk=st.integers(3, 9), batch=st.integers(1, 11), partial=st.booleans())
def test_mapinarrow_function_feeds_long_keys_in_pieces(
        mode: str, data: list[Any], shorts: list[list[Any]], kind: str, trigger: str,
        chunk: int, batch: int, partial: bool) -> None:
    """`__call__` over Arrow batches of one long key among short ones, with a small
    `chunk_rows`: the long key goes through `step` and `finish`, the short ones whole;
    every key's rows are those of its whole run."""
    pol_e = policy(kind, 3, 2, 1, 1, 1)
    pol_t = policy(trigger, 2, 1, 0, 1, 1) if mode == "sliding" else None
    kernel = make_kernel(mode, pol_e, pol_t, partial, False, False, chunk)
    tables = [make_table(members, False, False, key=f"k{j}")
              for j, members in enumerate([*shorts[:2], data, *shorts[2:]])]
    whole = rows([kernel.run_group(t) for t in tables])
    stream = pa.concat_tables(tables).to_batches(max_chunksize=batch)
    driven = rows(list(kernel(iter(stream))))
    assert [repr(r) for r in driven] == [repr(r) for r in whole]
    if len(data) > chunk:  # the long key did go through `step`
        calls: list[int] = []
        original = rp.SplKernel.step

        def counting(self: rp.SplKernel, state: KernelState | None, piece: pa.Table
                     ) -> tuple[pa.RecordBatch, KernelState]:
            calls.append(piece.num_rows)
            return original(self, state, piece)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rp.SplKernel, "step", counting)
            list(kernel(iter(stream)))
        assert calls and sum(calls) >= len(data)


def test_state_survives_bytes_with_float_scalars() -> None:
    """Float clock and delta reference travel through bytes unchanged."""
    table = make_table([(1, 1, 1.0, None), (3, 4, 2.0, None), (2, 9, 3.0, None)], True, True)
    kernel = make_kernel("sliding", Time(1.0), Delta("a", 1.0), True, True, True)
    _, state = kernel.step(None, table)
    again = KernelState.from_bytes(state.to_bytes())
    assert again.scalars == state.scalars
    assert again.scalars["clock"] == 0.75 and again.scalars["reference"] == 4.5
    assert np.array_equal(again.rows.column("i").to_numpy(), state.rows.column("i").to_numpy())


@pytest.mark.parametrize("mode", ["sliding", "tumbling"])
def test_too_many_time_firings_fail_before_they_are_made(mode: str) -> None:
    """A key from 0 to 1000 fires a `Time(1)` trigger (or time-sized tumbling window)
    1001 times: `max_ticks=1000` refuses it whole and in pieces (counted from the key's
    first tuple, not the piece's), `max_ticks=1001` runs."""
    table = make_table([(0, 0, 1.0, None), (400, 0, 2.0, None), (1000, 0, 3.0, None)],
                       False, False)
    for limit, refused in [(1000, True), (1001, False)]:
        time = Time(1, max_ticks=limit)
        evict, trigger = (Count(2), time) if mode == "sliding" else (time, None)
        kernel = make_kernel(mode, evict, trigger, False, False, False)
        for cuts in ([], [1], [2], [1, 2]):
            if refused:
                with pytest.raises(WispInputError, match=re.escape(
                        "`t` must make at most max_ticks=1,000 time trigger firings per "
                        "key, found about 1,001 for one key; pass Time(..., max_ticks=...) "
                        "to allow more")):
                    cut_run(kernel, table, cuts)
            else:
                assert len(firings(cut_run(kernel, table, cuts))) == 1001
        if refused:
            with pytest.raises(WispInputError, match="found about 1,001 for one key"):
                kernel.run_group(table)
        else:
            assert kernel.run_group(table).num_rows == 1001
