"""The as-of join's spec: frozen and validated where the user writes it, no Spark.

`ws.asof_join(left, right, on=..., by=..., ...)` gives each row of `left` the columns of
one row of `right`: of the right rows with the same `by` values, the one whose `on`
time is the last at or before the left row's (`direction="backward"`), the first at or
after it (`"forward"`), or the closer of those two (`"nearest"`, the earlier on a tie),
as `pandas.merge_asof` does. This module holds what the call says; what it means
against the two tables' columns is `plan.asof`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from ..errors import WispInputError, bad_value, did_you_mean
from .time import GRAMMAR, Duration, check_tick_range, duration_to_ticks

Direction = Literal["backward", "forward", "nearest"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)


@dataclass(frozen=True)
class AsOfJoin:
    """What an as-of join asks for, checked on its own (the columns are checked against
    the tables in `plan.asof`).

    `on`: the time column of both sides (None: each wisp Events side's own time column).
    `by`: the columns whose values must be equal (a name, a list of names, an empty list
    for none; None: the Events' keys). `direction`: "backward", "forward" or "nearest".
    `tolerance`: None, or the largest distance between the left and the matched right
    time, >= 0 (a duration such as '2s' or a timedelta for time columns, a number for
    numeric ones; resolved against the column in `plan.asof`). `allow_exact_matches`:
    False leaves out right rows at the left row's very time. `suffixes`: appended to the
    left and to the right name of a column both sides carry (`("", "_right")`).
    """

    on: str | None = None
    by: tuple[str, ...] | None = None
    direction: Direction = "backward"
    tolerance: Duration | None = None
    allow_exact_matches: bool = True
    suffixes: tuple[str, str] = ("", "_right")

    def __post_init__(self) -> None:
        if self.on is not None and (not isinstance(self.on, str) or not self.on):
            raise bad_value("on", "a column name or None (the time columns of wisp "
                            "Events)", self.on)
        object.__setattr__(self, "by", _by_names(self.by))
        if self.direction not in DIRECTIONS:
            hint = (did_you_mean(self.direction, DIRECTIONS).strip(" ()")
                    if isinstance(self.direction, str) else "")
            raise bad_value("direction", f"one of {', '.join(map(repr, DIRECTIONS))}",
                            self.direction, hint=hint)
        if not isinstance(self.allow_exact_matches, bool):
            raise bad_value("allow_exact_matches", "True or False", self.allow_exact_matches)
        _check_tolerance(self.tolerance)
        suffixes = self.suffixes
        if (not isinstance(suffixes, (tuple, list)) or len(suffixes) != 2
                or not all(isinstance(s, str) for s in suffixes)):
            raise bad_value("suffixes", "a pair of strings, such as ('', '_right')", suffixes)
        if suffixes[0] == suffixes[1]:
            raise bad_value("suffixes", "two different strings (one for each side)",
                            suffixes)
        object.__setattr__(self, "suffixes", (suffixes[0], suffixes[1]))


def _by_names(by: object) -> tuple[str, ...] | None:
    """`by` as a tuple of distinct column names (None stays None: the Events' keys)."""
    if by is None:
        return None
    if isinstance(by, str):
        names: tuple[str, ...] = (by,)
    elif (isinstance(by, Sequence) and not isinstance(by, (bytes, bytearray))
          and all(isinstance(b, str) and b for b in by)):
        names = tuple(by)
    else:
        raise bad_value("by", "a column name, a list of column names or None", by)
    if not all(names):
        raise bad_value("by", "non-empty column names", by)
    if len(set(names)) != len(names):
        raise bad_value("by", "distinct column names", list(names))
    return names


def _check_tolerance(tolerance: object) -> None:
    """None, or a duration (`spec.time` grammar) or number of at least zero."""
    if tolerance is None:
        return
    try:
        ticks = duration_to_ticks(tolerance, "tolerance")
    except WispInputError:
        raise bad_value("tolerance", f"None or {GRAMMAR} (at least 0)", tolerance) from None
    if ticks < 0:
        raise bad_value("tolerance", "a duration of at least 0 (the largest distance "
                        "between a left and its matched right time)", tolerance)
    check_tick_range(ticks, tolerance, "tolerance")
