"""The executor side of reset (`Since`) and trailing-period (`Trailing`) windows
(`engine/periods.py` builds the Spark plan): a kernel walks each key's events with its
ticks, short key runs several at once (periods restart per run), a long run whole.

Predicate ticks arrive as a boolean column next to each row (`tick_column`, evaluated by
Spark); calendar ticks are computed here (`wisp.spec.calendar`), never on the driver.

Output bounds: for predicate ticks `window_start`/`window_end` are the times of the
window's first and last events (both inclusive); for calendar ticks the window is
`(window_start, window_end]`: `window_start` is the tick before the window's first
period, `window_end` the row's time (event rows) or the tick (tick rows).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ..kernels import periods as kf
from ..kernels.runs import one_run, run_index
from ..spec import calendar
from ..spec.windows import CalendarTick
from .aggregate import AggregateJob, aggregate
from .batches import whole_runs
from .codec import from_ticks, to_ticks, with_nulls

HIDDEN_TICK = "__wisp_tick__"
HIDDEN_NEWEST = "__wisp_newest__"
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


def _shared_table(times: IntArray, runs: IntArray) -> bool:
    """Whether one tick table for all runs stays within a few times the tables the runs
    would build one by one (runs far apart in time build their own)."""
    chunk = calendar.CHUNK
    firsts, lasts = times[runs[:-1]] // chunk, times[runs[1:] - 1] // chunk
    own = int((lasts - firsts + 1).sum())
    return int(times.max()) // chunk - int(times.min()) // chunk + 1 <= 2 * own + 2


@dataclass(frozen=True)
class TickKernel:
    """The executor side: picklable, no Spark objects. Short key runs are computed
    several at once (periods restart per run), a long run whole."""

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
        for table, starts in whole_runs(batches, self.keys):
            out = self.run_group(table, starts)
            if out.num_rows:
                yield out

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
        if len(runs) > 2 and not _shared_table(times, runs):
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
        m = len(rows.lo)
        everywhere = np.ones(m, dtype=bool)
        columns: list[pa.Array] = []
        first_row = pa.array(runs[rows.run])
        for key in self.keys:
            columns.append(group.column(key).combine_chunks().take(first_row))
        for ticks in (rows.start, rows.end, rows.time):
            columns.append(from_ticks(ticks, everywhere, self.time_kind, self.time_scale))
        memo: dict[tuple[str, ...], Any] = {}
        for job in self.aggregates:
            result = aggregate(job, group, times, rows.lo, rows.hi, memo)
            columns.append(with_nulls(result, rows.valid))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)
