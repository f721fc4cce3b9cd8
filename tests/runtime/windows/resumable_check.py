"""The property every resumable kernel must have: a key's rows cut anywhere, the state
serialised and reloaded at every cut, give exactly the outputs of one uncut run; and for
a kernel a stream drives (`Streamable`), the same under horizons, with every row final
at a horizon emitted by then (`stream_run`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

from wisp.runtime.windows.resumable import Horizon, KernelState, Resumable, Streamable


def cut_run(kernel: Resumable, table: pa.Table, cuts: Sequence[int],
            reload: bool = True, each: Callable[[KernelState], None] | None = None
            ) -> list[pa.RecordBatch]:
    """`table` (one key's rows, sorted) fed to `kernel.step` in the pieces between `cuts`
    (positions, in any order; duplicates make empty pieces), the state through bytes at
    every cut when `reload`, then `finish`. `each` is shown the state after every piece
    (a test's check of what the state holds, on the same run)."""
    bounds = [0, *sorted(min(max(c, 0), table.num_rows) for c in cuts), table.num_rows]
    state: KernelState | None = None
    outputs = []
    for begin, stop in itertools.pairwise(bounds):
        out, state = kernel.step(state, table.slice(begin, stop - begin))
        outputs.append(out)
        if reload:
            state = KernelState.from_bytes(state.to_bytes())
        if each is not None:
            each(state)
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


def stream_run(kernel: Streamable, table: pa.Table, time: str, cuts: Sequence[int],
               slack: Sequence[float], is_final: Callable[[dict[str, Any], Horizon], bool]
               ) -> list[pa.RecordBatch]:
    """`table` (one key's rows, sorted by time) fed as a stream would: the pieces
    between `cuts`, each step told a horizon (every later row has time >= it) placed by
    `slack` (0: the piece's newest time, 1: the next piece's first time, between: in
    between; integer time rounds down), then a step with no rows at the horizon
    `wake` asks for, the state through bytes at every step, then `finish`.

    Checked on the way: after each step, every output of the uncut run that `is_final`
    at that horizon has been emitted (a stream must not hold back a final row), and no
    row is emitted twice. Returns the outputs, whose rows must equal the uncut run's."""
    whole = rows([b for b in _as_batches(kernel.run_group(table))])
    times = table.column(time).to_pylist()
    bounds = [0, *sorted(min(max(c, 0), table.num_rows) for c in cuts), table.num_rows]
    state: KernelState | None = None
    outputs: list[pa.RecordBatch] = []
    for i, (begin, stop) in enumerate(itertools.pairwise(bounds)):
        newest = times[stop - 1] if stop > 0 else None
        following = times[stop] if stop < len(times) else None
        horizon = _between(newest, following, slack[i % len(slack)] if slack else 0.0)
        out, state = kernel.step(state, table.slice(begin, stop - begin), horizon)
        outputs.append(out)
        state = KernelState.from_bytes(state.to_bytes())
        if horizon is not None:
            _assert_final_emitted(whole, outputs, horizon, is_final)
        wake = kernel.wake(state)
        if wake is not None and (following is None or wake <= following):
            out, state = kernel.step(state, table.slice(stop, 0), wake)
            assert out.num_rows, f"wake {wake!r} emitted nothing"
            outputs.append(out)
            state = KernelState.from_bytes(state.to_bytes())
    outputs.append(kernel.finish(state))
    emitted = rows(outputs)
    assert len(emitted) == len(whole), "a row emitted twice, or lost"
    return outputs


def _as_batches(found: pa.RecordBatch | Iterable[pa.RecordBatch]) -> list[pa.RecordBatch]:
    return [found] if isinstance(found, pa.RecordBatch) else list(found)


def _between(newest: Any, following: Any, slack: float) -> Horizon | None:
    if newest is None:
        return following if slack > 0 else None
    if following is None:
        following = newest + 10  # nothing follows: any later horizon keeps the promise
    value = newest + (following - newest) * slack
    return math.floor(value) if isinstance(newest, int) else float(value)


def _assert_final_emitted(whole: list[tuple[Any, ...]], outputs: Sequence[pa.RecordBatch],
                          horizon: Horizon,
                          is_final: Callable[[dict[str, Any], Horizon], bool]) -> None:
    emitted = {repr(r) for r in rows(outputs)}
    names = outputs[0].schema.names
    for row in whole:
        record = dict(zip(names, row, strict=True))
        if is_final(record, horizon):
            assert repr(row) in emitted, f"final at horizon {horizon!r}, not emitted: {row}"


@dataclass(frozen=True)
class LeastWake:
    """A kernel whose every `wake` is checked to be the least horizon that emits: a step
    with no rows at it emits a row, one at the horizon just before (a tick, or the next
    float down) emits none."""

    kernel: Any

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.kernel.keys)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        out: tuple[pa.RecordBatch, KernelState] = self.kernel.step(state, chunk, horizon)
        return out

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        out: pa.RecordBatch = self.kernel.finish(state)
        return out

    def run_group(self, group: pa.Table, runs: Any = None) -> pa.RecordBatch:
        out: pa.RecordBatch = self.kernel.run_group(group, runs)
        return out

    def wake(self, state: KernelState) -> Horizon | None:
        found: Horizon | None = self.kernel.wake(state)
        if found is not None:
            none = state.rows.slice(0, 0)
            before = (found - 1 if isinstance(found, int)
                      else float(np.nextafter(found, -np.inf)))
            assert self.kernel.step(state, none, before)[0].num_rows == 0, (found, before)
            assert self.kernel.step(state, none, found)[0].num_rows > 0, found
        return found


slack_st = st.lists(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)),
                    min_size=1, max_size=6)
"""Where each piece's horizon falls between its newest time and the next piece's
first (`stream_run`'s `slack`)."""
