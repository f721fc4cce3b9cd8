"""`snap_to_hops`: interval events with their lifetimes snapped to hopping-window
assignments (the hopping-window example's "adjusted events").

For hopping windows `[w, w + size)`, `w = align + k*hop` with `hop <= size`, the result
of window `w` is valid on `[w + size, w + size + hop)`: these validity intervals tile
the timeline. An event's lifetime `[s, e)` is snapped to `[S, E)`, where `S` is where the
earliest window holding `s` becomes valid (that window's end) and `E` is where the latest
window holding the last tick `e - 1` stops being valid (its end plus one hop). Snapshot
windows over the snapped events give one row per interval over which the hopping
result is constant (`Hopping(..., output="changes")`). An open-ended event stays
open-ended (null end = end of time). Point events are lifetimes of one tick. The
bounds are exact to the limits of 64-bit ticks; one beyond them fails the query.
"""

from __future__ import annotations

from typing import Any

from .errors import bad_value
from .events import EDGE_END_COLUMN, Events, events

__all__ = ["snap_to_hops"]


def snap_to_hops(ev: Events, size: Any, hop: Any, align: Any = None) -> Events:
    """`ev` with every lifetime snapped to the validity intervals of the hopping windows
    `[align + k*hop, align + k*hop + size)` (see the module's docstring). Needs
    `0 < hop <= size`. The result's `time` column holds the snapped start and its end
    column (the events' own, or a new column `end` for point events) the snapped end,
    null for the end of time. Rows with a null time fail the query (or are dropped, as
    `ev`'s `on_null_time` says), as do rows whose end is before their time."""
    from .engine.describe import describe_events
    from .engine.snapping import snapped_lifetimes
    from .plan.intervals import snap_grid

    if not isinstance(ev, Events):
        raise bad_value("ev", "wisp events (wisp.events(...))", type(ev).__name__)
    size_ticks, hop_ticks, align_ticks = snap_grid(describe_events(ev), size, hop, align)
    end = ev.end
    if end is None:  # the data guards keep the columns: check them before building
        if EDGE_END_COLUMN in ev.df.columns:
            raise bad_value("ev", f"point events without a column named {EDGE_END_COLUMN!r} "
                            "(snap_to_hops writes the snapped end there)", EDGE_END_COLUMN)
        end = EDGE_END_COLUMN
    snapped = snapped_lifetimes(ev, end, size_ticks, hop_ticks, align_ticks)
    return events(snapped, ev.time.name, end=end, key=list(ev.key) or None, order=ev.order,
                  on_null_time=ev.on_null_time)
