"""What the planner sees of a query's input: plain data, no Spark.

The engine describes a bound DataFrame as a `Source` (its columns with their types, and
which column plays which role), the session as `Settings`, and every user Spark
expression a window holds (a boolean tick, a dynamic window's bound) as an
`ExpressionInfo`: its text and its type. The planner decides from these alone, so it
runs, and is tested, without Spark; the plans it makes refer to user expressions by
the window parameter that holds them (`ExprRef`), which the engine resolves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

TypeFamily = Literal["integer", "float", "decimal", "boolean", "string", "binary",
                     "timestamp", "timestamp_ntz", "date", "other"]
TimeKind = Literal["timestamp", "timestamp_ntz", "date", "integer", "decimal", "float"]
NullTimePolicy = Literal["error", "drop"]
LatePolicy = Literal["count", "emit", "update"]
Emit = Literal["final", "changes"]
ValueClass = Literal["none", "integer", "float", "boolean", "decimal", "ordered", "other"]


@dataclass(frozen=True)
class ColumnType:
    """A column's type as the planner needs it.

    `text`: the type as Spark writes it (`bigint`, `decimal(10,2)`, `array<int>`), for
    messages. `family`: what kind of value it holds ("other" for every type not named,
    atomic or not). `atomic`: a single orderable value (numbers, strings, binary,
    booleans, times; not arrays, maps, structs). `arrow_orders`: Arrow's ascending sort
    orders it as Spark's does (numbers, booleans, times, binary, strings of the default
    collation). `precision`, `scale`: of decimals (0 otherwise).
    """

    text: str
    family: TypeFamily
    atomic: bool = True
    arrow_orders: bool = True
    precision: int = 0
    scale: int = 0


@dataclass(frozen=True)
class Field:
    """One column of the input."""

    name: str
    type: ColumnType
    nullable: bool = True


@dataclass(frozen=True)
class TimeColumn:
    """The time column: its name, its kind, and its type.

    Ticks are microseconds for timestamp, timestamp_ntz and date time; the column's own
    unit for integer and float time; units of `10^-scale` for decimal time.
    """

    name: str
    kind: TimeKind
    type: ColumnType

    @property
    def scale(self) -> int:
        return self.type.scale

    @property
    def uses_time_units(self) -> bool:
        """True when durations are written as '2s' or timedeltas, False for numbers."""
        return self.kind in ("timestamp", "timestamp_ntz", "date")


def time_kind(column_type: ColumnType) -> TimeKind | None:
    """The kind of time a column of this type holds, or None when it holds no time."""
    family = column_type.family
    if family in ("timestamp", "timestamp_ntz", "date", "integer", "decimal", "float"):
        return family
    return None


def value_class(column_type: ColumnType | None) -> ValueClass:
    """How an aggregation sees the values of a column of this type."""
    if column_type is None:
        return "none"
    family = column_type.family
    if family in ("integer", "float", "boolean", "decimal"):
        return family
    return "ordered" if column_type.atomic else "other"


@dataclass(frozen=True)
class Source:
    """An event table: its columns, and the columns bound to the roles time, end (interval
    events), key and order, with its null-time policy."""

    columns: tuple[Field, ...]
    time: TimeColumn
    end: str | None = None
    key: tuple[str, ...] = ()
    order: str | None = None
    on_null_time: NullTimePolicy = "error"
    lateness: int | None = None
    """A stream's lateness in ticks of its time column; None for a batch table."""
    on_late: LatePolicy = "count"
    """A stream's late rows: counted ("count"), output as rows ("emit"), or applied to
    their windows within `allowed_lateness` ("update")."""
    edges: tuple[str, str] | None = None
    """A stream of start/end edges (`wisp.from_edges`): its (edge, id) columns."""
    allowed_lateness: int | None = None
    """With on_late="update": ticks past its finality a window still takes late rows."""
    emit: Emit = "final"
    """Which rows a stream writes: each window once final ("final"), or also, in each
    micro-batch, every open window whose result changed ("changes")."""

    @property
    def revisions(self) -> bool:
        """Whether a window may be written more than once (its rows then carry
        `revision` and `final`)."""
        return self.on_late == "update" or self.emit == "changes"

    @property
    def is_interval(self) -> bool:
        return self.end is not None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def types(self) -> dict[str, ColumnType]:
        """Each column's type by name, in schema order."""
        return {c.name: c.type for c in self.columns}

    def field(self, name: str) -> Field | None:
        return next((c for c in self.columns if c.name == name), None)


ARROW_BATCH_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
"""The session setting that caps the bytes of one Arrow batch sent to a Python worker."""
STATE_STORE = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""Structured Streaming's state store for Python stateful operators (wisp's streams)."""


@dataclass(frozen=True)
class Settings:
    """The session settings planning depends on.

    `arrow_batches_measured`: the session measures every Arrow batch row by row on its way
    to a Python worker (its batch byte limit is below its largest value), which makes
    the round trip to a kernel dearer than Spark's own narrow sliding frames."""

    arrow_batches_measured: bool = False


def native_time_blocker(time: TimeColumn, kinds: tuple[str, ...]) -> str | None:
    """Why a strategy computing on the time column's ticks in Spark (of the time kinds
    `kinds`) cannot run this time column, or None when it can. timestamp_ntz ticks are
    microseconds of the wall clock, as timestamp ticks are of UTC: the same arithmetic,
    read and written without the session time zone (`engine.columns.ntz_micros`)."""
    if time.kind not in kinds:
        return f"{time.kind} time runs on the kernel"
    return None


def same_time_type(column_type: ColumnType, time: TimeColumn) -> bool:
    """Whether a column of `column_type` holds times of `time`'s type (a decimal of
    its scale)."""
    if time_kind(column_type) != time.kind:
        return False
    return column_type.family != "decimal" or column_type.scale == time.scale


@dataclass(frozen=True)
class ExpressionInfo:
    """A user Spark expression held by a window parameter: its text, and its type once
    Spark resolved it against its table (None when Spark could not)."""

    text: str
    type: ColumnType | None


@dataclass(frozen=True)
class ExprRef:
    """A reference, in a plan, to the user expression or column held by the window
    parameter `param`; the engine resolves it to a Spark Column."""

    param: str


@dataclass(frozen=True)
class Inputs:
    """Everything the planner reads besides the window and aggregation specs: the
    events, the window's other event tables by parameter (`Dynamic`'s anchors), its user
    expressions by parameter, and the session settings."""

    source: Source
    tables: Mapping[str, Source] = field(default_factory=dict)
    expressions: Mapping[str, ExpressionInfo] = field(default_factory=dict)
    settings: Settings = Settings()


def tie_break_columns(source: Source) -> tuple[str, ...]:
    """Columns that order events with equal time: `order` if given, else every other
    atomic column in schema order (ascending, nulls first, NaN last), so that results do
    not depend on how Spark partitioned the input."""
    if source.order is not None:
        return (source.order,)
    skip = {*source.key, source.time.name}
    if source.end is not None:
        skip.add(source.end)
    return tuple(c.name for c in source.columns if c.name not in skip and c.type.atomic)


def sorts_in_worker(source: Source, columns: tuple[str, ...] | list[str]) -> bool:
    """Whether the Python worker, not Spark, sorts a kernel's events by `columns`: when
    Arrow orders every one of them as Spark's ascending sort does."""
    types = source.types()
    return all(name in types and types[name].arrow_orders for name in columns)


def sort_words(source: Source, order: tuple[str, ...] | list[str]) -> str:
    """Who sorts a kernel strategy's partitions: explain()'s "Sorting:" sentence."""
    if sorts_in_worker(source, [*source.key, *order]):
        return ("The Python worker sorts each partition with Arrow before the kernel (in "
                "memory up to a budget, past it in sorted runs spilled to local disk and "
                "merged).")
    return ("Spark sorts within partitions (a key, time or tie-break column has a type "
            "whose order Arrow does not share).")


def kernel_shape(order: str) -> str:
    """How every kernel strategy's events reach its kernel, for the plans' texts:
    partitioned by key and each partition sorted by `order` (who sorts: `sort_words`)."""
    return (f"Spark hash-partitions by key (one shuffle), each partition sorted by {order} "
            "(see Sorting), then a vectorised Arrow kernel (mapInArrow)")
