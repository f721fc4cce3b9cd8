"""Feature sets (`plan.features.FeaturesPlan`): the frame kernel's shape with every
window of the set in one kernel (`runtime.windows.features.FeaturesKernel`).

Shape: `repartition(key)` + `mapInArrow(kernel)`, each partition sorted by (key, time,
tie-break) as for the frame kernel: one shuffle and one sort of the events whatever the
number of windows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events, TimeColumn
from ..errors import WispUnsupportedError
from ..plan.features import FeaturesPlan
from ..runtime.codecs.batches import CHUNK_ROWS
from ..runtime.windows.features import FeaturesKernel
from ..runtime.windows.label_features import EVENT, KIND, TIME, LabelFeaturesKernel
from .columns import col, guarded, output_time_type
from .compiler import (
    KeyedKernel,
    Query,
    StreamInput,
    TableKernel,
    compiles,
    keyed_kernel,
    table_kernel,
)
from .describe import spark_output_type
from .dynamic import without_null_times
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, mapped


def feature_fields(plan: FeaturesPlan, events: Events) -> list[T.StructField]:
    """The key columns, `time`, then for each aggregation, for each window, its column
    `<aggregation's name>_<label>`."""
    schema = events.df.schema
    keys = [f for k in events.key for f in schema.fields if f.name == k]
    fields = [*keys, T.StructField("time", output_time_type(events.time))]
    for r in plan.aggregations:
        kind = spark_output_type(r, schema)
        fields += [T.StructField(r.name + suffix, kind) for suffix in plan.suffixes]
    return fields


@table_kernel(FeaturesPlan)
def features_table(plan: FeaturesPlan, events: Events) -> TableKernel:
    """The feature kernel and the columns it reads, from the events' schema and roles:
    each `Since`/`Trailing` window's hidden tick column is the window parameter it
    holds (`TableKernel.parameters`). Label rows (`at`) are a second table, which a
    table function does not take: refused."""
    if plan.labels_table is not None:
        raise WispUnsupportedError(
            "`at` must be left out of a feature set in a table function (it takes one table, "
            "the events; label rows are a second one), found label rows; run the query with "
            "wisp run or the Python API")
    keys = list(events.key)
    ticks = [column for column, _ in plan.ticks]
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan),
                                 *plan.tie_break, *ticks]))
    fields = feature_fields(plan, events)
    kernel = FeaturesKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, frames=tuple(frame for _, frame in plan.frames),
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields),
        chunk_rows=CHUNK_ROWS, order=plan.tie_break)
    return TableKernel(keys, [events.time.name, *plan.tie_break], needed, kernel, fields,
                       parameters=tuple((column, ref.param) for column, ref in plan.ticks))


@keyed_kernel(FeaturesPlan)
def features_kernel(plan: FeaturesPlan, query: Query) -> KeyedKernel:
    """The feature kernel and its input (with label rows: `label_kernel`)."""
    if plan.labels_table is not None:
        return label_kernel(plan, query)
    table = features_table(plan, query.events)
    df = guarded(query.events, query.observation)
    for column, ref in plan.ticks:
        df = df.withColumn(column, query.expression(ref))
    return KeyedKernel(df, table.keys, table.order, table.needed, table.kernel,
                       table.fields)


def label_kernel(plan: FeaturesPlan, query: Query) -> KeyedKernel:
    """Point-in-time: the label rows and the events in one table (`KIND` 1 for events; 0
    for label rows, which sort before the events of their time, or 2 with
    `include_current`, after them), the label rows' other columns under hidden names."""
    events, labels = query.events, query.table("at")
    keys = list(events.key)
    time_type = output_time_type(events.time)
    event_types = {f.name: f.dataType for f in events.df.schema.fields}
    label_types = {f.name: f.dataType for f in labels.df.schema.fields}
    values = [c for c in dict.fromkeys([*aggregation_columns(plan), *plan.tie_break])
              if c not in keys]
    hidden = [f"__wisp_l{i}" for i in range(len(plan.carried))]
    event_rows = guarded(events, query.observation).select(
        *[col(k) for k in keys], F.lit(EVENT).alias(KIND),
        col(events.time.name).cast(time_type).alias(TIME), *[col(v) for v in values],
        *[query.expression(ref).alias(column) for column, ref in plan.ticks],
        *[F.lit(None).cast(label_types[c]).alias(h)
          for c, h in zip(plan.carried, hidden, strict=True)])
    label_rows = without_null_times(labels).select(
        *[col(k) for k in keys], F.lit(2 if plan.include_current else 0).alias(KIND),
        col(labels.time.name).cast(time_type).alias(TIME),
        *[F.lit(None).cast(event_types[v]).alias(v) for v in values],
        *[F.lit(None).cast("boolean").alias(column) for column, _ in plan.ticks],
        *[col(c).alias(h) for c, h in zip(plan.carried, hidden, strict=True)])
    table = event_rows.unionByName(label_rows)
    schema = events.df.schema
    fields = [f for k in keys for f in schema.fields if f.name == k]
    fields.append(T.StructField("time", time_type))
    fields += [T.StructField(c, label_types[c]) for c in plan.carried]
    for r in plan.aggregations:
        kind = spark_output_type(r, schema)
        fields += [T.StructField(r.name + suffix, kind) for suffix in plan.suffixes]
    kernel = LabelFeaturesKernel(
        keys=tuple(keys), time_kind=events.time.kind, time_scale=events.time.scale,
        frames=tuple(frame for _, frame in plan.frames),
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields),
        carried=tuple(hidden), chunk_rows=CHUNK_ROWS, order=plan.tie_break)
    inputs: tuple[StreamInput, ...] = ()
    if events.lateness is not None:  # both streams (the planner checks)
        assert labels.lateness is not None
        time = TimeColumn(TIME, events.time.kind, time_type)
        inputs = (StreamInput(event_rows, time, events.lateness),
                  StreamInput(label_rows, time, labels.lateness))
    return KeyedKernel(table, keys, [TIME, KIND, *plan.tie_break], table.columns, kernel,
                       fields, inputs)


@compiles(FeaturesPlan)
def features(plan: FeaturesPlan, query: Query) -> DataFrame:
    """Build the Spark plan of a feature set."""
    return mapped(features_kernel(plan, query))
