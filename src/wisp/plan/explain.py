"""A plan in words."""

from __future__ import annotations

import math

from .aggregations import is_hidden
from .nodes import Plan, ResolvedAggregation
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
    sketches = [words for r in plan.aggregations if (words := sketch_words(r))]
    if sketches:
        lines.append(f"Sketches: {'; '.join(sketches)}.")
    if plan.sorts:
        lines.append(f"Sorting: {sort_words(source, [source.time.name, *plan.tie_break])}")
    elif plan.python:
        lines.append("Sorting: none: each row goes into its pane's partials as it arrives, "
                     "in any order.")
    lines.append(f"Why: {plan.reason}.")
    return "\n".join(lines)


def sketch_words(resolved: ResolvedAggregation) -> str:
    """Which sketch computes `resolved` and its error, or "" when none does."""
    agg = resolved.aggregation
    algebra = agg.definition.algebra
    if algebra == "hll":
        return (f"{resolved.name} from an HLL sketch of 2^{agg.lg_k} buckets (relative "
                f"standard error {percent(hll_error(agg.lg_k))})")
    if algebra == "theta":
        return (f"{resolved.name} from a theta sketch of 2^{agg.lg_k} nominal entries "
                f"(relative standard error {percent(theta_error(agg.lg_k))})")
    if algebra == "kll":
        return (f"{resolved.name} from a KLL sketch with k = {agg.k} (normalized rank "
                f"error {percent(kll_rank_error(agg.k))}; exact up to {agg.k} values)")
    return ""


def hll_error(lg_k: int) -> float:
    """An HLL sketch's relative standard error with `2 ** lg_k` buckets."""
    return 1.04 / math.sqrt(2 ** lg_k)


def theta_error(lg_k: int) -> float:
    """A theta sketch's relative standard error with `2 ** lg_k` nominal entries."""
    return 1.0 / math.sqrt(2 ** lg_k)


def kll_rank_error(k: int) -> float:
    """A KLL sketch's normalized rank error for one quantile (the sketch library's
    published fit, `2.296 / k ** 0.9723`)."""
    return 2.296 / math.pow(k, 0.9723)


def percent(fraction: float) -> str:
    return f"{fraction * 100:.2g}%"
