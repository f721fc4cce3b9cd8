"""The as-of join resolved against its two tables: plain data, no Spark.

The engine describes each side as a `Side` (its columns with their types, and for a wisp
Events its time, key, order and null-time policy); `plan_asof` checks the spec
(`spec.joins.AsOfJoin`) against them and returns the `AsOfPlan` the engine compiles:
which column is the time of each side, the `by` columns, the tolerance in ticks, how
null times are treated, and the output columns with their names. Every mismatch is a
`WispError` naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import bad_value, did_you_mean
from ..spec.joins import AsOfJoin, Direction
from .durations import resolve_bound
from .source import Field, NullTimePolicy, TimeColumn, time_kind

TIME_TYPES = "a timestamp, timestamp_ntz, date, integer, decimal or floating-point column"
LeftNulls = Literal["error", "drop", "unmatched"]
RightNulls = Literal["error", "drop"]


@dataclass(frozen=True)
class Side:
    """One side of an as-of join: its columns, and the roles a wisp Events binds (all
    None for a plain DataFrame)."""

    columns: tuple[Field, ...]
    time: str | None = None
    key: tuple[str, ...] | None = None
    order: str | None = None
    on_null_time: NullTimePolicy | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def field(self, name: str) -> Field | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass(frozen=True)
class AsOfPlan:
    """An as-of join, resolved.

    `left_on`, `right_on`: each side's time column (one name unless two Events bind
    different ones); `time`: the left's, whose kind and scale give the ticks. `by`: the
    columns matched for equality (a null equals a null, as a key of its own). `tolerance`:
    in ticks of `time` (None: any distance). `order`: the right Events' order column,
    which orders right rows of one time (None: their order is Spark's, not defined).
    `left_nulls`: a left row with a null (or NaN) time fails the query ("error"), is
    dropped ("drop", an Events' policy) or comes out unmatched ("unmatched", a plain
    DataFrame); `right_nulls`: such a right row fails the query or is never matched.
    `left_columns`: the left's columns with their output names; `right_columns`: the
    right's columns that come out (all but `by` and an `on` named as the left's), with
    their output names.
    """

    left_on: str
    right_on: str
    time: TimeColumn
    by: tuple[str, ...]
    direction: Direction
    tolerance: int | float | None
    exact: bool
    order: str | None
    left_nulls: LeftNulls
    right_nulls: RightNulls
    left_columns: tuple[tuple[str, str], ...]
    right_columns: tuple[tuple[str, str], ...]

    def how(self) -> str:
        """What runs, in words."""
        by = f"by {', '.join(self.by)}" if self.by else "in one partition (no `by`)"
        within = "" if self.tolerance is None else f" within {self.tolerance} ticks"
        exact = "" if self.exact else ", exact times left out"
        return (f"As-of join ({self.direction}{within}{exact}): the two sides' rows "
                f"tagged and unioned, shuffled once {by}, sorted by time in each "
                "partition, and matched in one pass per key by a Python worker; no join "
                "in Spark's plan.")


def plan_asof(spec: AsOfJoin, left: Side, right: Side) -> AsOfPlan:
    """`spec` checked against the two sides: a `WispError` naming the parameter for a
    column that is missing, of a wrong type or of different types on the two sides."""
    left_on, right_on = _on_columns(spec, left, right)
    time = _time_column(left, right, left_on, right_on)
    by = _by_columns(spec, left, right, left_on, right_on)
    tolerance = (None if spec.tolerance is None
                 else resolve_bound(spec.tolerance, time, "tolerance"))
    right_out = [name for name in right.names
                 if name not in by and not (name == right_on and right_on == left_on)]
    left_named, right_named = _output_names(list(left.names), right_out, spec.suffixes)
    left_nulls: LeftNulls = left.on_null_time or "unmatched"
    right_nulls: RightNulls = right.on_null_time or "drop"
    return AsOfPlan(left_on, right_on, time, by, spec.direction, tolerance,
                    spec.allow_exact_matches, right.order, left_nulls, right_nulls,
                    tuple(left_named), tuple(right_named))


def _on_columns(spec: AsOfJoin, left: Side, right: Side) -> tuple[str, str]:
    if spec.on is not None:
        for which, side in (("left", left), ("right", right)):
            if side.time is not None and side.time != spec.on:
                raise bad_value("on", f"the time column of the {which} Events "
                                f"({side.time!r}) or None", spec.on)
        return spec.on, spec.on
    left_on = left.time or right.time
    right_on = right.time or left.time
    if left_on is None or right_on is None:
        raise bad_value("on", "a column name when neither side is a wisp Events (whose "
                        "time column is the default)", None)
    return left_on, right_on


def _column(side: Side, which: str, param: str, name: str) -> Field:
    """The field `name` of `side` (`which`: "left" or "right"), else an error naming
    `param` with the side's columns and a "did you mean"."""
    found = side.field(name)
    if found is None:
        hint = did_you_mean(name, side.names).strip(" ()")
        raise bad_value(param, f"a column of the {which} table (columns: "
                        f"{', '.join(side.names)})", name, hint=hint)
    return found


def _time_column(left: Side, right: Side, left_on: str, right_on: str) -> TimeColumn:
    left_field = _column(left, "left", "on", left_on)
    right_field = _column(right, "right", "on", right_on)
    kind = time_kind(left_field.type)
    if kind is None:
        raise bad_value("on", TIME_TYPES, f"{left_field.type.text} column {left_on!r}")
    if right_field.type != left_field.type:
        raise bad_value("on", f"columns of one type on both sides (left {left_on!r}: "
                        f"{left_field.type.text})",
                        f"{right_field.type.text} column {right_on!r} on the right",
                        hint="cast one of them")
    return TimeColumn(left_on, kind, left_field.type)


def _by_columns(spec: AsOfJoin, left: Side, right: Side, left_on: str,
                right_on: str) -> tuple[str, ...]:
    if spec.by is not None:
        by = spec.by
    elif left.key is not None and right.key is not None and left.key != right.key:
        raise bad_value("by", "the columns to match, given when the two Events have "
                        f"different keys (left {list(left.key)!r}, right "
                        f"{list(right.key)!r})", None)
    else:
        by = left.key if left.key is not None else right.key or ()
    for name in by:
        left_field = _column(left, "left", "by", name)
        right_field = _column(right, "right", "by", name)
        if name in (left_on, right_on):
            raise bad_value("by", "columns other than the `on` column", name)
        if not left_field.type.atomic:
            raise bad_value("by", "columns of single values (numbers, strings, booleans, "
                            "binary, times)", f"{left_field.type.text} column {name!r}")
        if right_field.type != left_field.type:
            raise bad_value("by", f"columns of one type on both sides (left {name!r}: "
                            f"{left_field.type.text})",
                            f"{right_field.type.text} column {name!r} on the right",
                            hint="cast one of them")
    return by


def _output_names(left: list[str], right: list[str], suffixes: tuple[str, str]
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Each side's columns with their output names: a name both sides carry (equal to
    Spark, which ignores case by default) gets the side's suffix; the results must be
    distinct."""
    right_lower = {name.lower() for name in right}
    left_lower = {name.lower() for name in left}
    left_named = [(name, name + suffixes[0] if name.lower() in right_lower else name)
                  for name in left]
    right_named = [(name, name + suffixes[1] if name.lower() in left_lower else name)
                   for name in right]
    seen: dict[str, str] = {}
    for _, out in [*left_named, *right_named]:
        if out.lower() in seen:
            raise bad_value("suffixes", "suffixes that keep the output's column names "
                            "distinct", suffixes, hint=f"{out!r} would name two columns")
        seen[out.lower()] = out
    return left_named, right_named
