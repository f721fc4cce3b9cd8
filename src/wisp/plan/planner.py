"""The planner: the only place that knows both the window specs and the strategies.

Each window family has its own rule module (`psi`, `streaminsight`, `spl`, `fenl`,
`dynamic`); a rule resolves its window against the events and chooses a strategy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import types as T

from ..errors import WispUnsupportedError
from ..events import Events
from ..spec.aggregates import Aggregation
from ..spec.policies import Count, Delta, Punctuation, Time
from ..spec.windows import Tumbling, Window
from .aggregations import resolve
from .nodes import Plan, ResolvedAggregation, Strategy

# window kind -> "module:function" of its rule, relative to wisp.plan
RULES: dict[str, str] = {
    "cumulative": "frames:plan_cumulative",
    "Rows": "frames:plan_rows",
    "Range": "frames:plan_range",
    "Tumbling": "intervals:plan_tumbling",
    "PolicyTumbling": "policies:plan_policy_tumbling",
    "Hopping": "intervals:plan_hopping",
    "Snapshot": "intervals:plan_snapshot",
    "CountByStartTime": "intervals:plan_count_by_start_time",
    "Sliding": "policies:plan_sliding",
    "Since": "periods:plan_since",
    "Trailing": "periods:plan_trailing",
    "Dynamic": "dynamic:plan_dynamic",
    "Session": "dynamic:plan_session",
}

Rule = Callable[[Events, Any, tuple[ResolvedAggregation, ...], "Strategy | None"], Plan]


def tie_break_columns(events: Events) -> tuple[str, ...]:
    """Columns that order events with equal time: `order` if given, else every other
    atomic column in schema order (ascending, nulls first, NaN last), so that results do
    not depend on how Spark partitioned the input."""
    if events.order is not None:
        return (events.order,)
    skip = {*events.key, events.time.name}
    if events.end is not None:
        skip.add(events.end)
    return tuple(f.name for f in events.df.schema.fields
                 if f.name not in skip and isinstance(f.dataType, T.AtomicType))


def sorts_in_worker(schema: T.StructType, columns: Sequence[str]) -> bool:
    """Whether the Python worker, not Spark, sorts a kernel's events by `columns`: when
    Arrow orders every one of them as Spark's ascending sort does (numbers, booleans,
    dates, timestamps, binary, strings of the default binary collation). Nested types,
    collated strings and intervals stay on Spark's sort."""
    types = {f.name: f.dataType for f in schema.fields}
    return all(name in types and _arrow_orders_as_spark(types[name]) for name in columns)


def sort_words(events: Events, order: Sequence[str]) -> str:
    """Who sorts a kernel strategy's partitions: explain()'s "Sorting:" sentence."""
    if sorts_in_worker(events.df.schema, [*events.key, *order]):
        return ("The Python worker sorts each partition with Arrow before the kernel (in "
                "memory up to a budget, past it in sorted runs spilled to local disk and "
                "merged).")
    return ("Spark sorts within partitions (a key, time or tie-break column has a type "
            "whose order Arrow does not share).")


def kernel_shape(order: str) -> str:
    """How every kernel strategy's events reach its kernel, for the plans' `how` texts:
    partitioned by key and each partition sorted by `order` (who sorts: `sort_words`)."""
    return (f"Spark hash-partitions by key (one shuffle), each partition sorted by {order} "
            "(see Sorting), then a vectorised Arrow kernel (mapInArrow)")


def _arrow_orders_as_spark(data_type: T.DataType) -> bool:
    if isinstance(data_type, T.StringType):
        return data_type == T.StringType()
    return isinstance(data_type, (T.NumericType, T.BooleanType, T.DateType, T.TimestampType,
                                  T.TimestampNTZType, T.BinaryType))


def rule_for(kind: str) -> Rule:
    module_name, _, function = RULES[kind].partition(":")
    module = importlib.import_module(f"{__package__}.{module_name}")
    rule: Rule = getattr(module, function)
    return rule


def plan(events: Events, window: Window | None, aggregations: Sequence[Aggregation],
         strategy: Strategy | None = None) -> Plan:
    """Resolve `window` and `aggregations` against `events` and choose a strategy."""
    kind = "cumulative" if window is None else window.kind
    if isinstance(window, Tumbling) and isinstance(window.size, (Count, Time, Delta,
                                                                  Punctuation)):
        kind = "PolicyTumbling"  # a tumbling window sized by a policy: the sliding family
    if kind not in RULES:
        raise WispUnsupportedError(f"{kind} windows are not executed yet")
    resolved = resolve(events, aggregations)
    return rule_for(kind)(events, window, resolved, strategy)


def unsupported(kind: str, arrives_with: str) -> WispUnsupportedError:
    """The error of a window kind this release defines but does not execute yet."""
    return WispUnsupportedError(f"{kind} windows are not executed yet: they arrive with "
                                f"{arrives_with}")
