"""The as-of kernel without Spark: random left and right rows, sorted as Spark sorts them
and cut into random batches and pieces, against `pandas.merge_asof` (tests/oracle_asof.py)
for every direction, tolerance and exact-match setting; and the match rules by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_asof import matched, merge_asof

from wisp.kernels.asof import match
from wisp.runtime.codecs.sorting import sort_order
from wisp.runtime.windows.asof import AsOfKernel

DIRECTIONS = ["backward", "forward", "nearest"]


@st.composite
def sides(draw: st.DrawFn, floats: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Left and right rows over few keys and few times: ties within and across sides,
    null keys, missing times (and NaN for float time)."""
    times = st.integers(-4, 12)
    missing = [None, math.nan] if floats else [None]

    def time() -> Any:
        if draw(st.integers(0, 9)) == 0:
            return draw(st.sampled_from(missing))
        value = draw(times)
        return value / 2 if floats else value

    def row(i: int) -> dict[str, Any]:
        return {"a": draw(st.sampled_from(["x", "y", None])),
                "b": draw(st.sampled_from([0, 1, None])), "t": time(), "id": i}

    left = [row(i) for i in range(draw(st.integers(0, 30)))]
    right = [row(100 + i) for i in range(draw(st.integers(0, 30)))]
    for r in right:
        r["seq"] = draw(st.integers(0, 3))
    return left, right


def union(left: list[dict[str, Any]], right: list[dict[str, Any]], by: list[str],
          time_type: pa.DataType) -> pa.Table:
    """The engine's union: `by` columns, time, the left flag, the tie-break, the left's
    id and the right's id; sorted by (by, time, tie-break) as Spark sorts (nulls first,
    NaN last)."""
    rows = [(r, True) for r in left] + [(r, False) for r in right]
    columns: dict[str, pa.Array] = {}
    for i, b in enumerate(by):
        columns[f"by{i}"] = pa.array([r[b] for r, _ in rows],
                                     pa.string() if b == "a" else pa.int64())
    columns["on"] = pa.array([r["t"] for r, _ in rows], time_type, from_pandas=False)
    columns["is_left"] = pa.array([is_left for _, is_left in rows])
    columns["order"] = pa.array([None if is_left else r["seq"] for r, is_left in rows],
                                pa.int64())
    columns["left_id"] = pa.array([r["id"] if is_left else None for r, is_left in rows],
                                  pa.int64())
    columns["right_id"] = pa.array([None if is_left else r["id"] for r, is_left in rows],
                                   pa.int64())
    table = pa.table(columns)
    return table.take(sort_order(table, (*[f"by{i}" for i in range(len(by))], "on",
                                         "order")))


def run_kernel(table: pa.Table, by: list[str], kind: str, direction: str, exact: bool,
               tolerance: Any, batch_rows: int, chunk_rows: int) -> dict[int, int | None]:
    keys = tuple(f"by{i}" for i in range(len(by)))
    schema = pa.schema([("left_id", pa.int64()), ("right_id", pa.int64())])
    kernel = AsOfKernel(keys=keys, on="on", kind=kind, is_left="is_left",
                        direction=direction,  # type: ignore[arg-type]
                        exact=exact, tolerance=tolerance, left_columns=("left_id",),
                        right_columns=("right_id",), schema=schema, chunk_rows=chunk_rows)
    out = pa.Table.from_batches(list(kernel(iter(table.to_batches(batch_rows)))),
                                schema=schema)
    ids = out.column("left_id").to_pylist()
    assert len(ids) == len(set(ids)), "a left row came out twice"
    return dict(zip(ids, out.column("right_id").to_pylist(), strict=True))


def oracle(left: list[dict[str, Any]], right: list[dict[str, Any]], by: list[str],
           direction: str, exact: bool, tolerance: Any, floats: bool) -> dict[int, int | None]:
    dtype = "float64" if floats else "Int64"
    frames = []
    for rows, extra in ((left, []), (right, ["seq"])):
        frame = pd.DataFrame({"t": pd.array([r["t"] for r in rows], dtype=dtype),
                              "a": pd.Series([r["a"] for r in rows], dtype=object),
                              "b": pd.Series([r["b"] for r in rows], dtype=object),
                              "id": [r["id"] for r in rows],
                              **{e: [r[e] for r in rows] for e in extra}})
        frames.append(frame)
    left_frame, right_frame = frames
    if not floats:  # pandas' merge_asof wants a plain int64 time
        keep = left_frame["t"].notna()
        untimed = left_frame[~keep]
        left_frame = left_frame[keep].astype({"t": "int64"})
        right_frame = right_frame[right_frame["t"].notna()].astype({"t": "int64"})
    merged = merge_asof(left_frame, right_frame.rename(columns={"id": "rid"}), on="t", by=by,
                        direction=direction, tolerance=tolerance, exact=exact, order="seq")
    result = matched(merged, "id", "rid")
    if not floats:
        result.update({i: None for i in untimed["id"]})
    return result


@settings(max_examples=150)
@given(data=st.data(), floats=st.booleans(), by=st.sampled_from([[], ["a"], ["a", "b"]]),
       direction=st.sampled_from(DIRECTIONS), exact=st.booleans(),
       tolerance=st.sampled_from([None, 0, 1, 3]), batch_rows=st.integers(1, 9),
       chunk_rows=st.integers(1, 12))
def test_kernel_matches_pandas(data: st.DataObject, floats: bool, by: list[str],
                               direction: str, exact: bool, tolerance: int | None,
                               batch_rows: int, chunk_rows: int) -> None:
    left, right = data.draw(sides(floats))
    table = union(left, right, by, pa.float64() if floats else pa.int64())
    tol = None if tolerance is None else (tolerance / 2 if floats else tolerance)
    got = run_kernel(table, by, "float" if floats else "integer", direction, exact, tol,
                     batch_rows, chunk_rows)
    assert got == oracle(left, right, by, direction, exact, tol, floats)


# ------------------------------------------------------------------------- by hand

LEFT_TIMES = [1, 3, 5, 5, 7, 10]
RIGHT_TIMES = [0, 3, 3, 5, 8, 8]
"""pandas' own answers on these (right ids 0..5 in time order), read off merge_asof."""
BY_HAND = {
    ("backward", True): [0, 2, 3, 3, 3, 5],
    ("backward", False): [0, 0, 2, 2, 3, 5],
    ("forward", True): [1, 1, 3, 3, 4, None],
    ("forward", False): [1, 3, 4, 4, 4, None],
    ("nearest", True): [0, 2, 3, 3, 4, 5],
    ("nearest", False): [0, 3, 2, 2, 4, 5],
}


def by_hand(direction: str, exact: bool, tolerance: int | None = None,
            chunk_rows: int = 1 << 16) -> list[int | None]:
    left = [{"a": None, "b": None, "t": t, "id": i} for i, t in enumerate(LEFT_TIMES)]
    right = [{"a": None, "b": None, "t": t, "id": 100 + i, "seq": i}
             for i, t in enumerate(RIGHT_TIMES)]
    table = union(left, right, [], pa.int64())
    got = run_kernel(table, [], "integer", direction, exact, tolerance, 2, chunk_rows)
    return [None if got[i] is None else got[i] - 100  # type: ignore[operator]
            for i in range(len(LEFT_TIMES))]


@pytest.mark.parametrize(("direction", "exact"), list(BY_HAND))
@pytest.mark.parametrize("chunk_rows", [1, 3, 1 << 16])
def test_each_direction_by_hand(direction: str, exact: bool, chunk_rows: int) -> None:
    assert by_hand(direction, exact, chunk_rows=chunk_rows) == BY_HAND[(direction, exact)]


def test_tolerance_by_hand() -> None:
    assert by_hand("backward", True, tolerance=1) == [0, 2, 3, 3, None, None]
    assert by_hand("backward", True, tolerance=0) == [None, 2, 3, 3, None, None]
    assert by_hand("nearest", True, tolerance=1) == [0, 2, 3, 3, 4, None]


def test_nearest_takes_the_earlier_of_two_as_close() -> None:
    ticks = np.array([2, 4, 6], dtype=np.int64)
    left = np.array([False, True, False])
    found = match(np.array([True, False, False]), ticks, np.ones(3, dtype=bool), left,
                  "nearest", True, None, open_end=False)
    assert found.match.tolist() == [-1, 0, -1]


def test_integer_distances_do_not_overflow() -> None:
    """A left time near the top of the 64-bit range and a right one near the bottom:
    their distance, 2^64 - 2, is beyond any tolerance that fits in 63 bits."""
    top, bottom = (1 << 63) - 1, -(1 << 63)
    ticks = np.array([bottom, top], dtype=np.int64)
    found = match(np.array([True, False]), ticks, np.ones(2, dtype=bool),
                  np.array([False, True]), "backward", True, (1 << 63) - 1, open_end=False)
    assert found.match.tolist() == [-1, -1]
    found = match(np.array([True, False]), ticks, np.ones(2, dtype=bool),
                  np.array([False, True]), "backward", True, None, open_end=False)
    assert found.match.tolist() == [-1, 0]


def test_pending_rows_wait_for_a_later_right_row() -> None:
    """Forward: left rows after the last right row of the open key are not settled; the
    piece is cut at the first of them, with the last right row before as context."""
    new_key = np.array([True, False, False, False])
    ticks = np.array([1, 2, 3, 4], dtype=np.int64)
    left = np.array([True, False, True, True])
    found = match(new_key, ticks, np.ones(4, dtype=bool), left, "forward", True, None,
                  open_end=True)
    assert (found.cut, found.context) == (2, 1)
    assert found.match[:2].tolist() == [1, -1]
    # with a tolerance of 0, the row at time 3 can no longer match (the newest is 4)
    found = match(new_key, ticks, np.ones(4, dtype=bool), left, "forward", True, 0,
                  open_end=True)
    assert found.cut == 3


def test_a_key_that_ended_waits_for_nothing() -> None:
    """Forward: the left rows of a key that ended without a right row after them are
    settled (unmatched) at once, not carried."""
    new_key = np.array([True, False, True, False])
    ticks = np.array([1, 2, 1, 5], dtype=np.int64)
    left = np.array([True, True, False, True])
    found = match(new_key, ticks, np.ones(4, dtype=bool), left, "forward", True, None,
                  open_end=True)
    assert (found.cut, found.context) == (3, 2)
    assert found.match[:2].tolist() == [-1, -1]
