"""Float sums over many frames `[lo, hi)` at once by prefix differences made exact
enough to trust, with a per-frame certificate: O(n + m) whatever the frames' widths.

Plain running sums lose a frame's digits to whatever was added before it (a frame of
1e-3 values after a 1e12 keeps almost none). Here the running sum `s` is taken as usual,
then the exact rounding error of each of its additions is recovered (Knuth's TwoSum,
vectorised: `s[j-1] + x[j] = s[j] + e[j]` exactly), so that the exact prefix sum is
`S[k] = s[k] + sum(e[:k+1])`. The errors are small and are summed in float too; what
that second sum can lose is bounded by `u * k * M` (`u` the unit roundoff, `M` the
largest partial error sum). A frame's sum is then

    r = fl(fl(s[hi] - s[lo]) + fl(E[hi] - E[lo]))

and its error is at most `u * (|d| + 2 (n + 1) M + |r|)`, `d` being the first
difference. A frame is *certified* when that bound is at most `8u |r|` (about 9e-16
relative): its sum is then as good as a correctly rounded one to a few units in the
last place, far inside what adding its own values in order gives. Frames whose sum
cancels to (near) nothing or overflows, and every frame of a sequence holding an
infinity, a NaN or a running sum that overflows, are not certified; the caller sums
those the slow way.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

_TRUSTED = 7.0
"""A frame is certified when `|d| + 2 (n + 1) M <= 7 |r|`: with the final rounding,
its error is below `8u |r|` (the comparison's own rounding is covered by the margin)."""


def certified_sums(values: FloatArray, lo: IntArray, hi: IntArray
                   ) -> tuple[FloatArray, npt.NDArray[np.bool_]] | None:
    """The sums of `values[lo[i]:hi[i]]` and which of them are certified (error below
    `8u` relative). Empty frames (`hi == lo`) are certified zeros; reversed ones
    (`hi < lo`) never are. None when no frame can be: `values` hold an infinity or a
    NaN, a running sum overflows, or the running sum is not the sequential one that
    the error recovery assumes."""
    n = len(values)
    if n == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        running = np.cumsum(values)
    before = np.empty(n)
    before[0] = 0.0
    before[1:] = running[:-1]
    with np.errstate(over="ignore", invalid="ignore"):
        if not np.array_equal(before + values, running):
            return None  # not one rounded addition per step (or non-finite values)
        virtual = running - before
        errors = (before - (running - virtual)) + (values - virtual)
        error_sums = np.cumsum(errors)
    if not (np.isfinite(running[-1]) and np.isfinite(error_sums[-1])):
        return None  # a non-finite running sum stays non-finite to the end
    largest = float(max(error_sums.max(), -error_sums.min()))
    prefix = np.concatenate([np.zeros(1), running])
    error_prefix = np.concatenate([np.zeros(1), error_sums])
    with np.errstate(over="ignore", invalid="ignore"):
        first = prefix[hi] - prefix[lo]
        sums = first + (error_prefix[hi] - error_prefix[lo])
        slack = 2.0 * (n + 1) * largest
        # a difference that overflows is never certified (inf <= inf would hold)
        certified = (np.abs(first) + slack <= _TRUSTED * np.abs(sums)) & np.isfinite(sums)
    empty = hi == lo
    if empty.any():
        sums[empty] = 0.0
        certified |= empty
    certified &= hi >= lo
    return sums, certified
