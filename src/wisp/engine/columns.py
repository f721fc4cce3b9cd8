"""Column helpers shared by the strategies: quoting, output time types, data guards."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events, TimeColumn
from ..spec.time import MICROS_PER_UNIT


def col(name: str) -> Column:
    """A column by its exact name, whatever characters it holds."""
    return F.col("`" + name.replace("`", "``") + "`")


def output_time_type(time: TimeColumn) -> T.DataType:
    """The type of `window_start`, `window_end` and `time` in every result: the time
    column's type, widened to long for integer time, decimal(38, s) for decimal time and
    double for float time."""
    if time.kind == "integer":
        return T.LongType()
    if time.kind == "decimal":
        return T.DecimalType(38, time.scale)
    if time.kind == "float":
        return T.DoubleType()
    return time.data_type


DATA_ERROR = "WispError: "
"""How the message of a data check that fails the query in Spark (`raise_error`) starts:
`wisp.wisp_error` rebuilds a `WispInputError` from such a failure."""


def data_error(message: str) -> str:
    """`message` (a kernel's text, which may start "wisp: ") as a data check's message."""
    return DATA_ERROR + message.removeprefix("wisp: ")


def null_time_message(time: TimeColumn) -> str:
    return (f"WispError: `time` column {time.name!r} must not be null, found a null time; "
            "pass on_null_time='drop' to drop such rows on purpose (they are counted by "
            "wisp.report)")


def null_time_in_file(time: TimeColumn) -> Column:
    """`null_time_message`, naming the file the row was read from where Spark knows one
    (a file source, batch or stream): a file whose rows lack the time column reads it as
    null, and the message says which file to look at."""
    message = null_time_message(time)
    head, _, tail = message.partition("found a null time")
    source = F.input_file_name()
    return F.concat(F.lit(head + "found a null time"),
                    F.when(source != "", F.concat(
                        F.lit(" in file "), source,
                        F.lit(" (a file without the column reads it as null)")))
                    .otherwise(F.lit("")), F.lit(tail))


AS_IS = "yyyy"
"""A pattern for `to_timestamp_ltz`/`to_timestamp_ntz` over a value that already is a
timestamp of either kind: Spark ignores it there and only relabels the value's
microseconds (its `GetTimestamp` divides them by 1), no time zone read. Without a
pattern the same functions cast, through the session time zone."""


def ntz_micros(value: Column) -> Column:
    """A timestamp_ntz as the microseconds of its wall clock from the epoch, exact in
    every session time zone (a wall time that a daylight-saving change skips included):
    the value's own microseconds, relabelled a timestamp (`AS_IS`) and read. Spark has
    no cast from timestamp_ntz to a number, and its casts to a timestamp, its
    `timestamp_diff` and `unix_micros` of a cast all go through the session time zone
    (a skipped wall time comes out an hour later), and cost about a second over 4M
    rows where this costs nothing measurable (benchmarks/additional.md, session 27)."""
    return F.unix_micros(F.to_timestamp_ltz(value, F.lit(AS_IS)))


def ntz_from_micros(ticks: Column) -> Column:
    """Wall-clock microseconds from the epoch as a timestamp_ntz, in every session time
    zone: the inverse of `ntz_micros`, as cheap (`timestamp_add` to the epoch takes a
    zone-free path but about a second over 4M rows)."""
    return F.to_timestamp_ntz(F.timestamp_micros(ticks), F.lit(AS_IS))


def is_missing_time(time: TimeColumn) -> Column:
    t = col(time.name)
    return t.isNull() | F.isnan(t) if time.kind == "float" else t.isNull()


def fail_where(df: DataFrame, condition: Column, message: str | Column) -> DataFrame:
    """`df` unchanged, except that the query fails with `message` (wisp's error text) at
    the first row where `condition` holds: bad data is never dropped silently."""
    text = F.lit(message) if isinstance(message, str) else message
    return df.filter(F.when(condition, F.raise_error(text)).otherwise(F.lit(True)))


def grid_floor(ticks: Column, phase: int, step: int) -> Column:
    """The largest `phase + n*step` <= `ticks` (`0 <= phase < step`), without
    overflowing on the way: null where that point lies below the 64-bit range. One
    modulo a row: `pmod(ticks, step) - phase` lies in `[-phase, step - phase)`, so a
    negative one needs `step` added, not a second modulo (a tumbling window's bucket
    over integer time measured 1.5x Spark's `floor(t / size)` with two)."""
    offset = F.pmod(ticks, F.lit(step))
    if phase:
        shifted = offset - F.lit(phase)
        offset = F.when(shifted < F.lit(0), shifted + F.lit(step)).otherwise(shifted)
    return F.try_subtract(ticks, offset)


def or_fail(value: Column, message: str) -> Column:
    """`value`, and the query fails with `message` where it is null."""
    return F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value)


def whole_input(df: DataFrame, aggregate: Column) -> Column:
    """`aggregate` over all of `df`, as a constant column: one scalar subquery, which
    Spark runs once before the query (no join, nothing added to a shuffle). A global
    window would move every row to one partition; a cross join with the one-row
    aggregate measured no faster."""
    return df.select(aggregate).scalar()


def counted_where(condition: Column) -> Column:
    """The number of rows where `condition` holds, as an aggregate for an observation.
    Spark rewrites `count_if` through a common-expression projection that made an
    observed scan measurably slower than the bare scan (BENCHMARKS.md); counting the
    non-null values of `when(condition, 1)` costs what counting every row does."""
    return F.count(F.when(condition, F.lit(1)))


STREAM_COUNTERS = "wisp_rows"
"""The name of a stream's row counters in its progress reports (`observedMetrics`)."""
LATE_COUNTER = "wisp_late"
"""The named observation counting the late rows a stream's result emits
(`on_late="emit"`)."""
LATE_COUNTED = "wisp_late_counted"
"""The named observation counting the late rows wisp's operator drops and counts
(`Tumbling`/`Hopping` on pane partials, where Spark's late filter is off)."""


def guarded(events: Events, observation: Observation) -> DataFrame:
    """The events' DataFrame with the data guards of its null-time policy: rows with a
    null time fail the query (policy "error") or are dropped and counted (policy "drop").

    Only under "drop" does the query count its rows (`observation` gets rows_in and
    rejected_null_time as the scan reads them). Under "error" no row can be dropped, so
    the query carries no counter, and `wisp.report` counts the input when asked: the
    observation would cost a cheap query (a running sum, a `Tumbling(Count(1 000))`) a
    noticeable share of its time on every run."""
    missing = is_missing_time(events.time)
    future = too_far_ahead(events)
    if events.on_null_time == "drop":
        counters = [F.count(F.lit(1)).alias("rows_in"),
                    counted_where(missing).alias("rejected_null_time")]
        if future is not None:
            counters.append(counted_where(~missing & future).alias("rejected_future"))
        # a stream's counts are per micro-batch, in its progress reports
        df = events.df.observe(STREAM_COUNTERS if events.streaming else observation,
                               *counters)
        return df.filter(~missing if future is None else ~missing & ~future)
    checked = fail_where(events.df, missing, null_time_in_file(events.time))
    if future is None:
        return checked
    return checked.observe(STREAM_COUNTERS,
                           counted_where(future).alias("rejected_future")).filter(~future)


def too_far_ahead(events: Events) -> Column | None:
    """Where a stream's row is timed more than `max_future` after its micro-batch's
    processing time (Spark's `current_timestamp`, `localtimestamp` and `current_date`
    read the batch's time on a stream), or None without `max_future`."""
    ahead = events.max_future
    if ahead is None:
        return None
    t = col(events.time.name)
    if events.time.kind == "timestamp":
        return F.unix_micros(t) > F.unix_micros(F.current_timestamp()) + F.lit(ahead)
    if events.time.kind == "timestamp_ntz":  # wall clocks of the session's zone
        return ntz_micros(t) > ntz_micros(F.localtimestamp()) + F.lit(ahead)
    return (F.datediff(t, F.current_date()).cast("long") * F.lit(MICROS_PER_UNIT["d"])
            > F.lit(ahead))


def end_message(events: Events) -> Column:
    """The error of a row whose end is before its time, showing both values."""
    assert events.end is not None
    return F.concat(
        F.lit(f"WispError: `end` column {events.end!r} must not be before the `time` column "
              f"{events.time.name!r}, found end "),
        col(events.end).cast("string"), F.lit(" < time "),
        col(events.time.name).cast("string"))


def interval_guarded(events: Events, observation: Observation) -> DataFrame:
    """`guarded`, and for interval events a row whose end is before its time fails the
    query (`end_message`), as a null time does."""
    df = guarded(events, observation)
    if events.end is None:
        return df
    return fail_where(df, col(events.end) < col(events.time.name), end_message(events))
