"""Events: a DataFrame's columns bound to the roles time, end, key and order.

Binding validates the schema at once (a missing column, a wrong type or an unknown option
is a `WispError` naming the parameter). Data checks (null time, `end < time`) run inside
the query; `Events.validate()` runs them eagerly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import types as T

from .errors import WispUnsupportedError, bad_value, did_you_mean
from .spec.aggregates import Aggregation
from .spec.windows import Window

if TYPE_CHECKING:
    from .windowed import WindowedEvents

TimeKind = Literal["timestamp", "timestamp_ntz", "date", "integer", "decimal", "float"]
NullTimePolicy = Literal["error", "drop"]
TIME_TYPES = "a timestamp, timestamp_ntz, date, integer, decimal or floating-point column"


@dataclass(frozen=True)
class TimeColumn:
    """The time column: its name, its kind, and its Spark type.

    Ticks are microseconds for timestamp, timestamp_ntz and date time; the column's own
    unit for integer and float time; units of `10^-scale` for decimal time.
    """

    name: str
    kind: TimeKind
    data_type: T.DataType

    @property
    def scale(self) -> int:
        return self.data_type.scale if isinstance(self.data_type, T.DecimalType) else 0

    @property
    def uses_time_units(self) -> bool:
        """True when durations are written as '2s' or timedeltas, False for numbers."""
        return self.kind in ("timestamp", "timestamp_ntz", "date")


def time_kind(data_type: T.DataType) -> TimeKind | None:
    if isinstance(data_type, T.TimestampType):
        return "timestamp"
    if isinstance(data_type, T.TimestampNTZType):
        return "timestamp_ntz"
    if isinstance(data_type, T.DateType):
        return "date"
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "integer"
    if isinstance(data_type, T.DecimalType):
        return "decimal"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "float"
    return None


def _field(df: DataFrame, param: str, name: object) -> T.StructField:
    if not isinstance(name, str) or not name:
        raise bad_value(param, "a column name", name)
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        hint = did_you_mean(name, fields).strip(" ()")
        raise bad_value(param, f"a column of the DataFrame (columns: {', '.join(fields)})",
                        name, hint=hint)
    return fields[name]


class Events:
    """A DataFrame bound to event roles. Build it with `wisp.events(...)`."""

    def __init__(self, df: DataFrame, time: TimeColumn, end: str | None,
                 key: tuple[str, ...], order: str | None,
                 on_null_time: NullTimePolicy) -> None:
        self.df = df
        self.time = time
        self.end = end
        self.key = key
        self.order = order
        self.on_null_time = on_null_time

    @property
    def is_interval(self) -> bool:
        return self.end is not None

    def __repr__(self) -> str:
        parts = [f"time={self.time.name!r} ({self.time.kind})"]
        if self.end:
            parts.append(f"end={self.end!r}")
        if self.key:
            parts.append(f"key={list(self.key)!r}")
        if self.order:
            parts.append(f"order={self.order!r}")
        return f"Events({', '.join(parts)})"

    def window(self, window: Window) -> WindowedEvents:
        """These events seen through `window`; call `.agg(...)` on the result."""
        from .windowed import WindowedEvents

        if not isinstance(window, Window):
            raise bad_value("window", "a wisp window such as wisp.Rows(-2, 0) or "
                            "wisp.Range.past('10s')", window)
        return WindowedEvents(self, window)

    def agg(self, *aggregations: Aggregation) -> DataFrame:
        """Cumulative aggregation: one output per input event, over every event of its key
        up to and including it (ties in time in tie-break order).

        Output: `window_start` = the key's first time, `window_end` = `time` = the event's
        time (both inclusive)."""
        from .windowed import run

        return run(self, None, aggregations)

    def plot(self, window: Window | None = None, *aggregations: Aggregation, out: str,
             **options: Any) -> None:
        """Draw these events and `window`'s outputs on a timeline (PNG or SVG at `out`);
        needs the `plot` extra (matplotlib). See `wisp.plot.plot_events`."""
        from .plot import plot_events

        plot_events(self, window, *aggregations, out=out, **options)

    def validate(self) -> None:
        """Run the data checks now (one Spark job): raises `WispError` on a null time."""
        from .engine.checks import validate_events

        validate_events(self)


def events(df: DataFrame, time: str, *, end: str | None = None,
           key: str | Sequence[str] | None = None, order: str | None = None,
           on_null_time: NullTimePolicy = "error") -> Events:
    """Bind `df`'s columns to event roles.

    `time`: a timestamp, timestamp_ntz, date, integer, decimal or float column.
    `end`: interval events live on `[time, end)`; a null end is open to the end of time.
    `key`: a column or a list of columns; every window is computed per key (a null key
    is a key of its own). `None` or an empty list: one global stream.
    `order`: breaks ties in `time` (and is the arrival order of the sliding family).
    `on_null_time`: "error" (default: the query fails naming the column) or "drop" (rows
    with a null time are dropped on purpose and counted in `wisp.report`).
    """
    if not isinstance(df, DataFrame):
        raise bad_value("df", "a PySpark DataFrame", type(df).__name__)
    if df.isStreaming:
        raise WispUnsupportedError("streaming DataFrames are not supported yet: "
                                   "`df` must be a batch DataFrame")
    time_field = _field(df, "time", time)
    kind = time_kind(time_field.dataType)
    if kind is None:
        raise bad_value("time", TIME_TYPES,
                        f"{time_field.dataType.simpleString()} column {time!r}")
    if end is not None:
        end_field = _field(df, "end", end)
        if end_field.dataType != time_field.dataType:
            raise bad_value("end", f"a column of the same type as `time` "
                            f"({time_field.dataType.simpleString()})",
                            f"{end_field.dataType.simpleString()} column {end!r}")
    keys: tuple[str, ...]
    if key is None:
        keys = ()
    elif isinstance(key, str):
        keys = (key,)
    elif isinstance(key, Sequence) and all(isinstance(k, str) for k in key):
        keys = tuple(key)  # an empty list, like None, means one global stream
    else:
        raise bad_value("key", "a column name, a list of column names or None", key)
    for k in keys:
        field = _field(df, "key", k)
        if isinstance(field.dataType, T.MapType):
            raise bad_value("key", "columns that Spark can group by (not maps)",
                            f"map column {k!r}")
    if len(set(keys)) != len(keys):
        raise bad_value("key", "distinct column names", list(keys))
    for role, name in (("time", time), ("end", end)):
        if name in keys:
            raise bad_value("key", f"columns other than the `{role}` column", name)
    if order is not None:
        order_field = _field(df, "order", order)
        if not isinstance(order_field.dataType, T.AtomicType):
            raise bad_value("order", "an orderable column (number, string, time)",
                            f"{order_field.dataType.simpleString()} column {order!r}")
    if on_null_time not in ("error", "drop"):
        raise bad_value("on_null_time", "'error' or 'drop'", on_null_time)
    return Events(df, TimeColumn(time, kind, time_field.dataType), end, keys, order,
                  on_null_time)


EDGE_END_COLUMN = "end"


def from_edges(df: DataFrame, time: str, *, edge: str, id: str,
               key: str | Sequence[str] | None = None) -> Events:
    """Interval events from start/end edge rows.

    `edge` is a string column holding "start" or "end"; `id` (with `key`) names the event
    an edge belongs to. Per (key, id), edges are taken in time order (a start before an
    end at the same time): each start edge opens an interval that the next edge closes
    when it is an end edge; a start edge without such an end edge is open-ended (null
    end, the end of time). The result has one row per start edge: the start row's columns
    without `edge`, plus a column `end` (the end edge's time).

    An end edge that closes nothing (no start edge of its id right before it), a null or
    unknown edge value: the query fails with a `WispError` naming the column and the id,
    as a null time does: no edge is dropped silently.
    """
    from pyspark.sql import Window as SparkWindow
    from pyspark.sql import functions as F

    if not isinstance(df, DataFrame):
        raise bad_value("df", "a PySpark DataFrame", type(df).__name__)
    edge_field = _field(df, "edge", edge)
    if not isinstance(edge_field.dataType, T.StringType):
        raise bad_value("edge", "a string column holding 'start' or 'end'",
                        f"{edge_field.dataType.simpleString()} column {edge!r}")
    id_field = _field(df, "id", id)
    if isinstance(id_field.dataType, T.MapType):
        raise bad_value("id", "a column that Spark can group by (not a map)",
                        f"map column {id!r}")
    if EDGE_END_COLUMN in df.columns:
        raise bad_value("df", f"a DataFrame without a column named {EDGE_END_COLUMN!r} "
                        "(from_edges writes the end time there)", EDGE_END_COLUMN)
    probe = events(df, time, key=key)  # validates time and key
    if edge in (time, id) or edge in probe.key or id == time:
        raise bad_value("edge", "a column other than `time`, `id` and `key`", edge)

    def c(name: str) -> Column:
        return F.col("`" + name.replace("`", "``") + "`")

    kind = c(edge)
    is_start, is_end = kind == F.lit("start"), kind == F.lit("end")
    bad_kind = ~F.coalesce(is_start | is_end, F.lit(False))
    by_event = SparkWindow.partitionBy(*[c(k) for k in probe.key], c(id)).orderBy(
        c(time).asc_nulls_first(), F.when(is_start, 0).otherwise(1))
    following_end = F.lead(kind).over(by_event) == F.lit("end")
    after_start = F.coalesce(F.lag(kind).over(by_event) == F.lit("start"), F.lit(False))
    paired = df.select("*", F.when(F.coalesce(following_end, F.lit(False)),
                                   F.lead(c(time)).over(by_event))
                       .alias(EDGE_END_COLUMN), after_start.alias("__wisp_after_start"))
    bad_edge = (f"WispError: `edge` column {edge!r} must hold 'start' or 'end', found a "
                "null or another value")
    orphan = F.concat(F.lit(f"WispError: `edge` column {edge!r} must close an interval "
                            f"opened by a start edge of the same `id` ({id!r}), found an end "
                            "edge without a start for id "),
                      F.coalesce(c(id).cast("string"), F.lit("null")))
    checked = paired.filter(
        F.when(bad_kind, F.raise_error(F.lit(bad_edge)))
        .when(is_end & ~c("__wisp_after_start"), F.raise_error(orphan))
        .otherwise(is_start))
    out = checked.drop(edge, "__wisp_after_start")
    return events(out, time, end=EDGE_END_COLUMN, key=key)
