"""Comparing two kernel results computed two ways (keys together and alone, streamed
and whole): every column equal, except float columns, which may differ by rounding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def assert_same_rows(mine: pa.Table, theirs: pa.Table, order: Sequence[str],
                     rel: float = 1e-12) -> None:
    """`mine` and `theirs` hold the same rows once sorted by `order`: non-float columns
    exactly, float columns to `rel` relative (and absolute) error, with nulls and NaN
    in the same places. Float sums are certified prefix differences where they can be
    (`kernels/certified.py`), whose last bits depend on what else the run holds."""
    assert mine.schema == theirs.schema
    assert mine.num_rows == theirs.num_rows
    keys = [(c, "ascending") for c in order]
    mine, theirs = mine.sort_by(keys), theirs.sort_by(keys)
    floats = [f.name for f in mine.schema if pa.types.is_floating(f.type)]
    exact = [n for n in mine.schema.names if n not in floats]
    assert mine.select(exact).equals(theirs.select(exact))
    for name in floats:
        a, b = mine.column(name), theirs.column(name)
        assert a.is_null().equals(b.is_null()), name
        x = a.to_numpy(zero_copy_only=False).astype(float)
        y = b.to_numpy(zero_copy_only=False).astype(float)
        np.testing.assert_allclose(x, y, rtol=rel, atol=rel, equal_nan=True, err_msg=name)
