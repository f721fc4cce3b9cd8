"""Hopping windows (and tumbling ones: `hop = size`) on the interval kernel:
`kernels.intervals.hopping` over each key's lifetimes.

Over interval events with `output="windows"`, the windows that begin at or after the
horizon (where only open-ended events remain) share one output row; the driver hands
the newest start and end of the whole input next to every row (`HORIZON_START`,
`HORIZON_END`) for it. Short key runs run as one when the aggregates never see absolute
times: each run is moved along the time axis into a slot of its own (`run_runs`).
With `output="changes"`, consecutive rows with equal results merge (`coalesce`).

Resumable (`resume`): once the newest start seen is `T`, a window `[w, w + size)` with
`w + size <= T` is final (a later event starts at or after `T`, so it cannot overlap
it). A step emits the windows that became final; the events it carries are those still
alive at the first window not final (`end > w`, open-ended ones always), so the state
is bounded by the events overlapping one window's reach, except open-ended and very
long events, carried as long as they live. With `output="changes"` the step also holds
back the last row (its windows may go on with the same result): the state keeps the
events of its last window, whose result is recomputed, and the row's start.

Streamable (`resumable.Streamable`, `output="windows"` only): told a horizon `H` (every
later event starts at or after it), a step also emits the windows ending at or before
`H`: a later event starts at or after their end, so it overlaps none of them (an
interval event belongs to the windows its lifetime overlaps; open-ended ones included).
The step's frontier `F = max(T, H)` then takes the place of `T` (the `newest` scalar is
the frontier), except that it stops short of windows no carried event can reach or
that the shared row stands for: `min(input horizon, newest end) + size - 1` (`frontier`;
beyond it every window is empty or begins at or after the input's horizon, and the
shared row must still begin at the first of those at `finish`). `wake` is the end of
the earliest window not emitted that a carried event lies in and that begins before
the input's horizon. With `output="changes"` the horizon is ignored (a row's validity
ends where the result changes, which later events decide) and `wake` is None.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import intervals as iv
from ...plan.intervals import HoppingWindows
from ..codecs.arrays import to_ticks, validity
from ..codecs.batches import same_as_previous
from .intervals import IntervalKernel, clamped
from .resumable import Horizon, KernelState, Scalar

HORIZON_START = "__wisp_newest_start"
HORIZON_END = "__wisp_newest_end"


@dataclass(frozen=True)
class HoppingKernel(IntervalKernel):
    """Hopping windows `[origin + k*hop, origin + k*hop + size)` over each key's
    lifetimes."""

    window: HoppingWindows

    def windows(self, group: pa.Table, start: iv.IntArray, end: iv.IntArray,
                runs: iv.IntArray | None) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        """The windows of one key's run (several runs share a table only in slots of
        their own: `run_runs`)."""
        assert runs is None
        return self.hopping(start, end, self.horizon(group))

    def hopping(self, start: iv.IntArray, end: iv.IntArray, horizon: int
                ) -> tuple[iv.Groups, iv.Rows, iv.IntArray]:
        """The groups and rows of the lifetimes `start`, `end` (one run), windows that
        begin at or after `horizon` sharing one row."""
        w = self.window
        time_weighted = any(job.definition.lifetimes or job.lifetimes
                            for job in self.aggregates)
        self.check_horizon(horizon)
        try:
            groups, rows = iv.hopping(
                start, end, w.size, w.hop, w.align, output=w.output, horizon=horizon,
                split_partial=time_weighted, gather=self.gather,
                per_window=any(job.lifetimes for job in self.aggregates))
        except OverflowError:  # a window index beyond 64 bits
            raise self.out_of_range() from None
        return groups, rows, np.zeros(len(rows.group), dtype=np.int64)

    def check_tick_range(self, start: iv.IntArray, end: iv.IntArray) -> None:
        """Hopping windows are computed in 64-bit ticks and window indices: the query
        fails, rather than a bound wrapping around to the far end, where the first
        window holding the earliest start begins below the first tick or a window's
        index (hops from `origin`) passes `MAX_WINDOW_INDEX` (integer time above
        `hop * 2^61`, with a hop of 1-3 ticks). `start` and `end` are as from
        `lifetimes`, which has failed the query on a lifetime reaching the last tick."""
        if not len(start):
            return
        w = self.window
        earliest = int(start.min()) - w.size  # Python ints: exact
        first = earliest - (earliest - w.origin) % w.hop + w.hop
        last = int(start.max())  # the latest tick of a lifetime
        finite = end != iv.END_OF_TIME
        if finite.any():
            last = max(last, int(end[finite].max()) - 1)
        if (first < np.iinfo(np.int64).min
                or (last - w.origin) // w.hop + 1 > iv.MAX_WINDOW_INDEX):
            raise self.out_of_range()

    def check_horizon(self, horizon: int) -> None:
        """The first window beginning at or after `horizon` has an index below
        `MAX_WINDOW_INDEX` (see `check_tick_range`)."""
        w = self.window
        if (horizon != iv.END_OF_TIME
                and -((w.origin - horizon) // w.hop) > iv.MAX_WINDOW_INDEX):
            raise self.out_of_range()

    def horizon(self, group: pa.Table) -> int:
        """Windows that begin at or after this instant hold only open-ended events: one
        tick after the newest start, or the newest finite end if later."""
        if HORIZON_START not in group.column_names:
            return int(iv.END_OF_TIME)
        first = group.slice(0, 1)
        newest = int(to_ticks(first.column(HORIZON_START).combine_chunks(),
                              self.time_kind)[0]) // self.unit + 1
        ends = first.column(HORIZON_END).combine_chunks()
        if validity(ends)[0]:
            newest = max(newest, int(to_ticks(ends, self.time_kind)[0]) // self.unit)
        return min(newest, int(iv.END_OF_TIME))  # one tick after the last one: none

    @property
    def keys_together(self) -> bool:
        """Whether several short key runs can run as one: with aggregates that never see
        absolute times (each run moved into a time slot of its own, a run with an
        open-ended event alone; rows of two slots never touch, so changes never merge
        across keys; a time-weighted mean sees only lengths, which the move keeps)."""
        return not any(job.definition.reads_times or job.lifetimes
                       for job in self.aggregates)

    def merged(self, results: list[pa.Array], rows: iv.Rows, key_rows: iv.IntArray
               ) -> tuple[list[pa.Array], iv.Rows, iv.IntArray]:
        """With `output="changes"`, each row merged into the one before it when it
        starts where that one ends, for the same key, with equal results."""
        if self.window.output != "changes":
            return results, rows, key_rows
        keep, stop, stop_known = coalesce(results, rows.start, rows.end, rows.end_known,
                                          key_rows)
        rows = iv.Rows(rows.group[keep], rows.start[keep], stop, stop_known, rows.time[keep])
        return [r.take(pa.array(keep)) for r in results], rows, key_rows[keep]

    def run_runs(self, table: pa.Table, runs: iv.IntArray) -> Iterator[pa.RecordBatch]:
        """Several whole key runs (`runs`: where each begins, then the length) as one:
        each run is moved along the time axis by a whole number of hops, into a slot of
        its own wider than its windows and its events' lifetimes, so that no window
        holds two keys' events. A run with an open-ended event (no slot holds it) runs
        alone, the runs between such runs together; with aggregates that see absolute
        times (not `keys_together`), each run alone."""
        if not self.keys_together:
            yield from super().run_runs(table, runs)
            return
        start, end = self.lifetimes(table)
        endless = np.maximum.reduceat((end == iv.END_OF_TIME).astype(np.int8),
                                      runs[:-1]) > 0
        changes = np.nonzero(np.diff(endless.astype(np.int8)))[0] + 1
        for first, stop in itertools.pairwise([0, *changes.tolist(), len(endless)]):
            a, b = int(runs[first]), int(runs[stop])
            part = runs[first:stop + 1] - a
            offsets = (None if endless[first]
                       else self.slot_offsets(start[a:b], end[a:b], part))
            if offsets is None:  # open-ended events, or slots that would leave the tick
                # range: one run at a time
                for c, d in itertools.pairwise(runs[first:stop + 1].tolist()):
                    out = self.run_group(table.slice(c, d - c))
                    if out.num_rows:
                        yield out
                continue
            out = self.run_slots(table.slice(a, b - a), part, offsets)
            if out.num_rows:
                yield out

    def bound(self, horizon: Horizon | None) -> int | None:
        """With `output="windows"`, the first tick a later event can start at under the
        promise that its time is at least `horizon` (date time: the first whole day);
        None without a horizon, or with "changes" (ignored: see the module)."""
        if self.window.output != "windows":
            return None
        return self.first_start(horizon)

    def frontier(self, before: int | None, newest: int, bound: int, end: iv.IntArray,
                 horizon: int) -> int:
        """How far windows are final under the promise that later events start at or
        after `bound` (given the newest start `newest`, the lifetimes' ends `end` and
        the input's `horizon`): a window ending at or before `max(newest, bound)`. Not
        past `min(horizon, newest end) + size - 1`: a window ending later begins at or
        after every end (empty) or at or after the horizon (the shared row's, which
        must begin at the first such window at `finish`); never before the frontier
        `before` of the previous step."""
        reach = min(horizon, int(end.max())) + self.window.size - 1
        frontier = max(newest, min(bound, reach))
        return clamped(frontier if before is None else max(before, frontier))

    def wake(self, state: KernelState) -> Horizon | None:
        """The end of the earliest window not emitted yet (from the first not final at
        the frontier on) that holds a carried event and begins before the input's
        horizon, in ticks of the time column: the smallest horizon at which a step
        emits it (`frontier` reaches it: it ends before the carried events' newest end
        plus `size`, and before the horizon plus `size`). None with `output="changes"`,
        or where no such window is left (only the shared row, at `finish`)."""
        if self.window.output != "windows" or state.rows.num_rows == 0:
            return None
        w = self.window
        start, end = self.lifetimes(state.rows)
        first = iv.grid_index(start, w.hop - w.size, w.origin, w.hop)  # ends after start
        before = state.scalars.get("newest")
        if before is not None:
            assert isinstance(before, int)
            first = np.maximum(first, (before - w.size - w.origin) // w.hop + 1)
        open_ended = end == iv.END_OF_TIME
        beyond = iv.grid_index(np.where(open_ended, start + 1, end), w.hop - 1, w.origin,
                               w.hop)  # the first window beginning at or after the end
        held = open_ended | (first < beyond)
        horizon = self.horizon(state.rows)
        if horizon != iv.END_OF_TIME:
            held &= first < -((w.origin - horizon) // w.hop)
        if not held.any():
            return None
        k = int(first[held].min())
        return (w.origin + k * w.hop + w.size) * self.unit

    def resume(self, table: pa.Table, scalars: dict[str, Scalar], final: bool,
               bound: int | None = None
               ) -> tuple[pa.RecordBatch, iv.IntArray, dict[str, Scalar]]:
        """The windows of the carried events and the new chunk, recomputed: window `k`
        (`[origin + k*hop, ... + size)`) is final once the newest start `T` reaches its
        end (under a stream's `bound`, the frontier `F` in its place: `frontier`; the
        scalar `newest` is then `F`); windows up to the one before `done` (the first not
        final at the previous step) were emitted. Starts are clipped up to the first
        window still to emit (which changes no window from there on: memberships and
        clipped lifetimes are the same; aggregates still see the real starts) and, in a
        step, ends down to `T + 1` (no final window reaches it), so that the windows an
        event spans before and after are not listed again at every step. A step with
        `output="windows"` emits the windows `done .. now - 1` (`now`: the first window
        not final) and carries the events alive at window `now`; with "changes", the
        rows over the windows `done - 1 .. now - 1` coalesce, the first one continuing
        the row held back (its start is `held`), the last one held back while it
        reaches window `now - 1`, and the events alive at window `now - 1` are
        carried."""
        w = self.window
        size, hop, origin = w.size, w.hop, w.origin
        changes = w.output == "changes"
        start, end = self.lifetimes(table)
        self.check_tick_range(start, end)
        before, newest = self.newest(start, scalars)
        if bound is not None and not final:
            newest = self.frontier(before, newest, bound, end, self.horizon(table))

        def first_open(t: int) -> int:  # the first window not final at `t`
            return (t - size - origin) // hop + 1

        def at(k: int) -> int:  # where window `k` begins
            return origin + k * hop

        done = None if before is None else first_open(before)
        now = None if final else first_open(newest)
        lower = None if done is None else at(done - 1 if changes else done)
        clipped = start if lower is None else np.maximum(start, clamped(lower))
        horizon = self.horizon(table)
        ends = end
        if not final:
            ends = np.minimum(end, clamped(newest + 1))
            horizon = min(horizon, clamped(newest + 1))
        groups, rows, _ = self.hopping(clipped, ends, horizon)
        self.check_bounds(rows)
        held: Scalar = None
        if changes:
            out, held = self.changes_from(table, start, end, groups, rows, scalars.get("held"),
                                          None if done is None else at(done - 1) + size,
                                          None if now is None else at(now) + size)
        else:
            mask = np.ones(len(rows.group), dtype=bool)
            if lower is not None:
                mask &= rows.start >= clamped(lower)
            if now is not None:
                mask &= rows.end_known & (rows.start < clamped(at(now)))
            out = self.emit(table, start, end, groups, self.subset(rows, mask),
                            np.zeros(int(mask.sum()), dtype=np.int64))
        carry = None if now is None else at(now - 1 if changes else now)
        keep = (np.zeros(0, np.int64) if carry is None
                else np.nonzero((end > clamped(carry)) | (end == iv.END_OF_TIME))[0]
                .astype(np.int64))
        return out, keep, {"newest": newest, "held": held}

    def changes_from(self, table: pa.Table, start: iv.IntArray, end: iv.IntArray,
                     groups: iv.Groups, rows: iv.Rows, held: Scalar, lo: int | None,
                     hi: int | None) -> tuple[pa.RecordBatch, Scalar]:
        """The rows of `output="changes"` valid within `[lo, hi)` (None: unbounded),
        coalesced; the first continues the row held back, whose start is `held` (None:
        none), where it begins at `lo`; the last is held back where it reaches `hi`.
        Returns the rows to emit and the start of the row held back now."""
        a, b, known = rows.start, rows.end, rows.end_known
        if lo is not None:
            a = np.maximum(a, clamped(lo))
        if hi is not None:
            b = np.where(known, np.minimum(b, clamped(hi)), clamped(hi))
            known = np.ones(len(b), dtype=bool)
        mask = ~known | (a < b)
        if not mask.any():
            return self.empty(), None
        trimmed = iv.Rows(rows.group[mask], a[mask], b[mask], known[mask], a[mask])
        zeros = np.zeros(len(trimmed.group), dtype=np.int64)
        results = self.results(table, start, end, groups, trimmed)
        keep, stop, stop_known = coalesce(results, trimmed.start, trimmed.end,
                                          trimmed.end_known, zeros)
        begin = trimmed.start[keep].copy()
        if held is not None and lo is not None and begin[0] == clamped(lo):
            assert isinstance(held, int)
            begin[0] = held
        holding: Scalar = None
        if hi is not None and stop_known[-1] and stop[-1] == clamped(hi):
            holding = int(begin[-1])
            keep, begin, stop, stop_known = keep[:-1], begin[:-1], stop[:-1], stop_known[:-1]
        if not len(keep):
            return self.empty(), holding
        out = iv.Rows(trimmed.group[keep], begin, stop, stop_known, begin)
        return self.batch(table, [r.take(pa.array(keep)) for r in results], out,
                          zeros[keep]), holding

    def slot_offsets(self, start: iv.IntArray, end: iv.IntArray, runs: iv.IntArray
                     ) -> iv.IntArray | None:
        """Per run, a shift (a multiple of the hop, so windows stay on their grid) that
        puts its lifetimes in `[P + align, P + align + hop + span)` (`span`: from the
        run's first start to its last end), where the slots `P` follow each other
        `span + 2*size + 4*hop` apart (rounded up to hops); None when the slots would
        leave 2^62 ticks."""
        w = self.window
        heads = start[runs[:-1]]
        tails = np.maximum.reduceat(end, runs[:-1]) - 1
        # in floats: the absolute value of the smallest 64-bit integer is not one
        spans = tails.astype(np.float64) - heads + 2.0 * w.size + 4.0 * w.hop
        extent = (float(np.abs(heads.astype(np.float64)).max()) + w.origin
                  + 4.0 * (w.size + w.hop) + float(spans.sum()))
        if extent >= 2.0**62:
            return None
        relative = heads - w.origin
        floored = relative - np.mod(relative, w.hop)
        slots = ((tails - heads) + 2 * w.size + 4 * w.hop - 1) // w.hop * w.hop
        places = np.concatenate([[0], np.cumsum(slots[:-1])]).astype(np.int64)
        offsets: iv.IntArray = places - floored
        return offsets

    def run_slots(self, group: pa.Table, runs: iv.IntArray, offsets: iv.IntArray
                  ) -> pa.RecordBatch:
        """The windows of several key runs (`runs`: where each begins, then the length),
        each moved by its offset (`slot_offsets`) into a slot of its own; no open-ended
        event, so no horizon applies (every window beginning at or after it would be
        empty). Each row is moved back to its run's own times."""
        start, end = self.lifetimes(group)
        self.check_tick_range(start, end)
        shift = np.repeat(offsets, np.diff(runs))
        start, end = start + shift, end + shift
        groups, rows, _ = self.hopping(start, end, int(iv.END_OF_TIME))
        self.check_bounds(rows)
        # a window of run j begins after the run's first event minus `size`, and before
        # the next run's first event minus `size`
        heads = start[runs[:-1]] - self.window.size
        run_of = np.searchsorted(heads, rows.start, side="right") - 1
        back = offsets[run_of]
        rows = iv.Rows(rows.group, rows.start - back, rows.end - back, rows.end_known,
                       rows.time - back)
        return self.emit(group, start, end, groups, rows, runs[:-1][run_of])


def coalesce(results: list[pa.Array], begin: iv.IntArray, stop: iv.IntArray,
             known: iv.BoolArray, key_rows: iv.IntArray
             ) -> tuple[iv.IntArray, iv.IntArray, iv.BoolArray]:
    """Merge each row into the previous one when it starts where that one ends, for the
    same key (`key_rows`), and every result is equal. Returns the kept rows and their
    (merged) ends."""
    m = len(begin)
    merge = np.zeros(m, dtype=bool)
    if m > 1:
        same = known[:-1] & (stop[:-1] == begin[1:]) & (key_rows[:-1] == key_rows[1:])
        for result in results:
            same &= equal_to_previous(result)
        merge[1:] = same
    keep = np.nonzero(~merge)[0]
    last = np.concatenate([keep[1:] - 1, [m - 1]]).astype(np.int64)
    return keep, stop[last], known[last]


def equal_to_previous(array: pa.Array) -> npt.NDArray[np.bool_]:
    """Rows 1..n-1 equal to the row before (null = null, NaN = NaN; lists item by item)."""
    if pa.types.is_list(array.type):
        items = array.to_pylist()
        return np.array([_same(a, b) for a, b in zip(items[1:], items[:-1], strict=True)],
                        dtype=bool)
    return same_as_previous(array)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return bool(a == b) and (a is None) == (b is None)
