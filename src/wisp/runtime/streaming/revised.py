"""Revisions on the rows-carrying operator (`on_late="update"`, `emit="changes"`), without
Spark: what one key's stateful operator does when a window may be written more than
once (`engine/processor.py` wraps it in Spark's `StatefulProcessor`).

A key keeps its rows, not a resumable kernel's state: every row of the windows not yet
retired (a window is retired once the watermark passes its end plus the allowed
lateness), those ahead of the watermark included, in order, and a table `emitted` of
the windows written whose last row still counts (identity, last revision, whether it
was final, and how many rows it held). Each step recomputes the key's windows over those
rows with the batch kernel (`KindWindows`; windows before the kept rows cannot change,
as the first kept row begins a window no earlier row reaches) and writes:

- every window the horizon (the watermark + 1 tick) makes final that was not written
  final with these rows: revision 0 for a new window, the next one for a window whose
  rows changed (a late row within the allowed lateness);
- with `changes`, every open window whose rows changed since it was last written, with
  `final` false.

A window whose identity changed (a late row moved a session's start or end, or merged
two sessions) is a new window: its row lists the written windows it replaces
(`replaces`: each written window it overlaps that is no longer a window), and its
revision is one more than the highest of theirs; a replaced window's last row no
longer counts (`wisp.latest` drops it). A written window that is no longer a window
stays in `emitted` until a written row replaces it, so no row is retracted silently.

A row is late (counted, not applied) when it could reach a retired window (at or before
the end of the last retired one) or when the window it alone would make is past the
allowed lateness already; every other row is applied, and counted as `applied` when it
lies below the horizon the key was already fed up to. State per key: the rows of the
windows not retired, bounded by the lateness, the allowed lateness and a window's
length.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ...kernels import intervals as iv
from ...kernels import sessions as sk
from ...kernels.frames import shifted
from ..codecs.arrays import from_ticks, to_ticks
from ..codecs.sorting import sort_order
from ..windows.counts import CountKernel
from ..windows.hopping import HoppingKernel
from ..windows.intervals import IntervalKernel, clamped
from ..windows.sessions import SessionKernel
from ..windows.snapshot import SnapshotKernel
from .operator import TICKS_PER_MS, Step, check_stored, table_bytes, table_of

REVISED_STATE_VERSION = 3
"""The format of a key's stored state with revisions (the rows kept, `emitted`)."""
REVISION = "revision"
FINAL = "final"
REPLACES = "replaces"
START, END, ROWS = "start", "end", "rows"
_RETIRED_KEY = b"wisp.retired"

Ticks = npt.NDArray[Any]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Windows:
    """A key's windows over its kept rows, in time order: the output rows (`batch`, the
    kernel's schema), each window's identity (`start`, `end` ticks; `end` is the largest
    value of its type for a window without end), its number of rows, whether the
    horizon makes it final, and the horizon at which an open one becomes final (None
    for one that only more rows decide)."""

    batch: pa.RecordBatch
    start: Ticks
    end: Ticks
    rows: npt.NDArray[np.int64]
    lo: npt.NDArray[np.int64]
    final: Mask
    closes: list[float | int | None]

    def since(self, cut: float | int | None) -> Windows:
        """The windows that start at or after `cut` (None: all): those before it are
        retired, and the rows kept no longer give them whole."""
        if cut is None or not len(self.start) or self.start[0] >= cut:
            return self
        keep = np.flatnonzero(self.start >= cut)
        return Windows(self.batch.take(pa.array(keep)), self.start[keep], self.end[keep],
                       self.rows[keep], self.lo[keep], self.final[keep],
                       [self.closes[i] for i in keep])


class KindWindows(Protocol):
    """What a window kind gives the revision layer."""

    @property
    def replaces(self) -> bool:
        """Whether a late row can change a window's identity (then rows carry
        `replaces`)."""
        ...

    def windows(self, rows: pa.Table, horizon: float | int) -> Windows:
        """The windows of a key's sorted rows, final or not under `horizon`."""
        ...

    def own_end(self, rows: pa.Table) -> Ticks:
        """The end of the window each row would make alone (the time after which it
        could only fall in windows that end later)."""
        ...

    def reach_of(self, end: Any) -> Any:
        """The latest time a row can have and still fall in (or join) a window that ends
        at `end`: a later row reaches only later windows."""
        ...

    def retain(self, rows: pa.Table, found: Windows, count: int
               ) -> tuple[pa.Table, float | int | None]:
        """The rows to keep once the first `count` windows retire, and the start before
        which the windows recomputed over them are retired ones (None: none are)."""
        ...


def from_first_kept(rows: pa.Table, found: Windows, count: int
                    ) -> tuple[pa.Table, float | int | None]:
    """`retain` for kinds whose first kept window begins at a row no earlier row
    reaches: the rows from that window's first on."""
    if count < len(found.start):
        return rows.slice(int(found.lo[count])), None
    return rows.slice(0, 0), None


@dataclass(frozen=True)
class SessionWindows:
    """Sessions for the revision layer: the batch session kernel over a key's kept rows
    (`run_group`), each session identified by its start and end; a late row that moves
    a session's bounds or merges sessions makes a new session that replaces them."""

    kernel: SessionKernel
    replaces: bool = True

    def windows(self, rows: pa.Table, horizon: float | int) -> Windows:
        kernel = self.kernel
        if rows.num_rows == 0:
            return no_windows(kernel.schema)
        _, found = kernel.found(rows, None)
        batch = kernel.run_group(rows)
        end = np.where(found.end_known, found.end, sk.forever(found.end))
        final = np.zeros(len(end), dtype=bool)
        closes: list[float | int | None] = []
        for i in range(len(end)):
            wakes: list[float | int] = []
            if found.end_known[i]:
                value = end[i]
                wakes.append(float(np.nextafter(value, np.inf))
                             if isinstance(value, np.floating) else int(value) + 1)
            if kernel.max_duration is not None:
                cap = shifted(np.asarray([found.start[i]]), kernel.max_duration)[0]
                wakes.append(float(cap) if isinstance(cap, np.floating) else int(cap))
            due = min(wakes) if wakes else None
            final[i] = due is not None and due <= horizon
            closes.append(due)
        return Windows(batch, found.start, end, (found.hi - found.lo).astype(np.int64),
                       found.lo.astype(np.int64), final, closes)

    def reach_of(self, end: Any) -> Any:
        return end  # a row at a session's end joins it

    def retain(self, rows: pa.Table, found: Windows, count: int
               ) -> tuple[pa.Table, float | int | None]:
        return from_first_kept(rows, found, count)

    def own_end(self, rows: pa.Table) -> Ticks:
        kernel = self.kernel
        ticks, reach = kernel.reach(rows)
        end = shifted(reach, kernel.gap)
        if kernel.max_duration is not None:
            end = np.minimum(end, shifted(ticks, kernel.max_duration))
        return end


def no_windows(schema: pa.Schema) -> Windows:
    """No window (a key without rows kept)."""
    empty = np.zeros(0, dtype=np.int64)
    return Windows(pa.RecordBatch.from_pylist([], schema=schema), empty, empty, empty,
                   empty, np.zeros(0, dtype=bool), [])


def interval_windows(kernel: IntervalKernel, rows: pa.Table
                     ) -> tuple[pa.RecordBatch, Ticks]:
    """An interval kernel's windows over a key's rows, in the order of their starts, and
    those starts in the kernel's ticks."""
    found = kernel.run_group(rows)
    batches = [found] if isinstance(found, pa.RecordBatch) else list(found)
    batch = pa.Table.from_batches(batches, schema=kernel.schema).combine_chunks()
    start = kernel.ticks(batch.column("window_start").combine_chunks())
    order = np.argsort(start, kind="stable")
    return pa.RecordBatch.from_arrays(
        [c.take(pa.array(order)).combine_chunks() for c in batch.columns],
        schema=kernel.schema), start[order]


@dataclass(frozen=True)
class CountByStartWindows:
    """Count-by-start-time windows for the revision layer: the batch kernel over a key's
    kept rows, window `i` identified by its first and last start times (`window_start`,
    `window_end` = the last + 1 tick), final once the watermark reaches its last start;
    a late row with a new start time shifts the windows that span it, each replaced by
    the new windows over it."""

    kernel: CountKernel
    replaces: bool = True

    def windows(self, rows: pa.Table, horizon: float | int) -> Windows:
        kernel = self.kernel
        if rows.num_rows == 0:
            return no_windows(kernel.schema)
        batch, first = interval_windows(kernel, rows)
        start = first * kernel.unit
        end = to_ticks(batch.column("window_end"), kernel.time_kind)
        ticks = to_ticks(rows.column(kernel.time).combine_chunks(), kernel.time_kind)
        lo = np.searchsorted(ticks, start, side="left")
        hi = np.searchsorted(ticks, end - 1, side="right")
        last = kernel.ticks(batch.column("time"))  # the last start
        bound = kernel.first_start(horizon)  # the first start a later row can have
        final = last < bound if bound is not None else np.zeros(len(last), dtype=bool)
        closes: list[float | int | None] = [int(t) * kernel.unit + 1 for t in last]
        return Windows(batch, start, end, (hi - lo).astype(np.int64), lo.astype(np.int64),
                       final, closes)

    def reach_of(self, end: Any) -> Any:
        return end - 1  # a row at or before a window's last start falls in its span

    def retain(self, rows: pa.Table, found: Windows, count: int
               ) -> tuple[pa.Table, float | int | None]:
        """The rows after the last retired window's first start: the next windows'
        (and the last start times', which make no window yet)."""
        ticks = to_ticks(rows.column(self.kernel.time).combine_chunks(),
                         self.kernel.time_kind)
        return rows.slice(int(np.searchsorted(ticks, found.start[count - 1],
                                              side="right"))), None

    def own_end(self, rows: pa.Table) -> Ticks:
        ticks = to_ticks(rows.column(self.kernel.time).combine_chunks(),
                         self.kernel.time_kind)
        return ticks + 1


@dataclass(frozen=True)
class SnapshotWindows:
    """Snapshot windows for the revision layer: the batch kernel over a key's kept
    events, one window between consecutive distinct start and end points where an event
    is alive, identified by those points, final once no later event can start before
    its end; a late event adds points, so the windows it splits are replaced by the
    parts. The events kept are those alive at or after the first window kept (and those
    ending there, whose end is a point), so windows before it recomputed over them are
    left out (`Windows.since`)."""

    kernel: SnapshotKernel
    replaces: bool = True

    def windows(self, rows: pa.Table, horizon: float | int) -> Windows:
        kernel = self.kernel
        if rows.num_rows == 0:
            return no_windows(kernel.schema)
        batch, start_k = interval_windows(kernel, rows)
        last = batch.column("window_end")
        known = np.asarray(last.is_valid())
        end_k = np.where(known, kernel.ticks(last.fill_null(batch.column("window_start"))),
                         iv.END_OF_TIME)
        begins, ends = kernel.lifetimes(rows)
        alive = (np.searchsorted(np.sort(begins), start_k, side="right")
                 - np.searchsorted(np.sort(ends), start_k, side="right"))
        bound = kernel.first_start(horizon)
        final = known & (end_k <= bound) if bound is not None else np.zeros(
            len(end_k), dtype=bool)
        closes: list[float | int | None] = [
            (int(e) - 1) * kernel.unit + 1 if k else None
            for e, k in zip(end_k, known, strict=True)]
        unit = kernel.unit
        end = np.where(known, end_k * unit, iv.END_OF_TIME)
        return Windows(batch, start_k * unit, end, alive.astype(np.int64),
                       np.zeros(len(end), dtype=np.int64), final, closes)

    def reach_of(self, end: Any) -> Any:
        return end - 1  # a row starting before the last retired window's end reaches it

    def own_end(self, rows: pa.Table) -> Ticks:
        _, ends = self.kernel.lifetimes(rows)
        return np.where(ends == iv.END_OF_TIME, ends, ends * self.kernel.unit)

    def retain(self, rows: pa.Table, found: Windows, count: int
               ) -> tuple[pa.Table, float | int | None]:
        cut = found.end[count - 1].item()
        _, ends = self.kernel.lifetimes(rows)
        alive = (ends == iv.END_OF_TIME) | (ends * self.kernel.unit >= cut)
        return rows.filter(pa.array(alive)), cut


@dataclass(frozen=True)
class HoppingRevised:
    """Tumbling and hopping windows on the rows-carrying operator for the revision
    layer, over point events (an aggregation without pane partials) or interval events:
    the batch kernel over a key's kept rows. Window `[w, w + size)` (closed at its
    start, open at its end; output time = its end) holds every event whose lifetime
    `[start, end)` overlaps it (a point event, or an interval that ends where it
    starts, lasts one tick; an open-ended one lasts to the end of time). A window's
    identity is fixed by the grid, so a late row only changes the windows it overlaps
    (or makes the ones that had no row). Windows overlap, so the rows kept are those
    that reach past the last retired window's successor's start (open-ended ones for
    ever), and windows recomputed over them that start at or before the last retired
    one are left out.

    Windows are computed up to the horizon of the kept rows (one tick after the newest
    start, or the newest finite end if later) or the watermark's, whichever is later,
    and one hop more: beyond, only open-ended events remain, in windows that are all
    open; the batch kernel's one row for all of them (null end) is never written, each
    such window being written on its own once the watermark reaches it (as the stream
    without revisions writes them)."""

    kernel: HoppingKernel
    replaces: bool = False

    def windows(self, rows: pa.Table, horizon: float | int) -> Windows:
        kernel = self.kernel
        if rows.num_rows == 0:
            return no_windows(kernel.schema)
        w = kernel.window
        start, end = kernel.lifetimes(rows)
        kernel.check_tick_range(start, end)
        finite = end != iv.END_OF_TIME
        reach = int(start.max()) + 1
        if finite.any():
            reach = max(reach, int(end[finite].max()))
        bound = kernel.first_start(horizon)
        if bound is not None:
            reach = max(reach, bound)
        groups, found, _ = kernel.hopping(start, end, clamped(reach + w.hop))
        kernel.check_bounds(found)
        found = kernel.subset(found, found.end_known)  # not the row for all the rest
        batch = kernel.emit(rows, start, end, groups, found,
                            np.zeros(len(found.group), dtype=np.int64))
        start_k = kernel.ticks(batch.column("window_start"))
        order = np.argsort(start_k, kind="stable")
        batch = batch.take(pa.array(order))
        start_k = start_k[order]
        end_k = kernel.ticks(batch.column("window_end"))
        inside = (np.searchsorted(np.sort(start), end_k, side="left")
                  - np.searchsorted(np.sort(end), start_k, side="right"))
        final = end_k <= bound if bound is not None else np.zeros(len(end_k), dtype=bool)
        unit = kernel.unit
        closes: list[float | int | None] = [(int(e) - 1) * unit + 1 for e in end_k]
        return Windows(batch, start_k * unit, end_k * unit, inside.astype(np.int64),
                       np.zeros(len(end_k), dtype=np.int64), final, closes)

    def reach_of(self, end: Any) -> Any:
        return end - 1  # a row starting before the last retired window's end may reach it

    def own_end(self, rows: pa.Table) -> Ticks:
        """The end of the last window a row's lifetime overlaps: its last tick + size
        (an open-ended row's windows never end)."""
        kernel = self.kernel
        _, end = kernel.lifetimes(rows)
        last = shifted(end, kernel.window.size - 1)
        return np.where(end == iv.END_OF_TIME, end, last * kernel.unit)

    def retain(self, rows: pa.Table, found: Windows, count: int
               ) -> tuple[pa.Table, float | int | None]:
        """The rows whose lifetime reaches past the start of the window after the last
        retired one (the first that can still be written); the windows starting at or
        before the last retired one are left out."""
        kernel = self.kernel
        last = found.start[count - 1].item()
        _, end = kernel.lifetimes(rows)
        after = last // kernel.unit + kernel.window.hop
        return rows.filter(pa.array(end > after)), last + 1


@dataclass(frozen=True)
class RevisedState:
    """One key's state with revisions: its kept rows (sorted), the windows written
    (`emitted`), the horizon it was last fed up to (`fed`, 0: never) and the end of
    the last window it retired (`retired`, None: none)."""

    rows: pa.Table
    emitted: pa.Table
    fed: int | float = 0
    retired: int | float | None = None
    cut: int | float | None = None
    """Windows starting before it are retired (kinds whose kept rows also give parts of
    retired windows: `KindWindows.retain`)."""

    def to_row(self, spec: str) -> tuple[int, str, bytes, bytes, int]:
        """The value the operator stores, in the shape of `StreamState.to_row`: the
        format, the spec hash, the rows' bytes, `emitted`'s bytes (`retired` in its
        metadata) and `fed`."""
        emitted = self.emitted.replace_schema_metadata(
            {_RETIRED_KEY: json.dumps([self.retired, self.fed, self.cut]).encode()})
        return (REVISED_STATE_VERSION, spec, table_bytes(self.rows), table_bytes(emitted),
                math.floor(self.fed))

    @classmethod
    def from_row(cls, row: Sequence[Any], spec: str) -> RevisedState:
        """A stored value read back; one made for another query or format is refused."""
        version, stored_spec, rows, emitted, _fed = row
        check_stored(version, REVISED_STATE_VERSION, stored_spec, spec)
        table = table_of(bytes(emitted))
        retired, fed, cut = json.loads((table.schema.metadata or {}).get(
            _RETIRED_KEY, b"[null, 0, null]").decode())
        return cls(table_of(bytes(rows)), table.replace_schema_metadata(None), fed, retired,
                   cut)


RevisedStep = Step[RevisedState]
"""What one handler call gives (output batches with `revision`, `final` and, for a kind
whose identities change, `replaces`)."""


@dataclass(frozen=True)
class RevisedKernel:
    """One key's stream logic with revisions (see the module's docstring): `kind` the
    window kind's recomputation, `schema` its input columns, `time`/`time_kind` its
    time column, `order` the columns that sort a key's rows, `spec` the query's spec
    hash, `allowed` the allowed lateness in ticks (None: `emit="changes"` alone),
    `changes` whether open windows are written early, `keys` the number of key
    columns of the output."""

    kind: KindWindows
    schema: pa.Schema
    time: str
    time_kind: str
    order: tuple[str, ...]
    spec: str
    allowed: int | None
    changes: bool
    keys: int

    @property
    def tick_type(self) -> pa.DataType:
        return pa.float64() if self.time_kind == "float" else pa.int64()

    def empty(self) -> RevisedState:
        emitted = pa.schema([pa.field(START, self.tick_type), pa.field(END, self.tick_type),
                             pa.field(REVISION, pa.int64()), pa.field(FINAL, pa.bool_()),
                             pa.field(ROWS, pa.int64())])
        return RevisedState(self.schema.empty_table(), emitted.empty_table())

    def ticks(self, table: pa.Table) -> Ticks:
        return to_ticks(table.column(self.time).combine_chunks(), self.time_kind)

    def split_late(self, state: RevisedState | None, rows: pa.Table, watermark_ms: int
                   ) -> tuple[pa.Table, pa.Table]:
        """A batch's new rows of the key as (applied, late): late when it could reach a
        retired window, or (`on_late="update"`) when the window it alone would make
        ended more than the allowed lateness before the batch's horizon. (With
        `emit="changes"` alone, Spark's late filter drops the late rows first.)"""
        state = self.empty() if state is None else state
        if rows.num_rows == 0:
            return rows, rows.slice(0, 0)
        late = np.zeros(rows.num_rows, dtype=bool)
        if state.retired is not None:
            late |= self.ticks(rows) <= state.retired
        if self.allowed is not None and watermark_ms > 0:
            horizon = max(watermark_ms * TICKS_PER_MS + 1, state.fed)
            late |= shifted(self.kind.own_end(rows), self.allowed) < horizon
        if not late.any():
            return rows, rows.slice(0, 0)
        return rows.filter(pa.array(~late)), rows.filter(pa.array(late))

    def on_rows(self, state: RevisedState | None, rows: pa.Table, watermark_ms: int
                ) -> RevisedStep:
        """A micro-batch's new rows of the key (late ones counted, the others applied),
        then what the watermark makes final."""
        state = self.empty() if state is None else state
        applied, late = self.split_late(state, rows, watermark_ms)
        below = int((self.ticks(applied) < state.fed).sum()) if state.fed > 0 else 0
        kept = pa.concat_tables([state.rows, applied.select(self.schema.names)
                                 .cast(self.schema)])
        kept = kept.take(sort_order(kept, self.order)) if applied.num_rows else kept
        step = self.advance(RevisedState(kept, state.emitted, state.fed, state.retired,
                                         state.cut),
                            watermark_ms)
        return RevisedStep(step.outputs, step.state, step.timer, late.num_rows, below)

    def on_timer(self, state: RevisedState | None, watermark_ms: int) -> RevisedStep:
        """The key's timer fired: what the watermark has made final or retired."""
        return self.advance(self.empty() if state is None else state, watermark_ms)

    def advance(self, state: RevisedState, watermark_ms: int) -> RevisedStep:
        """Write what changed and what the horizon of `watermark_ms` makes final; retire
        the windows past the allowed lateness; set the timer."""
        horizon: float | int = watermark_ms * TICKS_PER_MS + 1 if watermark_ms > 0 \
            else -math.inf
        horizon = max(horizon, state.fed) if state.fed > 0 else horizon
        found = self.kind.windows(state.rows, horizon).since(state.cut)
        emitted = state.emitted
        e_start = emitted.column(START).to_numpy()
        e_end = emitted.column(END).to_numpy()
        e_revision = emitted.column(REVISION).to_numpy()
        e_final = emitted.column(FINAL).to_numpy(zero_copy_only=False)
        e_rows = emitted.column(ROWS).to_numpy()
        n = len(found.start)
        index = {pair: j for j, pair in enumerate(zip(e_start.tolist(), e_end.tolist(),
                                                      strict=True))}
        match = np.array([index.get(pair, -1) for pair in zip(
            found.start.tolist(), found.end.tolist(), strict=True)], dtype=np.int64)
        known = match >= 0
        before_rows = np.full(n, -1, dtype=np.int64)
        before_final = np.zeros(n, dtype=bool)
        before_rows[known] = e_rows[match[known]]
        before_final[known] = e_final[match[known]]
        changed = (before_rows != found.rows) | (found.final & ~before_final)
        write = changed & (found.final | self.changes)
        written = np.flatnonzero(write)
        stays = np.ones(len(e_start), dtype=bool)  # the entries no written row replaces
        replaced_by: list[list[int]] = []
        revisions = np.zeros(len(written), dtype=np.int64)
        current = np.zeros(len(e_start), dtype=bool)
        current[match[known]] = True
        for j, i in enumerate(written):
            overlaps = np.flatnonzero((e_start < found.end[i]) & (found.start[i] < e_end)
                                      & ~current)
            others = [int(o) for o in overlaps]
            replaced_by.append(others)
            before = [int(e_revision[o]) for o in others]
            if match[i] >= 0:
                before.append(int(e_revision[match[i]]))
            revisions[j] = max(before) + 1 if before else 0
            stays[others] = False
            if match[i] >= 0:
                stays[match[i]] = False
        outputs: list[pa.RecordBatch] = []
        if len(written):
            outputs.append(self.rows_out(found, written, revisions, replaced_by,
                                         e_start, e_end))
        kept_entries = emitted.filter(pa.array(stays))
        added = pa.table({START: pa.array(found.start[written], self.tick_type),
                          END: pa.array(found.end[written], self.tick_type),
                          REVISION: pa.array(revisions, pa.int64()),
                          FINAL: pa.array(found.final[written], pa.bool_()),
                          ROWS: pa.array(found.rows[written], pa.int64())},
                         schema=emitted.schema)
        emitted = pa.concat_tables([kept_entries, added])
        rows, retired, cut = state.rows, state.retired, state.cut
        retiring = found.final & (shifted(found.end, self.allowed or 0) < horizon)
        count = int(np.argmin(retiring)) if not retiring.all() else n
        if count:
            retired = self.kind.reach_of(found.end[count - 1]).item()
            rows, now = self.kind.retain(rows, found, count)
            cut = cut if now is None else now
            emitted = self.without_retired(emitted, found, count)
        fed = max(state.fed, horizon) if horizon != -math.inf else state.fed
        timer = self.timer(found, count, horizon)
        return RevisedStep(outputs, RevisedState(rows, emitted, fed, retired, cut), timer)

    def without_retired(self, emitted: pa.Table, found: Windows, count: int) -> pa.Table:
        """`emitted` without the entries of the first `count` windows, retired (an
        entry awaiting a row that replaces it stays: its rows are in a kept window)."""
        retired = set(zip(found.start[:count].tolist(), found.end[:count].tolist(),
                          strict=True))
        pairs = zip(emitted.column(START).to_pylist(), emitted.column(END).to_pylist(),
                    strict=True)
        return emitted.filter(pa.array([p not in retired for p in pairs]))

    def timer(self, found: Windows, retired: int, horizon: float | int) -> int | None:
        """The watermark (ms) at which the key next has something to do: its earliest
        open window becomes final, or its oldest kept window retires."""
        due: list[float | int] = [c for c, final in zip(found.closes, found.final,
                                                        strict=True)
                                  if c is not None and not final]
        if retired < len(found.start) and found.final[retired]:
            end = found.end[retired]
            due.append(shifted(np.asarray([end]), self.allowed or 0)[0].item() + 1)
        if not due:
            return None
        first = min(due)
        return -(-(math.ceil(first) - 1) // TICKS_PER_MS)

    def rows_out(self, found: Windows, written: npt.NDArray[np.int64],
                 revisions: npt.NDArray[np.int64], replaced_by: list[list[int]],
                 e_start: Ticks, e_end: Ticks) -> pa.RecordBatch:
        """The written windows' rows with `revision` and `final` (and `replaces`) after
        `time`."""
        batch = found.batch.take(pa.array(written))
        at = self.keys + 3
        columns = list(batch.columns)
        names = list(batch.schema.names)
        added = [pa.array(revisions, pa.int64()), pa.array(found.final[written], pa.bool_())]
        added_names = [REVISION, FINAL]
        if self.kind.replaces:
            added.append(self.replaces_column(batch, replaced_by, e_start, e_end))
            added_names.append(REPLACES)
        columns[at:at] = added
        names[at:at] = added_names
        return pa.RecordBatch.from_arrays(columns, names=names)

    def replaces_column(self, batch: pa.RecordBatch, replaced_by: list[list[int]],
                        e_start: Ticks, e_end: Ticks) -> pa.Array:
        """Each row's replaced windows as a list of (window_start, window_end)."""
        kind = self.time_kind
        bound = batch.schema.field("window_start").type
        flat = [o for others in replaced_by for o in others]
        starts = np.asarray(e_start[flat]) if flat else np.zeros(0, dtype=e_start.dtype)
        ends = np.asarray(e_end[flat]) if flat else np.zeros(0, dtype=e_end.dtype)
        scale = getattr(getattr(self.kind, "kernel", None), "time_scale", 0)
        known = ends != sk.forever(ends) if len(ends) else np.zeros(0, dtype=bool)
        struct = pa.StructArray.from_arrays(
            [from_ticks(starts, np.ones(len(starts), dtype=bool), kind, scale).cast(bound),
             from_ticks(ends, known, kind, scale).cast(bound)],
            names=["window_start", "window_end"])
        offsets = np.concatenate([[0], np.cumsum([len(o) for o in replaced_by])])
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)


def kind_windows(kernel: object) -> KindWindows | None:
    """The revision layer's view of a kernel (None: a kind without revisions here)."""
    if isinstance(kernel, SessionKernel):
        return SessionWindows(kernel)
    if isinstance(kernel, CountKernel):
        return CountByStartWindows(kernel)
    if isinstance(kernel, SnapshotKernel):
        return SnapshotWindows(kernel)
    if isinstance(kernel, HoppingKernel) and kernel.window.output == "windows":
        return HoppingRevised(kernel)
    return None
