"""Float sums and means over sliding frames, with values mixing 1e12 and 1e-3, against
exactly rounded window sums (math.fsum): a 1e12 outside a frame cannot swamp its 1e-3
values (plain prefix sums would). The kernels take prefix differences with every rounding
error recovered and keep a frame's result only when it is certified within 8 ulps, and
sum the other frames from their own values alone.

The bound checked: |kernel - exact| <= 1e-9 * |exact| (relative to the exact window
sum). The kernels reach far better: at most about w * eps * sum(|x|) over the frame
(what summing the frame's own values in float gives), and 8 ulps where certified; with
same-sign values in a frame that is below w * 2.2e-16 relative (w <= 64 here:
~1.4e-14)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from wisp.kernels import frames as fr
from wisp.kernels import window_agg as wa

MAGNITUDES = (1e12, 1e-3)


def mixed(seed: int, n: int, negative: bool) -> np.ndarray:
    """1e12 and 1e-3 magnitudes side by side (runs of each), jittered."""
    rng = np.random.default_rng(seed)
    big = rng.random(n) < 0.3
    runs = np.repeat(rng.random(n // 8 + 1) < 0.5, 8)[:n]
    scale = np.where(big & runs, MAGNITUDES[0], MAGNITUDES[1])
    values = scale * (1 + rng.random(n))
    if negative:
        values *= rng.choice([-1.0, 1.0], n)
    return values


def exact_sums(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[float]:
    return [math.fsum(values[a:b]) for a, b in zip(lo, hi, strict=True)]


def relative_errors(got: np.ndarray, values: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray) -> np.ndarray:
    exact = np.array(exact_sums(values, lo, hi))
    scale = np.array([math.fsum(np.abs(values[a:b])) for a, b in zip(lo, hi, strict=True)])
    return np.abs(got - exact) / np.maximum(np.abs(exact), 1e-300), scale


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), first=st.integers(-64, 0),
       partial=st.booleans())
def test_rows_sums_relative_error(seed: int, n: int, first: int, partial: bool) -> None:
    values = mixed(seed, n, negative=False)
    anchors, lo, hi = fr.rows_frames(n, first, 0, partial)
    valid = np.ones(n, dtype=bool)
    got = wa.frame_sum(values, valid, lo, hi).values
    errors, _ = relative_errors(got, values, lo, hi)
    assert len(anchors) == len(got)
    assert (errors <= 1e-9).all(), errors.max()
    assert (errors <= 64 * np.finfo(float).eps).all(), errors.max()


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), span=st.integers(0, 300),
       closed=st.sampled_from(["both", "left", "right", "neither"]))
def test_range_means_relative_error(seed: int, n: int, span: int, closed: str) -> None:
    values = mixed(seed, n, negative=False)
    times = np.sort(np.random.default_rng(seed + 1).integers(0, 1000, n))
    lo, hi = fr.range_frames(times, -span, 0, closed)
    valid = np.ones(n, dtype=bool)
    means = wa.frame_mean(values, valid, lo, hi)
    counts = hi - lo
    exact = np.array(exact_sums(values, lo, hi))
    nonempty = counts > 0
    assert (means.valid == nonempty).all()
    got = means.values[nonempty] * counts[nonempty]
    errors = np.abs(got - exact[nonempty]) / np.abs(exact[nonempty])
    assert (errors <= 1e-9).all(), errors.max()


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), first=st.integers(-40, 0))
def test_signed_sums_error_bounded_by_the_frame_alone(seed: int, n: int, first: int) -> None:
    """With signs mixed a frame's sum may cancel; the error stays within what summing the
    frame's own values allows: 1e-9 relative to the sum of |x| over the frame (the 1e12s
    of other frames do not count), and exact where the frame holds only 1e-3s."""
    values = mixed(seed, n, negative=True)
    _, lo, hi = fr.rows_frames(n, first, 0, True)
    got = wa.frame_sum(values, np.ones(n, dtype=bool), lo, hi).values
    exact = np.array(exact_sums(values, lo, hi))
    scale = np.array([math.fsum(np.abs(values[a:b])) for a, b in zip(lo, hi, strict=True)])
    assert (np.abs(got - exact) <= 1e-9 * scale).all()
    small = scale < 1.0  # only 1e-3 magnitudes in the frame
    assert (np.abs(got - exact)[small] <= 1e-9 * np.abs(exact[small]) + 1e-15).all()


def test_prefix_sums_would_fail_here() -> None:
    """The data of these tests defeat plain running-sum differences (the reason the
    kernels recover their rounding errors): a frame of 1e-3 values after a 1e12 loses
    most of its digits."""
    values = np.array([1e12, 1e-3, 2e-3, 3e-3])
    prefix = np.concatenate([[0.0], np.cumsum(values)])
    assert abs((prefix[4] - prefix[1]) - 6e-3) / 6e-3 > 1e-6
    got = wa.frame_sum(values, np.ones(4, dtype=bool), np.array([1]), np.array([4])).values
    assert abs(got[0] - 6e-3) <= 1e-18
