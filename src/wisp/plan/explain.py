"""A plan in words."""

from __future__ import annotations

from .nodes import Plan, RangeFrame, RowsFrame


def describe(plan: Plan) -> str:
    """What runs for `plan`, and why, in a few sentences."""
    events = plan.events
    what = "cumulative aggregation" if plan.window is None else repr(plan.window)
    keys = f"per key ({', '.join(events.key)})" if events.key else "over one global stream"
    aggs = ", ".join(r.name for r in plan.aggregations)
    ties = (f"ties in time broken by {', '.join(plan.tie_break)}" if plan.tie_break
            else "ties in time are not broken by any column")
    lines = [f"{what} {keys}, time column {events.time.name!r} ({events.time.kind}); "
             f"aggregations: {aggs}; {ties}."]
    if plan.strategy == "native-running":
        lines.append("Strategy native-running: Spark's window operator with a ROWS "
                     "UNBOUNDED PRECEDING frame, partitioned by key and ordered by time and "
                     "the tie-break columns.")
    else:
        frame = plan.frame
        if isinstance(frame, RowsFrame):
            bounds = (f"positions i{frame.first:+d}..i{frame.last:+d} by index arithmetic"
                      f"{'' if frame.partial else ', complete windows only'}")
        elif isinstance(frame, RangeFrame):
            bounds = "time bounds by binary search over the sorted times"
        else:
            bounds = "every earlier position of the key"
        lines.append("Strategy arrow-frames: Spark hash-partitions by key and sorts within "
                     "partitions by key, time and tie-break (one shuffle, one sort), then a "
                     "vectorised Arrow kernel (mapInArrow) walks each key's run of events: "
                     f"frame bounds {bounds}; counts and integer sums by prefix differences; "
                     "float sums, means, min/max, variance and stddev by a disjoint sparse "
                     "table, which only adds values inside each window.")
    lines.append(f"Why: {plan.reason}.")
    return "\n".join(lines)
