"""A plan in words."""

from __future__ import annotations

from .aggregations import is_hidden
from .nodes import Plan
from .source import sort_words


def describe(plan: Plan) -> str:
    """What runs for `plan`, and why, in a few sentences."""
    source = plan.source
    keys = f"per key ({', '.join(source.key)})" if source.key else "over one global stream"
    aggs = ", ".join(r.name + (f" (null below {r.aggregation.min_count} values)"
                                if r.aggregation.min_count else "")
                     for r in plan.aggregations if not is_hidden(r))
    ties = (f"ties in time broken by {', '.join(plan.tie_break)}" if plan.tie_break
            else "ties in time are not broken by any column")
    lines = [f"{plan.window} {keys}, time column {source.time.name!r} ({source.time.kind}); "
             f"aggregations: {aggs}; {ties}.",
             f"Strategy {plan.strategy}: {plan.how()}"]
    users = [r.name for r in plan.aggregations if r.aggregation.user]
    if users:
        lines.append(f"Aggregators: {', '.join(users)} {'is' if len(users) == 1 else 'are'} "
                     "mergeable (the aggregator's merge), so windows are merged partial "
                     "states, never a window's values re-added per row: windows that "
                     "slide by two stacks of merged states (each row added and merged "
                     "once), other windows by a segment tree of merged states, running "
                     "windows by one state carried per key.")
    if plan.sorts:
        lines.append(f"Sorting: {sort_words(source, [source.time.name, *plan.tie_break])}")
    elif plan.python:
        lines.append("Sorting: none: each row goes into its pane's partials as it arrives, "
                     "in any order.")
    lines.append(f"Why: {plan.reason}.")
    return "\n".join(lines)
