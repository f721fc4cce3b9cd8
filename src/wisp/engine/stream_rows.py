"""After a stream's stateful operator: its output as rows of exactly the batch columns.

Two ways (the operator writes the one `json_rows_schema` chose):
- JSON text of columns (`runtime.json_rows`), read by Spark's `from_json` in the JVM,
  no Python stage: for outputs whose columns all cross as JSON (`carries`);
- Arrow payloads, read by a Python stage (`mapInArrow(PayloadRows)`): the others, and
  late rows under `on_late="emit"`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..runtime.json_rows import carries
from .columns import col
from .layout import arrow_schema
from .native import NTZ_EPOCH
from .processor import ROWS, PayloadRows

JSON_OPTIONS = {"allowNonNumericNumbers": "true", "mode": "FAILFAST"}
"""`NaN` and the infinities read as numbers; a text that does not parse fails the query
(it never happens: the operator writes it)."""


def json_rows_schema(fields: Sequence[T.StructField]) -> pa.Schema | None:
    """The Arrow schema the operator writes JSON rows in, or None when a column does not
    cross as JSON (the operator writes Arrow payloads)."""
    schema = arrow_schema(fields)
    return schema if carries(schema) else None


def wire_type(data_type: T.DataType) -> T.DataType:
    """The type a column has in the JSON text (`runtime.json_rows`)."""
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
        return F.timestamp_add("MICROSECOND", value, F.lit(NTZ_EPOCH).cast("timestamp_ntz"))
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


def output_rows(states: DataFrame, fields: Sequence[T.StructField],
                as_json: bool) -> DataFrame:
    """The operator's output (not late rows) as rows of `fields`: from JSON rows where
    the operator wrote them, else from Arrow payloads."""
    if as_json:
        return json_rows(states, fields)
    return states.mapInArrow(PayloadRows(arrow_schema(fields)), T.StructType(list(fields)))
