"""Blocked prefix/suffix scans (kernels/blocked.py) against brute force, for any frames:
fixed width, variable width, empty, out of order, at the edges."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import frames as fr
from wisp.kernels.blocked import blocked_query
from wisp.kernels.sparse import (
    extreme_monoid,
    extreme_ufunc,
    moments_monoid,
    overlap_query,
    sum_monoid,
)


@st.composite
def frames(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 200))
    values = np.array(draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)),
                      dtype=np.int64)
    m = draw(st.integers(0, 60))
    lo = np.array(draw(st.lists(st.integers(0, n), min_size=m, max_size=m)), dtype=np.int64)
    widths = draw(st.lists(st.integers(0, n), min_size=m, max_size=m))
    hi = np.minimum(lo + np.array(widths, dtype=np.int64), n)
    return values, lo, hi


@settings(max_examples=200)
@given(data=frames())
def test_sums_and_extremes_match_brute_force(data: tuple[np.ndarray, ...]) -> None:
    values, lo, hi = data
    floats = values.astype(np.float64)  # small integers: float sums are exact
    (sums,) = blocked_query((floats,), lo, hi, sum_monoid())
    (maxima,) = blocked_query((values,), lo, hi, extreme_monoid(values.dtype, largest=True))
    (minima,) = blocked_query((floats,), lo, hi, extreme_monoid(floats.dtype, largest=False))
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        window = values[a:b]
        assert sums[i] == float(window.sum())
        assert maxima[i] == (window.max() if b > a else np.iinfo(np.int64).min)
        assert minima[i] == (float(window.min()) if b > a else np.inf)


@settings(max_examples=100)
@given(n=st.integers(1, 300), first=st.integers(-50, 5), width=st.integers(1, 60),
       partial=st.booleans())
def test_fixed_width_rows_frames(n: int, first: int, width: int, partial: bool) -> None:
    values = np.arange(n, dtype=np.float64) ** 2
    _, lo, hi = fr.rows_frames(n, first, first + width - 1, partial)
    (sums,) = blocked_query((values,), lo, hi, sum_monoid())
    expected = [values[a:b].sum() for a, b in zip(lo, hi, strict=True)]
    assert sums.tolist() == expected


@settings(max_examples=100)
@given(data=frames())
def test_moments_match_brute_force(data: tuple[np.ndarray, ...]) -> None:
    values, lo, hi = data
    x = values.astype(np.float64) / 7
    leaves = (np.ones(len(x)), x, np.zeros(len(x)))
    counts, means, m2 = blocked_query(leaves, lo, hi, moments_monoid())
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        assert counts[i] == b - a
        if b > a:
            window = x[a:b]
            assert abs(means[i] - window.mean()) <= 1e-9 * (1 + abs(window).max())
            assert abs(m2[i] - ((window - window.mean()) ** 2).sum()) <= \
                1e-8 * (1 + (window ** 2).sum())


def test_nan_stays_inside_its_frames() -> None:
    values = np.array([1.0, np.nan, 2.0, 3.0, 4.0, 5.0, 6.0])
    _, lo, hi = fr.rows_frames(7, -1, 0, True)
    (sums,) = blocked_query((values,), lo, hi, sum_monoid())
    assert np.isnan(sums[1]) and np.isnan(sums[2])
    assert sums.tolist()[3:] == [5.0, 7.0, 9.0, 11.0]
    assert sums[0] == 1.0


@settings(max_examples=200)
@given(data=frames(), nan_at=st.lists(st.integers(0, 199), max_size=5))
def test_overlapping_blocks_match_brute_force(data: tuple[np.ndarray, ...],
                                              nan_at: list[int]) -> None:
    """Two overlapping blocks per frame, for max and min: integers, and floats with NaN
    (max: NaN wins; fmin: a number wins over NaN), any frames including empty ones."""
    values, lo, hi = data
    floats = values.astype(np.float64)
    floats[[i for i in nan_at if i < len(floats)]] = np.nan
    cases = [(values, True), (values, False), (floats, True), (floats, False)]
    for data_values, largest in cases:
        ufunc, ident = extreme_ufunc(data_values.dtype, largest=largest)
        got = overlap_query(data_values, lo, hi, ufunc, ident)
        for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
            want = ufunc.reduce(data_values[a:b]) if b > a else ident
            assert got[i] == want or (np.isnan(got[i]) and np.isnan(want))
