"""Limits on rows a window makes without events of their own: clock ticks and time
trigger firings fill every step of a key's span, so a small step over a long span (a
clock started at the epoch over this year's data) would make billions of rows. Each
generator takes `max_ticks` per key; a query that would exceed it fails before the rows
are made, naming the parameter, the estimated count and the option that raises it."""

from __future__ import annotations

from ..errors import WispInputError, bad_value

MAX_TICKS = 10_000_000
"""Default `max_ticks`: ticks (or firings) one key may generate."""


def check_max_ticks(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad_value("max_ticks", "an integer >= 1", value)


def too_many_ticks(param: str, count: int, limit: int, owner: str, where: str = ""
                   ) -> WispInputError:
    """The error of a generator (`owner`: "clock" or "Time") that would make `count`
    ticks for one key, more than `limit`; `param` is the step that makes them."""
    what = "clock ticks" if owner == "clock" else "time trigger firings"
    place = f" {where}" if where else ""
    return WispInputError(
        f"`{param}` must make at most max_ticks={limit:,} {what} per key, found about "
        f"{count:,} for one key{place}; pass {owner}(..., max_ticks=...) to allow more, "
        f"or a larger `{param}` or a shorter span")
