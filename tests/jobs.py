"""Jobs of the built-in aggregations for tests that build kernels by hand: the plan
hands each `AggregateJob` its aggregation's `Definition`; here a test names it."""

from __future__ import annotations

from typing import Any

from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.spec.aggregates import DEFINITIONS, Definition


def built_in_job(fn: str, *args: Any, definition: Definition | None = None,
                 **kwargs: Any) -> AggregateJob:
    """`AggregateJob(definition, *args, **kwargs)` with the definition of the built-in
    aggregation `fn` (or `definition`, for a user's aggregator)."""
    return AggregateJob(DEFINITIONS[fn] if definition is None else definition, *args,
                        **kwargs)
