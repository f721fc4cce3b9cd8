"""A plan in words."""

from __future__ import annotations

from .nodes import Plan
from .planner import sort_words


def describe(plan: Plan) -> str:
    """What runs for `plan`, and why, in a few sentences."""
    events = plan.events
    what = "cumulative aggregation" if plan.window is None else repr(plan.window)
    keys = f"per key ({', '.join(events.key)})" if events.key else "over one global stream"
    aggs = ", ".join(r.name for r in plan.aggregations)
    ties = (f"ties in time broken by {', '.join(plan.tie_break)}" if plan.tie_break
            else "ties in time are not broken by any column")
    lines = [f"{what} {keys}, time column {events.time.name!r} ({events.time.kind}); "
             f"aggregations: {aggs}; {ties}.",
             f"Strategy {plan.strategy}: {plan.how}"]
    if not plan.builder.startswith("native:"):
        lines.append(f"Sorting: {sort_words(events, [events.time.name, *plan.tie_break])}")
    lines.append(f"Why: {plan.reason}.")
    return "\n".join(lines)
