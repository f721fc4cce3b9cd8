"""The property every resumable kernel must have: a key's rows cut anywhere, the state
serialised and reloaded at every cut, give exactly the outputs of one uncut run."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from wisp.runtime.resumable import KernelState, Resumable


def cut_run(kernel: Resumable, table: pa.Table, cuts: Sequence[int],
            reload: bool = True) -> list[pa.RecordBatch]:
    """`table` (one key's rows, sorted) fed to `kernel.step` in the pieces between `cuts`
    (positions, in any order; duplicates make empty pieces), the state through bytes at
    every cut when `reload`, then `finish`."""
    bounds = [0, *sorted(min(max(c, 0), table.num_rows) for c in cuts), table.num_rows]
    state: KernelState | None = None
    outputs = []
    for begin, stop in itertools.pairwise(bounds):
        out, state = kernel.step(state, table.slice(begin, stop - begin))
        outputs.append(out)
        if reload:
            state = KernelState.from_bytes(state.to_bytes())
    outputs.append(kernel.finish(state))
    return outputs


def rows(batches: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """The batches' rows as tuples, in a canonical order (outputs form a set)."""
    found = [tuple(row.values()) for b in batches for row in b.to_pylist()]
    return sorted(found, key=repr)


def assert_resumes(kernel: Resumable, table: pa.Table, cuts: Sequence[int]) -> None:
    """The outputs of `cut_run` equal those of one uncut run, value for value (NaN equal
    to NaN: compared through `repr`)."""
    whole = rows([kernel.run_group(table)])
    resumed = rows(cut_run(kernel, table, cuts))
    assert [repr(r) for r in resumed] == [repr(r) for r in whole]
