"""The bounded states the running windows carry
(`runtime.aggregates.running_states`), alone, without Spark: on random columns with
nulls, NaN, `-0.0` and duplicates, cut into segments,
the scan at every row equals a brute force over each row's segment so far (k-lists: the
plain-Python semantics; sketches: the sketch of those values built at once), and a scan
cut anywhere and resumed from the carried state, behind a virtual row, gives the uncut
scan's rows."""

from __future__ import annotations

import base64
import math
import pickle
import pickletools
from typing import Any

import datasketches as ds
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job

from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.aggregates.running_states import order_key, running_scan

floats = st.one_of(st.none(), st.just(math.nan), st.sampled_from([0.0, -0.0, 1.5, -2.0]),
                   st.floats(-1e6, 1e6, allow_nan=False))
integers = st.one_of(st.none(), st.integers(-5, 5), st.integers(-10**15, 10**15))


def job(fn: str, column: pa.Array, **options: Any) -> AggregateJob:
    value_class = "float" if pa.types.is_floating(column.type) else "integer"
    arrow = column.type
    output = {"first_k": pa.list_(arrow), "last_k": pa.list_(arrow),
              "top_k": pa.list_(arrow), "bottom_k": pa.list_(arrow),
              "hll_sketch": pa.binary(), "approx_count_distinct": pa.int64()}[fn]
    return built_in_job(fn, "v", value_class, output, None, **options)


def brute_k_list(fn: str, values: list[Any], k: int) -> list[Any]:
    present = [v for v in values if v is not None]
    if fn == "first_k":
        return present[:k]
    if fn == "last_k":
        return present[-k:]
    return sorted(present, key=order_key, reverse=fn == "top_k")[:k]


def segments_of(n: int, cuts: list[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array(sorted({0, *(c for c in cuts if 0 < c < n)}), dtype=np.int64)


def prefixes(values: list[Any], starts: list[int]) -> list[list[Any]]:
    """Each row's segment so far."""
    out, begin = [], 0
    for j in range(len(values)):
        if j in starts:
            begin = j
        out.append(values[begin:j + 1])
    return out


def same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(floats, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=3),
       fn=st.sampled_from(["first_k", "last_k", "top_k", "bottom_k"]), k=st.integers(1, 4))
def test_k_lists_at_every_row_are_the_brute_force(values: list[Any], cuts: list[int],
                                                  fn: str, k: int) -> None:
    column = pa.array(values, pa.float64())
    starts = segments_of(len(values), cuts)
    results, _ = running_scan(job(fn, column, k=k), column, starts, None, False)
    want = [brute_k_list(fn, seen, k) for seen in prefixes(values, starts.tolist())]
    assert all(same(got, expected) for got, expected in
               zip(results.to_pylist(), want, strict=True)), (results.to_pylist(), want)


def hll_estimate(values: list[Any]) -> int:
    sketch = ds.hll_sketch(12, ds.tgt_hll_type.HLL_8)
    for value in values:
        if value is not None:
            sketch.update(value)
    return round(sketch.get_estimate())


@settings(max_examples=40, deadline=None)
@given(values=st.lists(integers, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=3))
def test_a_running_distinct_count_is_the_sketch_of_the_segment_so_far(
        values: list[Any], cuts: list[int]) -> None:
    """Below a few hundred values an HLL sketch counts exactly, whatever its estimator."""
    column = pa.array(values, pa.int64())
    starts = segments_of(len(values), cuts)
    results, _ = running_scan(job("approx_count_distinct", column, lg_k=12), column, starts,
                              None, False)
    want = [hll_estimate(seen) for seen in prefixes(values, starts.tolist())]
    assert results.to_pylist() == want
    assert want == [len({v for v in seen if v is not None})
                    for seen in prefixes(values, starts.tolist())]


@pytest.mark.parametrize(("fn", "options"), [
    ("first_k", {"k": 2}), ("last_k", {"k": 3}), ("top_k", {"k": 2}), ("bottom_k", {"k": 1}),
    ("hll_sketch", {"lg_k": 10}), ("approx_count_distinct", {"lg_k": 5})])
@settings(max_examples=25, deadline=None)
@given(values=st.lists(integers, max_size=30), cut=st.integers(0, 30),
       restart=st.integers(0, 30))
def test_a_resumed_scan_gives_the_uncut_rows(fn: str, options: dict[str, Any],
                                             values: list[Any], cut: int,
                                             restart: int) -> None:
    column = pa.array(values, pa.int64())
    described = job(fn, column, **options)
    starts = segments_of(len(values), [restart])
    whole, _ = running_scan(described, column, starts, None, False)
    cut = min(cut, len(values))
    head, carried = running_scan(described, column.slice(0, cut),
                                 starts[starts < cut] if cut else starts[:1], None, False)
    # behind a virtual row; a segment starting at the cut restarts at the first real row
    later = np.r_[0, starts[starts >= cut] - cut + 1].astype(np.int64)
    tail, _ = running_scan(described, column.slice(cut), later, carried, True)
    assert head.to_pylist() + tail.to_pylist()[1:] == whole.to_pylist()


def test_first_k_of_an_array_column_keeps_each_array_whole() -> None:
    column = pa.array([[1, 2], None, [3, 4], [5, 6]], pa.list_(pa.int64()))
    described = built_in_job("last_k", "v", "other", pa.list_(column.type), None, k=2)
    results, _ = running_scan(described, column, np.array([0], dtype=np.int64), None, False)
    assert results.to_pylist() == [[[1, 2]], [[1, 2]], [[1, 2], [3, 4]], [[3, 4], [5, 6]]]


def pickled_names(text: str) -> list[str]:
    """The module and class names a carried state's pickle (`running_states.dump`'s
    text) refers to: every string it pushes, as a GLOBAL or STACK_GLOBAL reads them."""
    names = []
    for op, arg, _ in pickletools.genops(base64.b64decode(text)):
        if op.name == "GLOBAL":
            names.append(str(arg))
        elif isinstance(arg, str):
            names.append(arg)
    return names


def test_carried_states_pickle_no_wisp_class() -> None:
    """A running state travels in a stream's checkpoint as pickled text: it holds plain
    values (a tuple of the kept values, a sketch's bytes), never a class of wisp, so
    moving wisp's modules (`runtime/` into its sub-packages) cannot make a checkpoint
    written before the move unreadable."""
    column = pa.array([1.5, None, -0.0, math.nan, 3.0], pa.float64())
    starts = segments_of(5, [])
    for fn, options in [("first_k", {"k": 2}), ("last_k", {"k": 2}), ("top_k", {"k": 2}),
                        ("bottom_k", {"k": 2}), ("hll_sketch", {"lg_k": 12}),
                        ("approx_count_distinct", {"lg_k": 12})]:
        _, text = running_scan(job(fn, column, **options), column, starts, None, False)
        assert not [n for n in pickled_names(text) if n.startswith("wisp")], fn


def test_the_pickle_reader_sees_a_wisp_class() -> None:
    """Not vacuous: a state holding a wisp object names its module."""
    from wisp.runtime.aggregates.running_states import KList

    blob = pickle.dumps(KList(2, "top"), protocol=pickle.HIGHEST_PROTOCOL)
    names = pickled_names(base64.b64encode(blob).decode("ascii"))
    assert "wisp.runtime.aggregates.running_states" in names
