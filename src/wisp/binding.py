"""Event roles bound to a DataFrame's columns: the data every layer reads of an event table.

`Events` here is the plain holder (the DataFrame, its time column, the columns bound to
end, key and order, the null-time policy) and `bind_events` the validation that makes
one; the public `wisp.events.Events` adds the query methods (`window`, `agg`, `plot`,
`validate`). This module sits below `engine/`, `windowed`, `plot` and `events`, and
imports none of them, so that each can import it without an import cycle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Literal, TypeVar, cast

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .errors import WispInputError, bad_value, did_you_mean
from .spec.time import MICROS_PER_UNIT, duration_to_ticks, is_time_duration

TimeKind = Literal["timestamp", "timestamp_ntz", "date", "integer", "decimal", "float"]
NullTimePolicy = Literal["error", "drop"]
LatePolicy = Literal["count", "emit", "update"]
TIME_TYPES = "a timestamp, timestamp_ntz, date, integer, decimal or floating-point column"
EDGE_END_COLUMN = "end"
"""The column wisp writes the end time to where it makes interval events of rows that have
none (`from_edges`; `snap_to_hops` of point events)."""


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


def column_field(df: DataFrame | TableSchema, param: str, name: object) -> T.StructField:
    """The schema field of `df` named by the argument `param` (a `WispError` naming
    `param`, with a "did you mean", when `df` has no such column)."""
    if not isinstance(name, str) or not name:
        raise bad_value(param, "a column name", name)
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        hint = did_you_mean(name, fields).strip(" ()")
        raise bad_value(param, f"a column of the DataFrame (columns: {', '.join(fields)})",
                        name, hint=hint)
    return fields[name]


class TableSchema:
    """A table known by its schema alone, standing in for a DataFrame where only the
    schema is read: a SQL table argument as a table function's `analyze` sees it
    (`wisp.sql`), before any Spark session or DataFrame exists there. A batch table;
    its column names compare as Spark's default does (case-insensitively)."""

    isStreaming = False

    def __init__(self, schema: T.StructType) -> None:
        self.schema = schema

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)


class Events:
    """A DataFrame bound to event roles: the data only. The public class, with the query
    methods, is `wisp.events.Events`; build one with `wisp.events(...)`."""

    def __init__(self, df: DataFrame, time: TimeColumn, end: str | None,
                 key: tuple[str, ...], order: str | None,
                 on_null_time: NullTimePolicy, lateness: int | None = None,
                 on_late: LatePolicy = "count") -> None:
        self.df = df
        self.time = time
        self.end = end
        self.key = key
        self.order = order
        self.on_null_time = on_null_time
        self.lateness = lateness
        """A stream's lateness in ticks of the time column (None: a batch table)."""
        self.on_late = on_late
        """A stream's late rows: counted ("count") or output ("emit")."""
        self.max_future: int | None = None
        self.allowed_lateness: int | None = None
        """With `on_late="update"`: how many ticks past its finality a window's state is
        kept for late rows, which update it and re-emit it (a new `revision`)."""
        """A stream's rows timed more than this many ticks after the micro-batch's
        processing time are rejected and counted (`max_future`); None: none is."""
        self.edges: tuple[str, str] | None = None
        """A stream from `wisp.from_edges`: its (edge, id) columns, paired as the rows
        pass the watermark (`runtime/windows/edges.py`); `end` is then a null column the pairing
        fills. None otherwise (a batch pairs its edges in the query itself)."""

    @property
    def streaming(self) -> bool:
        return self.lateness is not None

    @property
    def is_interval(self) -> bool:
        return self.end is not None

    def __repr__(self) -> str:
        parts = [f"time={self.time.name!r} ({self.time.kind})"]
        if self.end:
            parts.append(f"end={self.end!r}")
        if self.edges:
            parts.append(f"edges from edge={self.edges[0]!r}, id={self.edges[1]!r}")
        if self.key:
            parts.append(f"key={list(self.key)!r}")
        if self.order:
            parts.append(f"order={self.order!r}")
        if self.lateness is not None:
            parts.append(f"lateness={self.lateness} ticks")
            if self.on_late != "count":
                parts.append(f"on_late={self.on_late!r}")
        return f"Events({', '.join(parts)})"


E = TypeVar("E", bound=Events)


def bind_events(make: type[E], df: DataFrame | TableSchema, time: str, *, end: str | None = None,
                key: str | Sequence[str] | None = None, order: str | None = None,
                on_null_time: NullTimePolicy = "error", lateness: object = None,
                on_late: LatePolicy = "count", max_future: object = None,
                allowed_lateness: object = None) -> E:
    """Validate the roles of `wisp.events(df, time, ...)` against `df`'s schema and bind
    them: an instance of `make` (`Events` or a subclass). Every bad argument is a
    `WispError` naming its parameter."""
    if not isinstance(df, (DataFrame, TableSchema)):
        raise bad_value("df", "a PySpark DataFrame", type(df).__name__)
    check_distinct_columns(df)
    time_field = column_field(df, "time", time)
    kind = time_kind(time_field.dataType)
    if kind is None:
        raise bad_value("time", TIME_TYPES,
                        f"{time_field.dataType.simpleString()} column {time!r}")
    lateness_ticks = stream_lateness(df, time_field, kind, lateness)
    if end is not None:
        end_field = column_field(df, "end", end)
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
        field = column_field(df, "key", k)
        if isinstance(field.dataType, T.MapType):
            raise bad_value("key", "columns that Spark can group by (not maps)",
                            f"map column {k!r}")
    if len(set(keys)) != len(keys):
        raise bad_value("key", "distinct column names", list(keys))
    for role, name in (("time", time), ("end", end)):
        if name in keys:
            raise bad_value("key", f"columns other than the `{role}` column", name)
    if order is not None:
        order_field = column_field(df, "order", order)
        if not isinstance(order_field.dataType, T.AtomicType):
            raise bad_value("order", "an orderable column (number, string, time)",
                            f"{order_field.dataType.simpleString()} column {order!r}")
    if on_null_time not in ("error", "drop"):
        raise bad_value("on_null_time", "'error' or 'drop'", on_null_time)
    if on_late not in ("count", "emit", "update"):
        raise bad_value("on_late", "'count', 'emit' or 'update'", on_late)
    if on_late != "count" and lateness_ticks is None:
        raise bad_value("on_late", "'count' for a batch DataFrame (late rows are a "
                        "stream's)", on_late)
    # a TableSchema stands in for the DataFrame where only its schema is read (wisp.sql)
    bound = make(cast(DataFrame, df), TimeColumn(time, kind, time_field.dataType), end, keys, order,
                 on_null_time, lateness_ticks, on_late)
    bound.max_future = future_limit(df, kind, max_future)
    bound.allowed_lateness = allowed_span(time_field, kind, on_late, allowed_lateness)
    return bound


def allowed_span(time_field: T.StructField, kind: TimeKind, on_late: str,
                 allowed_lateness: object) -> int | None:
    """`allowed_lateness` in ticks of the time column: required with `on_late="update"`
    (how long a window's state is kept past its finality for late rows), refused
    otherwise."""
    if on_late != "update":
        if allowed_lateness is not None:
            raise bad_value("allowed_lateness", "None unless on_late='update' (it is how "
                            "long a final window still takes late rows)", allowed_lateness)
        return None
    if allowed_lateness is None:
        raise bad_value("allowed_lateness", "a positive duration with on_late='update' "
                        "(how long a final window still takes late rows, e.g. '10m')",
                        allowed_lateness)
    return stream_duration(time_field, kind, allowed_lateness, "allowed_lateness")


WALL_CLOCK_KINDS = ("timestamp", "timestamp_ntz", "date")
"""The time kinds a processing time compares with (`max_future`)."""


def future_limit(df: DataFrame | TableSchema, kind: TimeKind, max_future: object) -> int | None:
    """`max_future` in ticks (microseconds): None, or a positive duration on a stream
    whose time is a wall clock (a timestamp, timestamp_ntz or date column)."""
    if max_future is None:
        return None
    if not df.isStreaming:
        raise bad_value("max_future", "None for a batch DataFrame (it bounds how far "
                        "ahead of the processing time a stream's rows may be)", max_future)
    if kind not in WALL_CLOCK_KINDS:
        raise bad_value("max_future", f"None for {kind} time (it compares the time with "
                        "the processing time: timestamp, timestamp_ntz or date time)",
                        max_future)
    return positive_duration(max_future, "max_future", "'1h'")


def positive_duration(value: object, param: str, example: str) -> int:
    """A positive time duration (a string of the duration grammar or a timedelta) in
    microseconds, else a `WispInputError` naming `param`."""
    try:
        ticks = duration_to_ticks(value, param)
    except WispInputError:
        ticks = None
    if not isinstance(ticks, int) or ticks <= 0 or not is_time_duration(value):
        raise bad_value(param, f"a positive duration such as {example} or a timedelta",
                        value)
    return ticks


def check_distinct_columns(df: DataFrame | TableSchema) -> None:
    """Refuse a DataFrame with two columns of one name (to Spark: case-insensitively
    unless `spark.sql.caseSensitive` is on), which every query would fail to resolve
    (AMBIGUOUS_REFERENCE) even where it does not read that column."""
    names = [f.name for f in df.schema.fields]
    counts = Counter(names)
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other == name and counts[name] > 1:
            found = (f"the column {name!r} {counts[name]} times; rename or drop the "
                     "copies (DataFrame.toDF or withColumnRenamed)")
        elif other != name and not _case_sensitive(df):
            found = (f"the columns {other!r} and {name!r}, one name to Spark "
                     "(spark.sql.caseSensitive is off); rename one of them")
        else:
            continue
        raise WispInputError(f"`df` must be a DataFrame whose column names are distinct, "
                             f"found {found}")


def _case_sensitive(df: DataFrame | TableSchema) -> bool:
    if isinstance(df, TableSchema):
        return False
    return str(df.sparkSession.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


def numeric_lateness(time_field: T.StructField, lateness: object,
                     param: str = "lateness") -> int:
    """A float or decimal time column's lateness (a positive number of its units) in
    whole ticks, rounded up; a bad one is a `WispInputError` naming `param`."""
    number = None
    if not isinstance(lateness, bool) and isinstance(lateness, (int, float, Decimal)):
        number = Decimal(str(lateness)) if isinstance(lateness, float) else Decimal(lateness)
    if number is None or not number.is_finite() or number <= 0:
        raise bad_value(param, "a positive number (units of the numeric time column)",
                        lateness)
    data_type = time_field.dataType
    scale = data_type.scale if isinstance(data_type, T.DecimalType) else 0
    return int((number.scaleb(scale)).to_integral_value(rounding=ROUND_CEILING))


WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"
"""The metadata Spark puts on a column `withWatermark` was applied to: its delay in ms."""
STREAM_TIME_KINDS = ("timestamp", "timestamp_ntz", "date", "integer", "float", "decimal")


def stream_lateness(df: DataFrame | TableSchema, time_field: T.StructField, kind: TimeKind,
                    lateness: object) -> int | None:
    """A streaming table's lateness in ticks of its time column (None for a batch
    table): `lateness` (a positive duration, a number for numeric time), or the delay of
    a watermark already on the time column. Numeric time is read as microseconds by
    Spark's watermark (one tick, one microsecond: a unit of integer and float time, a
    unit of the last decimal place of decimal time); a lateness that is not a whole
    number of ticks is rounded up to one."""
    if not df.isStreaming:
        if lateness is not None:
            raise bad_value("lateness", "None for a batch DataFrame (lateness is how late "
                            "a stream's rows may arrive)", lateness)
        return None
    assert kind in STREAM_TIME_KINDS
    if lateness is None:
        delay = time_field.metadata.get(WATERMARK_DELAY_KEY)
        if isinstance(delay, int) and delay > 0 and kind == "timestamp":
            return delay * 1000
        raise bad_value("lateness", "a positive duration for a streaming DataFrame (how "
                        "late its rows may arrive, e.g. '30s'), or a time column with a "
                        "watermark (withWatermark)", lateness)
    return stream_duration(time_field, kind, lateness, "lateness")


def stream_duration(time_field: T.StructField, kind: TimeKind, value: object,
                    param: str) -> int:
    """A positive span of a stream's time column in its ticks (`lateness`,
    `allowed_lateness`): a duration (whole days for date time), a positive integer for
    integer time, a positive number for float and decimal time (rounded up to whole
    ticks); a bad one is a `WispInputError` naming `param`."""
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise bad_value(param, "a positive integer (ticks of the integer time "
                            "column)", value)
        return value
    if kind in ("float", "decimal"):
        return numeric_lateness(time_field, value, param)
    ticks = positive_duration(value, param, "'30s'")
    if kind == "date" and ticks % MICROS_PER_UNIT["d"]:
        raise bad_value(param, "whole days for date time", value)
    return ticks
