"""The interval-windows kernel against the brute-force oracle, without Spark: rows are
sorted as Spark sorts them (key, time, tie-break), cut into small Arrow batches and fed
to the kernel exactly as mapInArrow would."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import _sorted_by_key, assert_rows_match, sort_output
from oracle_intervals import count_by_start_time, hopping, snapshot

import wisp as ws
from wisp.kernels import intervals as iv
from wisp.plan.intervals import CountWindows, HoppingWindows, IntervalWindow, SnapshotWindows
from wisp.runtime.windows.hopping import HORIZON_END, HORIZON_START
from wisp.runtime.windows.interval_kernels import interval_kernel
from wisp.spec.aggregates import Aggregation

COLUMNS = ["k", "t", "e", "v", "i", "s", "seq"]
TYPES = {"k": pa.string(), "t": pa.int64(), "e": pa.int64(), "v": pa.float64(),
         "i": pa.int64(), "s": pa.string(), "seq": pa.int32()}
CLASSES = {"v": "float", "i": "integer", "s": "ordered"}


def span(values: Any, times: Any) -> int | None:
    return int(max(times) - min(times)) if len(times) else None


def lifetimes_seen(values: Any, starts: Any, ends: Any) -> list[int]:
    """What a lifetimes udaf receives: the clipped starts, then the clipped ends."""
    return [int(x) for x in starts] + [int(x) for x in ends]


LIFETIMES = ws.udaf(lifetimes_seen, "v", returns="array<long>", lifetimes=True)

AGGS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("s"), ws.collect("v"), ws.sum("i"), ws.max("s"),
    ws.stddev("v"), ws.time_weighted_mean("v"), ws.time_weighted_mean("i"),
    ws.udaf(span, "v", returns="long").alias("span_v"), LIFETIMES,
]
SUMMABLE: list[Aggregation] = [ws.count(), ws.count("v"), ws.sum("i"),
                                ws.count("s").alias("n_s")]  # no member lists needed
FLOATS = ("sum_v", "mean_v", "stddev_v", "time_weighted_mean_v")


def output_type(agg: Aggregation) -> pa.DataType:
    if agg.fn == "count":
        return pa.int64()
    if agg.fn == "udaf":
        return pa.list_(pa.int64()) if agg.lifetimes else pa.int64()
    if agg.fn in ("mean", "stddev", "variance", "time_weighted_mean"):
        return pa.float64()
    if agg.fn == "collect":
        assert agg.col is not None
        return pa.list_(TYPES[agg.col])
    assert agg.col is not None
    return TYPES[agg.col]


def run_kernel(rows: list[dict[str, Any]], *, interval: bool, key: list[str],
               window: IntervalWindow, aggs: list[Aggregation],
               order: str | None = None) -> list[dict[str, Any]]:
    # sorted as Spark sorts them: key, time, then every other column but the end
    tie_break = [c for c in COLUMNS if c != "e"] if interval else COLUMNS
    ordered = [r for _, members in _sorted_by_key(rows, time="t", key=key, order=order,
                                                  columns=tie_break) for r in members]
    names = [*key, "t", *(["e"] if interval else []), "v", "i", "s"]
    data = {c: pa.array([r[c] for r in ordered], TYPES[c]) for c in names}
    per_window = any(a.lifetimes for a in aggs)
    if interval and window.kind == "hopping" and (window.output == "windows" or per_window):
        newest = max((r["t"] for r in rows), default=None)
        ends = [r["e"] for r in rows if r["e"] is not None]
        data[HORIZON_START] = pa.array([newest] * len(ordered), pa.int64())
        data[HORIZON_END] = pa.array([max(ends) if ends else None] * len(ordered), pa.int64())
    table = pa.table(data)
    fields = [pa.field(k, pa.string()) for k in key]
    fields += [pa.field(c, pa.int64()) for c in ("window_start", "window_end", "time")]
    fields += [pa.field(a.output_name, output_type(a)) for a in aggs]
    kernel = interval_kernel(
        keys=tuple(key), time="t", end="e" if interval else None, time_kind="integer",
        time_scale=0, window=window,
        aggregates=tuple(built_in_job(a.fn, a.col, CLASSES.get(a.col or "", "none"),
                                      output_type(a), a.func, a.lifetimes) for a in aggs),
        schema=pa.schema(fields))
    out = [b.to_pylist() for b in kernel(iter(table.to_batches(max_chunksize=3)))]
    return sort_output([r for batch in out for r in batch], key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]],
          rows: list[dict[str, Any]]) -> None:
    scale = math.fsum(abs(r["v"]) for r in rows if r["v"] is not None and r["v"] == r["v"])
    assert_rows_match(actual, expected, scales=dict.fromkeys(FLOATS, max(scale, 1.0)))


values = st.one_of(st.none(), st.just(math.nan),
                   st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
                   st.sampled_from([0.0, -0.0, 1.5, 1e9]))


@st.composite
def interval_rows(draw: st.DrawFn, grid: tuple[int, int] = (0, 1),
                  small_values: bool = False) -> list[dict[str, Any]]:
    base = draw(st.sampled_from([0, -1_000_003, 10**12 + 7]))
    align, hop = grid
    rows = []
    for _ in range(draw(st.integers(0, 14))):
        t = base + draw(st.integers(-15, 15))
        if draw(st.booleans()):  # exactly on a window boundary
            t -= (t - align) % max(hop, 1)
        shape = draw(st.sampled_from(["open", "short", "long", "zero", "boundary"]))
        if shape == "open":
            e = None
        elif shape == "short":
            e = t + draw(st.integers(1, 4))
        elif shape == "long":
            e = t + draw(st.integers(5, 60))
        elif shape == "zero":
            e = t
        else:
            e = t + draw(st.integers(1, 20))
            e += (align - e) % max(hop, 1)
        rows.append({
            "k": draw(st.sampled_from(["a", "b", None])), "t": t, "e": e,
            "v": float(draw(st.integers(-5, 5))) if small_values else draw(values),
            "i": draw(st.one_of(st.none(), st.integers(-9, 9) if small_values
                                else st.integers(-10**12, 10**12))),
            "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", ""]))),
            "seq": draw(st.integers(0, 3)),
        })
    return rows


@st.composite
def hop_case(draw: st.DrawFn) -> tuple[int, int, int, list[dict[str, Any]]]:
    size = draw(st.integers(1, 7))
    hop = draw(st.integers(1, 9))
    align = draw(st.integers(-20, 20))
    return size, hop, align, draw(interval_rows((align, hop)))


KEYS = [[], ["k"]]


@settings(max_examples=120)
@given(case=hop_case(), key=st.sampled_from(KEYS), interval=st.booleans(),
       aggs=st.sampled_from([AGGS, SUMMABLE]))
def test_hopping_windows_match_oracle(case: tuple[int, int, int, list[dict[str, Any]]],
                                      key: list[str], interval: bool,
                                      aggs: list[Aggregation]) -> None:
    size, hop, align, rows = case
    window = HoppingWindows(size=size, hop=hop, align=align, output="windows")
    actual = run_kernel(rows, interval=interval, key=key, window=window, aggs=aggs)
    expected = hopping(rows, time="t", end="e" if interval else None, key=key, order=None,
                       columns=COLUMNS, size=size, hop=hop, align=align, output="windows",
                       aggs=aggs)
    check(actual, sort_output(expected, key), rows)


@st.composite
def changes_case(draw: st.DrawFn) -> tuple[int, int, int, list[dict[str, Any]]]:
    size = draw(st.integers(1, 7))
    hop = draw(st.integers(1, size))
    align = draw(st.integers(-20, 20))
    return size, hop, align, draw(interval_rows((align, hop), small_values=True))


EXACT_AGGS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("i"), ws.min("v"), ws.max("s"), ws.first("v"),
    ws.last("s"), ws.collect("i"), ws.time_weighted_mean("i"), ws.time_weighted_mean("v"),
    LIFETIMES]


@settings(max_examples=120)
@given(case=changes_case(), key=st.sampled_from(KEYS), interval=st.booleans(),
       aggs=st.sampled_from([EXACT_AGGS, SUMMABLE]))
def test_hopping_changes_match_oracle(case: tuple[int, int, int, list[dict[str, Any]]],
                                      key: list[str], interval: bool,
                                      aggs: list[Aggregation]) -> None:
    # small integer values: results are exact, so "equal results merge" is decided the
    # same way by both sides
    size, hop, align, rows = case
    window = HoppingWindows(size=size, hop=hop, align=align, output="changes")
    actual = run_kernel(rows, interval=interval, key=key, window=window, aggs=aggs)
    expected = hopping(rows, time="t", end="e" if interval else None, key=key, order=None,
                       columns=COLUMNS, size=size, hop=hop, align=align, output="changes",
                       aggs=aggs)
    check(actual, sort_output(expected, key), rows)


@settings(max_examples=120)
@given(rows=interval_rows(), key=st.sampled_from(KEYS), interval=st.booleans(),
       aggs=st.sampled_from([AGGS, SUMMABLE]))
def test_snapshot_matches_oracle(rows: list[dict[str, Any]], key: list[str],
                                 interval: bool, aggs: list[Aggregation]) -> None:
    window = SnapshotWindows()
    actual = run_kernel(rows, interval=interval, key=key, window=window, aggs=aggs)
    expected = snapshot(rows, time="t", end="e" if interval else None, key=key, order=None,
                        columns=COLUMNS, aggs=aggs)
    check(actual, sort_output(expected, key), rows)


@settings(max_examples=120)
@given(rows=interval_rows(), key=st.sampled_from(KEYS), interval=st.booleans(),
       n=st.integers(1, 4), use_order=st.booleans())
def test_count_by_start_time_matches_oracle(rows: list[dict[str, Any]], key: list[str],
                                            interval: bool, n: int, use_order: bool) -> None:
    order = "seq" if use_order else None
    window = CountWindows(n)
    actual = run_kernel(rows, interval=interval, key=key, window=window, aggs=AGGS,
                        order=order)
    expected = count_by_start_time(rows, time="t", end="e" if interval else None, key=key,
                                   order=order, columns=COLUMNS, n=n, aggs=AGGS)
    check(actual, sort_output(expected, key), rows)


# ------------------------------------------------------------------ cost: O(1) groups


def test_counts_need_no_member_lists() -> None:
    # a thousand open-ended events and a thousand short ones: counting lists no members
    start = np.arange(2000, dtype=np.int64)
    end = np.where(start < 1000, iv.END_OF_TIME, start + 1)
    groups, rows = iv.hopping(start, end, 3, 1, 0, output="windows", horizon=2001,
                              split_partial=False, gather=False)
    assert not groups.gathered and len(groups.positions) == 0
    counts = iv.group_sums(groups.event_first, groups.event_stop,
                           np.ones(2000, np.int64), groups.base_count)[groups.base_of]
    by_window = dict(zip(rows.start.tolist(), counts[rows.group].tolist(), strict=True))
    # window [1500, 1503): the 1000 open events and the points 1500, 1501, 1502
    assert by_window[1500] == 1003
    assert by_window[2001] == 1000  # the row standing for every window from 2001 on


def test_an_open_event_and_a_long_event_cost_one_group_each() -> None:
    start = np.array([0, 10], dtype=np.int64)
    end = np.array([iv.END_OF_TIME, 10 + 1_000_000_000], dtype=np.int64)
    groups, rows = iv.hopping(start, end, 5, 1, 0, output="changes",
                              horizon=int(iv.END_OF_TIME), split_partial=False)
    # runs: only e0; e0 and e1 (a billion windows); e0 alone again
    assert len(groups.positions) == 4
    assert rows.start.tolist() == [1, 11, 1_000_000_015]
    assert rows.end_known.tolist() == [True, True, False]


def test_time_weighted_runs_split_only_where_a_member_is_partial() -> None:
    start = np.array([0], dtype=np.int64)
    end = np.array([1_000_000_000], dtype=np.int64)
    groups, rows = iv.hopping(start, end, 4, 2, 0, output="changes",
                              horizon=int(iv.END_OF_TIME), split_partial=True)
    # windows [-2, 2) and [999_999_998, 1_000_000_002) are partial; the rest is one run
    assert len(rows.group) <= 5
    assert len(groups.positions) <= 5


def test_per_window_groups_stop_at_the_horizon() -> None:
    # an open-ended event from 0 and a point at 9; windows of 4 every 2; horizon 10:
    # windows [-2, 2) ... [8, 12) are groups of their own, [10, 14) on is one group
    start = np.array([0, 9], dtype=np.int64)
    end = np.array([iv.END_OF_TIME, 10], dtype=np.int64)
    groups, rows = iv.hopping(start, end, 4, 2, 0, output="windows", horizon=10,
                              split_partial=False, per_window=True)
    assert groups.clip_start.tolist() == [-2, 0, 2, 4, 6, 8, 10]
    assert rows.start.tolist() == [-2, 0, 2, 4, 6, 8, 10]
    assert rows.end_known.tolist() == [True] * 6 + [False]


@pytest.mark.parametrize(("t", "expected"), [(0, -1), (1, 1), (2, 1), (-1, -1), (-2, -3)])
def test_floor_to_grid_before_the_epoch(t: int, expected: int) -> None:
    assert iv.floor_to_grid(np.array([t]), 1, 2).tolist() == [expected]


# ------------------------------------------- snapping lifetimes, to the 64-bit limits

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def snapped_by_search(start: int, end: int | None, size: int, hop: int,
                      align: int) -> tuple[int, int | None] | None:
    """Snapped bounds by walking the windows `[align + k*hop, + size)` around the
    lifetime in Python integers: where the earliest window holding `start` ends, and
    where the validity of the latest window holding the last tick ends. None where a
    bound does not fit in 64-bit ticks below the last tick (the end of time)."""
    last = None if end is None else max(end, start + 1) - 1

    def windows_holding(t: int) -> list[int]:
        k = (t - align) // hop
        starts = (align + j * hop for j in range(k - size // hop - 2, k + 2))
        return [w for w in starts if w <= t < w + size]

    new_start = min(windows_holding(start)) + size
    new_end = None if last is None else max(windows_holding(last)) + size + hop
    if new_start > LONG_MAX or (last is not None and last + 1 >= LONG_MAX) or (
            new_end is not None and new_end >= LONG_MAX):
        return None
    return new_start, new_end


EDGE_TICKS = st.one_of(st.integers(LONG_MIN, LONG_MIN + 40), st.integers(-40, 40),
                       st.integers(LONG_MAX - 40, LONG_MAX),
                       st.integers(LONG_MIN, LONG_MAX))


@settings(max_examples=300)
@given(start=EDGE_TICKS, length=st.one_of(st.none(), st.integers(0, 30)),
       hop=st.integers(1, 7), extra=st.integers(0, 12),
       align=st.one_of(st.integers(-9, 9), st.integers(LONG_MIN, LONG_MAX)))
def test_snapped_lifetimes_match_a_search_of_the_windows(
        start: int, length: int | None, hop: int, extra: int, align: int) -> None:
    size = hop + extra
    end = None if length is None else min(start + length, LONG_MAX)
    got = iv.snapped(np.array([start], np.int64), np.array([start if end is None else end],
                                                            np.int64),
                     np.array([end is not None]), size, hop, align)
    want = snapped_by_search(start, end, size, hop, align)
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert int(got[0][0]) == want[0]
        assert int(got[1][0]) == (iv.END_OF_TIME if want[1] is None else want[1])


def test_snapped_lifetimes_beside_the_limits() -> None:
    # the cases that used to wrap around in 64-bit ticks: near -2^63 with an align
    # (a tick short), a snapped end beyond 2^63 - 1 (it wrapped to a huge negative), a
    # snapped end at 2^63 - 1 (it read as the end of time) and a point at 2^63 - 1
    rows = np.array([LONG_MIN, LONG_MAX - 10, LONG_MAX - 20, LONG_MAX], np.int64)
    ends = np.array([LONG_MIN + 1, LONG_MAX - 5, LONG_MAX - 12, LONG_MAX], np.int64)
    known = np.ones(1, bool)
    cases = [(0, 6, 3, 1, (LONG_MIN + 3, LONG_MIN + 9)), (1, 10, 4, 0, None),
             (2, 11, 4, 0, None), (3, 10, 4, 0, None)]
    for row, size, hop, align, want in cases:
        got = iv.snapped(rows[row:row + 1], ends[row:row + 1], known, size, hop, align)
        assert (None if got is None else (int(got[0][0]), int(got[1][0]))) == want


@settings(max_examples=300)
@given(t=EDGE_TICKS, shift=st.one_of(st.integers(-20, 20), st.integers(LONG_MIN, LONG_MAX)),
       hop=st.one_of(st.integers(1, 7), st.integers(1, LONG_MAX)),
       align=st.one_of(st.integers(-9, 9), st.integers(LONG_MIN, LONG_MAX)))
def test_grid_index_is_exact_floor_division(t: int, shift: int, hop: int, align: int) -> None:
    want = (t + shift - align % hop) // hop  # Python integers: exact
    ticks = np.array([t], np.int64)
    if LONG_MIN <= want <= LONG_MAX:
        assert iv.grid_index(ticks, shift, align % hop, hop).tolist() == [want]
    else:
        with pytest.raises(OverflowError):
            iv.grid_index(ticks, shift, align % hop, hop)


def windows_by_search(lifetimes: list[tuple[int, int]], size: int, hop: int,
                      align: int) -> list[tuple[int, list[int]]]:
    """Every window `[align + k*hop, + size)` that some lifetime `[start, end)` overlaps,
    with its members, found by walking the windows around each lifetime in Python
    integers."""
    starts: set[int] = set()
    for start, end in lifetimes:
        k = (start - size - align) // hop
        while align + k * hop < end:
            starts.add(align + k * hop)
            k += 1
    found = [(w, [i for i, (s, e) in enumerate(lifetimes) if s < w + size and w < e])
             for w in sorted(starts)]
    return [(w, members) for w, members in found if members]


@settings(max_examples=300)
@given(bottom=st.booleans(), offsets=st.lists(st.integers(0, 60), min_size=1, max_size=4),
       lengths=st.data(), hop=st.integers(1, 7), extra=st.integers(0, 12),
       align=st.one_of(st.integers(-9, 9), st.integers(LONG_MIN, LONG_MAX)),
       split=st.booleans())
def test_hopping_windows_beside_the_limits_match_a_search(
        bottom: bool, offsets: list[int], lengths: st.DataObject, hop: int, extra: int,
        align: int, split: bool) -> None:
    # lifetimes within a few windows of -2^63 or of 2^63 - 1, where `start - size` and
    # `start - align` leave 64 bits; windows reaching beyond the range are left to the
    # engine's checks (they fail the query), so such draws are skipped. `split`: the
    # runs of time-weighted aggregates, which cut where members cover windows partly
    size = hop + extra
    base = LONG_MIN if bottom else LONG_MAX - 100
    starts = sorted(base + o for o in offsets)
    ends = [s + lengths.draw(st.integers(1, 20)) for s in starts]
    lifetimes = list(zip(starts, ends, strict=True))
    want = windows_by_search(lifetimes, size, hop, align)
    assume(all(w >= LONG_MIN and w + size <= LONG_MAX for w, _ in want))
    assume(all((w - align % hop) // hop < iv.MAX_WINDOW_INDEX for w, _ in want))
    groups, rows = iv.hopping(np.array(starts, np.int64), np.array(ends, np.int64), size,
                              hop, align, output="windows", horizon=int(iv.END_OF_TIME),
                              split_partial=split)
    got = [(int(w), sorted(groups.positions[groups.lo[u]:groups.hi[u]].tolist()))
           for w, u in zip(rows.start.tolist(), rows.group.tolist(), strict=True)]
    assert got == want
    assert rows.end.tolist() == [w + size for w, _ in want]
