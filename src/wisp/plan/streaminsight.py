"""Rules of the hopping, tumbling, snapshot and count-by-start-time family."""

from __future__ import annotations

from typing import Any

from ..events import Events
from .nodes import Plan, ResolvedAggregation
from .planner import unsupported

ARRIVES = "the hopping, snapshot and count windows"


def plan_tumbling(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    raise unsupported("Tumbling", ARRIVES)


def plan_hopping(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    raise unsupported("Hopping", ARRIVES)


def plan_snapshot(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    raise unsupported("Snapshot", ARRIVES)


def plan_count_by_start_time(events: Events, window: Any,
                             resolved: tuple[ResolvedAggregation, ...],
                             strategy: str | None) -> Plan:
    raise unsupported("CountByStartTime", ARRIVES)
