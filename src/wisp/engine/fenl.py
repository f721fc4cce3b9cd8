"""Reset (`Since`) and trailing-period (`Trailing`) windows: Spark partitions by key and
sorts, an Arrow kernel walks each key's events with its ticks.

Shape: [crossJoin with the one-row newest-event aggregate, for calendar tick rows] +
`repartition(key)` + `sortWithinPartitions(key, time, tie-break)` + `mapInArrow`.
Predicate ticks are evaluated by Spark as a column next to each row; calendar ticks are
computed on the executors (`wisp.spec.calendar`), never on the driver.

Output bounds: for predicate ticks `window_start`/`window_end` are the times of the
window's first and last events (both inclusive); for calendar ticks the window is
`(window_start, window_end]`: `window_start` is the tick before the window's first
period, `window_end` the row's time (event rows) or the tick (tick rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..kernels import fenl as kf
from ..plan.fenl import TickDetails
from ..plan.nodes import Plan
from ..spec.windows import CalendarTick
from .arrow import AggregateJob, PerKeyKernel, aggregate
from .arrow_codec import from_ticks, to_ticks, with_nulls
from .columns import col, guarded
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, by_key, output_fields

HIDDEN_TICK = "__wisp_tick__"
HIDDEN_NEWEST = "__wisp_newest__"
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Rows:
    """Output rows of one key: frames `[lo, hi)`, bounds, times, and which are valid."""

    lo: IntArray
    hi: IntArray
    start: IntArray
    end: IntArray
    time: IntArray
    valid: npt.NDArray[np.bool_]


def _concat(parts: list[Rows]) -> Rows:
    if len(parts) == 1:
        return parts[0]
    return Rows(*(np.concatenate([getattr(p, f) for p in parts])
                  for f in ("lo", "hi", "start", "end", "time", "valid")))


@dataclass(frozen=True)
class TickKernel(PerKeyKernel):
    """The executor side: picklable, no Spark objects."""

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

    def predicate_rows(self, group: pa.Table, times: IntArray) -> Rows:
        flags = np.asarray(pc.fill_null(group.column(self.tick_column).combine_chunks(), False)
                           .to_numpy(zero_copy_only=False), dtype=bool)
        m = len(times)
        if self.trailing:
            lo, hi, complete = kf.trailing_predicate(flags, self.n)
            valid = complete | self.partial
        else:
            lo, hi = kf.since_predicate(flags)
            valid = np.ones(m, dtype=bool)
        anchors = np.arange(m, dtype=np.int64)
        if self.emit == "ticks" and not self.trailing:
            anchors = np.nonzero(flags)[0].astype(np.int64)
        lo, hi = lo[anchors], hi[anchors]
        return Rows(lo, hi, times[lo], times[anchors], times[anchors], valid[anchors])

    def calendar_rows(self, group: pa.Table, times: IntArray) -> Rows:
        tick = self.calendar
        assert tick is not None
        back = self.n if self.trailing else 1
        with_ticks = self.emit != "events" and not self.trailing
        upper = int(times[-1])
        if with_ticks:
            newest = to_ticks(group.column(self.newest_column).combine_chunks().slice(0, 1),
                              self.time_kind)
            upper = max(upper, int(newest[0]))
        ticks, first, last = kf.tick_table(tick, int(times[0]), upper, back)
        parts: list[Rows] = []
        if self.trailing or self.emit != "ticks":
            lo, hi, starts, complete = kf.calendar_events(times, ticks, back, first)
            valid = complete | self.partial if self.trailing else np.ones(len(times), bool)
            parts.append(Rows(lo, hi, starts, times, times, valid))
        if with_ticks:
            lo, hi, starts, ends = kf.calendar_ticks(times, ticks, first, last)
            parts.append(Rows(lo, hi, starts, ends, ends, np.ones(len(lo), dtype=bool)))
        return _concat(parts)

    def run_group(self, group: pa.Table) -> pa.RecordBatch:
        times = to_ticks(group.column(self.time).combine_chunks(), self.time_kind)
        rows = (self.calendar_rows(group, times) if self.calendar is not None
                else self.predicate_rows(group, times))
        m = len(rows.lo)
        everywhere = np.ones(m, dtype=bool)
        columns: list[pa.Array] = []
        first_row = pa.array(np.zeros(m, dtype=np.int64))
        for key in self.keys:
            columns.append(group.column(key).combine_chunks().take(first_row))
        for ticks in (rows.start, rows.end, rows.time):
            columns.append(from_ticks(ticks, everywhere, self.time_kind, self.time_scale))
        for job in self.aggregates:
            result = aggregate(job, group, times, rows.lo, rows.hi)
            columns.append(with_nulls(result, rows.valid))
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def build(plan: Plan, observation: Observation) -> DataFrame:
    """The Spark plan of `Since` and `Trailing` windows."""
    events = plan.events
    details: TickDetails = plan.details
    df = guarded(events, observation)
    keys = list(events.key)
    hidden: list[str] = []
    tick_column = unused(HIDDEN_TICK, df.columns)
    newest_column = unused(HIDDEN_NEWEST, df.columns)
    if details.predicate is not None:
        df = df.withColumn(tick_column, details.predicate)
        hidden.append(tick_column)
    if details.calendar is not None and details.emit != "events" and not details.trailing:
        newest = events.df.agg(F.max(col(events.time.name)).alias(newest_column))
        df = df.crossJoin(newest)
        hidden.append(newest_column)
    needed = list(dict.fromkeys([*keys, events.time.name, *hidden,
                                 *aggregation_columns(plan)]))
    narrow = by_key(df, keys, [events.time.name, *plan.tie_break]).select(
        *[col(c) for c in needed])
    fields = output_fields(events, plan.aggregations)
    kernel = TickKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, calendar=details.calendar, n=details.n,
        partial=details.partial, emit=details.emit, trailing=details.trailing,
        aggregates=aggregate_jobs(plan), schema=arrow_schema(fields),
        tick_column=tick_column, newest_column=newest_column)
    return narrow.mapInArrow(kernel, T.StructType(fields))


def unused(name: str, taken: list[str]) -> str:
    """`name`, suffixed until no column of the input has it."""
    candidate, number = name, 0
    while candidate in taken:
        number += 1
        candidate = f"{name}{number}"
    return candidate
