"""`asof_join`: for each row of one table, the columns of the row of another table that
was current at its time (the semantics of `pandas.merge_asof`, per key, on Spark).

The call is checked at once: the spec on its own (`spec.joins.AsOfJoin`), then against
both tables' schemas (`plan.asof.plan_asof`); the engine (`engine.asof`) builds the
plan, one shuffle and one sorted pass. See docs/asof.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame

from .binding import Events
from .engine.asof import asof_join as build
from .engine.asof import describe_side
from .plan.asof import plan_asof
from .spec.joins import AsOfJoin, Direction
from .windowed import explained_join
from .workers import check_workers


def asof_join(left: Events | DataFrame, right: Events | DataFrame, *,
              on: str | None = None, by: str | Sequence[str] | None = None,
              direction: Direction = "backward", tolerance: Any = None,
              allow_exact_matches: bool = True,
              suffixes: tuple[str, str] = ("", "_right")) -> DataFrame:
    """Each row of `left` with the columns of its match among the rows of `right`: of the
    right rows with the same `by` values, the one whose `on` time is

    - `direction="backward"` (default): the last at or before the left row's time;
    - `"forward"`: the first at or after it;
    - `"nearest"`: the closer of those two (the backward one when both are as close);

    leaving out right rows at the left row's very time with `allow_exact_matches=False`,
    and any farther than `tolerance` (a duration such as '2s' or a timedelta for
    timestamp and date time, a number for numeric time; None: any distance). Without a
    match the right columns are null. One output row per left row, in no order.

    `left`, `right`: wisp Events (`ws.events(...)`) or DataFrames. `on` defaults to the
    Events' time column (two Events may have differently named ones); `by` (a column, a
    list, or [] for none) to the Events' key. The `on` columns of the two sides, and
    each `by` column, must be of one type.

    Right rows of one time are taken in the order of the right Events' `order` column
    (the last of them backward, the first forward); without one, which of them is
    taken is not defined. A null `by` value matches a null (a key of its own, as
    everywhere in wisp and in pandas). A null (or NaN) time: a wisp Events applies its
    `on_null_time` (fail the query, or drop the row); in a DataFrame, a left row comes
    out unmatched and a right row is never matched.

    Output columns: the left's columns, then the right's except its `by` columns and its
    `on` column when that has the left's name (as pandas' `on=`). A name both sides
    carry (ignoring case) gets `suffixes[0]` on the left and `suffixes[1]` on the right.

    `wisp.explain(result)` says what runs, in words.
    """
    spec = AsOfJoin(on, None if by is None else _names(by), direction, tolerance,
                    allow_exact_matches, suffixes)
    plan = plan_asof(spec, describe_side(left, "left"), describe_side(right, "right"))
    check_workers((left.df if isinstance(left, Events) else left).sparkSession)
    return explained_join(build(plan, left, right), f"Strategy asof-join: {plan.how()}")


def _names(by: str | Sequence[str]) -> Any:
    """`by` as the spec takes it (a string or a list; anything else it refuses)."""
    if isinstance(by, str):
        return (by,)
    return tuple(by) if isinstance(by, (list, tuple)) else by
