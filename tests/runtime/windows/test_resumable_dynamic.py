"""The dynamic-window kernel resumes: a key's union of anchors and events (or events
alone, with a clock) cut anywhere, the state through bytes at every cut, gives the
windows of one uncut run, obsolete violations included; the carried rows stay within
the windows' reach; the mapInArrow function feeds long runs in pieces and short ones
whole, with the same rows (no Spark)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from resumable_check import cut_run, rows
from tables import assert_same_rows

from wisp import WispInputError
from wisp.plan.dynamic import ClockTicks
from wisp.runtime.codecs.batches import key_runs
from wisp.runtime.windows.dynamic import (
    END,
    KIND,
    OBSOLETE,
    START,
    TIME,
    VIOLATION,
    BoundJob,
    DynamicKernel,
    windows_kernel,
)
from wisp.runtime.windows.resumable import KernelState

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "v", "float", pa.float64(), None),
        built_in_job("collect", "i", "integer", pa.list_(pa.int64()), None))
NAMES = ("count", "count_v", "sum_v", "max_v", "first_v", "last_v", "collect_i")
HELD_JOBS = (*JOBS[:6],
             built_in_job("mean", "v", "float", pa.float64(), None),
             built_in_job("count_distinct", "i", "integer", pa.int64(), None),
             built_in_job("sum", "i", "integer", pa.int64(), None))
"""Every aggregation with a partial state: waiting windows may be carried as states."""
HELD_NAMES = (*NAMES[:6], "mean_v", "count_distinct_i", "sum_i")
CLOSED = ["both", "left", "right", "neither"]


def kernel(start: BoundJob, end: BoundJob, obsolete: BoundJob, *, closed: str = "both",
           clock: ClockTicks | None = None, chunk_rows: int = 1 << 14,
           held: bool = False) -> DynamicKernel:
    """The kernel with `JOBS`, or with `HELD_JOBS` (`held`: each has a partial state)."""
    check = clock is None and obsolete.kind != "none"
    jobs, names = (HELD_JOBS, HELD_NAMES) if held else (JOBS, NAMES)
    fields = [pa.field("k", pa.string()),
              *[pa.field(f, pa.int64()) for f in ("window_start", "window_end", "time")],
              *[pa.field(name, job.output_type) for name, job in zip(names, jobs,
                                                                     strict=True)]]
    if check:
        fields.append(pa.field(VIOLATION, pa.string()))
    return windows_kernel(keys=("k",), time_kind="integer", time_scale=0, closed=closed,
                          start=start, end=end, obsolete=obsolete, clock=clock, check=check,
                          aggregates=jobs, schema=pa.schema(fields), chunk_rows=chunk_rows)


def union(keys: Sequence[str], times: Sequence[int], anchor: Sequence[bool],
          starts: Sequence[int | None], ends: Sequence[int | None],
          obsolete: Sequence[int | None], values: Sequence[float | None]) -> pa.Table:
    """Anchor rows (KIND 0, bounds) and events (KIND 1, values), already in the
    kernel's order: key, time, kind."""
    return pa.table({
        "k": pa.array(keys, pa.string()),
        KIND: pa.array([0 if a else 1 for a in anchor], pa.int32()),
        TIME: pa.array(times, pa.int64()),
        START: pa.array([s if a else None for s, a in zip(starts, anchor, strict=True)],
                        pa.int64()),
        END: pa.array([e if a else None for e, a in zip(ends, anchor, strict=True)],
                      pa.int64()),
        OBSOLETE: pa.array([o if a else None for o, a in zip(obsolete, anchor,
                                                             strict=True)], pa.int64()),
        "v": pa.array([None if a else v for v, a in zip(values, anchor, strict=True)],
                      pa.float64()),
        "i": pa.array([None if a or j % 5 == 3 else j * 7 - 20
                       for j, a in enumerate(anchor)], pa.int64())})


def assert_cut_runs_equal_whole(dynamic: DynamicKernel, table: pa.Table,
                                cuts: Sequence[int],
                                each: Callable[[KernelState], None] | None = None
                                ) -> list[tuple[Any, ...]]:
    """The cut run's rows equal the uncut run's; when the uncut run reports an obsolete
    violation (the query fails), the same message and one row per anchor suffice: the
    violating anchors' windows may miss events dropped on the broken promise. `each`
    sees the cut run's state after every piece (`cut_run`)."""
    whole = rows(list(dynamic.run_group(table)))
    resumed = rows(cut_run(dynamic, table, cuts, each=each))
    messages = [r[-1] for r in whole if dynamic.check and r[-1] is not None]
    if messages:
        assert [r[-1] for r in resumed if r[-1] is not None] == messages
        assert sorted(r[3] for r in resumed) == sorted(r[3] for r in whole)
    else:
        assert [repr(r) for r in resumed] == [repr(r) for r in whole]
    return resumed


values_st = st.one_of(st.none(), st.just(math.nan),
                      st.integers(-40, 40).map(lambda x: x / 2 + 0.0))
bound_st = st.sampled_from(["none", "offset", "column"])


@st.composite
def anchored(draw: st.DrawFn) -> tuple[pa.Table, list[int], tuple[BoundJob, ...], str]:
    m = draw(st.integers(0, 50))
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7]), min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    anchor = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    order = sorted(range(m), key=lambda j: (times[j], not anchor[j]))
    times = [times[j] for j in order]
    anchor = [anchor[j] for j in order]

    def column(offsets: list[int | None]) -> list[int | None]:
        picks = draw(st.lists(st.sampled_from(offsets), min_size=m, max_size=m))
        return [None if p is None else t + p for t, p in zip(times, picks, strict=True)]

    starts = column([-6, -3, -1, 0, 2, None])
    ends = column([-2, 0, 1, 4, 9, None])
    # mostly a steady obsolete a few ticks before the anchor, sometimes not
    steady = draw(st.booleans())
    obsolete = column([-4] if steady else [-6, -4, -1, 0, None])
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    kinds = [draw(bound_st) for _ in range(3)]
    offsets = [draw(st.sampled_from([-5, -2, 0])), draw(st.sampled_from([-1, 0, 3, 6])),
               draw(st.sampled_from([-6, -3]))]
    jobs = tuple(BoundJob(kind, offset, name) for kind, offset, name in zip(
        kinds, offsets, (START, END, OBSOLETE), strict=True))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    table = union(["a"] * m, times, anchor, starts, ends, obsolete, vals)
    return table, cuts, jobs, draw(st.sampled_from(CLOSED))


@settings(max_examples=200, deadline=None)
@given(data=anchored())
def test_anchored_windows_resume(data: tuple[pa.Table, list[int], tuple[BoundJob, ...],
                                             str]) -> None:
    table, cuts, (start, end, obsolete), closed = data
    assert_cut_runs_equal_whole(kernel(start, end, obsolete, closed=closed), table, cuts)


@settings(max_examples=200, deadline=None)
@given(data=anchored())
def test_anchored_windows_held_as_states_resume(
        data: tuple[pa.Table, list[int], tuple[BoundJob, ...], str]) -> None:
    """Every aggregation with a partial state, one row a piece enough to fold: waiting
    windows carried as states (the events no later anchor reaches folded into them)
    give the windows of one uncut run."""
    table, cuts, (start, end, obsolete), closed = data
    dynamic = kernel(start, end, obsolete, closed=closed, chunk_rows=1, held=True)
    assert dynamic.folds
    assert_cut_runs_equal_whole(dynamic, table, cuts)


@st.composite
def clocked(draw: st.DrawFn) -> tuple[pa.Table, list[int], ClockTicks]:
    m = draw(st.integers(1, 40))  # a key has events: run_group needs one
    gaps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 5, 11]), min_size=m, max_size=m))
    times = list(itertools.accumulate(gaps, initial=draw(st.integers(-10, 10))))[1:]
    vals = draw(st.lists(values_st, min_size=m, max_size=m))
    every = draw(st.sampled_from([1, 2, 3, 7]))
    clock = ClockTicks(every, draw(st.one_of(st.none(), st.integers(-5, 5))),
                       draw(st.one_of(st.none(), st.integers(-15, 30))),
                       draw(st.one_of(st.none(), st.integers(-15, 90))))
    cuts = draw(st.lists(st.integers(0, m), max_size=8))
    none = [None] * m
    return union(["a"] * m, times, [False] * m, none, none, none, vals), cuts, clock


@settings(max_examples=200, deadline=None)
@given(data=clocked(), start=st.sampled_from([None, 0, -3, -8, 2]),
       end=st.sampled_from([None, 0, 3, 9, -1]), closed=st.sampled_from(CLOSED))
def test_clock_windows_resume(data: tuple[pa.Table, list[int], ClockTicks],
                              start: int | None, end: int | None, closed: str) -> None:
    table, cuts, clock = data
    dynamic = kernel(BoundJob("none" if start is None else "offset", start or 0, START),
                     BoundJob("none" if end is None else "offset", end or 0, END),
                     BoundJob("none", 0, OBSOLETE), closed=closed, clock=clock)
    assert_cut_runs_equal_whole(dynamic, table, cuts)


def test_a_clock_over_ties_cut_everywhere_ticks_once() -> None:
    """Ties cut inside, at 0, at the end and twice at the same place: each tick from the
    first event to the last comes once."""
    times = [0, 0, 0, 4, 4, 9, 9, 9, 30, 30, 31]
    m = len(times)
    table = union(["a"] * m, times, [False] * m, [None] * m, [None] * m, [None] * m,
                  [float(j) for j in range(m)])
    dynamic = kernel(BoundJob("offset", -4, START), BoundJob("offset", 2, END),
                     BoundJob("none", 0, OBSOLETE), clock=ClockTicks(3, None, None, None))
    for cuts in ([], [0], [m], [1, 2], [4, 4, 7], list(range(m + 1)), [0, 0, m, m]):
        found = assert_cut_runs_equal_whole(dynamic, table, cuts)
        assert [r[3] for r in sorted(found, key=lambda r: r[3])] == list(range(0, 31, 3))


def test_a_violation_is_reported_on_its_anchor_across_cuts() -> None:
    """An anchor whose window starts before an earlier obsolete, while its window is
    still open at a cut, carries the message on its row."""
    times = [0, 1, 2, 3, 5, 6, 8, 9, 12]
    anchor = [False, True, False, True, False, False, True, False, False]
    m = len(times)
    starts = [None, 0, None, -5, None, None, 7, None, None]
    ends = [None, 1, None, 10, None, None, 8, None, None]
    obsolete = [None, 1, None, 2, None, None, 3, None, None]
    table = union(["a"] * m, times, anchor, starts, ends, obsolete, [1.0] * m)
    dynamic = kernel(BoundJob("column", 0, START), BoundJob("column", 0, END),
                     BoundJob("column", 0, OBSOLETE))
    for cuts in ([], [4], [2, 5, 7], list(range(m + 1))):
        found = assert_cut_runs_equal_whole(dynamic, table, cuts)
        messages = [r for r in found if r[-1] is not None]
        assert len(messages) == 1 and messages[0][3] == 3
        assert "start` must not be before an earlier anchor's obsolete 1" in messages[0][-1]


def carried(dynamic: DynamicKernel, table: pa.Table, piece: int) -> int:
    """The most rows the state holds, the table fed `piece` rows at a time (reloaded at
    every cut); on the same run, its rows equal the uncut run's
    (`assert_cut_runs_equal_whole`)."""
    held: list[int] = []
    assert_cut_runs_equal_whole(dynamic, table, list(range(0, table.num_rows, piece)),
                                lambda state: held.append(state.rows.num_rows))
    return max(held)


def test_carried_rows_stay_within_the_windows_reach() -> None:
    """One event per tick, an anchor every 4th: offsets [-10, +5] carry about 15 events
    and 5 anchors; column bounds with an obsolete 10 before each anchor as much; a clock
    every 3 over [-10, +5] as much; a column start without an obsolete bound carries
    every event (the documented unbounded case). 600 events: 40 times the reach."""
    m = 600
    times = [j // 2 for j in range(m)]
    anchor = [j % 8 == 0 for j in range(m)]
    starts = [t - 10 for t in times]
    ends = [t + 5 for t in times]
    obsolete = [t - 10 for t in times]
    table = union(["a"] * m, times, anchor, starts, ends, obsolete, [1.0] * m)
    events = union(["a"] * m, times, [False] * m, starts, ends, obsolete, [1.0] * m)
    offsets = (BoundJob("offset", -10, START), BoundJob("offset", 5, END))
    columns = (BoundJob("column", 0, START), BoundJob("column", 0, END))
    for dynamic, data, most in [
            (kernel(*offsets, BoundJob("none", 0, OBSOLETE)), table, 40),
            (kernel(*columns, BoundJob("column", 0, OBSOLETE)), table, 40),
            (kernel(*offsets, BoundJob("none", 0, OBSOLETE),
                    clock=ClockTicks(3, None, None, None)), events, 40)]:
        assert 0 < carried(dynamic, data, 7) <= most  # and the rows of the uncut run
    unbounded = kernel(*columns, BoundJob("none", 0, OBSOLETE))
    assert carried(unbounded, table, 7) > m * 3 // 4 - 10


def test_long_waiting_windows_are_carried_as_states() -> None:
    """One event per tick, an anchor every 100th row whose window runs from 10 before it
    to the end of time (no end) or 10 000 after it: as rows, every event since the first
    anchor is carried; as states (every aggregation with one), the events within 10 of
    the newest and the waiting anchors (one state each), with the same windows."""
    m = 3000
    times = [j // 2 for j in range(m)]
    anchor = [j % 100 == 0 for j in range(m)]
    starts = [t - 10 for t in times]
    table = union(["a"] * m, times, anchor, starts, [None] * m, [None] * m,
                  [float(j % 7) for j in range(m)])
    for end in (BoundJob("column", 0, END), BoundJob("offset", 10_000, END)):
        bounds = (BoundJob("offset", -10, START), end, BoundJob("none", 0, OBSOLETE))
        as_rows = kernel(*bounds, chunk_rows=16)
        as_states = kernel(*bounds, chunk_rows=16, held=True)
        assert carried(as_rows, table, 64) > m - 100
        assert carried(as_states, table, 64) <= 64 + 2 * 22 + m // 100
        assert_cut_runs_equal_whole(as_states, table, list(range(0, m, 64)))
        assert [r[3:] for r in rows(cut_run(as_states, table, list(range(0, m, 64))))] == [
            r[3:] for r in rows(list(kernel(*bounds, held=True).run_group(table)))]


def test_many_overlapping_waiting_windows_stay_rows() -> None:
    """An anchor on every other row, each window to the end of time: the windows' states
    would soon outnumber the events they replace, so (after the first few pieces) the
    events are carried as rows instead, and the windows are those of one uncut run."""
    m = 400
    times = list(range(m))
    table = union(["a"] * m, times, [j % 2 == 0 for j in range(m)], times, [None] * m,
                  [None] * m, [1.0] * m)
    bounds = (BoundJob("offset", 0, START), BoundJob("column", 0, END),
              BoundJob("none", 0, OBSOLETE))
    dynamic = kernel(*bounds, chunk_rows=4, held=True)
    assert carried(dynamic, table, 8) > m * 3 // 4
    assert_cut_runs_equal_whole(dynamic, table, list(range(0, m, 8)))


def test_the_mapinarrow_function_feeds_long_runs_in_pieces() -> None:
    """One long key among short ones, through `__call__` with pieces of 64 rows: the rows
    equal those of each key run whole, with anchors and with a clock."""
    rng = np.random.default_rng(7)
    sizes = [3, 1, 700, 2, 5, 1_000, 4]
    keys = [f"k{n:02d}" for n, size in enumerate(sizes) for _ in range(size)]
    times: list[int] = []
    for size in sizes:
        times += np.sort(rng.integers(0, size * 2, size)).tolist()
    anchor = (rng.random(len(keys)) < 0.3).tolist()
    order = sorted(range(len(keys)), key=lambda j: (keys[j], times[j], not anchor[j]))
    times = [times[j] for j in order]
    anchor = [anchor[j] for j in order]
    starts = [t - int(d) for t, d in zip(times, rng.integers(0, 6, len(keys)), strict=True)]
    ends = [t + int(d) for t, d in zip(times, rng.integers(-1, 9, len(keys)), strict=True)]
    vals = rng.integers(-9, 9, len(keys)).astype(float).tolist()
    table = union(keys, times, anchor, starts, ends, [None] * len(keys), vals)
    events = table.filter(pa.compute.equal(table.column(KIND), 1))
    offsets = (BoundJob("offset", -4, START), BoundJob("offset", 3, END))
    for dynamic, data in [
            (kernel(BoundJob("column", 0, START), BoundJob("column", 0, END),
                    BoundJob("none", 0, OBSOLETE), chunk_rows=64), table),
            (kernel(*offsets, BoundJob("none", 0, OBSOLETE), chunk_rows=64), table),
            (kernel(*offsets, BoundJob("none", 0, OBSOLETE), chunk_rows=64,
                    clock=ClockTicks(2, 1, None, None)), events)]:
        streamed = pa.Table.from_batches(list(dynamic(iter(data.to_batches(50)))))
        whole = pa.Table.from_batches(
            [b for g in key_runs(iter(data.to_batches()), ("k",))
             for b in dynamic.run_group(g)])
        assert streamed.num_rows == whole.num_rows > 100
        assert_same_rows(streamed, whole, ["k", "time", "window_start", "window_end",
                                           "count", "sum_v"])


def test_too_many_clock_ticks_fail_before_they_are_made() -> None:
    """Ticks every 3 from a key's first event at 0 to its last at 30: 11 ticks, refused
    under `max_ticks=10` whole and in pieces, made under `max_ticks=11`."""
    times = [0, 4, 9, 17, 30]
    m = len(times)
    table = union(["a"] * m, times, [False] * m, [None] * m, [None] * m, [None] * m,
                  [float(j) for j in range(m)])
    for limit, refused in [(10, True), (11, False)]:
        dynamic = kernel(BoundJob("offset", -4, START), BoundJob("offset", 2, END),
                         BoundJob("none", 0, OBSOLETE),
                         clock=ClockTicks(3, None, None, None, limit))
        for cuts in ([], [1], [2, 4]):
            if refused:
                with pytest.raises(WispInputError, match=re.escape(
                        "`every` must make at most max_ticks=10 clock ticks per key, found "
                        "about 11 for one key (key {'k': 'a'}); pass clock(..., "
                        "max_ticks=...) to allow more, or a larger `every` or a shorter "
                        "span")):
                    cut_run(dynamic, table, cuts)
            else:
                assert sum(b.num_rows for b in cut_run(dynamic, table, cuts)) == 11
        if refused:
            with pytest.raises(WispInputError, match="found about 11 for one key"):
                list(dynamic.run_group(table))
        else:
            assert sum(b.num_rows for b in dynamic.run_group(table)) == 11


def test_the_anchor_and_clock_kernels_keep_the_state_format() -> None:
    """A stream's checkpoint holds a key's state as bytes (`KernelState.to_bytes`: Arrow
    IPC, the scalars by name; no pickled class): the anchor and the clock kernels write
    the scalars the one `DynamicKernel` wrote before they were split, and a state in that
    format read back from its bytes resumes as the state itself."""
    m = 40
    times = [j // 2 for j in range(m)]
    anchor = [j % 8 == 0 for j in range(m)]
    starts = [t - 10 for t in times]
    ends = [t + 5 for t in times]
    obsolete = [t - 10 for t in times]
    table = union(["a"] * m, times, anchor, starts, ends, obsolete, [1.0] * m)
    events = union(["a"] * m, times, [False] * m, starts, ends, obsolete, [1.0] * m)
    offsets = (BoundJob("offset", -10, START), BoundJob("offset", 5, END))
    for dynamic, data, names in [
            (kernel(*offsets, BoundJob("column", 0, OBSOLETE)), table,
             {"previous", "previous_known", "floor", "violation_at", "message"}),
            (kernel(*offsets, BoundJob("none", 0, OBSOLETE),
                    clock=ClockTicks(3, None, None, None)), events,
             {"first", "next", "newest"})]:
        _, state = dynamic.step(None, data.slice(0, m // 2))
        assert set(state.scalars) == names
        stored = KernelState.from_bytes(state.to_bytes())
        assert stored.scalars == state.scalars
        rest = data.slice(m // 2)
        assert rows([dynamic.step(stored, rest)[0]]) == rows([dynamic.step(state, rest)[0]])
        assert rows([dynamic.finish(dynamic.step(stored, rest)[1])]) == rows(
            [dynamic.finish(dynamic.step(state, rest)[1])])
