"""Construction and validation of every window spec, policy and calendar tick."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wisp.errors import WispError, WispInputError
from wisp.spec.policies import Count, Delta, Punctuation, Time
from wisp.spec.windows import (
    CalendarTick,
    Clock,
    CountByStartTime,
    Dynamic,
    Hopping,
    Range,
    Rows,
    Session,
    Since,
    Sliding,
    Snapshot,
    Trailing,
    Tumbling,
    Window,
    clock,
    cron,
    daily,
    hourly,
    monthly,
    weekly,
    yearly,
)

CLOSED = ("both", "left", "right", "neither")
ANCHORS = ("anchor events",)  # stands for an Events table: Dynamic only stores it


@contextmanager
def bad_value(param: str, found: object, *fragments: str) -> Iterator[None]:
    """Expect "`param` must be ..., found <repr(found)>" plus every fragment."""
    with pytest.raises(WispInputError) as info:
        yield
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, WispError)
    assert message.startswith(f"`{param}` must be "), message
    assert f"found {found!r}" in message, message
    for fragment in fragments:
        assert fragment in message, message


# ------------------------------------------------------------------------- Rows


def test_rows_defaults_and_kind() -> None:
    window = Rows(-2, 0)
    assert (window.start, window.end, window.closed, window.partial) == (-2, 0, "both", False)
    assert window.kind == "Rows"
    assert isinstance(window, Window)


def test_rows_reversed_bounds_are_normalised() -> None:
    window = Rows(0, -2)
    assert (window.start, window.end) == (-2, 0)
    assert window == Rows(-2, 0)
    assert hash(window) == hash(Rows(-2, 0))
    assert Rows(3, -3, "left") == Rows(-3, 3, "left")


@pytest.mark.parametrize(
    ("closed", "first", "last"),
    [("both", -2, 2), ("left", -2, 1), ("right", -1, 2), ("neither", -1, 1)],
)
def test_rows_first_and_last_index_per_closed_side(closed: str, first: int, last: int) -> None:
    window = Rows(-2, 2, closed)  # type: ignore[arg-type]
    assert (window.first_index, window.last_index) == (first, last)


def test_rows_need_not_contain_the_anchor() -> None:
    window = Rows(-3, -1)
    assert (window.first_index, window.last_index) == (-3, -1)
    ahead = Rows(1, 3, "neither")
    assert (ahead.first_index, ahead.last_index) == (2, 2)


@pytest.mark.parametrize(
    ("start", "end", "closed"),
    [(0, 0, "left"), (0, 0, "right"), (0, 0, "neither"), (3, 4, "neither"), (-1, 0, "neither"),
     (5, 5, "left")],
)
def test_rows_with_no_index_are_rejected(start: int, end: int, closed: str) -> None:
    with bad_value("closed", closed, "at least one index", f"Rows({start}, {end})"):
        Rows(start, end, closed)  # type: ignore[arg-type]


@given(st.integers(-30, 30), st.integers(-30, 30), st.sampled_from(CLOSED))
def test_rows_indices_match_the_interval_definition(start: int, end: int, closed: str) -> None:
    lo, hi = min(start, end), max(start, end)
    indices = [
        i for i in range(lo - 1, hi + 2)
        if (lo <= i if closed in ("both", "left") else lo < i)
        and (i <= hi if closed in ("both", "right") else i < hi)
    ]
    if not indices:
        with bad_value("closed", closed):
            Rows(start, end, closed)  # type: ignore[arg-type]
        return
    window = Rows(start, end, closed)  # type: ignore[arg-type]
    assert (window.start, window.end) == (lo, hi)
    assert (window.first_index, window.last_index) == (indices[0], indices[-1])
    assert indices == list(range(indices[0], indices[-1] + 1))


@pytest.mark.parametrize(
    ("kwargs", "param", "found"),
    [
        ({"start": "a", "end": 0}, "start", "a"),
        ({"start": 1.5, "end": 2}, "start", 1.5),
        ({"start": True, "end": 2}, "start", True),
        ({"start": None, "end": 2}, "start", None),
        ({"start": 0, "end": "2"}, "end", "2"),
        ({"start": 0, "end": 2.0}, "end", 2.0),
        ({"start": 0, "end": False}, "end", False),
        ({"start": 0, "end": 2, "partial": 1}, "partial", 1),
        ({"start": 0, "end": 2, "partial": "yes"}, "partial", "yes"),
        ({"start": 0, "end": 2, "partial": None}, "partial", None),
    ],
)
def test_rows_bad_arguments(kwargs: dict[str, Any], param: str, found: object) -> None:
    with bad_value(param, found):
        Rows(**kwargs)


@pytest.mark.parametrize(
    ("closed", "suggestion"),
    [("bth", "'both'"), ("lft", "'left'"), ("rigth", "'right'"), ("neithr", "'neither'"),
     ("Both", "'both'")],
)
@pytest.mark.parametrize("make", [lambda c: Rows(-1, 1, c), lambda c: Range(-1, 1, c),
                                  lambda c: Dynamic(ANCHORS, closed=c)])
def test_bad_closed_suggests_the_nearest(
    make: Callable[[str], object], closed: str, suggestion: str
) -> None:
    with bad_value("closed", closed, "'both', 'left', 'right', 'neither'",
                   f"did you mean {suggestion}?"):
        make(closed)


@pytest.mark.parametrize("closed", ["xyz", 3, None, ("both",)])
def test_bad_closed_without_a_near_match_has_no_hint(closed: object) -> None:
    with pytest.raises(WispInputError) as info:
        Rows(-1, 1, closed)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith("`closed` must be one of 'both', 'left', 'right', 'neither'")
    assert message.endswith(f"found {closed!r}")
    assert "did you mean" not in message


# ------------------------------------------------------------------------ Range


def test_range_keeps_the_given_bounds_and_their_ticks() -> None:
    window = Range("-2s", "500ms")
    assert (window.start, window.end, window.closed) == ("-2s", "500ms", "both")
    assert (window.start_ticks, window.end_ticks) == (-2_000_000, 500_000)
    assert window.uses_time_units
    numeric = Range(-5, 5, "left")
    assert (numeric.start_ticks, numeric.end_ticks) == (-5, 5)
    assert not numeric.uses_time_units
    assert Range(dt.timedelta(seconds=-1), dt.timedelta(0)).uses_time_units


@pytest.mark.parametrize(
    ("start", "end", "lo", "hi"),
    [
        ("2s", "-2s", "-2s", "2s"),
        (5, 1, 1, 5),
        (2.5, -0.5, -0.5, 2.5),
        (Decimal("3"), Decimal("-1"), Decimal("-1"), Decimal("3")),
        (dt.timedelta(seconds=3), dt.timedelta(seconds=1),
         dt.timedelta(seconds=1), dt.timedelta(seconds=3)),
        ("2s", 0, 0, "2s"),
        (0, "-2s", "-2s", 0),
        ("1s", "1ms", "1ms", "1s"),
    ],
)
def test_range_reversed_bounds_are_normalised(start: Any, end: Any, lo: Any, hi: Any) -> None:
    window = Range(start, end)
    assert (window.start, window.end) == (lo, hi)
    assert window.start_ticks <= window.end_ticks
    assert window == Range(lo, hi)


@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_range_normalisation_on_random_bounds(a: int, b: int) -> None:
    window = Range(a, b)
    assert (window.start, window.end) == (min(a, b), max(a, b))


def test_range_need_not_contain_the_anchor() -> None:
    window = Range("1ms", "3ms")
    assert (window.start_ticks, window.end_ticks) == (1_000, 3_000)
    assert Range(-3, -1, "neither").end_ticks == -1


def test_range_mixes_a_duration_with_a_plain_zero() -> None:
    assert Range("-2s", 0).start_ticks == -2_000_000
    assert Range(0, dt.timedelta(seconds=1)).end_ticks == 1_000_000
    assert Range("-2s", 0).uses_time_units


@pytest.mark.parametrize(
    ("start", "end", "found"),
    [
        ("1s", 2, 2),
        (1, "2s", "2s"),
        (-1, "2s", "2s"),
        (dt.timedelta(seconds=1), 5, 5),
        (1.5, "2s", "2s"),
        ("-1s", Decimal("2"), Decimal("2")),
        (dt.timedelta(0), 5, 5),
    ],
)
def test_range_rejects_mixing_durations_and_numbers(start: Any, end: Any, found: Any) -> None:
    with bad_value("end", found, "the same kind of duration as `start`"):
        Range(start, end)


@pytest.mark.parametrize("closed", ["left", "right", "neither"])
@pytest.mark.parametrize(
    ("start", "end"), [(0, 0), (3, 3), ("1s", "1000ms"), ("0s", 0), (2.0, 2)]
)
def test_zero_length_range_must_be_closed_on_both_sides(
    start: Any, end: Any, closed: str
) -> None:
    assert Range(start, end).start_ticks == Range(start, end).end_ticks
    with bad_value("closed", closed, "'both' for a window of zero length"):
        Range(start, end, closed)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"start": "2 seconds", "end": 0}, "start", "2 seconds", "'250ms'"),
        ({"start": 0, "end": None}, "end", None, "'250ms'"),
        ({"start": True, "end": 1}, "start", True, "'250ms'"),
        ({"start": float("nan"), "end": 1}, "start", float("nan"), "finite"),
        ({"start": 0, "end": float("inf")}, "end", float("inf"), "finite"),
        ({"start": "-1.5s", "end": "0s"}, "start", "-1.5s", "'250ms'"),
    ],
)
def test_range_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Range(**kwargs)


@pytest.mark.parametrize(
    ("duration", "ticks"),
    [("10s", 10_000_000), ("1h30m", 5_400_000_000), (dt.timedelta(minutes=1), 60_000_000),
     ("0s", 0)],
)
def test_range_past_with_a_time_duration(duration: Any, ticks: int) -> None:
    window = Range.past(duration)
    assert (window.start_ticks, window.end_ticks) == (-ticks, 0)
    assert window.uses_time_units
    assert window.closed == "both"
    assert window == Range(-dt.timedelta(microseconds=ticks), dt.timedelta(0))


@pytest.mark.parametrize("duration", [5, 2.5, Decimal("1.5"), 0])
def test_range_past_with_a_number(duration: Any) -> None:
    window = Range.past(duration)
    assert window == Range(-duration, 0)
    assert (window.start_ticks, window.end_ticks) == (-duration, 0)
    assert not window.uses_time_units


def test_range_past_passes_closed() -> None:
    assert Range.past("10s", closed="left").closed == "left"
    assert Range.past(3, "right") == Range(-3, 0, "right")
    with bad_value("closed", "right", "zero length"):
        Range.past(0, closed="right")
    with bad_value("closed", "lft", "did you mean 'left'?"):
        Range.past("1s", closed="lft")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("duration", "fragment"),
    [("-1s", ">= 0"), (-3, ">= 0"), (dt.timedelta(seconds=-1), ">= 0"), (-0.5, ">= 0"),
     (True, "'250ms'"), (None, "'250ms'"), ("ten seconds", "'250ms'"),
     (float("nan"), "finite")],
)
def test_range_past_bad_duration(duration: Any, fragment: str) -> None:
    with bad_value("duration", duration, fragment):
        Range.past(duration)


# ------------------------------------------------------------- Dynamic, clock


def test_dynamic_stores_its_arguments() -> None:
    window = Dynamic(ANCHORS, start="-1s", end="1s", obsolete="-10s", closed="left")
    assert (window.anchors, window.start, window.end, window.obsolete, window.closed) == (
        ANCHORS, "-1s", "1s", "-10s", "left")
    assert Dynamic(ANCHORS).closed == "both"


def test_dynamic_needs_anchors() -> None:
    with bad_value("anchors", None, "wisp.events"):
        Dynamic(None)


@pytest.mark.parametrize(
    ("every", "ticks"), [("1h", 3_600_000_000), (dt.timedelta(minutes=5), 300_000_000), (10, 10)]
)
def test_clock(every: Any, ticks: int) -> None:
    anchors = clock(every)
    assert anchors == Clock(every)
    assert (anchors.start, anchors.end, anchors.align) == (None, None, None)
    assert isinstance(anchors, Clock)
    aligned = clock(every, align=dt.datetime(1969, 12, 31, 23, 30))
    assert aligned.align == dt.datetime(1969, 12, 31, 23, 30)
    assert Dynamic(anchors, end=every).anchors is anchors


@pytest.mark.parametrize(
    ("every", "fragment"),
    [("0s", "positive"), (0, "positive"), (-1, "positive"), ("-1h", "positive"),
     (dt.timedelta(0), "positive"), ("hourly", "'250ms'"), (None, "'250ms'"),
     (True, "'250ms'")],
)
def test_clock_bad_every(every: Any, fragment: str) -> None:
    with bad_value("every", every, fragment):
        clock(every)


@pytest.mark.parametrize("align", ["2024-01-01", True, dt.time(0, 0), [0]])
def test_clock_bad_align(align: Any) -> None:
    with bad_value("align", align, "a datetime"):
        clock("1h", align=align)


# --------------------------------------------------------------- StreamInsight


@pytest.mark.parametrize(
    "size", ["1h", dt.timedelta(days=1), 10, 2.5, Decimal("0.5"), Count(5), Time("1s"),
             Delta("v", 3), Punctuation("end_of_batch")],
)
def test_tumbling_sizes(size: Any) -> None:
    window = Tumbling(size)
    assert (window.size, window.align, window.partial) == (size, None, False)
    assert window.kind == "Tumbling"


@pytest.mark.parametrize(
    "align", [dt.datetime(1969, 12, 31, 23, 30), dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
              dt.date(1960, 1, 1), 7, -7, 0.5, Decimal("1.5")],
)
def test_tumbling_align(align: Any) -> None:
    assert Tumbling("1h", align=align, partial=True).align == align


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"size": "0s"}, "size", "0s", "positive duration or a policy"),
        ({"size": 0}, "size", 0, "positive"),
        ({"size": -5}, "size", -5, "positive"),
        ({"size": "-1h"}, "size", "-1h", "positive"),
        ({"size": None}, "size", None, "'250ms'"),
        ({"size": "1.5s"}, "size", "1.5s", "'250ms'"),
        ({"size": "1h", "partial": "no"}, "partial", "no", "True or False"),
        ({"size": "1h", "align": "midnight"}, "align", "midnight", "datetime"),
        ({"size": "1h", "align": False}, "align", False, "datetime"),
    ],
)
def test_tumbling_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Tumbling(**kwargs)


def test_hopping() -> None:
    window = Hopping("10s", "2s")
    assert (window.size, window.hop, window.align, window.output) == ("10s", "2s", None,
                                                                       "windows")
    assert Hopping("10s", "2s", output="changes").output == "changes"
    assert Hopping(10, 15).hop == 15  # a hop longer than the size leaves gaps: allowed
    assert Hopping(dt.timedelta(hours=1), "15m", align=dt.date(1969, 1, 1)).align == dt.date(
        1969, 1, 1)


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"size": "0s", "hop": "1s"}, "size", "0s", "positive"),
        ({"size": -10, "hop": 1}, "size", -10, "positive"),
        ({"size": "10s", "hop": "0s"}, "hop", "0s", "positive"),
        ({"size": "10s", "hop": "-1s"}, "hop", "-1s", "positive"),
        ({"size": 10, "hop": 0}, "hop", 0, "positive"),
        ({"size": "10s", "hop": None}, "hop", None, "'250ms'"),
        ({"size": "10s", "hop": "2s", "output": "change"}, "output", "change",
         "'windows' or 'changes'"),
        ({"size": "10s", "hop": "2s", "output": None}, "output", None, "'windows'"),
        ({"size": "10s", "hop": "2s", "align": "epoch"}, "align", "epoch", "datetime"),
    ],
)
def test_hopping_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Hopping(**kwargs)


def test_snapshot() -> None:
    assert Snapshot() == Snapshot()
    assert hash(Snapshot()) == hash(Snapshot())
    assert Snapshot().kind == "Snapshot"
    assert dataclasses.fields(Snapshot()) == ()


def test_count_by_start_time() -> None:
    assert CountByStartTime(3).n == 3
    assert CountByStartTime(1).n == 1


@pytest.mark.parametrize(
    ("n", "fragment"),
    [(0, ">= 1"), (-1, ">= 1"), (1.5, "an integer"), (True, "an integer"), ("3", "an integer"),
     (None, "an integer")],
)
def test_count_by_start_time_bad_n(n: Any, fragment: str) -> None:
    with bad_value("n", n, fragment):
        CountByStartTime(n)


# ------------------------------------------------------------------------- SPL


POLICIES = [Count(3), Time("10s"), Delta("v", 5)]


@pytest.mark.parametrize("evict", POLICIES)
@pytest.mark.parametrize("trigger", POLICIES)
def test_sliding_accepts_all_nine_combinations(evict: Any, trigger: Any) -> None:
    window = Sliding(evict, trigger, partial=True)
    assert (window.evict, window.trigger, window.partial) == (evict, trigger, True)


def test_sliding_default_trigger_is_count_one() -> None:
    window = Sliding(Count(10))
    assert window.trigger == Count(1)
    assert window.partial is False
    assert window == Sliding(Count(10), Count(1))


@pytest.mark.parametrize(
    ("kwargs", "param", "found"),
    [
        ({"evict": Punctuation("p")}, "evict", Punctuation("p")),
        ({"evict": Count(2), "trigger": Punctuation("p")}, "trigger", Punctuation("p")),
        ({"evict": 5}, "evict", 5),
        ({"evict": "10s"}, "evict", "10s"),
        ({"evict": Count(2), "trigger": None}, "trigger", None),
    ],
)
def test_sliding_bad_policies(kwargs: dict[str, Any], param: str, found: object) -> None:
    with bad_value(param, found, "wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)"):
        Sliding(**kwargs)


def test_sliding_bad_partial() -> None:
    with bad_value("partial", 0, "True or False"):
        Sliding(Count(2), partial=0)


def test_policies() -> None:
    assert Count(1).n == 1
    assert Time("1s").ticks == 1_000_000
    assert Time(dt.timedelta(minutes=1)).ticks == 60_000_000
    assert Time(10).ticks == 10
    assert Time("1h", align=dt.datetime(1969, 12, 31, 23, 30)).align == dt.datetime(
        1969, 12, 31, 23, 30)
    assert Time(5, align=2).align == 2
    assert Delta("v", 0).d == 0  # d >= 0: a zero delta is allowed
    assert Delta("ts", "1s").attr == "ts"
    assert Punctuation("done").col == "done"


@pytest.mark.parametrize(
    ("make", "param", "found", "fragment"),
    [
        (lambda: Count(0), "n", 0, ">= 1"),
        (lambda: Count(-1), "n", -1, ">= 1"),
        (lambda: Count(1.5), "n", 1.5, "integer"),
        (lambda: Count(True), "n", True, "integer"),
        (lambda: Count("3"), "n", "3", "integer"),
        (lambda: Count(None), "n", None, "integer"),
        (lambda: Time("0s"), "t", "0s", "positive"),
        (lambda: Time(-1), "t", -1, "positive"),
        (lambda: Time("soon"), "t", "soon", "'250ms'"),
        (lambda: Time(None), "t", None, "'250ms'"),
        (lambda: Time("1s", align="midnight"), "align", "midnight", "datetime"),
        (lambda: Time("1s", align=True), "align", True, "a finite number"),
        (lambda: Delta("", 1), "attr", "", "a column name"),
        (lambda: Delta(5, 1), "attr", 5, "a column name"),
        (lambda: Delta(None, 1), "attr", None, "a column name"),
        (lambda: Delta("v", -1), "d", -1, ">= 0"),
        (lambda: Delta("v", "-1s"), "d", "-1s", ">= 0"),
        (lambda: Delta("v", None), "d", None, "'250ms'"),
        (lambda: Delta("v", float("nan")), "d", float("nan"), "finite"),
        (lambda: Punctuation(""), "col", "", "a column name"),
        (lambda: Punctuation(None), "col", None, "a column name"),
        (lambda: Punctuation(True), "col", True, "a column name"),
    ],
)
def test_policy_bad_arguments(
    make: Callable[[], object], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        make()


# ------------------------------------------------------------------------ Fenl


@pytest.mark.parametrize(
    ("factory", "unit"),
    [(hourly, "hourly"), (daily, "daily"), (weekly, "weekly"), (monthly, "monthly"),
     (yearly, "yearly")],
)
def test_calendar_factories(factory: Callable[..., CalendarTick], unit: str) -> None:
    tick = factory()
    assert (tick.unit, tick.tz, tick.expr) == (unit, "UTC", None)
    assert tick == CalendarTick(unit)
    berlin = factory(tz="Europe/Berlin")
    assert (berlin.unit, berlin.tz) == (unit, "Europe/Berlin")
    assert berlin != tick


@pytest.mark.parametrize(
    "expr",
    ["0 9 * * 1-5", "*/15 * * * *", "0,15,30,45 */2 1-15 1-12/3 0-7", "59 23 31 12 7",
     "0 0 1 1 0", "5-10/2 * * * *"],
)
def test_cron_accepts_valid_expressions(expr: str) -> None:
    tick = cron(expr, tz="America/New_York")
    assert (tick.unit, tick.tz, tick.expr) == ("cron", "America/New_York", expr)
    assert cron(expr).tz == "UTC"


@pytest.mark.parametrize(
    "expr", ["* * * *", "* * * * * *", "", "   ", "@daily", None, 5, ["*"] * 5]
)
def test_cron_needs_five_fields(expr: Any) -> None:
    with bad_value("expr", expr, "five fields"):
        cron(expr)


@pytest.mark.parametrize(
    ("expr", "found", "fragment"),
    [
        ("60 * * * *", "60", "minute field of numbers in 0..59"),
        ("* 24 * * *", "24", "hour field of numbers in 0..23"),
        ("* * 0 * *", "0", "day of month field of numbers in 1..31"),
        ("* * 32 * *", "32", "day of month field of numbers in 1..31"),
        ("* * * 0 *", "0", "month field of numbers in 1..12"),
        ("* * * 13 *", "13", "month field of numbers in 1..12"),
        ("* * * * 8", "8", "day of week field of numbers in 0..7"),
        ("0,61 * * * *", "61", "minute"),
        ("1-2-3 * * * *", "1-2-3", "minute"),
        ("a * * * *", "a", "minute"),
        ("-1 * * * *", "-1", "minute"),
        ("* * * JAN *", "JAN", "month"),
        ("1,,2 * * * *", "", "minute"),
        ("*/0 * * * *", "*/0", "valid minute step"),
        ("*/x * * * *", "*/x", "valid minute step"),
        ("* */-1 * * *", "*/-1", "valid hour step"),
    ],
)
def test_cron_rejects_bad_fields(expr: str, found: str, fragment: str) -> None:
    with bad_value("expr", found, fragment):
        cron(expr)


@pytest.mark.parametrize(
    ("tz", "suggestion"),
    [("Europe/Berln", "'Europe/Berlin'"), ("Amercia/New_York", "'America/New_York'"),
     ("Asia/Tokio", "'Asia/Tokyo'")],
)
@pytest.mark.parametrize("factory", [hourly, daily, weekly, monthly, yearly,
                                     lambda tz: cron("0 0 * * *", tz=tz)])
def test_unknown_time_zone_suggests_the_nearest(
    factory: Callable[..., CalendarTick], tz: str, suggestion: str
) -> None:
    with bad_value("tz", tz, "IANA time zone", f"did you mean {suggestion}?"):
        factory(tz=tz)


@pytest.mark.parametrize("tz", ["", "Nowhere/Special", "../etc/passwd", "Europe/", 5, None])
def test_bad_time_zone(tz: Any) -> None:
    with bad_value("tz", tz, "IANA time zone"):
        daily(tz=tz)


def test_time_zone_naming_a_directory_is_a_wisp_error() -> None:
    with bad_value("tz", "Europe", "IANA time zone"):
        daily(tz="Europe")


@pytest.mark.parametrize("expr", ["² * * * *", "*/² * * * *"])
def test_cron_superscript_digit_is_a_wisp_error(expr: str) -> None:
    with pytest.raises(WispInputError, match=r"^`expr` must be "):
        cron(expr)


@pytest.mark.parametrize("expr", ["*/ * * * *", "5/ * * * *"])
def test_cron_empty_step_is_rejected(expr: str) -> None:
    with pytest.raises(WispInputError, match=r"^`expr` must be "):
        cron(expr)


def test_calendar_tick_bad_unit() -> None:
    with bad_value("unit", "fortnightly", "hourly, daily, weekly, monthly, yearly or cron"):
        CalendarTick("fortnightly")


@pytest.mark.parametrize("emit", [None, "ticks", "events", "both"])
def test_since(emit: Any) -> None:
    window = Since(daily(), emit=emit)
    assert (window.tick, window.emit) == (daily(), emit)
    assert Since("is_reset").tick == "is_reset"


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"tick": None}, "tick", None, "a boolean column or a calendar tick"),
        ({"tick": "reset", "emit": "tick"}, "emit", "tick", "'ticks', 'events' or 'both'"),
        ({"tick": "reset", "emit": 5}, "emit", 5, "'ticks'"),
        ({"tick": "reset", "emit": ""}, "emit", "", "'ticks'"),
    ],
)
def test_since_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Since(**kwargs)


def test_trailing() -> None:
    window = Trailing(3, daily())
    assert (window.n, window.tick, window.partial) == (3, daily(), False)
    assert Trailing(1, "flag", partial=True).partial is True


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"n": 0, "tick": "t"}, "n", 0, ">= 1"),
        ({"n": -2, "tick": "t"}, "n", -2, ">= 1"),
        ({"n": 2.0, "tick": "t"}, "n", 2.0, "an integer"),
        ({"n": True, "tick": "t"}, "n", True, "an integer"),
        ({"n": 2, "tick": None}, "tick", None, "a boolean column or a calendar tick"),
        ({"n": 2, "tick": "t", "partial": "true"}, "partial", "true", "True or False"),
    ],
)
def test_trailing_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Trailing(**kwargs)


# --------------------------------------------------------------------- Session


def test_session() -> None:
    window = Session("30m")
    assert (window.gap, window.max_duration) == ("30m", None)
    assert Session(dt.timedelta(minutes=5), max_duration="1h").max_duration == "1h"
    assert Session(10, max_duration=100).gap == 10


@pytest.mark.parametrize(
    ("kwargs", "param", "found", "fragment"),
    [
        ({"gap": "0s"}, "gap", "0s", "positive"),
        ({"gap": -1}, "gap", -1, "positive"),
        ({"gap": None}, "gap", None, "'250ms'"),
        ({"gap": "30 minutes"}, "gap", "30 minutes", "'250ms'"),
        ({"gap": "1m", "max_duration": "0s"}, "max_duration", "0s", "positive duration or None"),
        ({"gap": "1m", "max_duration": "-1h"}, "max_duration", "-1h", "positive"),
        ({"gap": "1m", "max_duration": True}, "max_duration", True, "'250ms'"),
    ],
)
def test_session_bad_arguments(
    kwargs: dict[str, Any], param: str, found: object, fragment: str
) -> None:
    with bad_value(param, found, fragment):
        Session(**kwargs)


# ------------------------------------------------------- frozen, equal, hashable

MAKERS: list[Callable[[], object]] = [
    lambda: Rows(-2, 0, "left", partial=True),
    lambda: Range("-10s", "0s", "right"),
    lambda: Range.past(5),
    lambda: Dynamic(ANCHORS, start="-1s", end="0s", obsolete="-1s"),
    lambda: clock("1h", align=dt.date(1969, 1, 1)),
    lambda: Tumbling("1h", align=dt.datetime(1969, 12, 31), partial=True),
    lambda: Tumbling(Count(3)),
    lambda: Hopping("10s", "2s", output="changes"),
    lambda: Snapshot(),
    lambda: CountByStartTime(3),
    lambda: Sliding(Time("10s"), Delta("v", 2)),
    lambda: cron("0 9 * * 1-5", tz="Europe/Berlin"),
    lambda: Since(daily("Asia/Tokyo"), emit="both"),
    lambda: Trailing(3, weekly()),
    lambda: Session("30m", max_duration="4h"),
    lambda: Count(2),
    lambda: Time("1s", align=0),
    lambda: Delta("v", 0.5),
    lambda: Punctuation("p"),
]


@pytest.mark.parametrize("make", MAKERS)
def test_specs_are_frozen(make: Callable[[], object]) -> None:
    spec = make()
    assert dataclasses.is_dataclass(spec)
    for spec_field in dataclasses.fields(spec):  # type: ignore[arg-type]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(spec, spec_field.name, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.extra = 1  # type: ignore[attr-defined]
    assert make() == spec  # nothing changed


@pytest.mark.parametrize("make", MAKERS)
def test_specs_are_equal_and_hashable_by_value(make: Callable[[], object]) -> None:
    one, two = make(), make()
    assert one is not two
    assert one == two
    assert hash(one) == hash(two)
    assert len({one, two}) == 1


def test_different_specs_differ() -> None:
    specs = [make() for make in MAKERS]
    assert len(set(specs)) == len(MAKERS)
    assert Rows(-2, 0) != Rows(-2, 0, partial=True)
    assert Hopping("10s", "2s") != Hopping("10s", "2s", output="changes")
    assert daily() != daily("Europe/Berlin")


def test_windows_spelled_two_ways_are_one_window() -> None:
    """Equal, and hashed alike, when their parameters mean the same."""
    same = [(Range("-10s", "0s"), Range.past("10s")),
            (Range("-10s", "0s"), Range(dt.timedelta(seconds=-10), "0ms")),
            (Range(-10, 0), Range.past(10)),
            (Tumbling("1m"), Tumbling(dt.timedelta(minutes=1))),
            (Tumbling("90m"), Tumbling("1h30m")),
            (Hopping("10s", "5s"), Hopping("10000ms", dt.timedelta(seconds=5))),
            (Session("2s", max_duration="1h"), Session("2000ms", max_duration="60m")),
            (Tumbling("1mo"), Tumbling("1mo"))]
    for a, b in same:
        assert a == b and hash(a) == hash(b), (a, b)
    assert repr(Range("-10s", "0s")) == repr(Range.past("10s"))
    different = [(Range(-10, 0), Range("-10s", "0s")), (Tumbling("1m"), Tumbling(60)),
                 (Tumbling("1m"), Hopping("1m", "1m")), (Range.past("10s"),
                                                         Range.past("10s", "left")),
                 (Session("gap"), Session("gap2")), (Tumbling("1d"), Tumbling("1d", tz="UTC"))]
    for a, b in different:
        assert a != b, (a, b)
