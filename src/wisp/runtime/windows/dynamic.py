"""The executor side of dynamic windows (`engine/dynamic.py` builds the Spark plan): the
kernel takes each key's run of the union of anchor rows and events (`KIND` tells them
apart), splits anchors from events and finds every window's `[lo, hi)` by binary search
in the sorted event times; clock ticks are generated here from the key's span. Obsolete
violations travel as a message column (`VIOLATION`) that the driver's `raise_error`
filter turns into a failed query. Short key runs go several at a time through
`run_group`; a long run goes through `step` in pieces, carrying the events windows can
still reach and the anchors whose windows are still open (`AnchorKernel`, `ClockKernel`), or, for
windows open for long, their partial states (`runtime.aggregates.window_states`). On a stream
the same steps run with a horizon (`resumable.Streamable`): an anchor's window `[start,
end]` is emitted once no later row can join it, and clock ticks fire as the watermark
passes them.
"""

from __future__ import annotations

import datetime as _dt
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...errors import WispInputError
from ...kernels import dynamic as dk
from ...kernels.frames import shifted
from ...kernels.runs import offsets, one_run, owners, run_index
from ...plan.dynamic import ClockTicks
from ...spec.limits import too_many_ticks
from ..aggregates.aggregate import AggregateJob, aggregate
from ..aggregates.partials import Layout
from ..aggregates.window_states import GROUP, WindowStates, holds
from ..codecs.arrays import DAY, from_ticks, ticks_or_zero, to_ticks, validity
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, Scalar, pending, resumed

KIND, TIME, START, END, OBSOLETE = ("__wisp_kind", "__wisp_time", "__wisp_start",
                                    "__wisp_end", "__wisp_obsolete")
VIOLATION = "__wisp_violation"
DATA_ERROR = "WispError: "
CHUNK = 65_536  # anchors per output batch
FOLD_WORK = 8
"""Events are folded into waiting windows' states only while that costs at most this
many adds or merges per event (`DynamicKernel.fold`)."""
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class BoundJob:
    """A bound on the executor: "none", "offset" (anchor time + offset) or "column"
    (the union's column `column`)."""

    kind: str
    offset: int | float
    column: str


@dataclass(frozen=True)
class DynamicKernel(ABC):
    """The executor side of dynamic windows, the part anchors from a table
    (`AnchorKernel`) and clock ticks (`ClockKernel`) share: picklable, no Spark objects.
    `engine/dynamic.py` builds one or the other (`windows_kernel`).

    Resumable (`step`, `finish`, as `resumable.Resumable`, except that `run_group`
    yields batches): a key's rows arrive sorted by time, then kind (an anchor before
    the events of its time), so once a row of time `T` has arrived every event before
    `T` is known, and an anchor's window is final when its end is known and before `T`.
    `step` emits those windows and carries what later windows can still need (see each
    kind).

    Streamable (`resumable.Streamable`): told a horizon `H` (every later row, anchor or
    event, has time >= H; a stream's watermark `W` gives `H = W + 1` tick), a step also
    emits each window that no later event can join: one closed on the right (`closed`
    "both" or "right") once its end is before `H` (`W >= end`), one open on the right
    once its end is at or before `H`; a window without an end never (`final`). `wake` is
    the smallest horizon at which a step without rows emits a window."""

    keys: tuple[str, ...]
    time_kind: str
    time_scale: int
    closed: str
    start: BoundJob
    end: BoundJob
    obsolete: BoundJob
    check: bool
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema

    chunk_rows: int = CHUNK_ROWS
    raises: bool = False
    """A stream's kernel: an obsolete violation raises a `WispInputError` in the worker
    when its anchor arrives (no `VIOLATION` column in `schema`)."""
    order: tuple[str, ...] = ()
    """The events' tie-break columns (window order after time), for the partial states
    of aggregations that pick a row (`first`, `last`, `max_by`, `min_by`)."""

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Short key runs several at a time (`run_group`), long runs in pieces of about
        `chunk_rows` rows through `step`, then `finish` (`resumable.resumed`)."""
        return resumed(self, batches, self.chunk_rows)

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The windows final once the key's rows so far are known and, told a `horizon`
        (a stream: every later row, anchor or event, has time >= horizon), those final
        under that promise too; the state for the rows that follow (see the class)."""
        if chunk.num_rows == 0 and (horizon is None or state is None
                                    or state.rows.num_rows == 0):
            return self.empty(), state if state is not None else KernelState(chunk)
        table = pending(state, chunk)
        scalars = dict(state.scalars) if state is not None else {}
        if chunk.num_rows:
            newest = to_ticks(chunk.column(TIME).slice(chunk.num_rows - 1)
                              .combine_chunks(), self.time_kind)
        else:
            newest = self.limit(table, self.idle_newest(scalars, horizon))
        return self.advance(table, scalars, newest, state, horizon)

    def limit(self, table: pa.Table, value: Any) -> npt.NDArray[Any]:
        """`value` as a one-element array of the ticks of `table`'s time column."""
        dtype = to_ticks(table.column(TIME).slice(0, 0).combine_chunks(),
                         self.time_kind).dtype
        return np.array([value], dtype=dtype)

    def final(self, ends: npt.NDArray[Any], end_known: npt.NDArray[np.bool_],
              horizon: Horizon) -> npt.NDArray[np.bool_]:
        """Which windows no row at or after `horizon` can join: a window closed on the
        right once its end is before the horizon, an open one once its end is at or
        before it; a window without an end (the end of time) never."""
        if self.closed in ("both", "right"):
            return end_known & (ends < horizon)
        return end_known & (ends <= horizon)

    @abstractmethod
    def idle_newest(self, scalars: dict[str, Scalar], horizon: Horizon | None) -> Any:
        """The newest time a step without rows (told a `horizon`) goes by."""

    @abstractmethod
    def advance(self, table: pa.Table, scalars: dict[str, Scalar], newest: npt.NDArray[Any],
                state: KernelState | None, horizon: Horizon | None
                ) -> tuple[pa.RecordBatch, KernelState]:
        """`step` once the carried rows and the chunk's are one `table` (`newest`: the
        newest time seen): the windows final, and the state for the rows that follow."""

    def wake(self, state: KernelState) -> Horizon | None:
        """The smallest horizon at which a step without rows emits a window (a stream's
        timer; `next_wake`); None when nothing is carried."""
        if state.rows.num_rows == 0:
            return None
        return self.next_wake(state)

    @abstractmethod
    def next_wake(self, state: KernelState) -> Horizon | None:
        """`wake` of a state that carries rows."""

    @staticmethod
    def past(value: Any, closed: bool) -> Horizon:
        """The smallest horizon that passes `value`: beyond it when `closed` (one tick,
        or the next float), at it otherwise."""
        if isinstance(value, (float, np.floating)):
            return float(np.nextafter(value, np.inf)) if closed else float(value)
        return int(value) + 1 if closed else int(value)

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The windows still open at the end of the key's rows (`last_windows`)."""
        if state is None or not state.scalars:
            return self.empty()
        return self.last_windows(state)

    @abstractmethod
    def last_windows(self, state: KernelState) -> pa.RecordBatch:
        """`finish` of a state a step left."""

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def run_group(self, group: pa.Table, starts: IntArray | None = None
                  ) -> Iterator[pa.RecordBatch]:
        """The windows of the key runs in `group` (`starts`: where each begins, then the
        length; one run by default), each anchor searching its own key's events."""
        runs = one_run(group.num_rows) if starts is None else starts
        yield from self.run_windows(group, runs, run_index(runs))

    @abstractmethod
    def run_windows(self, group: pa.Table, runs: IntArray, run_of: IntArray
                    ) -> Iterator[pa.RecordBatch]:
        """`run_group`, given each row's run (`run_of`)."""

    def event_bounds(self, events: pa.Table, event_runs: IntArray, runs: IntArray
                     ) -> tuple[npt.NDArray[Any], IntArray]:
        """The events' ticks, and where each run's events begin among the events, then
        their number."""
        ticks = to_ticks(events.column(TIME).combine_chunks(), self.time_kind)
        bounds = np.searchsorted(event_runs, np.arange(len(runs)), side="left").astype(
            np.int64)
        return ticks, bounds

    def bound(self, job: BoundJob, anchors: pa.Table | None,
              anchor_ticks: npt.NDArray[Any]) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        known = np.ones(len(anchor_ticks), dtype=bool)
        if job.kind == "none":
            return anchor_ticks, known
        if job.kind == "offset":
            return shifted(anchor_ticks, job.offset), known
        assert anchors is not None
        column = anchors.column(job.column).combine_chunks()
        return ticks_or_zero(column, self.time_kind), validity(column)

    def windows(self, group: pa.Table, runs: IntArray, events: pa.Table,
                ticks: npt.NDArray[Any], bounds: IntArray, anchor_runs: IntArray,
                anchor_ticks: npt.NDArray[Any], starts: npt.NDArray[Any],
                start_known: npt.NDArray[np.bool_], ends: npt.NDArray[Any],
                end_known: npt.NDArray[np.bool_], messages: list[str | None],
                results: list[pa.Array] | None = None) -> pa.RecordBatch:
        """Output rows of the anchors' windows; `results`, when given, their
        aggregations (from partial states) in place of those of their events."""
        m = len(anchor_ticks)
        key_rows = pa.array(runs[anchor_runs])
        columns: list[pa.Array] = [group.column(k).take(key_rows).combine_chunks()
                                   for k in self.keys]
        columns.append(from_ticks(starts, start_known, self.time_kind, self.time_scale))
        columns.append(from_ticks(ends, end_known, self.time_kind, self.time_scale))
        columns.append(from_ticks(anchor_ticks, np.ones(m, dtype=bool), self.time_kind,
                                  self.time_scale))
        if results is None:
            lo, hi = dk.window_frames(ticks, starts, start_known, ends, end_known,
                                      self.closed, bounds, anchor_runs)
            results = [aggregate(job, events, ticks, lo, hi) for job in self.aggregates]
        columns += results
        if self.check and not self.raises:
            columns.append(pa.array(messages, pa.string()))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


@dataclass(frozen=True)
class AnchorKernel(DynamicKernel):
    """Dynamic windows opened by the anchor rows of another table (`KIND` 0 in the
    union; events are `KIND` 1).

    The state holds

    - the anchors whose windows are not final yet (an anchor with a null end, "the end
      of time", waits for `finish`);
    - the events a window may still reach: from the earliest start of those anchors
      (all events while one of them has a null start), and no earlier than a later
      anchor's window may start: the newest time seen plus the `start` offset (the
      time itself without a `start`), or the largest `obsolete` so far, whichever is
      later. With a `start` read from a column and no `obsolete` bound, nothing limits
      later windows, so every event of the key is carried: the one case where memory
      grows with the key's history. An anchor that breaks the obsolete promise makes
      the query fail (`VIOLATION`), and its own aggregates may then miss dropped events;
    - where every aggregation has a partial state (`folds`), the waiting windows'
      events that no later anchor can reach are folded into those windows' partial
      states (`KernelState.partials`, one row per waiting anchor, `fold`) once at least
      `chunk_rows` of them have gathered, so a window that stays open for long (to the
      end of time, or far ahead) holds a few values, not its rows; its row is then
      its state merged with its events still carried (`held_results`). Folding is
      skipped (rows carried, as above) where the states would cost more than the rows
      they replace (`FOLD_WORK`). Float sums and means are then added in another order
      than over rows, within a few units in the last place;
    - scalars: the previous anchor's obsolete, the largest obsolete so far, and the
      first violation found (reported on its anchor's row when that row is emitted).

    On a stream, later anchors' windows start no earlier than the horizon `H` plus the
    `start` offset (or the obsolete floor), so the carried events are trimmed from
    there; `wake` is the smallest horizon that makes a waiting anchor's window final.
    With `raises` (a stream's kernel), a broken obsolete promise raises a
    `WispInputError` in the step that receives its anchor, with the batch query's
    message, instead of travelling as a column."""

    @property
    def folds(self) -> bool:
        """Whether waiting anchors' windows may be carried as partial states instead of
        their rows (`fold`): every aggregation has a partial state
        (`window_states.holds`)."""
        return holds(self.aggregates)

    def states(self, table: pa.Table) -> WindowStates:
        ticks = pa.float64() if self.time_kind == "float" else pa.int64()
        return WindowStates(self.aggregates, Layout(table.schema, ticks, self.order))

    def idle_newest(self, scalars: dict[str, Scalar], horizon: Horizon | None) -> Any:
        return horizon

    def advance(self, table: pa.Table, scalars: dict[str, Scalar], newest: npt.NDArray[Any],
                state: KernelState | None, horizon: Horizon | None
                ) -> tuple[pa.RecordBatch, KernelState]:
        return self.anchor_step(table, scalars, newest, state, horizon)

    def next_wake(self, state: KernelState) -> Horizon | None:
        """The earliest end of a waiting anchor's window (one tick past it, or the next
        float, for a window closed on the right); None when no anchor waits with an
        end."""
        kinds = np.asarray(state.rows.column(KIND).to_numpy(zero_copy_only=False))
        anchors = state.rows.filter(pa.array(kinds != 1))
        if anchors.num_rows == 0:
            return None
        ticks = to_ticks(anchors.column(TIME).combine_chunks(), self.time_kind)
        ends, known = self.bound(self.end, anchors, ticks)
        if not known.any():
            return None
        return self.past(ends[known].min(), self.closed in ("both", "right"))

    def last_windows(self, state: KernelState) -> pa.RecordBatch:
        return self.anchor_step(state.rows, dict(state.scalars), None, state)[0]

    def anchor_step(self, table: pa.Table, scalars: dict[str, Scalar],
                    newest: npt.NDArray[Any] | None, state: KernelState | None,
                    horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Anchors from another table: the windows final before `newest` (all of them at
        the end, `newest` None; on a stream, those `final` at the `horizon`), and the
        anchors and events still needed."""
        kinds = np.asarray(table.column(KIND).to_numpy(zero_copy_only=False))
        is_event = kinds == 1
        events = table.filter(pa.array(is_event))
        anchors = table.filter(pa.array(~is_event))
        ticks = to_ticks(events.column(TIME).combine_chunks(), self.time_kind)
        anchor_ticks = to_ticks(anchors.column(TIME).combine_chunks(), self.time_kind)
        m = anchors.num_rows
        old = 0  # anchors carried in the state: checked when they arrived
        if state is not None and state.rows.num_rows:
            old = int(np.count_nonzero(np.asarray(
                state.rows.column(KIND).to_numpy(zero_copy_only=False)) != 1))
        starts_, start_known = self.bound(self.start, anchors, anchor_ticks)
        ends, end_known = self.bound(self.end, anchors, anchor_ticks)
        messages: list[str | None] = [None] * m
        at = scalars.get("violation_at")
        if isinstance(at, int):
            messages[at] = str(scalars["message"])
        if self.obsolete.kind != "none" and m > old:
            obsolete, obsolete_known = self.bound(self.obsolete, anchors, anchor_ticks)
            if self.check and not scalars.get("violated"):
                found = self.first_violation(scalars, starts_[old:], start_known[old:],
                                             obsolete[old:], obsolete_known[old:])
                if found is not None:
                    messages[old + found.index] = self.message(
                        found, anchor_ticks[old + found.index], table.slice(0, 1))
                    scalars["violated"] = True
                    if self.raises:
                        raise WispInputError(str(messages[old + found.index])
                                             .removeprefix(DATA_ERROR))
            scalars["previous"] = obsolete[-1].item()
            scalars["previous_known"] = bool(obsolete_known[-1])
            known = obsolete[old:][obsolete_known[old:]]
            if len(known):
                floor = scalars.get("floor")
                top = known.max().item()
                scalars["floor"] = top if floor is None else max(floor, top)
        if newest is None:
            final = np.ones(m, dtype=bool)
        elif horizon is not None:
            final = self.final(ends, end_known, horizon)
            newest = np.maximum(newest, self.limit(table, horizon))
        else:
            final = end_known & (ends < newest[0])
        held = None if state is None else state.partials
        with_state = np.zeros(m, dtype=bool)
        if held is not None:
            with_state[held.column(GROUP).to_numpy()] = True

        def emitted(chosen: npt.NDArray[np.bool_], folded: bool) -> pa.RecordBatch:
            """The windows of the `chosen` anchors, those carried as states (`folded`:
            their states merged with their events still carried) or not."""
            frames = (starts_[chosen], start_known[chosen], ends[chosen], end_known[chosen])
            results = None
            if folded:
                assert held is not None
                results = self.held_results(events, ticks, held, np.flatnonzero(chosen),
                                            *frames)
            return self.windows(table, one_run(table.num_rows), events, ticks,
                                one_run(len(ticks)), np.zeros(int(chosen.sum()), np.int64),
                                anchor_ticks[chosen], *frames,
                                [msg for msg, f in zip(messages, chosen, strict=True) if f],
                                results)

        parts = [emitted(chosen, folded) for chosen, folded in
                 ((final & ~with_state, False), (final & with_state, True)) if chosen.any()]
        out = parts[0] if len(parts) == 1 else (
            self.empty() if not parts else
            pa.Table.from_batches(parts).combine_chunks().to_batches()[0])
        if newest is None:
            return out, KernelState(table.slice(0, 0), {})
        waiting = ~final
        keep = self.later_starts(newest, scalars.get("floor"))
        carried = None
        if self.folds and keep is not None and waiting.any():
            carried = self.fold(events, ticks, held, np.flatnonzero(waiting), keep,
                                starts_, start_known, ends, end_known)
        if carried is None:
            if held is not None:
                carried = held.filter(pa.array(waiting[held.column(GROUP).to_numpy()]))
            if waiting.any():
                if not start_known[waiting].all():
                    keep = None
                elif keep is not None:
                    keep = min(keep, starts_[waiting].min().item())
        if carried is not None:  # numbered by the anchors that stay
            renumbered = (np.cumsum(waiting) - 1)[carried.column(GROUP).to_numpy()]
            carried = carried.set_column(0, GROUP, pa.array(renumbered, pa.int64()))
        rows = ~is_event
        rows[~is_event] = waiting
        times = to_ticks(table.column(TIME).combine_chunks(), self.time_kind)
        rows |= is_event & (True if keep is None else times >= keep)
        flagged = [i for i, msg in enumerate(messages) if msg is not None]
        at = None
        if flagged and waiting[flagged[0]]:
            at = int(np.count_nonzero(waiting[:flagged[0]]))
        scalars["violation_at"] = at
        scalars["message"] = None if at is None else messages[flagged[0]]
        return out, KernelState(table.filter(pa.array(rows)), scalars,
                                carried if carried is not None and carried.num_rows else None)

    def fold(self, events: pa.Table, ticks: npt.NDArray[Any], held: pa.Table | None,
             waiting: IntArray, later: Any, starts: npt.NDArray[Any],
             start_known: npt.NDArray[np.bool_], ends: npt.NDArray[Any],
             end_known: npt.NDArray[np.bool_]) -> pa.Table | None:
        """The partial states of the `waiting` anchors (indices) once the events before
        `later` (which no anchor yet to come can reach) are folded into them, so those
        events need not be carried; None (carry rows, as without states) while fewer
        than `chunk_rows` events lie before `later`, or where the windows' states would
        cost more than the events they replace: more than `FOLD_WORK` merges or adds
        per event (many windows, or many overlapping windows that end among those
        events and so add them again and again)."""
        below = int(np.searchsorted(ticks, later, side="left"))
        if below < self.chunk_rows:
            return None
        lo, hi = dk.window_frames(ticks, starts[waiting], start_known[waiting],
                                  ends[waiting], end_known[waiting], self.closed)
        hi = np.minimum(hi, below)
        lo = np.minimum(lo, hi)
        reaching = hi[hi > lo]
        if len(reaching) and (reaching == below).all():
            work = len(waiting) * (1 + int(np.log2(len(waiting) + 1)))
        else:
            work = int((hi - lo).sum()) + len(waiting)
        if work > FOLD_WORK * below:
            return None
        states = self.states(events)
        fresh = states.frames(events, ticks, lo, hi, waiting)
        parts = [fresh]
        if held is not None:
            parts.insert(0, held.filter(pa.array(
                np.isin(held.column(GROUP).to_numpy(), waiting))))
        return states.merge(pa.concat_tables(parts))

    def held_results(self, events: pa.Table, ticks: npt.NDArray[Any], held: pa.Table,
                     anchors: IntArray, starts: npt.NDArray[Any],
                     start_known: npt.NDArray[np.bool_], ends: npt.NDArray[Any],
                     end_known: npt.NDArray[np.bool_]) -> list[pa.Array]:
        """The aggregations of the windows of `anchors` (indices, ascending, each with a
        state in `held`): their states merged with those of their events still carried."""
        lo, hi = dk.window_frames(ticks, starts, start_known, ends, end_known, self.closed)
        states = self.states(events)
        fresh = states.frames(events, ticks, lo, hi, anchors)
        mine = held.filter(pa.array(np.isin(held.column(GROUP).to_numpy(), anchors)))
        return states.finish(states.merge(pa.concat_tables([mine, fresh])))

    def first_violation(self, scalars: dict[str, Scalar], starts: npt.NDArray[Any],
                        start_known: npt.NDArray[np.bool_], obsolete: npt.NDArray[Any],
                        obsolete_known: npt.NDArray[np.bool_]) -> dk.Violation | None:
        """The first of new anchors that breaks an obsolete rule, given the anchor before
        them (no violation so far, so its obsolete is the largest of all before)."""
        offset = 0
        if "previous" in scalars:
            offset = 1
            starts = np.concatenate([starts[:1], starts])
            start_known = np.concatenate([[True], start_known])
            obsolete = np.concatenate([np.array([scalars["previous"]], obsolete.dtype),
                                       obsolete])
            obsolete_known = np.concatenate([[bool(scalars["previous_known"])],
                                             obsolete_known])
        found = dk.obsolete_violations(starts, start_known, obsolete, obsolete_known)
        if not found:
            return None
        first = found[0]
        return dk.Violation(first.index - offset, first.rule, first.bound, first.found,
                            first.found_known)

    def later_starts(self, newest: npt.NDArray[Any], floor: Scalar) -> Any:
        """No window of an anchor yet to come starts before this (None: no bound)."""
        structural: Any = None
        if self.start.kind == "none":
            structural = newest[0].item()
        elif self.start.kind == "offset":
            structural = shifted(newest, self.start.offset)[0].item()
        if floor is None:
            return structural
        return floor if structural is None else max(structural, floor)

    def run_windows(self, group: pa.Table, runs: IntArray, run_of: IntArray
                    ) -> Iterator[pa.RecordBatch]:
        is_event = np.asarray(group.column(KIND).to_numpy(zero_copy_only=False)) == 1
        events = group.filter(pa.array(is_event))
        anchors = group.filter(pa.array(~is_event))
        event_runs = run_of[is_event]
        anchor_runs = run_of[~is_event]
        ticks, bounds = self.event_bounds(events, event_runs, runs)
        m = anchors.num_rows
        if m == 0:
            return
        anchor_ticks = to_ticks(anchors.column(TIME).combine_chunks(), self.time_kind)
        starts_, start_known = self.bound(self.start, anchors, anchor_ticks)
        ends, end_known = self.bound(self.end, anchors, anchor_ticks)
        messages: list[str | None] = [None] * m
        if self.check:
            obsolete, obsolete_known = self.bound(self.obsolete, anchors, anchor_ticks)
            for found in dk.obsolete_violations(starts_, start_known, obsolete,
                                                obsolete_known, anchor_runs):
                run = int(anchor_runs[found.index])
                messages[found.index] = self.message(
                    found, anchor_ticks[found.index], group.slice(int(runs[run]), 1))
        for begin in range(0, m, CHUNK):
            part = slice(begin, min(m, begin + CHUNK))
            yield self.windows(group, runs, events, ticks, bounds, anchor_runs[part],
                               anchor_ticks[part], starts_[part], start_known[part],
                               ends[part], end_known[part], messages[part])

    def message(self, found: dk.Violation, anchor_time: Any, first_row: pa.Table) -> str:
        at = f"at the anchor at time {self.show(anchor_time, True)}"
        if self.keys:
            values = {k: first_row.column(k)[0].as_py() for k in self.keys}
            at += f" (key {values!r})"
        if found.rule == "decrease":
            return (f"WispError: `obsolete` must not decrease from one anchor to the next, "
                    f"found obsolete {self.show(found.found, found.found_known)} {at} after "
                    f"obsolete {self.show(found.bound, True)} of the anchor before it")
        return (f"WispError: `start` must not be before an earlier anchor's obsolete "
                f"{self.show(found.bound, True)}, found start "
                f"{self.show(found.found, found.found_known)} {at}")

    def show(self, ticks: Any, known: bool) -> str:
        """A time in ticks as the user reads it."""
        if not known:
            return "the start of time"
        kind = self.time_kind
        if kind in ("timestamp", "timestamp_ntz"):
            moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(ticks))
            zone = " UTC" if kind == "timestamp" else ""
            return moment.isoformat(sep=" ", timespec="microseconds") + zone
        if kind == "date":
            return (_dt.date(1970, 1, 1) + _dt.timedelta(days=int(ticks) // DAY)).isoformat()
        if kind == "decimal":
            return str(Decimal(int(ticks)).scaleb(-self.time_scale))
        if kind == "float":
            return repr(float(ticks))
        return str(int(ticks))


@dataclass(frozen=True, kw_only=True)
class ClockKernel(DynamicKernel):
    """Dynamic windows opened by the ticks of a clock (`clock`), generated here from
    each key's span: every row of the input is an event.

    The clock's ticks start at the key's first event (or the clock's start): the ticks
    up to the newest time seen exist whatever follows, and are emitted once final; the
    state holds the next tick not emitted (`next`), the events from that tick's window
    start on, the first tick's time (`first`) and the newest time (`newest`), since the
    ticks run up to the key's last event (or the clock's end), which only `finish`
    knows.

    On a stream a clock has no last event: its ticks fire once the horizon `H` passes
    them (`W >= T`), up to the clock's `end` if given, for ever otherwise, and each is
    emitted once its window is final; `max_ticks` bounds the ticks of one step. `wake`
    is the smallest horizon at which the next tick has fired and its window is final."""

    clock: ClockTicks

    @property
    def align(self) -> Any:
        """Where the clock's ticks are aligned (0 by default)."""
        return self.clock.align if self.clock.align is not None else (
            0.0 if self.time_kind == "float" else 0)

    def idle_newest(self, scalars: dict[str, Scalar], horizon: Horizon | None) -> Any:
        return scalars["newest"]

    def advance(self, table: pa.Table, scalars: dict[str, Scalar], newest: npt.NDArray[Any],
                state: KernelState | None, horizon: Horizon | None
                ) -> tuple[pa.RecordBatch, KernelState]:
        return self.clock_step(table, scalars, newest, horizon=horizon)

    def next_wake(self, state: KernelState) -> Horizon | None:
        """The horizon at which the next tick has fired and its window is final; None
        once the clock is past its `end`."""
        dtype = self.limit(state.rows, 0).dtype
        tick = self.tick(int(state.scalars["next"]), dtype)  # type: ignore[arg-type]
        if self.clock.end is not None and tick[0] > self.clock.end:
            return None
        end = self.bound(self.end, None, tick)[0][0]
        fired = self.past(tick[0], True)
        ready = self.past(end, self.closed in ("both", "right"))
        return max(fired, ready)

    def tick(self, step: int, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
        return dk.tick_values(np.array([step], dtype=np.int64), self.clock.every,
                              self.align, dtype.kind == "f")

    def last_windows(self, state: KernelState) -> pa.RecordBatch:
        newest = np.array([state.scalars["newest"]],
                          dtype=to_ticks(state.rows.column(TIME).slice(0, 0)
                                         .combine_chunks(), self.time_kind).dtype)
        return self.clock_step(state.rows, dict(state.scalars), newest, True)[0]

    def clock_step(self, table: pa.Table, scalars: dict[str, Scalar],
                   newest: npt.NDArray[Any], last: bool = False,
                   horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """Clock ticks: those up to `newest` (the key's last event at the end, `last`)
        whose windows are final, and the events the next ticks' windows may reach. On a
        stream (`horizon`), a tick fires once the horizon passes it (no key's last
        event bounds the ticks there: the clock runs with the watermark, up to its
        `end`), and is emitted once its window is `final`; `max_ticks` bounds the
        ticks one step makes (a watermark jump over many periods)."""
        clock, align = self.clock, self.align
        ticks = to_ticks(table.column(TIME).combine_chunks(), self.time_kind)
        if "first" not in scalars:
            first = ticks[:1] if clock.start is None else np.array([clock.start])
            scalars["first"] = first[0].item()
            scalars["next"] = int(dk.clock_ranges(first, first, clock.every, align)[0][0])
        first = np.array([scalars["first"]], dtype=ticks.dtype)
        # the ticks that exist whatever follows (up to the newest time, or the clock's
        # end) and, before the end, only those whose windows may be final
        upper = newest if clock.end is None else np.array([clock.end], newest.dtype)
        if horizon is not None:
            fired = self.limit(table, horizon)
            fired = (np.nextafter(fired, -np.inf) if fired.dtype.kind == "f"
                     else fired - 1)
            upper = np.minimum(upper, fired) if clock.end is not None else fired
        elif not last:
            reach = newest if self.end.kind == "none" else shifted(newest, -self.end.offset)
            upper = np.minimum(upper, reach)
        k0, count = dk.clock_ranges(first, upper, clock.every, align)
        k_next = int(scalars["next"])  # type: ignore[arg-type]
        stop = int(k0[0]) + int(count[0])
        self.check_ticks(np.array([max(0, stop - k_next)]) if horizon is not None
                         else count, table)
        steps = np.arange(k_next, stop, dtype=np.int64)
        anchor_ticks = dk.tick_values(steps, clock.every, align, ticks.dtype.kind == "f")
        starts, start_known = self.bound(self.start, None, anchor_ticks)
        ends, end_known = self.bound(self.end, None, anchor_ticks)
        if last:
            done = len(steps)
        elif horizon is not None:
            done = int(np.count_nonzero(self.final(ends, end_known, horizon)))
        else:
            done = int(np.count_nonzero(ends < newest[0]))
        out = self.empty()
        if done:
            part = slice(0, done)
            out = self.windows(table, one_run(table.num_rows), table, ticks,
                               one_run(len(ticks)), np.zeros(done, np.int64),
                               anchor_ticks[part], starts[part], start_known[part],
                               ends[part], end_known[part], [None] * done)
        scalars["next"] = k_next + done
        scalars["newest"] = max(newest[0].item(), scalars.get("newest", newest[0].item()))
        if last:
            return out, KernelState(table.slice(0, 0), {})
        following = dk.tick_values(np.array([k_next + done], dtype=np.int64), clock.every,
                                   align, ticks.dtype.kind == "f")
        reach = self.bound(self.start, None, following)[0][0]
        # the last event stays for its key's columns (outside every window, harmless)
        begin = min(int(np.searchsorted(ticks, reach, side="left")), table.num_rows - 1)
        return out, KernelState(table.slice(begin), scalars)

    def run_windows(self, group: pa.Table, runs: IntArray, run_of: IntArray
                    ) -> Iterator[pa.RecordBatch]:
        ticks, bounds = self.event_bounds(group, run_of, runs)
        yield from self.clock_windows(group, runs, group, ticks, bounds)

    def clock_windows(self, group: pa.Table, runs: IntArray, events: pa.Table,
                      ticks: npt.NDArray[Any], bounds: IntArray
                      ) -> Iterator[pa.RecordBatch]:
        """Each run's clock ticks as anchors: all runs' at once up to `CHUNK` ticks,
        else run by run in pieces of `CHUNK` ticks."""
        clock, align = self.clock, self.align
        count = len(runs) - 1
        first = ticks[bounds[:-1]] if clock.start is None else np.full(count, clock.start)
        last = ticks[bounds[1:] - 1] if clock.end is None else np.full(count, clock.end)
        k0, counts = dk.clock_ranges(first, last, clock.every, align)
        self.check_ticks(counts, group.take(pa.array(runs[:-1])))
        float_time = ticks.dtype.kind == "f"
        if int(counts.sum()) <= CHUNK:
            anchor_runs = owners(counts)
            steps = np.repeat(k0, counts) + offsets(counts)
            yield from self.clock_batch(group, runs, events, ticks, bounds, anchor_runs,
                                        dk.tick_values(steps, clock.every, align, float_time))
            return
        for run in range(count):
            for skip in range(0, int(counts[run]), CHUNK):
                stop = min(int(counts[run]), skip + CHUNK)
                steps = np.arange(int(k0[run]) + skip, int(k0[run]) + stop, dtype=np.int64)
                yield from self.clock_batch(
                    group, runs, events, ticks, bounds, np.full(stop - skip, run),
                    dk.tick_values(steps, clock.every, align, float_time))

    def check_ticks(self, counts: IntArray, first_rows: pa.Table) -> None:
        """Fail before making the ticks when a key would get more than the clock's
        `max_ticks` (`counts`: per key, `first_rows`: a row of each, for its key)."""
        if not len(counts) or int(counts.max()) <= self.clock.max_ticks:
            return
        worst = int(np.argmax(counts))
        where = ""
        if self.keys:
            values = {k: first_rows.column(k)[worst].as_py() for k in self.keys}
            where = f"(key {values!r})"
        raise too_many_ticks("every", int(counts[worst]), self.clock.max_ticks, "clock",
                             where)

    def clock_batch(self, group: pa.Table, runs: IntArray, events: pa.Table,
                    ticks: npt.NDArray[Any], bounds: IntArray, anchor_runs: IntArray,
                    anchor_ticks: npt.NDArray[Any]) -> Iterator[pa.RecordBatch]:
        if not len(anchor_ticks):
            return
        starts, start_known = self.bound(self.start, None, anchor_ticks)
        ends, end_known = self.bound(self.end, None, anchor_ticks)
        yield self.windows(group, runs, events, ticks, bounds, anchor_runs, anchor_ticks,
                           starts, start_known, ends, end_known, [None] * len(anchor_ticks))


def windows_kernel(*, clock: ClockTicks | None, **fields: Any) -> DynamicKernel:
    """The kernel of dynamic windows: opened by the ticks of `clock`, or without one by
    the anchor rows of the union (`fields`: those of `DynamicKernel`)."""
    if clock is None:
        return AnchorKernel(**fields)
    return ClockKernel(clock=clock, **fields)
