"""Output rows as JSON text (`runtime.codecs.json_rows`), read back by Spark's `from_json`
(`engine.stream_rows`): every value of every carried type comes back exactly (NaN,
the infinities, -0.0, null, the extreme integers, decimals at full precision, strings
with quotes and newlines, binary, pre-1970 and far-future times), in any session time
zone; the types it does not carry (none a stream reads) are said so."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from wisp.engine.layout import arrow_schema
from wisp.engine.processor import ROWS
from wisp.engine.stream_rows import json_rows
from wisp.runtime.codecs.json_rows import carries, rows_json

pytestmark = pytest.mark.spark

FIELDS = [T.StructField("b", T.ByteType()), T.StructField("i", T.IntegerType()),
          T.StructField("n", T.LongType()), T.StructField("f", T.FloatType()),
          T.StructField("d", T.DoubleType()), T.StructField("ok", T.BooleanType()),
          T.StructField("s", T.StringType()), T.StructField("m", T.DecimalType(38, 9)),
          T.StructField("bin", T.BinaryType()), T.StructField("day", T.DateType()),
          T.StructField("at", T.TimestampType()), T.StructField("wall", T.TimestampNTZType())]
SCHEMA = arrow_schema(FIELDS)

FAR = [dt.datetime(1, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999_999),
       dt.datetime(1970, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999_999)]
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308]


def nullable(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values)


ROW = st.tuples(
    nullable(st.integers(-128, 127)),
    nullable(st.integers(-2 ** 31, 2 ** 31 - 1)),
    nullable(st.integers(-2 ** 63, 2 ** 63 - 1)),
    nullable(st.floats(width=32) | st.sampled_from([math.nan, math.inf, -0.0])),
    nullable(st.floats() | st.sampled_from(SPECIAL_FLOATS)),
    nullable(st.booleans()),
    nullable(st.text() | st.sampled_from(['"', "\\", "\n", "", "null", "NaN"])),
    nullable(st.decimals(min_value=-10 ** 28, max_value=10 ** 28, places=9,
                         allow_nan=False)),
    nullable(st.binary()),
    nullable(st.dates()),
    nullable(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                          timezones=st.just(dt.UTC)) | st.sampled_from(
        [t.replace(tzinfo=dt.UTC) for t in FAR[1:3]])),
    nullable(st.datetimes() | st.sampled_from(FAR)),
)


def table_of(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table([pa.array([r[i] for r in rows], f.type) for i, f in enumerate(SCHEMA)],
                    schema=SCHEMA)


def canonical(value: Any) -> Any:
    """A value that compares equal exactly when the values are the same: NaN equals
    NaN, -0.0 differs from 0.0, times compare as instants (or wall clocks)."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else (value, math.copysign(1.0, value))
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value.normalize()))
    return value


def read_back(spark: SparkSession, texts: list[str]) -> pa.Table:
    """The JSON texts through `from_json` as rows of `FIELDS`, collected as Arrow."""
    states = spark.createDataFrame([(t,) for t in texts], f"{ROWS} string")
    got: DataFrame = json_rows(states, FIELDS)
    return got.toArrow().cast(SCHEMA)


def assert_same(got: pa.Table, want: pa.Table) -> None:
    assert got.num_rows == want.num_rows
    for name in SCHEMA.names:
        assert [canonical(v) for v in got.column(name).to_pylist()] == \
            [canonical(v) for v in want.column(name).to_pylist()], name


@settings(max_examples=15, deadline=None)
@given(rows=st.lists(ROW, max_size=12), cut=st.integers(0, 12))
def test_every_value_comes_back_exactly(spark: SparkSession, rows: list[tuple[Any, ...]],
                                        cut: int) -> None:
    table = table_of(rows)
    texts = [rows_json(table.slice(0, cut).to_batches(), SCHEMA),
             rows_json(table.slice(cut).to_batches(), SCHEMA)]
    assert_same(read_back(spark, texts), table)


@pytest.mark.usefixtures("new_york")
def test_times_come_back_the_same_in_any_session_time_zone(spark: SparkSession) -> None:
    skipped = dt.datetime(2024, 3, 10, 2, 30)  # a wall-clock time New York skips
    rows = [(None,) * 9 + (dt.date(1600, 2, 29), wall.replace(tzinfo=dt.UTC), wall)
            for wall in [skipped, *FAR]]
    table = table_of(rows)
    assert_same(read_back(spark, [rows_json(table.to_batches(), SCHEMA)]), table)


def test_the_text_says_nan_infinity_and_null_as_spark_reads_them() -> None:
    schema = pa.schema([pa.field("d", pa.float64()), pa.field("m", pa.decimal128(5, 2))])
    batch = pa.record_batch([pa.array([math.nan, -math.inf, None, -0.0]),
                             pa.array([decimal.Decimal("-1.50"), None, None, None],
                                      pa.decimal128(5, 2))], schema=schema)
    assert rows_json([batch], schema) == \
        '{"c0":[NaN,-Infinity,null,-0.0],"c1":["-1.50",null,null,null]}'
    assert rows_json([], schema) == '{"c0":[],"c1":[]}'


@pytest.mark.parametrize("data_type", [
    T.ArrayType(T.DoubleType()), T.StructType([T.StructField("x", T.LongType())]),
    T.MapType(T.StringType(), T.LongType()), T.DayTimeIntervalType()])
def test_nested_and_other_types_are_not_carried(data_type: T.DataType) -> None:
    assert carries(SCHEMA)
    assert not carries(arrow_schema([FIELDS[0], T.StructField("x", data_type)]))
