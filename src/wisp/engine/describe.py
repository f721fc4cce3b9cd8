"""What the planner sees of a query, read off Spark: the bound DataFrames' schemas as
`Source`s, the window's user expressions with the types Spark gives them, and the
session's settings. The one place where Spark types become the planner's plain ones."""

from __future__ import annotations

from typing import cast

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import types as T

from ..binding import Events
from ..errors import bad_value
from ..plan.nodes import ResolvedAggregation
from ..plan.source import (
    ColumnType,
    ExpressionInfo,
    Field,
    Inputs,
    Settings,
    Source,
    TimeColumn,
    TypeFamily,
)
from ..session import arrow_batches_measured
from ..spec.aggregates import aggregator_error
from ..spec.windows import Window

_FAMILIES: tuple[tuple[type | tuple[type, ...], TypeFamily], ...] = (
    ((T.ByteType, T.ShortType, T.IntegerType, T.LongType), "integer"),
    ((T.FloatType, T.DoubleType), "float"),
    (T.DecimalType, "decimal"),
    (T.BooleanType, "boolean"),
    (T.StringType, "string"),
    (T.BinaryType, "binary"),
    (T.TimestampType, "timestamp"),
    (T.TimestampNTZType, "timestamp_ntz"),
    (T.DateType, "date"),
)


def arrow_orders_as_spark(data_type: T.DataType) -> bool:
    """Whether Arrow's ascending sort orders values of `data_type` as Spark's does:
    numbers, booleans, dates, timestamps, binary, strings of the default binary
    collation. Nested types, collated strings and intervals do not."""
    if isinstance(data_type, T.StringType):
        return data_type == T.StringType()
    return isinstance(data_type, (T.NumericType, T.BooleanType, T.DateType, T.TimestampType,
                                  T.TimestampNTZType, T.BinaryType))


def sorts_in_worker(schema: T.StructType, columns: list[str] | tuple[str, ...]) -> bool:
    """Whether the Python worker, not Spark, sorts a kernel's events by `columns`: when
    Arrow orders every one of them as Spark's ascending sort does."""
    types = {f.name: f.dataType for f in schema.fields}
    return all(name in types and arrow_orders_as_spark(types[name]) for name in columns)


def column_type(data_type: T.DataType) -> ColumnType:
    """A Spark type as the planner sees it."""
    family: TypeFamily = next((f for types, f in _FAMILIES if isinstance(data_type, types)),
                              "other")
    precision, scale = ((data_type.precision, data_type.scale)
                        if isinstance(data_type, T.DecimalType) else (0, 0))
    return ColumnType(data_type.simpleString(), family, isinstance(data_type, T.AtomicType),
                      arrow_orders_as_spark(data_type), precision, scale)


def describe_events(events: Events) -> Source:
    """The planner's view of bound events: columns, types and roles."""
    fields = tuple(Field(f.name, column_type(f.dataType), f.nullable)
                   for f in events.df.schema.fields)
    time = events.time
    return Source(fields, TimeColumn(time.name, time.kind, column_type(time.data_type)),
                  events.end, events.key, events.order, events.on_null_time,
                  events.lateness, events.on_late, events.edges, events.allowed_lateness)


def settings(spark: SparkSession) -> Settings:
    """The session settings the planner reads."""
    return Settings(arrow_batches_measured=arrow_batches_measured(spark))


def is_column(value: object) -> bool:
    """A PySpark Column, classic or Spark Connect."""
    return isinstance(value, Column) or type(value).__name__ == "Column"


def expression_info(df: DataFrame, expression: Column) -> ExpressionInfo:
    """`expression`'s text and its type over `df` (None when Spark cannot resolve it:
    the planner then refuses it naming the window parameter)."""
    try:
        data_type = df.select(expression.alias("e")).schema["e"].dataType
    except Exception:  # an expression Spark cannot resolve against the table
        return ExpressionInfo(str(expression), None)
    return ExpressionInfo(str(expression), column_type(data_type))


def event_tables(window: Window | None) -> dict[str, Events]:
    """The window's own event tables given as wisp event tables, by parameter (another
    value where a table belongs is left for the planner to refuse by name)."""
    tables = {} if window is None else window.tables()
    return {name: table for name, table in tables.items() if isinstance(table, Events)}


def describe_query(events: Events, window: Window | None) -> Inputs:
    """Everything the planner reads for `window` over `events`: the events, the window's
    own event tables (those given as wisp event tables), the types of the user Column
    expressions among its parameters, and the session's settings."""
    tables = event_tables(window)
    expressions: dict[str, ExpressionInfo] = {}
    if window is not None:
        where = window.expression_table
        table = events if where is None else tables.get(where)
        for name, value in window.parameters().items():
            if is_column(value) and table is not None:
                expressions[name] = expression_info(table.df, cast(Column, value))
    return Inputs(describe_events(events),
                  {name: describe_events(table) for name, table in tables.items()},
                  expressions, settings(events.df.sparkSession))



def spark_output_type(resolved: ResolvedAggregation, schema: T.StructType) -> T.DataType:
    """The Spark type of `resolved`'s output over a DataFrame of `schema`."""
    output = resolved.output
    column = resolved.aggregation.col
    input_type = schema[column].dataType if column is not None else None
    if output.kind == "long":
        return T.LongType()
    if output.kind == "double":
        return T.DoubleType()
    if output.kind == "decimal":
        return T.DecimalType(output.precision, output.scale)
    if output.kind == "binary":
        return T.BinaryType()
    if output.kind == "doubles":
        return T.ArrayType(T.DoubleType(), containsNull=False)
    if output.kind == "declared":
        try:
            return T._parse_datatype_string(output.declared)
        except Exception as error:
            aggregator = resolved.aggregation.aggregator
            if aggregator is not None:
                raise aggregator_error(aggregator, "returns", "be a Spark type as a DDL "
                                       "string such as 'double'",
                                       repr(output.declared)) from error
            raise bad_value("returns", "a Spark type as a DDL string such as 'double'",
                            output.declared) from error
    assert input_type is not None
    if output.kind == "array":
        return T.ArrayType(input_type, containsNull=False)
    if output.kind == "map":
        return T.MapType(input_type, T.LongType(), valueContainsNull=False)
    return input_type
