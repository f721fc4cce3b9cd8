"""The executor side of reset (`Since`) and trailing-period (`Trailing`) windows
(`engine/periods.py` builds the Spark plan): a kernel walks each key's events with its
ticks, short key runs several at once (periods restart per run), a long run whole.

Predicate ticks arrive as a boolean column next to each row (`tick_column`, evaluated by
Spark); calendar ticks are computed here (`wisp.spec.calendar`), never on the driver.

Output bounds: for predicate ticks `window_start`/`window_end` are the times of the
window's first and last events (both inclusive); for calendar ticks the window is
`(window_start, window_end]`: `window_start` is the tick before the window's first
period, `window_end` the row's time (event rows) or the tick (tick rows).

Resumable (`runtime.windows.resumable`): a key run longer than `CHUNK_ROWS` goes through
`TickKernel.step` in pieces (tail recompute: the carried rows, then the piece, through
the same vectorised frames), so its memory is a few pieces plus the carried periods.

Streamable (`resumable.Streamable`): a stream's step is told a horizon `H` (every later
row of the key has time >= H). Event rows are final as their rows arrive (a row's
window ends at the row), so the horizon changes nothing for them. A calendar tick row
`T` covers `(previous tick, T]`: an event exactly on `T` belongs to it, so it is final
once no row at or before `T` can come, i.e. `T < H` (a watermark `W` promises
`H = W + 1` tick: `W >= T`). A step emits every tick row before `H` not emitted yet, all
at once however many periods the horizon jumps over; `wake` is one tick past the next
tick not emitted. On a stream there is no whole input: a key gets tick rows from its
first event's period on, for every tick up to the watermark (empty periods included),
for as long as the stream runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...kernels import periods as kf
from ...kernels.runs import one_run, run_index
from ...kernels.segments import Segments
from ...spec import calendar
from ...spec.windows import CalendarTick
from ..aggregates.aggregate import AggregateJob, aggregate
from ..codecs.arrays import from_ticks, to_ticks, with_nulls
from ..codecs.batches import CHUNK_ROWS
from .resumable import Horizon, KernelState, Scalar, pending, resumed
from .running import HIDDEN_TICK
from .scans import (
    Carry,
    Scans,
    carried,
    held_by_accumulators,
    input_names,
    scan_all,
    with_inputs,
)

HIDDEN_NEWEST = "__wisp_newest__"
HOLDER = "holder"
"""The scalar that marks a state's first row as holding only the key's values (a
stream's key whose tick rows go on after its last row's period was emitted)."""
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Rows:
    """Output rows of one or more key runs: frames `[lo, hi)`, bounds, times, which are
    valid, and the run of each."""

    lo: IntArray
    hi: IntArray
    start: IntArray
    end: IntArray
    time: IntArray
    valid: npt.NDArray[np.bool_]
    run: IntArray


def _concat(parts: list[Rows]) -> Rows:
    if len(parts) == 1:
        return parts[0]
    return Rows(*(np.concatenate([getattr(p, f) for p in parts])
                  for f in ("lo", "hi", "start", "end", "time", "valid", "run")))


def shared_table(times: IntArray, runs: IntArray) -> bool:
    """Whether one tick table for all runs stays within a few times the tables the runs
    would build one by one (runs far apart in time build their own)."""
    chunk = calendar.CHUNK
    firsts, lasts = times[runs[:-1]] // chunk, times[runs[1:] - 1] // chunk
    own = int((lasts - firsts + 1).sum())
    return int(times.max()) // chunk - int(times.min()) // chunk + 1 <= 2 * own + 2


@dataclass(frozen=True)
class TickKernel:
    """The executor side: picklable, no Spark objects. Short key runs are computed
    several at once (periods restart per run, `run_group`), a long run in pieces
    (`step`, then `finish`).

    The state between pieces (`KernelState`) holds the input rows later outputs can
    still need, and a few scalars:

    - rows: `Since` keeps the rows of the open period (those after the last true flag,
      or after the tick before the newest row's closing tick); `Trailing(n, ...)` the
      rows of the open period and the `n - 1` before it (after the `n`-th last true
      flag, or after the tick `n` periods before the newest row's closing tick);
    - `first` (calendar): the key's first tick, for the "enough history" test of
      `Trailing` and the first tick row of `Since`; `emitted` (calendar tick rows): the
      last tick whose row was emitted, so that each tick's row, empty periods between
      events included, comes exactly once. (Predicate ticks need no scalar: the
      carried rows hold every row so far, or the `n - 1` last true flags, which is all
      the "enough history" test asks.)

    Bound: the rows of one period (`Since`) or of `n` periods (`Trailing`), never the
    key's history; but a period has no bound of its own: a predicate that never fires
    (or a calendar period that holds most of a key's events) makes the carried rows
    grow with the key, and then each piece recomputes them (quadratic in the length of
    that one period). That is the one case where memory is not bounded.

    Finality: every event row is final as soon as its piece arrives (a row's window
    ends at the row); a calendar tick row `T` is final once an event later than `T`
    arrives, or a stream's horizon passes `T`; `finish` emits the rest (the open
    period's tick and the empty periods up to the newest event of the whole input).

    On a stream, `Since` emitting ticks drops the rows of every period it emitted;
    when none is left, it keeps the last row only for the key's values (the `HOLDER`
    scalar), as the key's tick rows go on with empty periods. `Trailing` drops the
    rows that no window of a row at or after the horizon reaches.
    """

    keys: tuple[str, ...]
    time: str
    time_kind: str
    time_scale: int
    calendar: CalendarTick | None
    n: int
    partial: bool
    emit: str
    trailing: bool
    aggregates: tuple[AggregateJob, ...]
    schema: pa.Schema
    tick_column: str = HIDDEN_TICK
    newest_column: str = HIDDEN_NEWEST

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return resumed(self, batches, CHUNK_ROWS)

    def predicate_rows(self, group: pa.Table, times: IntArray, runs: IntArray) -> Rows:
        flags = np.asarray(pc.fill_null(group.column(self.tick_column).combine_chunks(), False)
                           .to_numpy(zero_copy_only=False), dtype=bool)
        m = len(times)
        if self.trailing:
            lo, hi, complete = kf.trailing_predicate(flags, self.n, runs)
            valid = complete | self.partial
        else:
            lo, hi = kf.since_predicate(flags, runs)
            valid = np.ones(m, dtype=bool)
        anchors = np.arange(m, dtype=np.int64)
        if self.emit == "ticks" and not self.trailing:
            anchors = np.nonzero(flags)[0].astype(np.int64)
        lo, hi = lo[anchors], hi[anchors]
        return Rows(lo, hi, times[lo], times[anchors], times[anchors], valid[anchors],
                    run_index(runs)[anchors])

    def calendar_rows(self, group: pa.Table, times: IntArray, runs: IntArray) -> Rows:
        """The rows of every run from one tick table, or run by run when the runs lie
        far apart in time."""
        if len(runs) > 2 and not shared_table(times, runs):
            apart = []
            for r, (begin, stop) in enumerate(itertools.pairwise(runs.tolist())):
                part = self.calendar_rows(group.slice(begin, stop - begin), times[begin:stop],
                                          one_run(stop - begin))
                apart.append(dataclasses.replace(part, lo=part.lo + begin, hi=part.hi + begin,
                                                 run=part.run + r))
            return _concat(apart)
        tick = self.calendar
        assert tick is not None
        back = self.n if self.trailing else 1
        with_ticks = self.emit != "events" and not self.trailing
        uppers = times[runs[1:] - 1]
        if with_ticks:
            newest = to_ticks(group.column(self.newest_column).combine_chunks().slice(0, 1),
                              self.time_kind)
            uppers = np.maximum(uppers, newest[0])
        ticks, _, _ = kf.tick_table(tick, int(times.min()), int(uppers.max()), back)
        first = np.searchsorted(ticks, times[runs[:-1]], side="left").astype(np.int64)
        parts: list[Rows] = []
        if self.trailing or self.emit != "ticks":
            lo, hi, starts, complete = kf.calendar_events(times, ticks, back, first, runs)
            valid = complete | self.partial if self.trailing else np.ones(len(times), bool)
            parts.append(Rows(lo, hi, starts, times, times, valid, run_index(runs)))
        if with_ticks:
            last = np.searchsorted(ticks, uppers, side="left").astype(np.int64)
            lo, hi, starts, ends, run = kf.calendar_ticks(times, ticks, first, last, runs)
            parts.append(Rows(lo, hi, starts, ends, ends, np.ones(len(lo), dtype=bool), run))
        return _concat(parts)

    def run_group(self, group: pa.Table, starts: IntArray | None = None) -> pa.RecordBatch:
        """The output rows of the key runs in `group` (`starts`: where each begins, then
        the length; one run by default)."""
        times = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        runs = one_run(len(times)) if starts is None else starts
        rows = (self.calendar_rows(group, times, runs) if self.calendar is not None
                else self.predicate_rows(group, times, runs))
        return self.output(group, times, runs, rows)

    def output(self, group: pa.Table, times: IntArray, runs: IntArray, rows: Rows,
               scans: Scans | None = None) -> pa.RecordBatch:
        """The output batch of `rows` (frames into `group`; with `accumulates`, read from
        the running scans: `scans`, or scans of `group` restarting at each period)."""
        m = len(rows.lo)
        everywhere = np.ones(m, dtype=bool)
        columns: list[pa.Array] = []
        first_row = pa.array(runs[rows.run])
        for key in self.keys:
            columns.append(group.column(key).combine_chunks().take(first_row))
        for ticks in (rows.start, rows.end, rows.time):
            columns.append(from_ticks(ticks, everywhere, self.time_kind, self.time_scale))
        if self.accumulates:
            if scans is None:
                scans = self.scans(group, times, runs, rows)
            columns += [with_nulls(result, rows.valid) for result in scans.at(rows.lo, rows.hi)]
            return pa.RecordBatch.from_arrays(columns, schema=self.schema)
        memo: dict[tuple[str, ...], Any] = {}
        for job in self.aggregates:
            result = aggregate(job, group, times, rows.lo, rows.hi, memo)
            columns.append(with_nulls(result, rows.valid))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    # -------------------------------------------------------- accumulators path

    @property
    def accumulates(self) -> bool:
        """Whether `Since` over calendar ticks keeps its open period as accumulators, not
        rows: when every aggregation is held by a few (`Definition.accumulators`). Each
        period's aggregates are then running scans restarting at each period, read at a
        frame's last row (a frame is a prefix of its period), whole runs and pieces
        alike, so a step resumes a period exactly and a period of any length costs a
        constant state. `Trailing` reaches back over `n` periods and keeps rows."""
        return (self.calendar is not None and not self.trailing
                and held_by_accumulators(self.aggregates))

    def scans(self, group: pa.Table, times: IntArray, runs: IntArray, rows: Rows) -> Scans:
        """Running scans of whole runs, restarting at each period: every frame's `lo`
        (each frame is a prefix of its period, an empty one starts where the next period
        does) and each run's start."""
        n = group.num_rows
        starts = np.unique(np.concatenate([rows.lo, runs, [n]]).astype(np.int64))
        starts = starts[starts <= n]
        found = scan_all(self.aggregates, group, Segments(starts),
                                 Carry({}, None, 0), times)
        return Scans(self.aggregates, found, group.slice(0, 0))

    def accumulated_step(self, state: KernelState | None, chunk: pa.Table,
                         horizon: Horizon | None, force: bool = False
                         ) -> tuple[pa.RecordBatch, KernelState]:
        """`step` when the open period is carried as accumulators (`accumulates`): the
        state is one row (the key columns, the values `first`/`last`/... carry, and the
        input columns of the key's last row, for their types) and scalars: `first`,
        `emitted` and `newest` as the rows path keeps them, `latest` (the key's newest
        time), and while a period is open `period` (its closing tick), `last` (the time
        of its last event) and the aggregations' accumulators. The chunk's rows follow
        the open period as one virtual position 0 at `last`. `force` (end of input)
        emits the tick rows through the period of the newest event (`finish`)."""
        scalars: dict[str, Scalar] = {} if state is None else dict(state.scalars)
        held = None if state is None or state.rows.num_rows == 0 else state.rows
        virtual = 1 if "period" in scalars else 0
        m = chunk.num_rows
        if held is None and m == 0:
            return self._nothing(), state if state is not None else KernelState(pa.table({}))
        if m == 0 and not force and (horizon is None or not self._tick_rows):
            return self._nothing(), state if state is not None else KernelState(pa.table({}))
        tick = self.calendar
        assert tick is not None
        times = to_ticks(chunk.column(self.time).combine_chunks(), self.time_kind)
        if m and self.newest_column in chunk.column_names:
            newest = int(to_ticks(chunk.column(self.newest_column).combine_chunks()
                                  .slice(0, 1), self.time_kind)[0])
            scalars["newest"] = max(newest, _int(scalars.get("newest", newest)))
        if m:
            scalars["latest"] = max(int(times[-1]), _int(scalars.get("latest", int(times[-1]))))
        lead = np.array([_int(scalars["last"])] if virtual else [], dtype=np.int64)
        positions = np.concatenate([lead, times.astype(np.int64)])
        if force:
            upper = max(_int(scalars.get("latest", calendar.CALENDAR_MIN_US)),
                        _int(scalars.get("newest", calendar.CALENDAR_MIN_US)))
            reference = calendar.closing_tick(tick, upper) + 1
        else:
            reference = int(times[-1]) if m else (
                int(positions[-1]) if len(positions) else int(calendar.CALENDAR_MIN_US))
            if horizon is not None:
                reference = max(reference, math.ceil(horizon))
        rows, _ = self._calendar_step(positions, virtual, scalars, reference)
        inputs = chunk if m else held  # the key's last row: its input columns carry on
        assert inputs is not None
        if m:
            source = chunk
        else:  # typed columns, no rows
            assert held is not None
            source = held.select(input_names(self.keys, held)).slice(0, 0)
        keys = chunk.select(list(self.keys))  # a row of key values per position
        if held is not None and not m:
            keys = held.select(list(self.keys))
        elif held is not None and virtual:
            keys = pa.concat_tables([held.select(list(self.keys)).cast(keys.schema), keys])
        n = len(positions)
        periods = np.zeros(0, dtype=np.int64)
        found: list[Any] = []
        if n:
            ticks, _, _ = kf.tick_table(tick, int(positions[0]), int(positions[-1]), 1)
            periods = np.searchsorted(ticks, positions, side="left").astype(np.int64)
            starts = np.flatnonzero(np.r_[True, periods[1:] != periods[:-1]])
            segments = Segments(np.append(starts, n).astype(np.int64))
            found = scan_all(self.aggregates, source, segments,
                                     Carry(scalars, held, virtual), positions)
        out = self.output(keys, positions, one_run(max(keys.num_rows, n)), rows,
                          Scans(self.aggregates, found, source.slice(0, 0)))
        kept: dict[str, Scalar] = {name: scalars[name] for name in (
            "first", "emitted", "newest", "latest") if name in scalars}
        closing = int(ticks[periods[-1]]) if n else None
        emitted = scalars.get("emitted")
        done = closing is None or force or (
            self._tick_rows and emitted is not None and _int(emitted) >= closing)
        if done:  # no open period: one row for the key's values (its tick rows go on)
            rows_kept = keys.slice(keys.num_rows - 1)
            return out, KernelState(with_inputs(self.keys, rows_kept, inputs), kept)
        assert closing is not None
        carried_state = carried(self.keys, keys, found, {
            **kept, "period": closing, "last": int(positions[-1])}, keys_always=True)
        return out, KernelState(with_inputs(self.keys, carried_state.rows, inputs),
                                carried_state.scalars)

    # ------------------------------------------------------------- resumable path

    def step(self, state: KernelState | None, chunk: pa.Table,
             horizon: Horizon | None = None) -> tuple[pa.RecordBatch, KernelState]:
        """The rows final once the key's rows so far are known (see the class's
        docstring) and, told a stream's `horizon` (no later row of the key comes before
        it), the calendar tick rows before it too; the state for the rows that follow."""
        if self.accumulates:
            return self.accumulated_step(state, chunk, horizon)
        table = pending(state, chunk)
        carried = 0 if state is None else state.rows.num_rows
        scalars: dict[str, Scalar] = {} if state is None else dict(state.scalars)
        if self.calendar is not None:
            return self._calendar_state_step(table, carried, scalars, horizon)
        if table.num_rows == 0:
            return self._nothing(), KernelState(table, scalars)
        times = to_ticks(table.column(self.time).combine_chunks(), self.time_kind)
        rows, keep = self._predicate_step(table, times, carried)
        out = self.output(table, times, one_run(len(times)), rows)
        return out, KernelState(table.slice(keep), scalars)

    def wake(self, state: KernelState) -> Horizon | None:
        """The least horizon at which a step emits the next tick row (`Since` over
        calendar ticks emitting ticks: one tick past the first tick not emitted yet);
        None before the key's first row, and for every other window, whose rows are
        final as their rows arrive."""
        if not self._tick_rows or state.scalars.get("first") is None:
            return None
        tick = self.calendar
        assert tick is not None
        emitted = state.scalars.get("emitted")
        following = (_int(state.scalars["first"]) if emitted is None
                     else calendar.next_tick(tick, _int(emitted)))
        return following + 1

    def finish(self, state: KernelState | None) -> pa.RecordBatch:
        """The tick rows only the end of the key's rows makes final: the open period's
        and the empty ones after it, while a period begins before the newest event of
        the whole input (`Since` over calendar ticks emitting ticks); nothing else."""
        if state is None or not self._tick_rows:
            return self._nothing()
        if self.accumulates:
            if "first" not in state.scalars or state.rows.num_rows == 0:
                return self._nothing()
            return self.accumulated_step(state, state.rows.slice(0, 0), None, force=True)[0]
        table = state.rows.slice(1) if state.scalars.get(HOLDER) else state.rows
        if table.num_rows == 0:
            return self._nothing()
        times = to_ticks(table.column(self.time).combine_chunks(), self.time_kind)
        newest = to_ticks(table.column(self.newest_column).combine_chunks().slice(0, 1),
                          self.time_kind)
        upper = max(int(times[-1]), int(newest[0]))
        assert self.calendar is not None
        ticks, _, _ = kf.tick_table(self.calendar, int(times[0]), upper, 1)
        start = self._next_tick(ticks, state.scalars)
        last = int(np.searchsorted(ticks, upper, side="left"))
        lo, hi, starts, ends, run = kf.calendar_ticks(
            times, ticks, np.array([start], np.int64), np.array([last], np.int64))
        rows = Rows(lo, hi, starts, ends, ends, np.ones(len(lo), dtype=bool), run)
        return self.output(table, times, one_run(len(times)), rows)

    @property
    def _tick_rows(self) -> bool:
        """Whether the window emits rows at calendar ticks (`Since`, emit ticks or both)."""
        return self.calendar is not None and not self.trailing and self.emit != "events"

    def _nothing(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist([], schema=self.schema)

    def _predicate_step(self, table: pa.Table, times: IntArray, carried: int
                        ) -> tuple[Rows, int]:
        """Event rows of the new rows (`Since(pred, emit="ticks")`: those whose flag is
        true); the carried rows restart after the `back`-th last true flag."""
        flags = np.asarray(pc.fill_null(table.column(self.tick_column).combine_chunks(),
                                        False).to_numpy(zero_copy_only=False), dtype=bool)
        m = len(flags)
        back = self.n if self.trailing else 1
        if self.trailing:
            # "enough history" is exact on the carried rows alone: they hold every row
            # so far, or (once rows were dropped) the n - 1 last true flags
            lo, hi, complete = kf.trailing_predicate(flags, self.n)
            valid = complete | self.partial
        else:
            lo, hi = kf.since_predicate(flags)
            valid = np.ones(m, dtype=bool)
        anchors = np.arange(carried, m, dtype=np.int64)
        if self.emit == "ticks" and not self.trailing:
            anchors = anchors[flags[carried:]]
        lo, hi = lo[anchors], hi[anchors]
        rows = Rows(lo, hi, times[lo], times[anchors], times[anchors], valid[anchors],
                    np.zeros(len(anchors), dtype=np.int64))
        closing = np.nonzero(flags)[0]
        keep = int(closing[-back]) + 1 if len(closing) >= back else 0
        return rows, keep

    def _calendar_state_step(self, table: pa.Table, carried: int,
                             scalars: dict[str, Scalar], horizon: Horizon | None
                             ) -> tuple[pa.RecordBatch, KernelState]:
        """A step over calendar ticks. The rows it reads are `table` (the carried rows,
        then the new ones), but for a first row that only holds the key's values (the
        `HOLDER` scalar: its period was emitted whole, the key's tick rows go on)."""
        skip = 1 if scalars.pop(HOLDER, False) else 0
        live = table.slice(skip)
        if live.num_rows == 0 and (not self._tick_rows or table.num_rows == 0
                                   or horizon is None):
            if skip:
                scalars[HOLDER] = True
            return self._nothing(), KernelState(table, scalars)
        times = to_ticks(live.column(self.time).combine_chunks(), self.time_kind)
        reference = int(times[-1]) if len(times) else int(calendar.CALENDAR_MIN_US)
        if horizon is not None:  # no later row comes before it (past the calendar's
            # years, the query fails as in batch: only an event there can carry it there)
            reference = max(reference, math.ceil(horizon))
        rows, keep = self._calendar_step(times, max(carried - skip, 0), scalars, reference)
        group = live if live.num_rows else table
        out = self.output(group, times if live.num_rows else
                          to_ticks(table.column(self.time).combine_chunks(), self.time_kind),
                          one_run(group.num_rows), rows)
        if keep < live.num_rows:
            return out, KernelState(live.slice(keep), scalars)
        if self._tick_rows:  # the key's tick rows go on: keep a row for its values
            scalars[HOLDER] = True
            return out, KernelState((live if live.num_rows else table).slice(
                group.num_rows - 1), scalars)
        return out, KernelState(live.slice(keep), scalars)

    def _calendar_step(self, times: IntArray, carried: int, scalars: dict[str, Scalar],
                       reference: int) -> tuple[Rows, int]:
        """Event rows of the new rows (from `carried` on), and (`Since` emitting ticks)
        the rows of the ticks before `reference` (the newest row's time, or a stream's
        horizon: every tick before it is final) not emitted yet; the rows carried on
        are those after the tick `back` periods before the one closing `reference`'s
        period (a later row's window starts there or later). `times` may be empty (a
        stream's step with no rows, for the key's tick rows): its frames are empty."""
        tick = self.calendar
        assert tick is not None
        m = len(times)
        back = self.n if self.trailing else 1
        lowest = reference if not m else int(times[0])
        if scalars.get("emitted") is not None:  # the tick before the next tick row
            lowest = min(lowest, _int(scalars["emitted"]))
        elif scalars.get("first") is not None:
            lowest = min(lowest, _int(scalars["first"]))
        ticks, first, _ = kf.tick_table(tick, lowest, reference, back)
        if scalars.get("first") is None:
            scalars["first"] = int(ticks[first])
        parts: list[Rows] = []
        if m > carried and (self.trailing or self.emit != "ticks"):
            # the key's first tick, or 0 when it lies before the table: then at least
            # `back` of the key's ticks precede every row here, and the row is complete
            key_first = np.searchsorted(ticks, _int(scalars["first"]), side="left")
            lo, hi, starts, complete = kf.calendar_events(
                times, ticks, back, np.array([key_first], np.int64))
            valid = complete | self.partial if self.trailing else np.ones(m, bool)
            new = slice(carried, m)
            parts.append(Rows(lo[new], hi[new], starts[new], times[new], times[new],
                              valid[new], np.zeros(m - carried, dtype=np.int64)))
        closing = int(np.searchsorted(ticks, reference, side="left"))
        if self._tick_rows:
            start = self._next_tick(ticks, scalars)
            last = closing - 1  # the ticks before `reference`
            lo, hi, starts, ends, run = kf.calendar_ticks(
                times, ticks, np.array([start], np.int64), np.array([last], np.int64))
            parts.append(Rows(lo, hi, starts, ends, ends, np.ones(len(lo), dtype=bool),
                              run))
            if last >= start:
                scalars["emitted"] = int(ticks[last])
        keep = int(np.searchsorted(times, ticks[closing - back], side="right"))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return Rows(empty, empty, empty, empty, empty, np.zeros(0, bool), empty), keep
        return _concat(parts), keep

    @staticmethod
    def _next_tick(ticks: IntArray, scalars: Mapping[str, Scalar]) -> int:
        """The position in `ticks` of the first tick whose row is not yet emitted: the
        one after `emitted`, or the key's first tick."""
        emitted = scalars.get("emitted")
        if emitted is None:
            return int(np.searchsorted(ticks, _int(scalars["first"]), side="left"))
        return int(np.searchsorted(ticks, _int(emitted), side="right"))


def _int(value: Scalar) -> int:
    assert isinstance(value, int)
    return value
