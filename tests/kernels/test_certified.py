"""Certified prefix-difference sums against exactly rounded frame sums (math.fsum)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels.certified import certified_sums
from wisp.kernels.window_agg import float_sums

EPS = np.finfo(float).eps
CERTIFIED_ERROR = 8 * EPS / 2  # 8u: the bound a certified frame meets, relative


def frames(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random frames over n values: empty ones, single ones, whole-run ones."""
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, n + 1, 3 * n + 3)
    hi = np.minimum(lo + rng.integers(0, n + 1, len(lo)), n)
    return lo.astype(np.int64), hi.astype(np.int64)


def exact(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.array([math.fsum(values[a:b]) for a, b in zip(lo, hi, strict=True)])


finite = st.one_of(st.floats(-1e12, 1e12, allow_nan=False),
                   st.sampled_from([1e12, -1e12, 1e-3, -1e-3, 0.0, -0.0, 5e-324, 1e300]))


@settings(max_examples=150)
@given(values=st.lists(finite, min_size=1, max_size=120), seed=st.integers(0, 2**16))
def test_certified_frames_are_within_eight_units_of_the_exact_sum(values: list[float],
                                                                   seed: int) -> None:
    x = np.array(values)
    lo, hi = frames(len(x), seed)
    found = certified_sums(x, lo, hi)
    assert found is not None  # finite values whose running sums stay finite
    sums, certified = found
    want = exact(x, lo, hi)
    error = np.abs(sums - want)
    assert (error[certified] <= CERTIFIED_ERROR * np.abs(want[certified])).all()
    assert certified[hi == lo].all() and (sums[hi == lo] == 0.0).all()


@settings(max_examples=150)
@given(values=st.lists(st.one_of(finite, st.sampled_from([math.inf, -math.inf, math.nan,
                                                            1.7e308, -1.7e308])),
                       min_size=1, max_size=120),
       seed=st.integers(0, 2**16))
def test_float_sums_are_as_good_as_adding_each_frame_alone(values: list[float],
                                                           seed: int) -> None:
    """Every frame, certified or summed the slow way: within what adding the frame's own
    values in float allows (w * eps * sum |x|); NaN, or both infinities, give NaN and
    one infinity gives itself. (Finite values whose sum overflows give an infinity or
    not depending on the order of the additions: not checked.)"""
    x = np.array(values)
    lo, hi = frames(len(x), seed)
    got = float_sums(x, lo, hi)
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        frame = x[a:b]
        infinities = set(frame[np.isinf(frame)].tolist())
        with np.errstate(over="ignore"):  # an infinite magnitude is skipped below
            magnitude = float(np.sum(np.abs(frame[np.isfinite(frame)])))
        if np.isnan(frame).any() or len(infinities) == 2:
            assert math.isnan(got[i]), (i, frame.tolist())
        elif not math.isfinite(magnitude):
            continue  # finite values that may overflow: the outcome depends on order
        elif infinities:
            assert got[i] == infinities.pop(), (i, frame.tolist())
        else:
            bound = len(frame) * EPS * magnitude * (1 + 1e-12)
            assert abs(got[i] - math.fsum(frame)) <= bound, (i, frame.tolist())


def test_a_frame_after_a_huge_value_keeps_its_digits() -> None:
    """The case that defeats plain running sums: 1e-3 values after a 1e12."""
    x = np.array([1e12, 1e-3, 2e-3, 3e-3])
    sums, certified = certified_sums(x, np.array([1]), np.array([4]))
    assert certified[0]
    assert abs(sums[0] - math.fsum([1e-3, 2e-3, 3e-3])) <= CERTIFIED_ERROR * 6e-3


def test_cancelling_frames_are_left_to_the_slow_path() -> None:
    x = np.array([0.1, 0.2, -0.3, 1e-17])
    sums, certified = certified_sums(x, np.array([0, 0]), np.array([3, 2]))
    assert not certified[0]  # 0.1 + 0.2 - 0.3: (near) nothing left to certify against
    assert certified[1] and sums[1] == 0.1 + 0.2
    assert float_sums(x, np.array([0]), np.array([3]))[0] == (0.1 + 0.2) - 0.3


def test_non_finite_values_and_reversed_frames() -> None:
    lo, hi = np.array([0, 2]), np.array([2, 1])
    assert certified_sums(np.array([1.0, math.nan, 2.0]), lo, hi) is None
    assert certified_sums(np.array([1.0, math.inf, 2.0]), lo, hi) is None
    assert certified_sums(np.array([1.7e308, 1.7e308]), np.array([0]), np.array([1])) is None
    assert certified_sums(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)) is None
    sums, certified = certified_sums(np.array([1.0, 2.0, 4.0]), lo, hi)
    assert certified.tolist() == [True, False] and sums[0] == 3.0
    assert float_sums(np.array([1.0, 2.0, 4.0]), lo, hi).tolist() == [3.0, 0.0]


def test_a_difference_that_overflows_is_not_certified() -> None:
    """Finite running sums whose difference overflows: the frame's sum (3.4e308) is
    left to the slow path, which gives what adding its values gives (inf)."""
    x = np.array([-1.7e308, 1.7e308, 1.7e308])
    sums, certified = certified_sums(x, np.array([1, 0]), np.array([3, 2]))
    assert certified.tolist() == [False, True] and sums[1] == 0.0
    assert float_sums(x, np.array([1]), np.array([3]))[0] == math.inf
