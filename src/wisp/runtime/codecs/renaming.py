"""Column names that cannot cross into a Python worker as they are.

PySpark's `mapInArrow` looks each input column up by its raw name, and Spark reads a
dot in such a name as a field of a struct and a backtick as quoting: a column named
`a.b` or `` a`b `` cannot be handed to a worker. The engine carries such columns under
stand-in names (`__wisp_in_0`, ...) and `Renamed` gives the kernel its batches under
the columns' own names again: the kernels never see the stand-ins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa

Kernel = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class Renamed:
    """`kernel` fed its batches with the columns named `names`, in order (the batches
    arrive under stand-in names)."""

    kernel: Kernel
    names: tuple[str, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        names = list(self.names)
        return self.kernel(batch.rename_columns(names) for batch in batches)
