"""What a timeline picture draws (`wisp.plot`), chosen inside Spark: the first keys in
key order, the time slice holding the first events of theirs, and the outputs of the
query in that slice. Only what is drawn reaches the driver."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..binding import Events
from .columns import col, ntz_micros


def plot_number(column: Column, kind: str) -> Column:
    """A time as a number to draw: microseconds for time kinds, else the value."""
    if kind == "timestamp_ntz":
        return ntz_micros(column)
    if kind in ("timestamp", "date"):
        return F.unix_micros(column.cast("timestamp"))
    return column.cast("double")


@dataclass
class Sample:
    """What is drawn: lanes (key labels), events and outputs, and what was left out."""

    lanes: list[str]
    events: list[tuple[int, float, float | None, bool]]  # lane, time, end, has end
    outputs: list[tuple[int, float | None, float | None, float, Any]]
    note: str


def _label(values: Sequence[Any]) -> str:
    return ", ".join("null" if v is None else str(v) for v in values) or "all events"


def _key_condition(keys: Sequence[str], chosen: Sequence[Sequence[Any]]) -> Column:
    if not keys:
        return F.lit(True)
    return reduce(lambda a, b: a | b, [
        reduce(lambda a, b: a & b, [col(k).eqNullSafe(F.lit(v)) for k, v in zip(
            keys, values, strict=True)]) for values in chosen])


def sample(ev: Events, result: DataFrame, max_keys: int, max_events: int) -> Sample:
    """Choose keys and a time slice inside Spark; bring only what is drawn."""
    keys = list(ev.key)
    kind = ev.time.kind
    notes: list[str] = []
    chosen: list[tuple[Any, ...]] = [()]
    if keys:
        distinct = ev.df.select(*[col(k) for k in keys]).distinct()
        chosen = [tuple(r) for r in distinct.orderBy(
            *[col(k).asc_nulls_first() for k in keys]).limit(max_keys).collect()]
        total_keys = distinct.count()
        if total_keys > len(chosen):
            notes.append(f"first {len(chosen)} of {total_keys:,} keys")
    lane_of = {repr(values): i for i, values in enumerate(chosen)}
    condition = _key_condition(keys, chosen)
    t = plot_number(col(ev.time.name), kind)
    end = plot_number(col(ev.end), kind) if ev.end else F.lit(None).cast("double")
    events = ev.df.filter(condition & col(ev.time.name).isNotNull())
    shown = events.select(*[col(k) for k in keys], t.alias("t"), end.alias("e")) \
        .orderBy("t", *[col(k).asc_nulls_first() for k in keys]).limit(max_events).collect()
    total_events = events.count()
    drawn_events = [(lane_of[repr(tuple(r[:len(keys)]))], float(r["t"]),
                     None if r["e"] is None else float(r["e"]), ev.end is not None)
                    for r in shown]
    cut = total_events > len(shown)
    if cut:
        notes.append(f"first {len(shown)} of {total_events:,} events in time")
    outputs: list[tuple[int, float | None, float | None, float, Any]] = []
    if shown:
        lo, hi = min(e[1] for e in drawn_events), max(e[1] for e in drawn_events)
        value = result.columns[len(keys) + 3]
        out_t = plot_number(F.col("time"), kind)
        rows_df = result.filter(condition).select(
            *[col(k) for k in keys], plot_number(F.col("window_start"), kind).alias("ws"),
            plot_number(F.col("window_end"), kind).alias("we"), out_t.alias("t"),
            col(value).alias("v")).filter(F.col("t") >= lo)
        if cut:  # the slice's outputs; uncut, also those after the last event (at ticks,
            rows_df = rows_df.filter(F.col("t") <= hi)  # window ends, time triggers)
        rows = rows_df.orderBy("t", *[col(k) for k in keys]).limit(4 * max_events).collect()
        outputs = [(lane_of[repr(tuple(r[:len(keys)]))], _float(r["ws"]), _float(r["we"]),
                    float(r["t"]), r["v"]) for r in rows]
        if len(rows) == 4 * max_events:
            notes.append(f"first {len(rows)} outputs")
    return Sample([_label(v) for v in chosen], drawn_events, outputs, "; ".join(notes))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
