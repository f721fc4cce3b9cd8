"""Order statistics over many frames at once (`kernels/order_stats.py`) and
max_by/min_by (`window_agg.frame_extreme_by`) against numpy, frame by frame: np.quantile
with `method=`, np.unique, and a literal scan for the extreme row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import order_stats as ost
from wisp.kernels import window_agg as wa
from wisp.spec.aggregates import INTERPOLATIONS

SMALL = st.integers(-5, 5)
FLOAT = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.0, 1.5]))


def random_frames(draw: st.DrawFn, n: int) -> tuple[np.ndarray, np.ndarray]:
    m = draw(st.integers(0, 30))
    lo = np.array(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)), dtype=np.int64)
    width = np.array(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)),
                     dtype=np.int64)
    return lo, np.minimum(lo + width, n)


@st.composite
def columns(draw: st.DrawFn, values: st.SearchStrategy[float]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = draw(st.lists(values, min_size=0, max_size=40))
    n = len(data)
    valid = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    lo, hi = random_frames(draw, n)
    return np.array(data, dtype=np.float64), valid, lo, hi


def spark_order_quantile(values: np.ndarray, q: float, method: str) -> float:
    """The quantile with NaN sorted greatest (Spark's order), by numpy's definition:
    np.quantile itself where no NaN is present."""
    if np.isfinite(values).all():
        return float(np.quantile(values, q, method=method))
    ordered = np.sort(values)  # NaN last
    h = (len(ordered) - 1) * q
    lower, upper = int(np.floor(h)), min(int(np.floor(h)) + 1, len(ordered) - 1)
    if method == "lower":
        return float(ordered[lower])
    if method == "higher":
        return float(ordered[int(np.ceil(h))])
    if method == "nearest":
        return float(ordered[int(np.around(h))])
    if h % 1 == 0:  # a whole index: the value there, whatever its neighbour
        return float(ordered[int(h)])
    gamma = 0.5 if method == "midpoint" else h - lower
    a, b = ordered[lower], ordered[upper]
    if gamma >= 0.5:  # numpy interpolates from the upper side there
        return float(b - (b - a) * (1 - gamma))
    return float(a + (b - a) * gamma)


@settings(max_examples=300, deadline=None)
@given(column=columns(st.one_of(FLOAT, SMALL.map(float))),
       q=st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.25, 0.5, 1.0])),
       method=st.sampled_from(INTERPOLATIONS))
def test_quantile_matches_numpy_per_frame(column, q: float, method: str) -> None:
    values, valid, lo, hi = column
    got, has = ost.frame_quantile(values, valid, lo, hi, q, method)
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        window = values[a:b][valid[a:b]]
        assert has[i] == (len(window) > 0)
        if len(window):
            expected = spark_order_quantile(window, q, method)
            assert got[i] == pytest.approx(expected, rel=1e-12, abs=1e-12), (window, q)


@settings(max_examples=100, deadline=None)
@given(column=columns(st.one_of(FLOAT, st.just(float("nan")), st.just(float("inf")))),
       q=st.floats(0, 1), method=st.sampled_from(INTERPOLATIONS))
def test_quantile_with_nan_sorts_it_greatest(column, q: float, method: str) -> None:
    values, valid, lo, hi = column
    got, _has = ost.frame_quantile(values, valid, lo, hi, q, method)
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        window = values[a:b][valid[a:b]]
        if len(window):
            with np.errstate(invalid="ignore"):
                expected = spark_order_quantile(window, q, method)
            assert got[i] == pytest.approx(expected, rel=1e-12, abs=1e-12, nan_ok=True)


def test_quantile_examples_by_hand() -> None:
    values = np.array([4.0, 1.0, 3.0, 2.0, 10.0])
    valid = np.array([True, True, True, False, True])
    lo, hi = np.array([0, 0, 1, 3]), np.array([5, 2, 3, 4])
    for method, expected in [("linear", [3.5, 2.5, 2.0]), ("lower", [3.0, 1.0, 1.0]),
                             ("higher", [4.0, 4.0, 3.0]), ("nearest", [4.0, 1.0, 1.0]),
                             ("midpoint", [3.5, 2.5, 2.0])]:
        got, has = ost.frame_quantile(values, valid, lo, hi, 0.5, method)
        assert has.tolist() == [True, True, True, False]
        assert got[:3].tolist() == expected, method


@settings(max_examples=300, deadline=None)
@given(column=columns(st.one_of(SMALL.map(float), st.just(float("nan")))))
def test_count_distinct_matches_numpy_unique(column) -> None:
    values, valid, lo, hi = column
    ranks = np.unique(values, return_inverse=True, equal_nan=True)[1].astype(np.int64)
    got = ost.frame_count_distinct(ranks.reshape(-1), valid, lo, hi)
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        window = values[a:b][valid[a:b]]
        assert got[i] == len(np.unique(window, equal_nan=True))


@settings(max_examples=200, deadline=None)
@given(data=st.lists(st.integers(0, 2**20), max_size=60), bound=st.integers(-3, 2**21),
       frame=st.tuples(st.integers(0, 60), st.integers(0, 60)))
def test_wavelet_matrix_against_a_scan(data: list[int], bound: int,
                                       frame: tuple[int, int]) -> None:
    values = np.array(data, dtype=np.int64)
    matrix = ost.WaveletMatrix.build(values)
    lo = min(frame[0], len(data))
    hi = max(lo, min(frame[1], len(data)))
    below = matrix.count_below(np.array([lo]), np.array([hi]), np.array([bound]))
    assert below[0] == sum(1 for v in data[lo:hi] if v < bound)
    ordered = sorted(data[lo:hi])
    if ordered:
        ks = np.arange(len(ordered))
        got = matrix.kth_smallest(np.full(len(ks), lo), np.full(len(ks), hi), ks)
        assert got.tolist() == ordered


@settings(max_examples=300, deadline=None)
@given(column=columns(SMALL.map(float)), kind=st.sampled_from(["max_by", "min_by"]))
def test_extreme_by_takes_the_earliest_extreme_row(column, kind: str) -> None:
    by, valid, lo, hi = column
    ranks = np.unique(by, return_inverse=True)[1].astype(np.int64).reshape(-1)
    got = wa.frame_extreme_by(ranks, valid, lo, hi, largest=kind == "max_by")
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        best = None
        for p in range(a, b):  # literal: first row strictly better than the best so far
            if valid[p] and (best is None or (by[p] > by[best] if kind == "max_by"
                                              else by[p] < by[best])):
                best = p
        assert got.valid[i] == (best is not None)
        if best is not None:
            assert got.positions[i] == best


def literal_ewm(values: np.ndarray, valid: np.ndarray, times: np.ndarray, lo: int, hi: int,
                half_life: float) -> float | None:
    """The definition, row by row: weights 0.5 ** ((t_now - t_i) / half_life) over the
    frame's non-null rows, all scaled by 2 ** ((t_now - t_last) / half_life) (t_last:
    the last non-null row's time; the ratio is the same) so that they do not underflow."""
    num = den = 0.0
    kept = [i for i in range(lo, hi) if valid[i]]
    now = times[kept[-1]] if kept else times[hi - 1]
    for i in range(lo, hi):
        if valid[i]:
            w = 0.5 ** ((now - times[i]) / half_life)
            num += w * values[i]
            den += w
    return None if den == 0 else num / den


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.tuples(st.floats(-1e3, 1e3), st.booleans(), st.integers(0, 50)),
                     max_size=50),
       cuts=st.lists(st.booleans(), max_size=50),
       half_life=st.sampled_from([0.01, 0.5, 1.0, 3.0, 1e6]))
def test_ewm_mean_matches_the_literal_loop(data, cuts, half_life: float) -> None:
    n = len(data)
    values = np.array([d[0] for d in data], dtype=np.float64)
    valid = np.array([d[1] for d in data], dtype=bool)
    times = np.cumsum([d[2] for d in data]).astype(np.float64)
    lo = np.zeros(n, dtype=np.int64)  # running frames, restarting where cut
    for i in range(1, n):
        lo[i] = i if i < len(cuts) and cuts[i] else lo[i - 1]
    hi = np.arange(1, n + 1, dtype=np.int64)
    got, has = ost.frame_ewm_mean(values, valid, times, lo, hi, half_life)
    for i in range(n):
        expected = literal_ewm(values, valid, times, int(lo[i]), int(hi[i]), half_life)
        assert has[i] == (expected is not None)
        if expected is not None:
            assert got[i] == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_alive_items_are_listed_for_the_new_aggregations() -> None:
    """Windows whose items are alive over ranges of positions (stabbing: evictions not
    oldest first) list each position's items and run the frame kernels on the lists."""
    import pyarrow as pa
    from jobs import built_in_job

    from wisp.kernels import stabbing as sb
    from wisp.runtime.aggregates.alive import aggregate_alive

    # item i is alive at positions [qlo[i], qhi[i]): {0, 1}, {0, 2}, {2, 3}
    stab = sb.Stabbing(np.array([0, 0, 1, 2]), np.array([2, 1, 3, 3]), 3)
    group = pa.table({"v": pa.array([3.0, 1.0, None, 2.0]), "s": ["a", "b", "c", "d"]})
    ticks = np.arange(4)

    def run(fn: str, **extra: object) -> list[object]:
        job = built_in_job(fn, "v" if fn != "max_by" else "s", "float",
                           pa.string() if fn == "max_by" else pa.float64(), None, **extra)
        if fn == "count_distinct":
            job = built_in_job(fn, "v", "float", pa.int64(), None)
        return aggregate_alive(job, group, ticks, stab).to_pylist()

    assert run("median") == [2.0, 3.0, 2.0]
    assert run("count_distinct") == [2, 1, 1]
    assert run("max_by", by="v") == ["a", "a", "d"]
