"""Rules of the sliding and policy-tumbling family (eviction and trigger policies)."""

from __future__ import annotations

from typing import Any

from ..events import Events
from .nodes import Plan, ResolvedAggregation
from .planner import unsupported


def plan_sliding(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    raise unsupported("Sliding", "the eviction and trigger policy windows")


def plan_policy_tumbling(events: Events, window: Any,
                         resolved: tuple[ResolvedAggregation, ...],
                         strategy: str | None) -> Plan:
    raise unsupported("Tumbling (policy)", "the eviction and trigger policy windows")
