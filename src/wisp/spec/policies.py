"""Window policies of the sliding and tumbling family: Count, Time, Delta, Punctuation.

Each is used as an eviction policy, a trigger policy, or a tumbling window's size.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from decimal import Decimal

from ..errors import bad_value
from .limits import MAX_TICKS, check_max_ticks
from .time import Duration, Instant, duration_to_ticks, instant_to_micros


@dataclass(frozen=True)
class Count:
    """`count(n)`: eviction keeps the last `n` tuples; a trigger fires every `n` tuples."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise bad_value("n", "an integer >= 1", self.n)


@dataclass(frozen=True)
class Time:
    """`time(t)` on event time: eviction keeps tuples at most `t` old (exactly `t` old stays);
    a trigger (or a tumbling window's size) fires at `align + k*t`, at most `max_ticks`
    times per key (`spec.limits`: more fails before the firings are made)."""

    t: Duration
    align: Instant | None = None
    max_ticks: int = MAX_TICKS

    def __post_init__(self) -> None:
        ticks = duration_to_ticks(self.t, "t")
        if ticks <= 0:
            raise bad_value("t", "a positive duration", self.t)
        check_align(self.align)
        check_max_ticks(self.max_ticks)

    @property
    def ticks(self) -> int | float | Decimal:
        return duration_to_ticks(self.t, "t")


@dataclass(frozen=True)
class Delta:
    """`delta(attr, d)`: strict difference `new - old > d` on the numeric column `attr`."""

    attr: str
    d: Duration

    def __post_init__(self) -> None:
        if not isinstance(self.attr, str) or not self.attr:
            raise bad_value("attr", "a column name", self.attr)
        ticks = duration_to_ticks(self.d, "d")
        if ticks < 0:
            raise bad_value("d", "a duration or number >= 0", self.d)


@dataclass(frozen=True)
class Punctuation:
    """A tumbling window closed by rows whose boolean column `col` is true."""

    col: str

    def __post_init__(self) -> None:
        if not isinstance(self.col, str) or not self.col:
            raise bad_value("col", "a column name", self.col)


Policy = Count | Time | Delta | Punctuation


def check_align(align: object, param: str = "align") -> None:
    """`align` is None, an instant (datetime or date), or a finite number (numeric time)."""
    expected = "a datetime, a date, a finite number or None"
    if align is None:
        return
    if isinstance(align, bool):
        raise bad_value(param, expected, align)
    if isinstance(align, (int, float, Decimal)):
        if isinstance(align, int) or math.isfinite(align):
            return
        raise bad_value(param, expected, align)
    if not isinstance(align, (_dt.datetime, _dt.date)):
        raise bad_value(param, expected, align)
    instant_to_micros(align, param)
