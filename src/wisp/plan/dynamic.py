"""Rules of windows driven by another event table (`Dynamic`) and of sessions."""

from __future__ import annotations

from typing import Any

from ..events import Events
from .nodes import Plan, ResolvedAggregation
from .planner import unsupported


def plan_dynamic(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    raise unsupported("Dynamic", "the anchor-driven windows")


def plan_session(events: Events, window: Any, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    raise unsupported("Session", "the session windows")
