"""Feature sets (`plan.features.FeaturesPlan`): the frame kernel's shape with every
window of the set in one kernel (`runtime.features.FeaturesKernel`).

Shape: `repartition(key)` + `mapInArrow(kernel)`, each partition sorted by (key, time,
tie-break) as for the frame kernel: one shuffle and one sort of the events whatever the
number of windows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ..plan.features import FeaturesPlan
from ..runtime.batches import CHUNK_ROWS
from ..runtime.features import FeaturesKernel
from .columns import guarded, output_time_type
from .compiler import KeyedKernel, Query, compiles, keyed_kernel
from .describe import spark_output_type
from .layout import aggregate_jobs, aggregation_columns, arrow_schema, mapped


def feature_fields(plan: FeaturesPlan, query: Query) -> list[T.StructField]:
    """The key columns, `time`, then for each aggregation, for each window, its column
    `<aggregation's name>_<label>`."""
    events = query.events
    schema = events.df.schema
    keys = [f for k in events.key for f in schema.fields if f.name == k]
    fields = [*keys, T.StructField("time", output_time_type(events.time))]
    for r in plan.aggregations:
        kind = spark_output_type(r, schema)
        fields += [T.StructField(r.name + suffix, kind) for suffix in plan.suffixes]
    return fields


@keyed_kernel(FeaturesPlan)
def features_kernel(plan: FeaturesPlan, query: Query) -> KeyedKernel:
    """The feature kernel and its input."""
    events = query.events
    keys = list(events.key)
    needed = list(dict.fromkeys([*keys, events.time.name, *aggregation_columns(plan),
                                 *plan.tie_break]))
    fields = feature_fields(plan, query)
    kernel = FeaturesKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, frames=tuple(frame for _, frame in plan.frames),
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields),
        chunk_rows=CHUNK_ROWS, order=plan.tie_break)
    return KeyedKernel(guarded(events, query.observation), keys,
                       [events.time.name, *plan.tie_break], needed, kernel, fields)


@compiles(FeaturesPlan)
def features(plan: FeaturesPlan, query: Query) -> DataFrame:
    """Build the Spark plan of a feature set."""
    return mapped(features_kernel(plan, query))
