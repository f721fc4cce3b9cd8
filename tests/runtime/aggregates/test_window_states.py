"""Partial states of numbered windows (`runtime.aggregates.window_states`), alone, without Spark:
the states of frames that share their end (segments, then suffix merges in log rounds)
finish as the states of each frame's rows added alone, and both as a brute-force
oracle over the frame's values; several rows of states of a window merge to one."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

from wisp.runtime.aggregates.partials import Layout
from wisp.runtime.aggregates.window_states import GROUP, WindowStates, frame_members, holds

JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("count", "v", "float", pa.int64(), None),
        built_in_job("sum", "i", "integer", pa.int64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("min", "s", "ordered", pa.string(), None),
        built_in_job("first", "v", "float", pa.float64(), None),
        built_in_job("last", "i", "integer", pa.int64(), None),
        built_in_job("count_distinct", "s", "ordered", pa.int64(), None))
SCHEMA = pa.schema([pa.field("v", pa.float64()), pa.field("i", pa.int64()),
                    pa.field("s", pa.string())])
STATES = WindowStates(JOBS, Layout(SCHEMA, pa.int64()))


def oracle(rows: list[dict[str, Any]]) -> list[Any]:
    """Each job's result over `rows` (in window order), from the semantics (a sum of no
    values is 0, a count 0, every other aggregate null)."""
    v = [r["v"] for r in rows if r["v"] is not None]
    i = [r["i"] for r in rows if r["i"] is not None]
    s = [r["s"] for r in rows if r["s"] is not None]
    numbers = [x for x in v if not math.isnan(x)]
    top = None if not v else (math.nan if len(numbers) < len(v) else max(numbers))
    return [len(rows), len(v), sum(i), top, min(s) if s else None,
            v[0] if v else None, i[-1] if i else None, len(set(s))]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


values = st.fixed_dictionaries({
    "v": st.one_of(st.none(), st.just(math.nan), st.integers(-5, 5).map(float)),
    "i": st.one_of(st.none(), st.integers(-(1 << 40), 1 << 40)),
    "s": st.one_of(st.none(), st.sampled_from(["a", "b", "c", ""]))})


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(values, min_size=1, max_size=40), data=st.data())
def test_frames_sharing_their_end_equal_each_frame_added_alone(
        rows: list[dict[str, Any]], data: st.DataObject) -> None:
    n = len(rows)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    times = np.arange(n, dtype=np.int64)
    end = data.draw(st.integers(0, n))
    lo = np.array(data.draw(st.lists(st.integers(0, end), min_size=1, max_size=12)),
                  dtype=np.int64)
    hi = np.full(len(lo), end, dtype=np.int64)
    groups = np.arange(len(lo), dtype=np.int64) * 3 + 1
    shared = STATES.frames(table, times, lo, hi, groups)
    alone = STATES.add(table, times, *frame_members(lo, hi, groups))
    full = hi > lo
    assert shared.column(GROUP).to_pylist() == groups[full].tolist()
    assert alone.column(GROUP).to_pylist() == groups[full].tolist()
    for found in (STATES.finish(shared), STATES.finish(alone)):
        for g, (a, b) in enumerate(zip(lo[full], hi[full], strict=True)):
            want = oracle(rows[a:b])
            got = [column[g].as_py() for column in found]
            assert all(same(x, y) for x, y in zip(got, want, strict=True)), (got, want)


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(values, min_size=1, max_size=30), data=st.data())
def test_parts_of_a_window_merge_to_its_whole(rows: list[dict[str, Any]],
                                             data: st.DataObject) -> None:
    """A window's rows cut into parts, each part's states a row: `merge` gives one row
    that finishes as the whole."""
    n = len(rows)
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    times = np.arange(n, dtype=np.int64)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=5)))) if n > 1 \
        else []
    bounds = [0, *cuts, n]
    parts = [STATES.add(table, times, np.arange(a, b, dtype=np.int64),
                        np.zeros(1, dtype=np.int64), np.array([7]))
             for a, b in itertools.pairwise(bounds)]
    order = data.draw(st.permutations(range(len(parts))))
    merged = STATES.merge(pa.concat_tables([parts[k] for k in order]))
    assert merged.num_rows == 1 and merged.column(GROUP).to_pylist() == [7]
    got = [column[0].as_py() for column in STATES.finish(merged)]
    assert all(same(x, y) for x, y in zip(got, oracle(rows), strict=True)), got


def test_which_aggregations_hold_states() -> None:
    """Every job above has a partial state; an exact quantile or a collect has none."""
    assert holds(JOBS)
    assert not holds((*JOBS, built_in_job("collect", "i", "integer",
                                          pa.list_(pa.int64()), None)))
    assert not holds((built_in_job("median", "v", "float", pa.float64(), None),))
