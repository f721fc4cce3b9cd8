"""Keys as Spark groups them: every NaN one value (it is never equal to itself) and
`-0.0` as `0.0`; pyarrow's grouping and Python's equality keep them apart."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

Key = tuple[Any, ...]


def canonical(values: Key) -> Key:
    """A key as a dict key: every NaN one value and `-0.0` as `0.0`."""
    return tuple(("NaN",) if isinstance(v, float) and v != v
                 else 0.0 if isinstance(v, float) and v == 0 else v for v in values)


def normalized(keys: pa.Table) -> pa.Table:
    """Key columns with every float NaN one NaN and `-0.0` as `0.0`."""
    for i, column in enumerate(keys.columns):
        if not pa.types.is_floating(column.type):
            continue
        values = column.combine_chunks()
        data = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=float)
        data = np.where(np.isnan(data), math.nan, np.where(data == 0, 0.0, data))
        mask = values.is_null().to_numpy(zero_copy_only=False)
        keys = keys.set_column(i, keys.field(i), pa.array(data, mask=mask).cast(column.type))
    return keys
