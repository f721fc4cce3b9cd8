"""Planning rules, registered per window spec class.

A rule module registers its rules with `@rule(SpecClass)`; `planner.plan` finds the rule
for a window by its class (the class `NoWindow` stands for `ev.agg(...)` without one). A
spec class may have several rules told apart by `when`, a test of the spec object (a
`Tumbling` sized by a policy is planned by the policy family): the first registered
rule whose test holds wins, and a rule without `when` is the class's fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .nodes import Plan, ResolvedAggregation
from .source import Inputs

W = TypeVar("W")
Rule = Callable[[Inputs, Any, tuple[ResolvedAggregation, ...], "str | None"], Plan]


class NoWindow:
    """The window of a cumulative aggregation (`ev.agg(...)`): everything so far."""

    def __repr__(self) -> str:
        return "cumulative aggregation"


class Conditional(Protocol):
    """A registered entry, perhaps for the specs where `when` holds."""

    @property
    def when(self) -> Callable[[Any], bool] | None: ...


E = TypeVar("E", bound=Conditional)


def add_entry(table: dict[type, list[E]], spec_class: type, entry: E) -> None:
    """Register `entry` for `spec_class` in `table`: entries with a `when` are tried in
    the order registered, before the class's fallback (an entry without `when`)."""
    entries = table.setdefault(spec_class, [])
    entries.insert(sum(1 for e in entries if e.when is not None) if entry.when else
                   len(entries), entry)


def entry_for(table: dict[type, list[E]], window: object) -> E | None:
    """The entry of `table` for `window`: the first whose test holds, or None."""
    for entry in table.get(type(window), ()):
        if entry.when is None or entry.when(window):
            return entry
    return None


@dataclass(frozen=True)
class _Entry:
    rule: Rule
    when: Callable[[Any], bool] | None


_RULES: dict[type, list[_Entry]] = {}


def rule(spec_class: type[W], when: Callable[[W], bool] | None = None
         ) -> Callable[[Rule], Rule]:
    """Register the decorated function as the planning rule of `spec_class` (for the
    specs where `when` holds, if given)."""
    def register(function: Rule) -> Rule:
        add_entry(_RULES, spec_class, _Entry(function, when))
        return function
    return register


def rule_for(window: object) -> Rule | None:
    """The rule that plans `window`, or None when no rule plans its class."""
    entry = entry_for(_RULES, window)
    return None if entry is None else entry.rule
