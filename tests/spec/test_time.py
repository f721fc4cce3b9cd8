"""Durations, alignment and instants of `wisp.spec.time`: integer ticks, one grammar."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wisp.errors import WispError, WispInputError
from wisp.spec.time import (
    align_floor,
    duration_to_ticks,
    floor_div,
    instant_to_micros,
    is_time_duration,
    parse_duration_string,
    timedelta_to_micros,
)

US = 1
MS = 1_000
S = 1_000_000
M = 60 * S
H = 60 * M
D = 24 * H

# Units largest first, with their size written out independently of the module's table.
UNITS = [("d", D), ("h", H), ("m", M), ("s", S), ("ms", MS), ("us", US)]


def assert_bad_value(info: pytest.ExceptionInfo[WispInputError], param: str,
                     found: object) -> str:
    """The error follows the formula "`param` must be ..., found <repr(found)>"."""
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, WispError)
    assert message.startswith(f"`{param}` must be "), message
    assert f"found {found!r}" in message, message
    return message


# ------------------------------------------------------------------ the grammar


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("250ms", 250_000),
        ("2s", 2_000_000),
        ("1h30m", 5_400_000_000),
        ("-2s", -2_000_000),
        ("+2s", 2_000_000),
        ("1d12h", 129_600_000_000),
        ("500us", 500),
        ("500µs", 500),
        ("1us", 1),
        ("0s", 0),
        ("-0s", 0),
        ("1m1ms", 60_001_000),  # `m` then `ms`: minutes, then milliseconds
        ("1m30s", 90_000_000),
        ("1d1h1m1s1ms1us", 90_061_001_001),
        ("007s", 7_000_000),
        ("1h 30m", 5_400_000_000),  # spaces between groups are ignored
        ("  2s  ", 2_000_000),
        ("100000d", 100_000 * 86_400_000_000),
    ],
)
def test_duration_strings_parse_to_exact_micros(text: str, micros: int) -> None:
    assert parse_duration_string(text, "size") == micros
    result = duration_to_ticks(text, "size")
    assert result == micros
    assert type(result) is int


@pytest.mark.parametrize(
    "text",
    [
        "2 seconds",
        "1.5s",
        "s",
        "",
        "   ",
        "2",
        "2x",
        "ms",
        "--2s",
        "+-2s",
        "2s-",
        "1h-30m",
        "2S",
        "1e3ms",
        "2sec",
        "two seconds",
        "1m1h",  # wrong order
        "1ms1s",  # wrong order
        "1s1d",  # wrong order
        "1s1s",  # repeated unit
        "1us1µs",  # the same unit twice, spelled two ways
    ],
)
def test_rejected_duration_strings(text: str) -> None:
    with pytest.raises(WispInputError) as info:
        duration_to_ticks(text, "size")
    message = assert_bad_value(info, "size", text)
    assert "'250ms'" in message  # the message shows the grammar by example


@pytest.mark.parametrize("text", ["1m1h", "1s1s", "1ms1s", "2h1d"])
def test_unit_order_errors_explain_the_rule(text: str) -> None:
    with pytest.raises(WispInputError) as info:
        parse_duration_string(text, "hop")
    message = assert_bad_value(info, "hop", text)
    assert "each unit once, largest first" in message


@pytest.mark.parametrize("value", [True, False, None, [1], b"2s", object()])
def test_non_duration_objects_are_rejected(value: object) -> None:
    with pytest.raises(WispInputError) as info:
        duration_to_ticks(value, "gap")
    assert_bad_value(info, "gap", value)


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), float("-inf"), Decimal("NaN"), Decimal("sNaN"),
     Decimal("Infinity"), Decimal("-Infinity")],
)
def test_non_finite_numbers_are_rejected(value: object) -> None:
    with pytest.raises(WispInputError) as info:
        duration_to_ticks(value, "t")
    message = assert_bad_value(info, "t", value)
    assert "finite" in message


def test_error_names_the_callers_parameter() -> None:
    for param in ("size", "hop", "gap", "max_duration"):
        with pytest.raises(WispInputError, match=rf"^`{param}` must be "):
            duration_to_ticks("soon", param)


@pytest.mark.parametrize(
    "value",
    [0, 7, -7, 10**30, -(10**30), 2.5, -0.25, 0.0, Decimal("1.5"), Decimal("-0.001"),
     Decimal(10) ** 40],
)
def test_numbers_pass_through_unchanged(value: object) -> None:
    result = duration_to_ticks(value, "size")
    assert result == value
    assert type(result) is type(value)
    assert not is_time_duration(value)


@pytest.mark.parametrize(
    ("value", "micros"),
    [
        (dt.timedelta(0), 0),
        (dt.timedelta(microseconds=1), 1),
        (dt.timedelta(microseconds=-1), -1),
        (dt.timedelta(days=-1, microseconds=1), -86_399_999_999),
        (dt.timedelta(seconds=-2), -2_000_000),
        (dt.timedelta(hours=1, minutes=30), 5_400_000_000),
        (dt.timedelta(days=1, hours=12), 129_600_000_000),
        (dt.timedelta(milliseconds=250), 250_000),
        (dt.timedelta.max, 86_399_999_999_999_999_999),
        (dt.timedelta.min, -86_399_999_913_600_000_000),
    ],
)
def test_timedeltas_are_exact_micros(value: dt.timedelta, micros: int) -> None:
    assert timedelta_to_micros(value) == micros
    result = duration_to_ticks(value, "size")
    assert result == micros
    assert type(result) is int
    assert is_time_duration(value)


def test_string_and_timedelta_agree() -> None:
    assert duration_to_ticks("1h30m", "x") == duration_to_ticks(
        dt.timedelta(hours=1, minutes=30), "x")
    assert duration_to_ticks("-2s", "x") == duration_to_ticks(dt.timedelta(seconds=-2), "x")


@given(st.timedeltas())
def test_any_timedelta_round_trips_exactly(value: dt.timedelta) -> None:
    micros = duration_to_ticks(value, "size")
    assert micros == value // dt.timedelta(microseconds=1)
    assert dt.timedelta(microseconds=micros) == value


@st.composite
def duration_parts(draw: st.DrawFn) -> tuple[str, int]:
    """A valid duration string and its value, computed from the drawn parts."""
    chosen = draw(st.lists(st.sampled_from(range(len(UNITS))), min_size=1, unique=True))
    sign = draw(st.sampled_from(["", "+", "-"]))
    separator = draw(st.sampled_from(["", " "]))
    groups = []
    total = dt.timedelta(0)
    for index in sorted(chosen):
        unit, _ = UNITS[index]
        amount = draw(st.integers(min_value=0, max_value=10_000))
        if unit == "us":
            unit = draw(st.sampled_from(["us", "µs"]))
        groups.append(f"{amount}{unit}")
        total += {
            "d": dt.timedelta(days=amount),
            "h": dt.timedelta(hours=amount),
            "m": dt.timedelta(minutes=amount),
            "s": dt.timedelta(seconds=amount),
            "ms": dt.timedelta(milliseconds=amount),
            "us": dt.timedelta(microseconds=amount),
            "µs": dt.timedelta(microseconds=amount),
        }[unit]
    if sign == "-":
        total = -total
    return sign + separator.join(groups), total // dt.timedelta(microseconds=1)


@given(duration_parts())
def test_generated_duration_strings_parse_to_their_value(case: tuple[str, int]) -> None:
    text, expected = case
    assert parse_duration_string(text, "size") == expected


@given(
    st.sampled_from(range(len(UNITS))),
    st.sampled_from(range(len(UNITS))),
    st.integers(min_value=0, max_value=999),
    st.integers(min_value=0, max_value=999),
)
def test_units_out_of_order_or_repeated_are_rejected(
    first: int, second: int, a: int, b: int
) -> None:
    text = f"{a}{UNITS[first][0]}{b}{UNITS[second][0]}"
    if first < second:
        assert parse_duration_string(text, "size") == a * UNITS[first][1] + b * UNITS[second][1]
    else:
        with pytest.raises(WispInputError, match=re.escape(f"found {text!r}")):
            parse_duration_string(text, "size")


# -------------------------------------------------------------------- alignment


@pytest.mark.parametrize(
    ("value", "step", "align", "expected"),
    [
        (0, 10, 0, 0),
        (9, 10, 0, 0),
        (10, 10, 0, 10),
        (-1, 10, 0, -10),
        (-10, 10, 0, -10),
        (-11, 10, 0, -20),
        (7, 5, 3, 3),
        (2, 5, 3, -2),
        (-7, 5, 3, -7),
        (-8, 5, 3, -12),
        (0, 10, -3, -3),
        (6, 10, -3, -3),
        (7, 10, -3, 7),
        (25, 10, 1003, 23),
        (-25, 10, -1003, -33),
        # 1969-12-31 22:30 UTC in hour windows: 22:00, and 22:15 when aligned to :15
        (-5_400 * S, H, 0, -7_200 * S),
        (-5_400 * S, H, 15 * M, -6_300 * S),
        # 1969-12-31 23:59:59.999999 in day windows: the day of 1969-12-31
        (-1, D, 0, -D),
    ],
)
def test_align_floor_hand_worked(value: int, step: int, align: int, expected: int) -> None:
    assert align_floor(value, step, align) == expected


@given(
    st.integers(min_value=-(10**20), max_value=10**20),
    st.integers(min_value=1, max_value=10**15),
    st.integers(min_value=-(10**20), max_value=10**20),
)
def test_align_floor_is_the_largest_aligned_point_not_after_value(
    value: int, step: int, align: int
) -> None:
    floor = align_floor(value, step, align)
    assert floor <= value < floor + step
    assert (floor - align) % step == 0


@pytest.mark.parametrize("step", [0, -1, -D])
def test_align_floor_rejects_a_non_positive_step(step: int) -> None:
    with pytest.raises(WispInputError) as info:
        align_floor(5, step)
    assert_bad_value(info, "step", step)


@pytest.mark.parametrize(
    ("value", "step", "expected"), [(-1, 10, -1), (-10, 10, -1), (-11, 10, -2), (19, 10, 1)]
)
def test_floor_div_rounds_towards_minus_infinity(value: int, step: int, expected: int) -> None:
    assert floor_div(value, step) == expected


# --------------------------------------------------------------------- instants


@pytest.mark.parametrize(
    ("value", "micros"),
    [
        (dt.datetime(1970, 1, 1), 0),
        (dt.datetime(1970, 1, 1, 0, 0, 0, 1), 1),
        (dt.datetime(1969, 12, 31, 23, 59, 59, 999_999), -1),
        (dt.datetime(1969, 12, 31, 22, 30), -5_400_000_000),
        (dt.datetime(1900, 1, 1), -2_208_988_800_000_000),
        (dt.datetime(2000, 1, 1), 946_684_800_000_000),
        (dt.datetime(1, 1, 1), -62_135_596_800_000_000),
    ],
)
def test_naive_datetimes_are_utc_wall_time(value: dt.datetime, micros: int) -> None:
    assert instant_to_micros(value, "align") == micros
    assert instant_to_micros(value.replace(tzinfo=dt.UTC), "align") == micros


@pytest.mark.parametrize(
    ("value", "micros"),
    [
        (dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), 0),
        (dt.datetime(1969, 12, 31, 19, tzinfo=dt.timezone(dt.timedelta(hours=-5))), 0),
        (dt.datetime(1969, 12, 31, 23, 59, 59, 999_999,
                     tzinfo=dt.timezone(dt.timedelta(hours=-1))), 3_600_000_000 - 1),
        # New York kept summer time (UTC-4) in July 1960: 1960-07-01T04:00Z
        (dt.datetime(1960, 7, 1, tzinfo=ZoneInfo("America/New_York")), -299_880_000_000_000),
        # and winter time (UTC-5) in January 1960: 1960-01-01T05:00Z
        (dt.datetime(1960, 1, 1, tzinfo=ZoneInfo("America/New_York")), -315_601_200_000_000),
    ],
)
def test_aware_datetimes_use_their_offset(value: dt.datetime, micros: int) -> None:
    assert instant_to_micros(value, "align") == micros


def test_naive_differs_from_aware_non_utc() -> None:
    naive = dt.datetime(1969, 7, 20, 20, 17)
    berlin = naive.replace(tzinfo=ZoneInfo("Europe/Berlin"))  # UTC+1 in 1969
    assert instant_to_micros(naive, "x") - instant_to_micros(berlin, "x") == H


@pytest.mark.parametrize(
    ("value", "micros"),
    [
        (dt.date(1970, 1, 1), 0),
        (dt.date(1970, 1, 2), 86_400_000_000),
        (dt.date(1969, 12, 31), -86_400_000_000),
        (dt.date(1900, 1, 1), -2_208_988_800_000_000),
    ],
)
def test_dates_are_their_utc_midnight(value: dt.date, micros: int) -> None:
    assert instant_to_micros(value, "start") == micros
    midnight = dt.datetime(value.year, value.month, value.day)
    assert instant_to_micros(midnight, "start") == micros


@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
def test_instant_micros_match_timedelta_arithmetic(value: dt.datetime) -> None:
    expected = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    assert instant_to_micros(value, "x") == expected


@pytest.mark.parametrize(
    "value", ["2024-01-01", 0, 1.5, None, dt.time(12, 0), dt.timedelta(days=1)]
)
def test_non_instants_are_rejected(value: object) -> None:
    with pytest.raises(WispInputError) as info:
        instant_to_micros(value, "start")
    message = assert_bad_value(info, "start", value)
    assert "datetime" in message
