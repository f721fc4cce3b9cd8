"""Rules of the reset (`Since`) and trailing-period (`Trailing`) family."""

from __future__ import annotations

from typing import Any

from ..events import Events
from .nodes import Plan, ResolvedAggregation
from .planner import unsupported


def plan_since(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
               strategy: str | None) -> Plan:
    raise unsupported("Since", "the reset and calendar-tick windows")


def plan_trailing(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                  strategy: str | None) -> Plan:
    raise unsupported("Trailing", "the reset and calendar-tick windows")
