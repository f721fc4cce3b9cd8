"""The oracle against tiny hand-worked examples. Every expected value below was worked
out by hand and is written literally; none is computed by the oracle."""

from __future__ import annotations

import math
from typing import Any

import pytest
from oracle import (
    assert_rows_match,
    cumulative,
    range_window,
    rows_window,
    sort_output,
    spark_sort_key,
)

from wisp.spec import aggregates as A
from wisp.spec.windows import Range, Rows

NAN = math.nan
INF = math.inf


def table(columns: list[str], *values: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in values]


# Values 1..5 at times 10..50, one global stream.
FIVE = table(["t", "v"], (10, 1), (20, 2), (30, 3), (40, 4), (50, 5))
FIVE_AGGS = [A.collect("v"), A.sum("v"), A.count(), A.mean("v")]


def on_five(window: Rows) -> list[dict[str, Any]]:
    return rows_window(FIVE, time="t", key=[], order=None, columns=["t", "v"],
                       window=window, aggs=FIVE_AGGS)


def out(ws: Any, we: Any, t: Any, **aggs: Any) -> dict[str, Any]:
    return {"window_start": ws, "window_end": we, "time": t, **aggs}


# ---------------------------------------------------------------------------- Rows


def test_rows_past_three() -> None:
    assert on_five(Rows(-2, 0)) == [
        out(10, 30, 30, collect_v=[1, 2, 3], sum_v=6, count=3, mean_v=2.0),
        out(20, 40, 40, collect_v=[2, 3, 4], sum_v=9, count=3, mean_v=3.0),
        out(30, 50, 50, collect_v=[3, 4, 5], sum_v=12, count=3, mean_v=4.0),
    ]


def test_rows_reversed_bounds_are_normalised() -> None:
    assert on_five(Rows(0, -2)) == on_five(Rows(-2, 0))


def test_rows_future_three() -> None:
    assert on_five(Rows(0, 2)) == [
        out(10, 30, 10, collect_v=[1, 2, 3], sum_v=6, count=3, mean_v=2.0),
        out(20, 40, 20, collect_v=[2, 3, 4], sum_v=9, count=3, mean_v=3.0),
        out(30, 50, 30, collect_v=[3, 4, 5], sum_v=12, count=3, mean_v=4.0),
    ]


def test_rows_around_complete_only() -> None:
    assert on_five(Rows(-1, 2)) == [
        out(10, 40, 20, collect_v=[1, 2, 3, 4], sum_v=10, count=4, mean_v=2.5),
        out(20, 50, 30, collect_v=[2, 3, 4, 5], sum_v=14, count=4, mean_v=3.5),
    ]


def test_rows_around_partial() -> None:
    assert on_five(Rows(-1, 2, partial=True)) == [
        out(10, 30, 10, collect_v=[1, 2, 3], sum_v=6, count=3, mean_v=2.0),
        out(10, 40, 20, collect_v=[1, 2, 3, 4], sum_v=10, count=4, mean_v=2.5),
        out(20, 50, 30, collect_v=[2, 3, 4, 5], sum_v=14, count=4, mean_v=3.5),
        out(30, 50, 40, collect_v=[3, 4, 5], sum_v=12, count=3, mean_v=4.0),
        out(40, 50, 50, collect_v=[4, 5], sum_v=9, count=2, mean_v=4.5),
    ]


def test_rows_window_without_its_anchor() -> None:
    assert on_five(Rows(-3, -1)) == [
        out(10, 30, 40, collect_v=[1, 2, 3], sum_v=6, count=3, mean_v=2.0),
        out(20, 40, 50, collect_v=[2, 3, 4], sum_v=9, count=3, mean_v=3.0),
    ]


def test_rows_window_without_its_anchor_partial_starts_empty() -> None:
    assert on_five(Rows(-3, -1, partial=True)) == [
        out(None, None, 10, collect_v=[], sum_v=0, count=0, mean_v=None),
        out(10, 10, 20, collect_v=[1], sum_v=1, count=1, mean_v=1.0),
        out(10, 20, 30, collect_v=[1, 2], sum_v=3, count=2, mean_v=1.5),
        out(10, 30, 40, collect_v=[1, 2, 3], sum_v=6, count=3, mean_v=2.0),
        out(20, 40, 50, collect_v=[2, 3, 4], sum_v=9, count=3, mean_v=3.0),
    ]


def test_rows_closed_sides_drop_an_index() -> None:
    # Rows(-2, 0, "right") = indices -1..0; Rows(-2, 0, "left") = indices -2..-1.
    assert [r["collect_v"] for r in on_five(Rows(-2, 0, closed="right"))] == \
        [[1, 2], [2, 3], [3, 4], [4, 5]]
    assert [(r["time"], r["collect_v"]) for r in on_five(Rows(-2, 0, closed="left"))] == \
        [(30, [1, 2]), (40, [2, 3]), (50, [3, 4])]


# --------------------------------------------------------------------------- Range

# Integer times with a tie at 2; ties broken by v.
TIES = table(["t", "v"], (5, 5), (2, 3), (0, 1), (3, 4), (2, 2))
TIES_AGGS = [A.collect("v"), A.count(), A.sum("v"), A.max("v")]


def on_ties(window: Range) -> list[tuple[Any, ...]]:
    result = range_window(TIES, time="t", key=[], order=None, columns=["t", "v"],
                          window=window, aggs=TIES_AGGS)
    return [(r["window_start"], r["window_end"], r["time"], r["collect_v"], r["count"],
             r["sum_v"], r["max_v"]) for r in result]


def test_range_both() -> None:
    assert on_ties(Range(-2, 0)) == [
        (-2, 0, 0, [1], 1, 1, 1),
        (0, 2, 2, [1, 2, 3], 3, 6, 3),
        (0, 2, 2, [1, 2, 3], 3, 6, 3),
        (1, 3, 3, [2, 3, 4], 3, 9, 4),
        (3, 5, 5, [4, 5], 2, 9, 5),
    ]


def test_range_left() -> None:
    assert on_ties(Range(-2, 0, closed="left")) == [
        (-2, 0, 0, [], 0, 0, None),
        (0, 2, 2, [1], 1, 1, 1),
        (0, 2, 2, [1], 1, 1, 1),
        (1, 3, 3, [2, 3], 2, 5, 3),
        (3, 5, 5, [4], 1, 4, 4),
    ]


def test_range_right() -> None:
    assert on_ties(Range(-2, 0, closed="right")) == [
        (-2, 0, 0, [1], 1, 1, 1),
        (0, 2, 2, [2, 3], 2, 5, 3),
        (0, 2, 2, [2, 3], 2, 5, 3),
        (1, 3, 3, [2, 3, 4], 3, 9, 4),
        (3, 5, 5, [5], 1, 5, 5),
    ]


def test_range_neither() -> None:
    assert on_ties(Range(-2, 0, closed="neither")) == [
        (-2, 0, 0, [], 0, 0, None),
        (0, 2, 2, [], 0, 0, None),
        (0, 2, 2, [], 0, 0, None),
        (1, 3, 3, [2, 3], 2, 5, 3),
        (3, 5, 5, [], 0, 0, None),
    ]


def test_range_in_the_future_without_its_anchor() -> None:
    assert on_ties(Range(1, 3)) == [
        (1, 3, 0, [2, 3, 4], 3, 9, 4),
        (3, 5, 2, [4, 5], 2, 9, 5),
        (3, 5, 2, [4, 5], 2, 9, 5),
        (4, 6, 3, [5], 1, 5, 5),
        (6, 8, 5, [], 0, 0, None),
    ]


def test_range_duration_string_on_micros() -> None:
    rows = table(["t", "v"], (0, 1.0), (1_000, 2.0), (2_500, 4.0))
    result = range_window(rows, time="t", key=[], order=None, columns=["t", "v"],
                          window=Range("-2ms", "0s"), aggs=[A.sum("v")])
    assert result == [
        out(-2_000, 0, 0, sum_v=1.0),
        out(-1_000, 1_000, 1_000, sum_v=3.0),
        out(500, 2_500, 2_500, sum_v=6.0),
    ]


# ---------------------------------------------------------------------- cumulative

CUMULATIVE_AGGS = [A.count(), A.count("v"), A.sum("v"), A.mean("v"), A.first("v"),
                   A.last("v"), A.min("v"), A.max("v")]


def test_cumulative_with_nulls_and_a_null_key() -> None:
    rows = table(["k", "t", "v"],
                 ("a", 3, 4.0), (None, 6, None), ("c", 7, None), ("a", 1, 1.0),
                 (None, 5, 10.0), ("a", 2, None))
    result = cumulative(rows, time="t", key=["k"], order=None, columns=["k", "t", "v"],
                        aggs=CUMULATIVE_AGGS)
    names = ["k", "window_start", "window_end", "time", "count", "count_v", "sum_v",
             "mean_v", "first_v", "last_v", "min_v", "max_v"]
    expected = [
        (None, 5, 5, 5, 1, 1, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0),
        (None, 5, 6, 6, 2, 1, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0),
        ("a", 1, 1, 1, 1, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
        ("a", 1, 2, 2, 2, 1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
        ("a", 1, 3, 3, 3, 2, 5.0, 2.5, 1.0, 4.0, 1.0, 4.0),
        ("c", 7, 7, 7, 1, 0, 0, None, None, None, None, None),
    ]
    assert result == [dict(zip(names, row, strict=True)) for row in expected]
    assert list(result[0]) == names


def test_nan_in_min_max_sum_mean() -> None:
    rows = table(["k", "t", "v"],
                 ("x", 1, 3.0), ("x", 2, NAN), ("x", 3, 1.0), ("y", 1, NAN), ("y", 2, None))
    result = cumulative(rows, time="t", key=["k"], order=None, columns=["k", "t", "v"],
                        aggs=[A.min("v"), A.max("v"), A.sum("v"), A.mean("v")])
    expected = [
        {"k": "x", "window_start": 1, "window_end": 1, "time": 1,
         "min_v": 3.0, "max_v": 3.0, "sum_v": 3.0, "mean_v": 3.0},
        {"k": "x", "window_start": 1, "window_end": 2, "time": 2,
         "min_v": 3.0, "max_v": NAN, "sum_v": NAN, "mean_v": NAN},
        {"k": "x", "window_start": 1, "window_end": 3, "time": 3,
         "min_v": 1.0, "max_v": NAN, "sum_v": NAN, "mean_v": NAN},
        {"k": "y", "window_start": 1, "window_end": 1, "time": 1,
         "min_v": NAN, "max_v": NAN, "sum_v": NAN, "mean_v": NAN},
        {"k": "y", "window_start": 1, "window_end": 2, "time": 2,
         "min_v": NAN, "max_v": NAN, "sum_v": NAN, "mean_v": NAN},
    ]
    assert_rows_match(result, expected, rel=0.0)
    assert math.isnan(result[1]["max_v"]) and result[1]["min_v"] == 3.0


def test_sum_of_infinities_and_exact_sums() -> None:
    rows = table(["t", "f", "i"], (1, INF, 2**53), (2, 1.0, 1), (3, -INF, -(2**53)))
    result = cumulative(rows, time="t", key=[], order=None, columns=["t", "f", "i"],
                        aggs=[A.sum("f"), A.sum("i")])
    assert [r["sum_f"] for r in result][:2] == [INF, INF]
    assert math.isnan(result[2]["sum_f"])
    assert [r["sum_i"] for r in result] == [9007199254740992, 9007199254740993, 1]
    rows = table(["t", "v"], (1, 1e16), (2, 1.0), (3, -1e16))
    result = cumulative(rows, time="t", key=[], order=None, columns=["t", "v"],
                        aggs=[A.sum("v")])
    assert result[2]["sum_v"] == 1.0  # exactly rounded, not 0.0


def test_variance_and_stddev() -> None:
    rows = table(["t", "v"], (1, 2.0), (2, None), (3, 4.0), (4, 6.0), (5, NAN))
    result = cumulative(rows, time="t", key=[], order=None, columns=["t", "v"],
                        aggs=[A.variance("v"), A.stddev("v")])
    got = [(r["variance_v"], r["stddev_v"]) for r in result]
    assert got[:4] == [(None, None), (None, None), (2.0, 1.4142135623730951), (4.0, 2.0)]
    assert math.isnan(got[4][0]) and math.isnan(got[4][1])


def test_variance_is_exact_on_large_offsets() -> None:
    rows = table(["t", "v"], (1, 1e9 + 1), (2, 1e9 + 2), (3, 1e9 + 3))
    result = cumulative(rows, time="t", key=[], order=None, columns=["t", "v"],
                        aggs=[A.variance("v")])
    assert [r["variance_v"] for r in result] == [None, 0.5, 1.0]


def test_udaf_gets_non_null_values_and_their_times() -> None:
    def span(values: list[float], times: list[int]) -> list[Any]:
        return [list(values), list(times)]

    rows = table(["t", "v"], (10, 1.0), (20, None), (30, 3.0))
    result = cumulative(rows, time="t", key=[], order=None, columns=["t", "v"],
                        aggs=[A.udaf(span, "v", returns="array<double>"),
                              A.udaf(lambda v, t: float(sum(v)), "v").alias("total")])
    assert [r["span_v"] for r in result] == [[[1.0], [10]], [[1.0], [10]],
                                            [[1.0, 3.0], [10, 30]]]
    assert [r["total"] for r in result] == [1.0, 1.0, 4.0]


# ----------------------------------------------------------------------- tie-break

TIED = table(["k", "t", "a", "b"],
             (0, 1, 2.0, "x"), (0, 1, None, "z"), (0, 1, 1.0, "y"), (0, 1, 1.0, "w"),
             (0, 1, NAN, "v"), (0, 1, -0.0, "u"), (0, 1, 0.0, "t"), (0, 0, 9.0, "s"))


def test_ties_broken_by_the_other_columns() -> None:
    # Time first (s at 0); then a: null, 0.0 == -0.0 (then b: t < u), 1.0 (w < y), 2.0,
    # NaN last.
    result = cumulative(TIED, time="t", key=["k"], order=None, columns=["k", "t", "a", "b"],
                        aggs=[A.last("b")])
    assert [r["last_b"] for r in result] == ["s", "z", "t", "u", "w", "y", "x", "v"]


def test_ties_broken_by_order() -> None:
    result = cumulative(TIED, time="t", key=["k"], order="b", columns=["k", "t", "a", "b"],
                        aggs=[A.last("b")])
    assert [r["last_b"] for r in result] == ["s", "t", "u", "v", "w", "x", "y", "z"]


def test_strings_by_code_point_and_booleans() -> None:
    rows = table(["t", "s", "b"], (1, "a", True), (1, "B", True), (1, "a", False),
                 (1, "é", False))
    result = rows_window(rows, time="t", key=[], order=None, columns=["t", "s", "b"],
                         window=Rows(0, 0), aggs=[A.first("s"), A.first("b")])
    assert [(r["first_s"], r["first_b"]) for r in result] == \
        [("B", True), ("a", False), ("a", True), ("é", False)]


# ---------------------------------------------------------------------- comparison


def test_spark_sort_key() -> None:
    values = [3, None, NAN, -1.5, None, 0.0]
    assert [repr(v) for v in sorted(values, key=spark_sort_key)] == \
        ["None", "None", "-1.5", "0.0", "3", "nan"]
    assert sorted(["b", "B", "a"], key=spark_sort_key) == ["B", "a", "b"]
    assert spark_sort_key(-0.0) == spark_sort_key(0.0)
    assert spark_sort_key(NAN) == spark_sort_key(float("nan"))
    assert spark_sort_key([1, None]) < spark_sort_key([1, 2]) < spark_sort_key([1, NAN])


def test_sort_output() -> None:
    rows: list[dict[str, Any]] = [
        {"k": "b", "time": 1, "window_start": 0, "window_end": 1, "x": 1.0},
        {"k": None, "time": 2, "window_start": 0, "window_end": 2, "x": NAN},
        {"k": "a", "time": 1, "window_start": 0, "window_end": 1, "x": 2},
        {"k": "a", "time": 1, "window_start": 0, "window_end": 1, "x": 1},
        {"k": None, "time": 1, "window_start": None, "window_end": None, "x": None},
    ]
    assert [(r["k"], r["time"], r["x"]) for r in sort_output(rows, ["k"])][:1] == \
        [(None, 1, None)]
    assert [(r["k"], r["time"], r["x"]) for r in sort_output(rows, ["k"])][2:] == \
        [("a", 1, 1), ("a", 1, 2), ("b", 1, 1.0)]


def test_assert_rows_match_accepts_close_and_nan() -> None:
    assert_rows_match(
        [{"a": 1, "b": 1.0 + 1e-12, "c": NAN, "d": [1.0, NAN], "e": None, "f": 1e-12}],
        [{"a": 1, "b": 1.0, "c": NAN, "d": [1.0 + 1e-13, NAN], "e": None, "f": 0.0}])


@pytest.mark.parametrize(("actual", "expected", "where"), [
    ([{"a": 1}], [{"a": 2}], "column 'a'"),
    ([{"a": 1.0}], [{"a": 1.001}], "column 'a'"),
    ([{"a": NAN}], [{"a": None}], "column 'a'"),
    ([{"a": 0}], [{"a": None}], "column 'a'"),
    ([{"a": True}], [{"a": 1}], "column 'a'"),
    ([{"a": [1, 2]}], [{"a": [1]}], "column 'a'"),
    ([{"a": 1}], [{"a": 1, "b": 2}], "column 'b'"),
    ([{"a": 1}], [{"a": 1}, {"a": 2}], "1 actual rows != 2 expected rows"),
])
def test_assert_rows_match_reports_the_first_difference(
        actual: list[dict[str, Any]], expected: list[dict[str, Any]], where: str) -> None:
    with pytest.raises(AssertionError, match=where):
        assert_rows_match(actual, expected)


def test_assert_rows_match_scale() -> None:
    assert_rows_match([{"s": 1e-3}], [{"s": 0.0}], scales={"s": 1e7})
    with pytest.raises(AssertionError, match="row 0, column 's'"):
        assert_rows_match([{"s": 1e-3}], [{"s": 0.0}])
