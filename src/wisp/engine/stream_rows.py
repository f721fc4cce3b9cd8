"""After a stream's stateful operator: its output as rows of exactly the batch columns.

Two ways, as the operator wrote them:
- JSON text of columns (`runtime.codecs.json_rows`), read by Spark's `from_json` in the JVM,
  with no Python stage: pane partials, whose outputs are windows (few rows);
- Arrow payloads, read by a Python stage (`mapInArrow(PayloadRows)`): the other
  queries, whose outputs may hold a row per event (encoding those as text costs more
  than the stage), and late rows under `on_late="emit"`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .columns import col, ntz_from_micros
from .layout import arrow_schema
from .processor import ROWS, PayloadRows

JSON_OPTIONS = {"allowNonNumericNumbers": "true", "mode": "FAILFAST"}
"""`NaN` and the infinities read as numbers; a text that does not parse fails the query
(it never happens: the operator writes it)."""


def wire_type(data_type: T.DataType) -> T.DataType:
    """The type a column has in the JSON text (`runtime.codecs.json_rows`)."""
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return T.LongType()
    if isinstance(data_type, T.DateType):
        return T.IntegerType()
    if isinstance(data_type, (T.DecimalType, T.BinaryType)):
        return T.StringType()
    return data_type


def from_wire(value: Column, data_type: T.DataType) -> Column:
    """A column read from the JSON text as its own type, whatever the session's time
    zone."""
    if isinstance(data_type, T.TimestampType):
        return F.timestamp_micros(value)
    if isinstance(data_type, T.TimestampNTZType):
        return ntz_from_micros(value)
    if isinstance(data_type, T.DateType):
        return F.date_from_unix_date(value)
    if isinstance(data_type, T.BinaryType):
        return F.unbase64(value)
    if isinstance(data_type, T.DecimalType):
        return value.cast(data_type)
    return value


def json_rows(states: DataFrame, fields: Sequence[T.StructField]) -> DataFrame:
    """The operator's JSON rows (column `ROWS`) as rows of `fields`."""
    wire = T.StructType([T.StructField(f"c{i}", T.ArrayType(wire_type(f.dataType)))
                         for i, f in enumerate(fields)])
    parsed = states.where(col(ROWS).isNotNull()).select(
        F.from_json(col(ROWS), wire, JSON_OPTIONS).alias(ROWS))
    columns = parsed.select(*[col(ROWS).getField(f"c{i}").alias(f"c{i}")
                              for i in range(len(fields))])
    zipped = columns.select(F.inline(F.arrays_zip(*[col(f"c{i}")
                                                    for i in range(len(fields))])))
    return zipped.select(*[from_wire(col(f"c{i}"), f.dataType).alias(f.name)
                           for i, f in enumerate(fields)])


def payload_rows(states: DataFrame, fields: Sequence[T.StructField]) -> DataFrame:
    """The operator's Arrow payloads (not late rows) as rows of `fields`."""
    return states.mapInArrow(PayloadRows(arrow_schema(fields)), T.StructType(list(fields)))
