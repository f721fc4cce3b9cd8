"""The `arrow-spl` strategy: sliding and policy-tumbling windows, per key, in an Arrow
kernel (`runtime.windows.policies.SplKernel`).

Shape: `repartition(key)` + each partition sorted by (key, arrival order) +
`mapInArrow(kernel)`, as in `engine.arrow`. The kernel replays each key's eviction and
trigger policies and aggregates every emitted firing's window.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..binding import Events
from ..plan.policies import PoliciesPlan
from ..runtime.windows.policies import SplKernel
from ..spec.policies import Punctuation
from .columns import col, fail_where, guarded
from .compiler import KeyedKernel, Query, TableKernel, compiles, keyed_kernel, table_kernel
from .layout import (
    aggregate_jobs,
    aggregation_columns,
    arrow_schema,
    mapped_by_key,
    output_fields,
)


def attribute_guard(df: DataFrame, attrs: list[tuple[str, str]]) -> DataFrame:
    """Fail the query on a null (or NaN) delta attribute: a delta policy cannot compare
    it, and wisp never drops a row silently."""
    for name, kind in attrs:
        value = col(name)
        missing: Column = value.isNull() | F.isnan(value) if kind == "float" else \
            value.isNull()
        message = (f"WispError: `attr` column {name!r} must not be null or NaN (a Delta "
                   "policy compares its values), found a null or NaN value")
        df = fail_where(df, missing, message)
    return df


@table_kernel(PoliciesPlan)
def policies_table(plan: PoliciesPlan, events: Events) -> TableKernel:
    """The policy kernel and the columns it reads, in arrival order (a stream's plan has
    no `order`: time, then the tie-break columns); the Delta attributes to check."""
    attrs = list(plan.attributes)
    keys = list(events.key)
    flags = [p.col for p in (plan.evict, plan.trigger) if isinstance(p, Punctuation)]
    needed = list(dict.fromkeys(
        [*keys, events.time.name, *[name for name, _ in attrs], *flags,
         *aggregation_columns(plan)]))
    fields = output_fields(events, plan.aggregations)
    kernel = SplKernel(
        keys=tuple(keys), time=events.time.name, time_kind=events.time.kind,
        time_scale=events.time.scale, mode=plan.mode, evict=plan.evict,
        trigger=plan.trigger, partial=plan.partial, attrs=tuple(attrs),
        aggregates=aggregate_jobs(plan, events), schema=arrow_schema(fields))
    return TableKernel(keys, list(plan.arrival), needed, kernel, fields,
                       attributes=tuple(attrs))


@keyed_kernel(PoliciesPlan)
def policies_kernel(plan: PoliciesPlan, query: Query) -> KeyedKernel:
    """The policy kernel and its input, with the guard on its Delta attributes."""
    table = policies_table(plan, query.events)
    df = attribute_guard(guarded(query.events, query.observation), list(plan.attributes))
    return KeyedKernel(df, table.keys, table.order, table.needed, table.kernel,
                       table.fields)


@compiles(PoliciesPlan)
def policy_windows(plan: PoliciesPlan, query: Query) -> DataFrame:
    """Build the Spark plan of the `arrow-spl` strategy."""
    keyed = policies_kernel(plan, query)
    return mapped_by_key(keyed.df, keyed.keys, keyed.order, keyed.needed, keyed.kernel,
                         keyed.fields)
