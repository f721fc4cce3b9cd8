"""One frozen, validated spec per window kind. None of them touches Spark.

Every window states its closed side and its output time (the `time` column of `agg`).
A bad argument fails here, where the user wrote it, with a `WispError` naming it.
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeVar, get_args

from ..errors import WispInputError, bad_value, did_you_mean
from . import sizes
from .limits import MAX_TICKS, check_max_ticks
from .policies import Count, Delta, Policy, Punctuation, Time, check_align
from .time import (
    Duration,
    Instant,
    check_tick_range,
    duration_to_ticks,
    format_duration,
    is_time_duration,
    parse_duration_string,
)

Closed = Literal["both", "left", "right", "neither"]
CLOSED_VALUES: tuple[str, ...] = get_args(Closed)


class ColumnExpression(Protocol):
    """A PySpark Column (classic or Spark Connect), as the spec types one without
    importing Spark."""

    def alias(self, *alias: str, **kwargs: Any) -> ColumnExpression: ...

    def isNull(self) -> ColumnExpression: ...


class EventTable(Protocol):
    """An event table (`wisp.events(...)`), as the spec types one without importing
    Spark: the planner reads the rest of it."""

    @property
    def key(self) -> tuple[str, ...]: ...

    @property
    def end(self) -> str | None: ...


Bound: TypeAlias = "Duration | ColumnExpression | None"
"""A bound of `Dynamic` (`start`, `end`, `obsolete`): a duration from the anchor's time,
a column name of the anchor table (a string that is not a duration), a PySpark Column
over it, or None."""
Tick: TypeAlias = "str | ColumnExpression | CalendarTick"
"""The tick of `Since` and `Trailing`: a boolean column (a name or a PySpark Column) or a
calendar tick."""
Gap: TypeAlias = "Duration | ColumnExpression"
"""The gap of `Session`: a duration, or per row a column name or a PySpark Column."""
SlidingPolicy: TypeAlias = "Count | Time | Delta"
"""The eviction and trigger policies of `Sliding`."""


def check_closed(closed: object) -> None:
    if closed not in CLOSED_VALUES:
        hint = did_you_mean(closed, CLOSED_VALUES) if isinstance(closed, str) else ""
        raise bad_value("closed", f"one of {', '.join(map(repr, CLOSED_VALUES))}",
                        closed, hint=hint.strip(" ()"))


def check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise bad_value(name, "True or False", value)


def check_int(name: str, value: object, minimum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_value(name, "an integer", value)
    if minimum is not None and value < minimum:
        raise bad_value(name, f"an integer >= {minimum}", value)


def check_same_units(**durations: object) -> None:
    """Durations of one window are all time durations ('2s', timedelta) or all numbers
    (numeric time); zero and None go with either."""
    given = {name: value for name, value in durations.items()
             if value is not None and value != 0}
    kinds = {is_time_duration(v) for v in given.values()}
    if len(kinds) > 1:
        first, name = next(iter(given)), list(given)[-1]
        raise bad_value(name, f"the same kind of duration as `{first}` (all "
                        "durations such as '2s' or all numbers)", given[name])


class Window:
    """Base of every window spec."""

    expression_table: ClassVar[str | None] = None
    """Where the user Spark expressions (Columns) among the window's parameters are
    evaluated: None for the events themselves, else a key of `tables()`."""

    @property
    def kind(self) -> str:
        return type(self).__name__

    def tables(self) -> dict[str, object]:
        """The window's own event tables by parameter name (none but `Dynamic`'s
        anchors), which the planner sees described beside the events."""
        return {}

    def parameters(self) -> dict[str, object]:
        """The window's parameters by name, where user expressions (Columns) may be; a
        window holding windows (a feature set) names theirs by dotted path."""
        return dict(vars(self))


def _meaning(value: object) -> object:
    """A parameter as its meaning: a time duration ('10s', '0h10s', timedelta(seconds=10))
    as its microseconds; anything else (numbers, calendar sizes, column names, policies)
    as given."""
    if isinstance(value, (str, _dt.timedelta)):
        try:
            return ("duration", duration_to_ticks(value, "duration"))
        except (WispInputError, ValueError):
            return value
    return value


_C = TypeVar("_C", bound=type)


def by_meaning(cls: _C) -> _C:
    """A window dataclass whose instances are equal (and hash alike) when their
    parameters mean the same, however spelled: `Range("-10s", "0s") ==
    Range.past("10s")`, `Tumbling("1m") == Tumbling(timedelta(minutes=1))`."""

    def meaning(self: Any) -> tuple[object, ...]:
        return tuple(_meaning(getattr(self, f.name)) for f in fields(self))

    def __eq__(self: Any, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return bool(meaning(self) == meaning(other))

    def __hash__(self: Any) -> int:
        return hash((type(self).__name__, meaning(self)))

    setattr(cls, "__eq__", __eq__)  # noqa: B010 (a class's method, not an attribute)
    setattr(cls, "__hash__", __hash__)  # noqa: B010
    return cls


# --------------------------------------------------------------------------- psi


@dataclass(frozen=True)
class Rows(Window):
    """Relative-index window: for each anchor event, the events at relative indices
    `start..end` of its key's sequence (0 = the anchor; reversed bounds are normalised).

    Closed side: `closed` applies to the index bounds (`"both"`: `start <= i <= end`,
    `"left"`: `start <= i < end`, `"right"`: `start < i <= end`, `"neither"`: both open).
    The window need not contain its anchor (`Rows(-3, -1)`).

    Only complete windows are emitted (every index present) unless `partial=True`, which
    emits one row per anchor over the indices that exist.

    Output: `time` = the anchor's time; `window_start`/`window_end` = the times of the
    window's first and last events (both inclusive; null when a partial window is empty).
    """

    start: int
    end: int
    closed: Closed = "both"
    partial: bool = False

    def __post_init__(self) -> None:
        check_int("start", self.start)
        check_int("end", self.end)
        check_closed(self.closed)
        check_flag("partial", self.partial)
        if self.start > self.end:
            lo, hi = self.end, self.start
            object.__setattr__(self, "start", lo)
            object.__setattr__(self, "end", hi)
        if self.first_index > self.last_index:
            raise bad_value("closed", f"a side that leaves Rows({self.start}, {self.end}) "
                            "at least one index", self.closed)

    @property
    def first_index(self) -> int:
        """The smallest relative index in the window (inclusive)."""
        return self.start + (0 if self.closed in ("both", "left") else 1)

    @property
    def last_index(self) -> int:
        """The largest relative index in the window (inclusive)."""
        return self.end - (0 if self.closed in ("both", "right") else 1)


@by_meaning
@dataclass(frozen=True)
class Range(Window):
    """Relative-time window `[t + start, t + end]` around each anchor event at time `t`,
    over the events of the anchor's key (reversed bounds are normalised).

    Closed side: `closed` (`"both"` by default, as \\psi's relative time intervals).
    One row per anchor, even when the window holds only the anchor or nothing.

    Output: `time` = the anchor's time; `window_start` = `t + start`, `window_end` =
    `t + end`, with the closed side given by `closed`.
    """

    start: Duration
    end: Duration
    closed: Closed = "both"

    def __post_init__(self) -> None:
        check_closed(self.closed)
        lo = duration_to_ticks(self.start, "start")
        hi = duration_to_ticks(self.end, "end")
        check_tick_range(lo, self.start, "start")
        check_tick_range(hi, self.end, "end")
        units = {is_time_duration(v) for v in (self.start, self.end) if v != 0}
        if len(units) > 1:
            raise bad_value("end", "the same kind of duration as `start` (both durations "
                            "or both numbers)", self.end)
        if lo > hi:
            start, end = self.end, self.start
            object.__setattr__(self, "start", start)
            object.__setattr__(self, "end", end)
            lo, hi = hi, lo
        if lo == hi and self.closed != "both":
            raise bad_value("closed", "'both' for a window of zero length", self.closed)

    def __repr__(self) -> str:
        return (f"Range(start={format_duration(self.start)}, end={format_duration(self.end)}"
                f", closed={self.closed!r})")

    @property
    def start_ticks(self) -> int | float | Decimal:
        return duration_to_ticks(self.start, "start")

    @property
    def end_ticks(self) -> int | float | Decimal:
        return duration_to_ticks(self.end, "end")

    @property
    def uses_time_units(self) -> bool:
        """True when the bounds were given as durations (strings/timedeltas)."""
        return any(is_time_duration(v) for v in (self.start, self.end))

    @classmethod
    def past(cls, duration: Duration, closed: Closed = "both") -> Range:
        """`Range(-duration, 0)`: the last `duration` up to and including the anchor."""
        ticks = duration_to_ticks(duration, "duration")
        if ticks < 0:
            raise bad_value("duration", "a duration >= 0", duration)
        check_tick_range(ticks, duration, "duration")
        if is_time_duration(duration):
            return cls(-_dt.timedelta(microseconds=int(ticks)), _dt.timedelta(0), closed)
        return cls(-ticks, 0, closed)


BOUND_EXPECTED = ("a duration (an offset from the anchor's time, such as '-500ms'), a "
                  "column name of the anchor table, a PySpark Column, or None")


def bound_kind(value: object, param: str) -> str:
    """How a bound of `Dynamic` is given: "none" (None), "offset" (a duration: a string
    of the duration grammar, a timedelta or a number), "column" (any other non-empty
    string: a column of the anchor table) or "expression" (a PySpark Column)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        raise bad_value(param, BOUND_EXPECTED, value)
    if isinstance(value, str):
        if not value.strip():
            raise bad_value(param, BOUND_EXPECTED, value)
        try:
            parse_duration_string(value, param)
        except ValueError:
            return "column"
        return "offset"
    if isinstance(value, (_dt.timedelta, int, float, Decimal)):
        duration_to_ticks(value, param)  # finite numbers only
        return "offset"
    if type(value).__name__ == "Column":  # classic or Spark Connect; spec/ imports no Spark
        return "expression"
    raise bad_value(param, BOUND_EXPECTED, value)


def _exact(value: object, param: str) -> Decimal:
    ticks = duration_to_ticks(value, param)
    return Decimal(str(ticks)) if isinstance(ticks, float) else Decimal(ticks)


@dataclass(frozen=True)
class Dynamic(Window):
    """Windows opened by the rows of another event table (`anchors`, an `Events` or
    `wisp.clock(...)`), \\psi's dynamic windows.

    Each anchor row at time `t` opens the window `[start, end]` over the source events of
    its key (by the source events' `time`); the closed side is `closed` ("both" by
    default). Each of `start`, `end` and `obsolete` is one of:

    - a duration (`"-500ms"`, a timedelta, a number for numeric time): `t + duration`;
    - a column name of the anchor table (a string that is not a duration) or a PySpark
      Column over the anchor table: an absolute time read from the anchor row (a null
      start is the start of time, a null end the end of time);
    - None: `start` and `end` default to the anchor's time, `obsolete` to "no bound".

    `obsolete` promises that no later window of the key starts before it: it must not
    decrease from one anchor to the next, and no window may start before an earlier
    anchor's obsolete; a violation fails the query naming the anchor's time.
    A window reaching past the data is computed over the events that exist.

    Output: one row per anchor; `time` = the anchor's time; `window_start`/`window_end` =
    the window's bounds (sides per `closed`; null = start/end of time).
    """

    anchors: EventTable | Clock
    start: Bound = None
    end: Bound = None
    obsolete: Bound = None
    closed: Closed = "both"

    def __post_init__(self) -> None:
        check_closed(self.closed)
        if self.anchors is None:
            raise bad_value("anchors", "an event table (wisp.events(...)) or wisp.clock(...)",
                            self.anchors)
        kinds = {name: bound_kind(getattr(self, name), name)
                 for name in ("start", "end", "obsolete")}
        offsets = {name: getattr(self, name) for name, kind in kinds.items()
                   if kind == "offset"}
        check_same_units(**offsets)
        if isinstance(self.anchors, Clock):
            for name, kind in kinds.items():
                if kind in ("column", "expression"):
                    raise bad_value(name, "a duration (an offset from the clock's tick) or "
                                    "None: clock anchors have no columns", getattr(self, name))
            self._check_clock_obsolete(self.anchors)

    def _check_clock_obsolete(self, clock: Clock) -> None:
        """The obsolete rule checked eagerly for a clock: a tick's window starts at
        `tick + start`, the tick before promised `tick - every + obsolete`."""
        if self.obsolete is None:
            return
        check_same_units(every=clock.every, obsolete=self.obsolete)
        start = Decimal(0) if self.start is None else _exact(self.start, "start")
        obsolete = _exact(self.obsolete, "obsolete")
        every = _exact(clock.every, "every")
        if obsolete - start > every:
            raise bad_value("obsolete", "at most `start` + `every` for clock anchors (no "
                            "window may start before an earlier anchor's obsolete)",
                            self.obsolete)

    expression_table: ClassVar[str | None] = "anchors"

    def tables(self) -> dict[str, object]:
        return {} if isinstance(self.anchors, Clock) else {"anchors": self.anchors}

    def bound_kind(self, param: str) -> str:
        """"none", "offset", "column" or "expression" (see `bound_kind`)."""
        return bound_kind(getattr(self, param), param)


@dataclass(frozen=True)
class Clock:
    """Anchors at regular times `align + k*every` (\\psi's repeating generator), used as
    `Dynamic(ws.clock(...), ...)`. Ticks lie in `[start, end]` (both inclusive), which
    default to each key's first and last event time (the whole stream's without a key).
    `align` defaults to `start` when given, else the epoch (zero for numeric time).
    `max_ticks`: the most ticks one key may generate (`spec.limits`); a clock that
    would make more fails before making them."""

    every: Duration
    start: Instant | None = None
    end: Instant | None = None
    align: Instant | None = None
    max_ticks: int = MAX_TICKS

    def __post_init__(self) -> None:
        if duration_to_ticks(self.every, "every") <= 0:
            raise bad_value("every", "a positive duration", self.every)
        check_align(self.align)
        check_align(self.start, "start")
        check_align(self.end, "end")
        check_max_ticks(self.max_ticks)


def clock(every: Duration, start: Instant | None = None, end: Instant | None = None,
          align: Instant | None = None,
          max_ticks: int = MAX_TICKS) -> Clock:
    """Anchors every `every` over the data span (or `[start, end]`), aligned to `align`;
    at most `max_ticks` per key."""
    return Clock(every, start, end, align, max_ticks)


# ---------------------------------------------------------------- StreamInsight


@by_meaning
@dataclass(frozen=True)
class Tumbling(Window):
    """Fixed windows `[align + n*size, align + (n+1)*size)` (half-open), or, when `size`
    is a policy (`Count`, `Time`, `Delta`, `Punctuation`), the policy-driven tumbling
    window. Output: `time` = `window_end` for durations, the trigger's time for policies.

    Calendar sizes (`wisp.spec.sizes`): `"1mo"`, `"3mo"`, `"1y"`, and with `tz` whole
    local days (`"1d"`): the windows are the local calendar's months, quarters, years or
    days in `tz` (default UTC), `[first instant of the unit, first instant of the unit
    after the window)`, half-open, DST-correct (a local day lasts 23, 24 or 25 hours).
    `align` is then a date naming the unit a window starts at (January 1970 by default:
    '3mo' windows are calendar quarters). `time` = `window_end`.
    """

    size: Duration | Policy
    align: Instant | None = None
    partial: bool = False
    tz: str | None = None

    def __post_init__(self) -> None:
        check_flag("partial", self.partial)
        if self.tz is not None:
            check_time_zone(self.tz)
        if isinstance(self.size, (Count, Time, Delta, Punctuation)):
            if self.tz is not None:
                raise bad_value("tz", "None for a tumbling window sized by a policy",
                                self.tz)
            check_align(self.align)
            return
        calendar = sizes.calendar_size(self.size, "size", self.tz)
        if calendar is not None:
            sizes.calendar_align(self.align, calendar.unit)
            return
        check_align(self.align)
        if _size_ticks(self.size) <= 0:
            raise bad_value("size", "a positive duration or a policy "
                            "(Count, Time, Delta, Punctuation)", self.size)

    def __repr__(self) -> str:
        return _repr_with_tz(self)

    @property
    def calendar(self) -> sizes.CalendarSize | None:
        """The calendar size, or None for a duration or a policy."""
        if isinstance(self.size, (Count, Time, Delta, Punctuation)):
            return None
        return sizes.calendar_size(self.size, "size", self.tz)


def _repr_with_tz(window: Tumbling | Hopping) -> str:
    """A window's dataclass text, naming `tz` only when given."""
    parts = [f"{f.name}={getattr(window, f.name)!r}" for f in fields(window)
             if f.name != "tz" or window.tz is not None]
    return f"{type(window).__name__}({', '.join(parts)})"


def _size_ticks(value: object, param: str = "size") -> int | float | Decimal:
    """A duration of `Tumbling`/`Hopping`, whose error names calendar sizes too."""
    try:
        return duration_to_ticks(value, param)
    except WispInputError:
        raise bad_value(param, sizes.SIZE_EXPECTED, value) from None


HoppingOutput = Literal["windows", "changes"]


@by_meaning
@dataclass(frozen=True)
class Hopping(Window):
    """Windows `[align + n*hop, align + n*hop + size)` (half-open); an event belongs to
    every window its lifetime overlaps. Output: `time` = `window_end`.

    Calendar sizes (`wisp.spec.sizes`): `size` and `hop` both in months (`"3mo"`,
    `"1mo"`, `"1y"`) or, with `tz`, both in whole local days: the windows span the local
    units `[align + n*hop, align + n*hop + size)` of `tz` (default UTC), from the first
    instant of the first unit to the first instant of the unit after the last
    (half-open, DST-correct). `align` is a date naming a unit a window starts at
    (January 1970 by default)."""

    size: Duration
    hop: Duration
    align: Instant | None = None
    output: HoppingOutput = "windows"
    tz: str | None = None

    def __post_init__(self) -> None:
        if self.tz is not None:
            check_time_zone(self.tz)
        if self.output not in get_args(HoppingOutput):
            raise bad_value("output", "'windows' or 'changes'", self.output)
        calendar = sizes.calendar_size(self.size, "size", self.tz)
        if calendar is not None:
            sizes.hop_size(calendar, self.hop, self.tz)
            sizes.calendar_align(self.align, calendar.unit)
            return
        if sizes.calendar_size(self.hop, "hop", None) is not None:
            raise bad_value("size", "a calendar size like `hop` (both in months, or both "
                            "in local days with `tz`)", self.size)
        if _size_ticks(self.size) <= 0:
            raise bad_value("size", "a positive duration", self.size)
        if _size_ticks(self.hop, "hop") <= 0:
            raise bad_value("hop", "a positive duration", self.hop)
        check_align(self.align)
        check_same_units(size=self.size, hop=self.hop)

    def __repr__(self) -> str:
        return _repr_with_tz(self)

    @property
    def calendar(self) -> tuple[sizes.CalendarSize, sizes.CalendarSize] | None:
        """The calendar size and hop, or None for durations."""
        size = sizes.calendar_size(self.size, "size", self.tz)
        if size is None:
            return None
        return size, sizes.hop_size(size, self.hop, self.tz)


@dataclass(frozen=True)
class Snapshot(Window):
    """One window per interval between consecutive event start/end points, over the
    events alive in it (half-open). Output: `time` = `window_start`."""


@dataclass(frozen=True)
class CountByStartTime(Window):
    """Each run of `n` consecutive distinct start times: span `[s_i, s_{i+n-1} + 1 tick)`,
    events clipped to the span. Output: `time` = `s_{i+n-1}`."""

    n: int

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=1)


# -------------------------------------------------------------------------- SPL


@dataclass(frozen=True)
class Sliding(Window):
    """Sliding window with an eviction policy and a trigger policy (`Count`, `Time`,
    `Delta`), replayed per key tuple by tuple in arrival order (`order`, else time).
    The clock is the newest time seen in the key.

    Closed side: both ends of the window are included; the eviction policy says which
    tuples it holds. `Count(n)`: the last `n` tuples to arrive. `Time(t)`: the tuples at
    most `t` older than the clock (`clock - time <= t`: a tuple exactly `t` old stays;
    an arriving tuple is always inserted, even a late one). `Delta(attr, d)`: the
    arriving tuple evicts every tuple `w` with `new.attr - w.attr > d` (strict), so
    `new.attr - w.attr <= d` stays. A count or time trigger fires after the arriving
    tuple is inserted (it is in the window); a `Delta` trigger fires on the window the
    previous arrival left (the arriving tuple is not in it); a `Time(t, align)` firing
    at `align + k*t` holds every arrival whose clock is at or before it. Nothing is
    emitted before the window is first full unless `partial=True` (a time trigger always
    emits).

    Output: one row per firing; `time` = the trigger's time (the clock at the arrival
    that fired it, or the time firing's instant); `window_start`/`window_end` = the
    times of the window's first and last tuples in arrival order (both inclusive; null
    for an empty window)."""

    evict: SlidingPolicy
    trigger: SlidingPolicy = field(default_factory=lambda: Count(1))
    partial: bool = False

    def __post_init__(self) -> None:
        for name in ("evict", "trigger"):
            value = getattr(self, name)
            if not isinstance(value, (Count, Time, Delta)):
                raise bad_value(name, "wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)",
                                value)
        check_flag("partial", self.partial)


# ------------------------------------------------------------------------- Fenl


@dataclass(frozen=True)
class CalendarTick:
    """A calendar tick (`hourly()`, `daily()`, ..., `cron(expr)`) in time zone `tz`.
    Periods are `(previous tick, tick]`."""

    unit: str
    tz: str = "UTC"
    expr: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in ("hourly", "daily", "weekly", "monthly", "yearly", "cron"):
            raise bad_value("unit", "hourly, daily, weekly, monthly, yearly or cron",
                            self.unit)
        check_time_zone(self.tz)
        if self.unit == "cron":
            check_cron(self.expr)


def check_time_zone(tz: object) -> None:
    if not isinstance(tz, str):
        raise bad_value("tz", "an IANA time zone name such as 'Europe/Berlin'", tz)
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        hint = did_you_mean(tz, sorted(zoneinfo.available_timezones())).strip(" ()")
        raise bad_value("tz", "an IANA time zone name such as 'Europe/Berlin'", tz,
                        hint=hint) from None


_CRON_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31),
                ("month", 1, 12), ("day of week", 0, 7))


def check_cron(expr: object) -> None:
    """A five-field cron expression: minute hour day-of-month month day-of-week."""
    if not isinstance(expr, str) or len(expr.split()) != 5:
        raise bad_value("expr", "a cron expression of five fields "
                        "(minute hour day-of-month month day-of-week)", expr)
    for text, (name, low, high) in zip(expr.split(), _CRON_FIELDS, strict=True):
        for part in text.split(","):
            base, slash, step = part.partition("/")
            if slash and (not _is_number(step) or int(step) < 1):
                raise bad_value("expr", f"a valid {name} step (a whole number >= 1)", part)
            if base == "*":
                continue
            bounds = base.split("-")
            if len(bounds) > 2 or not all(_is_number(b) and low <= int(b) <= high
                                          for b in bounds):
                raise bad_value("expr", f"a {name} field of numbers in {low}..{high}, "
                                "ranges, steps or *", part)
            if len(bounds) == 2 and int(bounds[0]) > int(bounds[1]):
                raise bad_value("expr", f"a {name} range from low to high", part)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def hourly(tz: str = "UTC") -> CalendarTick:
    """A tick at the start of every hour in `tz`."""
    return CalendarTick("hourly", tz)


def daily(tz: str = "UTC") -> CalendarTick:
    """A tick at every local midnight in `tz` (23 or 25 hours apart across DST)."""
    return CalendarTick("daily", tz)


def weekly(tz: str = "UTC") -> CalendarTick:
    """A tick at every local Monday midnight in `tz`."""
    return CalendarTick("weekly", tz)


def monthly(tz: str = "UTC") -> CalendarTick:
    """A tick at local midnight on the first of every month in `tz`."""
    return CalendarTick("monthly", tz)


def yearly(tz: str = "UTC") -> CalendarTick:
    """A tick at local midnight on every January 1st in `tz`."""
    return CalendarTick("yearly", tz)


def cron(expr: str, tz: str = "UTC") -> CalendarTick:
    """A tick at every local time matching the five-field cron expression `expr`."""
    return CalendarTick("cron", tz, expr)


SinceEmit = Literal["ticks", "events", "both"]


@dataclass(frozen=True)
class Since(Window):
    """The aggregate resets after each tick; `tick` is a boolean column (the row where it
    is true is included, then the aggregate resets) or a calendar tick (periods
    `(previous tick, tick]`). Output: `time` = the input's time or the tick."""

    tick: Tick
    emit: SinceEmit | None = None

    def __post_init__(self) -> None:
        if self.tick is None:
            raise bad_value("tick", "a boolean column or a calendar tick", self.tick)
        if self.emit is not None and self.emit not in get_args(SinceEmit):
            raise bad_value("emit", "'ticks', 'events' or 'both'", self.emit)


@dataclass(frozen=True)
class Trailing(Window):
    """One row per event: the event's tick period and the `n - 1` periods before it, up
    to and including the event (`tick` as in `Since`; `Trailing(1, tick)` is
    `Since(tick, emit="events")`). The aggregates are null while fewer than `n - 1`
    ticks of the key lie strictly before the event, unless `partial=True` (the periods
    that exist).

    Closed side: a boolean tick's row closes its period (a period ends with its tick row
    included, the next starts after it), and the window runs from the first event after
    the tick row `n` periods back through the event, both included. A calendar tick's
    periods are `(previous tick, tick]`: the window is `(window_start, the event's
    time]`, open on the left at the tick before its first period (`n` periods back),
    closed on the right.

    Output: `time` = the event's time; `window_start`/`window_end` = the times of the
    window's first and last events (both inclusive) for a boolean tick; for a calendar
    tick, the tick before the window's first period (exclusive) and the event's time
    (inclusive)."""

    n: int
    tick: Tick
    partial: bool = False

    def __post_init__(self) -> None:
        check_int("n", self.n, minimum=1)
        if self.tick is None:
            raise bad_value("tick", "a boolean column or a calendar tick", self.tick)
        check_flag("partial", self.partial)


# ----------------------------------------------------------------------- beyond


@by_meaning
@dataclass(frozen=True)
class Session(Window):
    """Gap-based sessions per key: `[first, last + gap)` (half-open), where `last` is
    the latest moment any of the session's events is alive (a point event's time, an
    interval event's `end`; a null end keeps the session open to the end of time).

    An event joins the current session when its time is at most `last + gap` (an event
    exactly `gap` after the last one joins it, as Spark's `session_window` does), else
    it starts a new session. With `max_duration`, a session also ends at
    `first + max_duration`: an event at or after that instant starts a new session, and
    the window is `[first, min(last + gap, first + max_duration))`.

    A per-row gap: `gap` may name a column of the events (a string that is not a
    duration and does not begin with a digit or a sign) or be a PySpark Column
    expression over them: each event then keeps its session open until its own reach
    plus its own gap (the session ends at the largest of them), as `session_window`
    with a gap column. The gap is an interval for timestamp time (a day-time interval
    such as `F.make_dt_interval(secs=...)`, or a calendar interval such as
    `F.make_interval(secs=...)`, added to the event's time by Spark), a number for
    integer or float time. A row whose gap is null, zero or negative fails the query
    with a `WispError` naming the gap (Spark drops such rows; wisp loses none).

    Output: one row per session; `time` = `window_end` (null: the end of time).
    """

    gap: Gap
    max_duration: Duration | None = None

    def __post_init__(self) -> None:
        if self.max_duration is not None and \
                duration_to_ticks(self.max_duration, "max_duration") <= 0:
            raise bad_value("max_duration", "a positive duration or None", self.max_duration)
        if self.gap_kind != "duration":
            return
        if duration_to_ticks(self.gap, "gap") <= 0:
            raise bad_value("gap", "a positive duration", self.gap)
        check_same_units(gap=self.gap, max_duration=self.max_duration)

    @property
    def gap_kind(self) -> str:
        """"duration" (one gap for all rows), "column" (a column name) or "expression"
        (a PySpark Column): how `gap` is given."""
        value = self.gap
        if type(value).__name__ == "Column":  # classic or Spark Connect
            return "expression"
        if isinstance(value, str) and value.strip() and value.strip()[0] not in "+-0123456789":
            try:
                parse_duration_string(value, "gap")
            except ValueError:
                return "column"  # a string that begins with a digit is a duration
        if isinstance(value, (str, _dt.timedelta, int, float, Decimal)) and \
                not isinstance(value, bool):
            return "duration"
        raise bad_value("gap", "a duration such as '250ms', '2s', '1h30m', a "
                        "datetime.timedelta or a number, or a per-row gap (a column name "
                        "or a PySpark Column)", value)
