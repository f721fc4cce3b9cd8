"""The as-of join's Spark plan: one shuffle, one sorted pass, no join.

Both sides' rows are projected onto one schema and unioned: the `by` columns, the time
(`on`), a flag true on the left rows, the right side's tie-break (its Events' `order`),
then the left's other columns (null on right rows) and the right's (null on left rows).
The union is hash-partitioned by `by` (the one shuffle; one partition without `by`),
each partition sorted by (`by`, time, tie-break) (in the Python worker where Arrow orders
those columns as Spark does, else by Spark: `layout.mapped_by_key`), and one
`mapInArrow` (`runtime.windows.asof.AsOfKernel`) walks each key's rows once and emits one row per
left row. No range join, cartesian product or nested loop: the plan holds no join.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import Events, TimeColumn, check_distinct_columns
from ..errors import WispUnsupportedError, bad_value
from ..plan.asof import AsOfPlan, Side
from ..plan.source import Field
from ..runtime.windows.asof import AsOfKernel
from .columns import col, guarded, is_missing_time
from .describe import column_type
from .layout import arrow_schema, mapped_by_key

ON = "__wisp_on"
IS_LEFT = "__wisp_is_left"
ORDER = "__wisp_order"
BY = "__wisp_by_"
LEFT = "__wisp_left_"
RIGHT = "__wisp_right_"


def describe_side(value: DataFrame | Events, which: str) -> Side:
    """A side of the join as the planner sees it (`which`: "left" or "right", the
    parameter named by an error)."""
    if isinstance(value, Events):
        if value.streaming:
            raise _streaming(which)
        fields = _fields(value.df)
        return Side(fields, value.time.name, value.key, value.order, value.on_null_time)
    if not isinstance(value, DataFrame):
        raise bad_value(which, "a wisp Events or a PySpark DataFrame", type(value).__name__)
    if value.isStreaming:
        raise _streaming(which)
    check_distinct_columns(value)
    return Side(_fields(value))


def _streaming(which: str) -> WispUnsupportedError:
    return WispUnsupportedError(f"`{which}` must be a batch table (an as-of join of "
                                "streams is not supported), found a streaming DataFrame")


def _fields(df: DataFrame) -> tuple[Field, ...]:
    return tuple(Field(f.name, column_type(f.dataType), f.nullable) for f in df.schema.fields)


def asof_join(plan: AsOfPlan, left: DataFrame | Events, right: DataFrame | Events
              ) -> DataFrame:
    """The Spark plan of `plan` over the two sides (see the module docstring)."""
    left_df = _guarded(left)
    right_df = _guarded(right)
    left_types = {f.name: f for f in left_df.schema.fields}
    right_types = {f.name: f for f in right_df.schema.fields}
    if not isinstance(right, Events):  # a right row without a time is never matched
        time = TimeColumn(plan.right_on, plan.time.kind, right_types[plan.right_on].dataType)
        right_df = right_df.filter(~is_missing_time(time))
    left_rest = [name for name, _ in plan.left_columns
                 if name not in plan.by and name != plan.left_on]
    right_rest = [name for name, _ in plan.right_columns]
    order_type = None if plan.order is None else right_types[plan.order].dataType

    def null(data_type: T.DataType) -> Column:
        return F.lit(None).cast(data_type)

    def union_columns(df: DataFrame, on: str, is_left: bool) -> list[Column]:
        columns = [col(b).alias(f"{BY}{i}") for i, b in enumerate(plan.by)]
        columns += [col(on).alias(ON), F.lit(is_left).alias(IS_LEFT)]
        if order_type is not None:
            columns.append(null(order_type).alias(ORDER) if is_left
                           else col(plan.order or "").alias(ORDER))
        columns += [col(c).alias(f"{LEFT}{i}") if is_left
                    else null(left_types[c].dataType).alias(f"{LEFT}{i}")
                    for i, c in enumerate(left_rest)]
        columns += [null(right_types[c].dataType).alias(f"{RIGHT}{i}") if is_left
                    else col(c).alias(f"{RIGHT}{i}") for i, c in enumerate(right_rest)]
        return columns

    union = left_df.select(*union_columns(left_df, plan.left_on, True)).union(
        right_df.select(*union_columns(right_df, plan.right_on, False)))
    sources = {name: f"{BY}{plan.by.index(name)}" for name in plan.by}
    sources[plan.left_on] = ON
    sources.update({c: f"{LEFT}{i}" for i, c in enumerate(left_rest)})
    fields = [T.StructField(out, left_types[name].dataType, left_types[name].nullable)
              for name, out in plan.left_columns]
    fields += [T.StructField(out, right_types[name].dataType, True)
               for name, out in plan.right_columns]
    keys = [f"{BY}{i}" for i in range(len(plan.by))]
    order = [ON] if order_type is None else [ON, ORDER]
    kernel = AsOfKernel(
        keys=tuple(keys), on=ON, kind=plan.time.kind, is_left=IS_LEFT,
        direction=plan.direction, exact=plan.exact, tolerance=plan.tolerance,
        left_columns=tuple(sources[name] for name, _ in plan.left_columns),
        right_columns=tuple(f"{RIGHT}{i}" for i in range(len(right_rest))),
        schema=arrow_schema(fields))
    return mapped_by_key(union, keys, order, union.columns, kernel, fields)


def _guarded(side: DataFrame | Events) -> DataFrame:
    """An Events side under its null-time policy (a null time fails the query, or the
    row is dropped); a DataFrame as it is."""
    if isinstance(side, Events):
        return guarded(side, Observation())
    return side

