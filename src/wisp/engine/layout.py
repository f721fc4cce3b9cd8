"""The Spark-side shape every kernel strategy shares: events partitioned by key and
sorted, the result schema (key columns, window_start, window_end, time, aggregations)
and its Arrow types, and the picklable description of each aggregation for the
executors (`runtime.aggregates.aggregate.AggregateJob`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from ..binding import Events
from ..plan.nodes import Plan, ResolvedAggregation
from ..runtime.aggregates.aggregate import AggregateJob
from ..runtime.codecs import sorting
from ..runtime.codecs.renaming import Kernel, Renamed
from ..runtime.limits import WithinMemory
from .columns import col, output_time_type
from .compiler import KeyedKernel
from .describe import sorts_in_worker, spark_output_type


def by_key(df: DataFrame, keys: Sequence[str], order: Sequence[str]) -> DataFrame:
    """`df` hash-partitioned by `keys` (one partition without keys) and sorted within
    partitions by `keys` then `order`, nulls first: each key's events arrive at the
    kernel contiguous and in order."""
    return _partitioned(df, keys).sortWithinPartitions(*[col(c).asc_nulls_first()
                                              for c in [*keys, *order]])


def mapped_by_key(df: DataFrame, keys: Sequence[str], order: Sequence[str],
                  needed: Sequence[str], kernel: sorting.Kernel,
                  fields: list[T.StructField]
                  ) -> DataFrame:
    """`kernel` mapped over `df`'s columns `needed`, hash-partitioned by `keys`, each
    partition's events sorted by `keys` then `order` (ascending, nulls first) before the
    kernel sees them. When Arrow orders every one of those columns as Spark does, the
    Python worker sorts (`sorting.SortedInput`: cheaper than Spark's sort, spilling
    sorted runs to disk past a budget); otherwise Spark sorts (`by_key`). A worker out of
    memory fails with a `WispMemoryError` naming the cap (`runtime.limits`)."""
    sort_columns = list(dict.fromkeys([*keys, *order]))
    schema = T.StructType(fields)
    if sorts_in_worker(df.schema, sort_columns):
        selected = list(dict.fromkeys([*needed, *sort_columns]))
        worker = sorting.SortedInput(kernel, tuple(sort_columns), sorting.SORT_BUDGET_BYTES,
                                     sorting.MERGE_ROWS)
        return map_columns(_partitioned(df, keys), selected, WithinMemory(worker), schema)
    return map_columns(by_key(df, keys, order), needed, WithinMemory(kernel), schema)


_PLAIN_NAME = re.compile(r"\w+")
STAND_IN = "__wisp_in_"
"""The prefix of the stand-in names of columns whose own names cannot cross into a
Python worker (`map_columns`)."""


def map_columns(df: DataFrame, columns: Sequence[str], kernel: Kernel,
                schema: T.StructType) -> DataFrame:
    """`kernel` mapped (`mapInArrow`) over `df`'s `columns`. PySpark's `mapInArrow` looks
    its input columns up by their raw names, which fails for a name holding a dot, a
    backtick or a space (Spark reads them as a struct field or quoting): when any name
    is not plain, the columns cross under stand-in names and the kernel gets its batches
    under their own names again (`runtime.codecs.renaming.Renamed`)."""
    if all(_PLAIN_NAME.fullmatch(c) for c in columns):
        return df.select(*[col(c) for c in columns]).mapInArrow(kernel, schema)
    stand_ins = [f"{STAND_IN}{i}" for i in range(len(columns))]
    return df.select(*[col(c).alias(s) for c, s in zip(columns, stand_ins, strict=True)]
                     ).mapInArrow(Renamed(kernel, tuple(columns)), schema)


def mapped(keyed: KeyedKernel) -> DataFrame:
    """A kernel strategy's Spark plan: its kernel mapped by key (`mapped_by_key`)."""
    return mapped_by_key(keyed.df, keyed.keys, keyed.order, keyed.needed, keyed.kernel,
                         keyed.fields)


def _partitioned(df: DataFrame, keys: Sequence[str]) -> DataFrame:
    """`df` hash-partitioned by `keys`, or in one partition without keys."""
    return df.repartition(*[col(k) for k in keys]) if keys else df.repartition(1)


def aggregation_columns(plan: Plan) -> list[str]:
    """The input columns the aggregations read, each once."""
    return list(dict.fromkeys(c for r in plan.aggregations for c in r.aggregation.columns))


def bound_fields(events: Events) -> list[T.StructField]:
    """Key columns, window_start, window_end and time: every result's first fields."""
    time_type = output_time_type(events.time)
    fields = [f for k in events.key for f in events.df.schema.fields if f.name == k]
    return fields + [T.StructField(name, time_type)
                     for name in ("window_start", "window_end", "time")]


def output_fields(events: Events, aggregations: Sequence[ResolvedAggregation]
                  ) -> list[T.StructField]:
    """Key columns, window_start, window_end, time, then one field per aggregation."""
    schema = events.df.schema
    return bound_fields(events) + [T.StructField(r.name, spark_output_type(r, schema))
                                   for r in aggregations]


def arrow_type(data_type: T.DataType) -> pa.DataType:
    """The Arrow type the kernels read and write for a Spark type (timestamps in
    microseconds, UTC for `timestamp`)."""
    if isinstance(data_type, T.TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(data_type, T.TimestampNTZType):
        return pa.timestamp("us")
    if isinstance(data_type, T.StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType)) for f in data_type])
    if isinstance(data_type, T.ArrayType) and isinstance(
            data_type.elementType, (T.StructType, T.TimestampType, T.TimestampNTZType)):
        return pa.list_(arrow_type(data_type.elementType))
    return to_arrow_type(data_type)


def arrow_schema(fields: Sequence[T.StructField]) -> pa.Schema:
    return pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in fields])


def aggregate_jobs(plan: Plan, events: Events) -> tuple[AggregateJob, ...]:
    """What the executors need of each aggregation: its definition, as the plan resolved
    it (no executor looks an aggregation up by name)."""
    schema = events.df.schema
    return tuple(AggregateJob(r.aggregation.definition, r.aggregation.col, r.value_class,
                              arrow_type(spark_output_type(r, schema)), r.aggregation.func,
                              r.aggregation.lifetimes, r.name, r.aggregation.returns or "",
                              by=r.aggregation.by,
                              q=0.5 if r.aggregation.q is None else r.aggregation.q,
                              interpolation=r.aggregation.interpolation,
                              half_life=0.0 if r.half_life is None else float(r.half_life),
                              aggregator=r.aggregation.aggregator, k=r.aggregation.k,
                              lg_k=r.aggregation.lg_k, qs=r.aggregation.qs)
                 for r in plan.aggregations)
