"""Calendar tick arithmetic: DST days of 23 and 25 hours, a leap year, a +05:45 zone,
cron matching, ticks exactly on instants, and agreement with the brute-force oracle."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle_periods import calendar_ticks

from wisp.errors import WispInputError
from wisp.spec.calendar import (
    CHUNK,
    check_cron_matches,
    closing_tick,
    next_tick,
    prev_tick,
    ticks_in,
)
from wisp.spec.windows import CalendarTick, cron, daily, hourly, monthly, weekly, yearly

HOUR = 3_600_000_000


def at(text: str, tz: str = "UTC") -> int:
    """Microseconds of a local wall-clock time (first occurrence) in `tz`."""
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=zoneinfo.ZoneInfo(tz))
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)


def utc(text: str) -> int:
    return at(text, "UTC")


def test_daily_new_york_spring_forward_day_has_23_hours() -> None:
    ticks = ticks_in(daily("America/New_York"), utc("2024-03-09 12:00"),
                     utc("2024-03-12 12:00"))
    assert ticks == [utc("2024-03-10 05:00"), utc("2024-03-11 04:00"),
                     utc("2024-03-12 04:00")]
    assert ticks[1] - ticks[0] == 23 * HOUR


def test_daily_new_york_fall_back_day_has_25_hours() -> None:
    ticks = ticks_in(daily("America/New_York"), utc("2024-11-03 00:00"),
                     utc("2024-11-05 00:00"))
    assert ticks == [utc("2024-11-03 04:00"), utc("2024-11-04 05:00")]
    assert ticks[1] - ticks[0] == 25 * HOUR


def test_hourly_new_york_fall_back_ticks_twice_at_one_am() -> None:
    ticks = ticks_in(hourly("America/New_York"), utc("2024-11-03 04:00"),
                     utc("2024-11-03 08:00"))
    # 00:00 EDT, 01:00 EDT, 01:00 EST, 02:00 EST, 03:00 EST: every real hour
    assert ticks == [utc("2024-11-03 04:00"), utc("2024-11-03 05:00"),
                     utc("2024-11-03 06:00"), utc("2024-11-03 07:00"),
                     utc("2024-11-03 08:00")]
    day = ticks_in(hourly("America/New_York"), utc("2024-11-03 04:00"),
                   utc("2024-11-04 04:59"))
    assert len(day) == 25


def test_hourly_new_york_spring_forward_skips_two_am() -> None:
    ticks = ticks_in(hourly("America/New_York"), utc("2024-03-10 05:00"),
                     utc("2024-03-10 08:00"))
    # 00:00 EST, 01:00 EST, then 03:00 EDT (02:00 never shows)
    assert ticks == [utc("2024-03-10 05:00"), utc("2024-03-10 06:00"),
                     utc("2024-03-10 07:00"), utc("2024-03-10 08:00")]
    assert len(ticks_in(hourly("America/New_York"), utc("2024-03-10 05:00"),
                        utc("2024-03-11 03:59"))) == 23


def test_berlin_daily_and_weekly_across_both_changes() -> None:
    spring = ticks_in(daily("Europe/Berlin"), utc("2024-03-30 12:00"),
                      utc("2024-04-01 12:00"))
    assert spring == [utc("2024-03-30 23:00"), utc("2024-03-31 22:00")]
    autumn = ticks_in(daily("Europe/Berlin"), utc("2024-10-26 12:00"),
                      utc("2024-10-28 12:00"))
    assert autumn == [utc("2024-10-26 22:00"), utc("2024-10-27 23:00")]
    weeks = ticks_in(weekly("Europe/Berlin"), utc("2024-03-20"), utc("2024-04-10"))
    assert weeks == [utc("2024-03-24 23:00"), utc("2024-03-31 22:00"),
                     utc("2024-04-07 22:00")]


def test_kathmandu_hourly_ticks_at_quarter_past_utc() -> None:
    ticks = ticks_in(hourly("Asia/Kathmandu"), utc("2024-06-01 00:00"),
                     utc("2024-06-01 03:00"))
    assert ticks == [utc("2024-06-01 00:15"), utc("2024-06-01 01:15"),
                     utc("2024-06-01 02:15")]
    assert ticks_in(daily("Asia/Kathmandu"), utc("2024-06-01"), utc("2024-06-02")) == \
        [utc("2024-06-01 18:15")]


def test_leap_year_monthly_and_cron_february_29() -> None:
    months = ticks_in(monthly(), utc("2024-02-01"), utc("2024-04-01"))
    assert months == [utc("2024-02-01"), utc("2024-03-01"), utc("2024-04-01")]
    assert months[1] - months[0] == 29 * 24 * HOUR
    assert next_tick(cron("0 12 29 2 *"), utc("2021-01-01")) == utc("2024-02-29 12:00")
    # 2100 is not a leap year: the next February 29th after 2096 is in 2104
    assert next_tick(cron("0 0 29 2 *"), utc("2097-01-01")) == utc("2104-02-29")


def test_event_exactly_on_a_tick_is_closed_by_that_tick() -> None:
    tick = yearly()
    assert closing_tick(tick, utc("2020-01-01")) == utc("2020-01-01")
    assert closing_tick(tick, utc("2020-01-01") + 1) == utc("2021-01-01")
    assert next_tick(tick, utc("2020-01-01")) == utc("2021-01-01")
    assert prev_tick(tick, utc("2020-01-01")) == utc("2019-01-01")


def test_cron_jumped_over_time_ticks_at_the_jump() -> None:
    tick = cron("30 2 * * *", tz="America/New_York")
    ticks = ticks_in(tick, utc("2024-03-09"), utc("2024-03-12"))
    assert ticks == [utc("2024-03-09 07:30"), utc("2024-03-10 07:00"),
                     utc("2024-03-11 06:30")]


def test_cron_both_day_fields_restricted_match_either() -> None:
    # the 1st of the month or any Friday, at 09:00
    ticks = ticks_in(cron("0 9 1 * 5"), utc("2024-05-28"), utc("2024-06-08"))
    assert ticks == [utc("2024-05-31 09:00"), utc("2024-06-01 09:00"),
                     utc("2024-06-07 09:00")]


def test_cron_steps_ranges_and_sunday_as_seven() -> None:
    ticks = ticks_in(cron("*/20 8-9 * * 7"), utc("2024-06-01"), utc("2024-06-03"))
    assert ticks == [utc(f"2024-06-02 {h:02d}:{m:02d}") for h in (8, 9) for m in (0, 20, 40)]


def test_pre_1970_ticks() -> None:
    assert ticks_in(yearly("Europe/Berlin"), utc("1965-06-01"), utc("1967-06-01")) == \
        [utc("1965-12-31 23:00"), utc("1966-12-31 23:00")]


def test_cron_that_never_matches_is_refused() -> None:
    with pytest.raises(WispInputError, match=r"^`expr` must be a cron expression that "
                       r"matches some day, found '0 0 31 2 \*'"):
        check_cron_matches("0 0 31 2 *")


TICKS = [hourly("America/New_York"), daily("America/New_York"), daily("Europe/Berlin"),
         weekly("Europe/Berlin"), monthly("Asia/Kathmandu"), yearly("America/New_York"),
         hourly("Asia/Kathmandu"), cron("30 2 * * *", "America/New_York"),
         cron("15 */5 1,15 * 1-2", "Europe/Berlin"), daily("UTC")]
SPANS = {"hourly": 3, "cron": 3, "daily": 20, "weekly": 60, "monthly": 400, "yearly": 2000}
STARTS = [utc("2024-03-08"), utc("2024-10-25"), utc("2024-02-27"), utc("1988-10-28"),
          utc("2023-12-30")]


@settings(max_examples=80)
@given(tick=st.sampled_from(TICKS), start=st.sampled_from(STARTS),
       shift=st.integers(0, 10_000), fraction=st.floats(0, 1))
def test_ticks_match_the_oracle(tick: CalendarTick, start: int, shift: int,
                                fraction: float) -> None:
    span = SPANS[tick.unit] * 24 * HOUR
    lo = start + shift * 60_000_000 * 7 + 13
    hi = lo + int(span * fraction)
    expected = calendar_ticks(tick, lo, hi)
    assert ticks_in(tick, lo, hi) == expected
    if expected:
        assert next_tick(tick, lo - 1) == expected[0]
        assert prev_tick(tick, expected[-1] + 1) == expected[-1]
        assert closing_tick(tick, expected[0]) == expected[0]


MINUTE = 60_000_000


EDGE = (1_700_000_000_000_000 // CHUNK + 1) * CHUNK
"""The first instant of a chunk (not on a minute)."""


@settings(max_examples=40)
@given(instant=st.one_of(st.integers(EDGE - 3 * MINUTE, EDGE + 3 * MINUTE),
                         st.integers(-3, 3).map(lambda m: (EDGE // MINUTE + m) * MINUTE)))
def test_a_minutes_cron_across_a_chunk_edge_matches_the_oracle(instant: int) -> None:
    """Ticks are cached per chunk of CHUNK us (a minute's cron: about 586,000 a chunk;
    two here) and searched by bisection: the tick after, before and closing an instant
    near a chunk's edge, on a tick or between two, equal the oracle's (in a zone of
    +05:45)."""
    tick = cron("* * * * *", "Asia/Kathmandu")
    around = calendar_ticks(tick, instant - 2 * MINUTE, instant + 2 * MINUTE)
    assert next_tick(tick, instant) == min(u for u in around if u > instant)
    assert prev_tick(tick, instant) == max(u for u in around if u < instant)
    assert closing_tick(tick, instant) == min(u for u in around if u >= instant)
    assert ticks_in(tick, instant - MINUTE, instant + MINUTE) == [
        u for u in around if instant - MINUTE <= u <= instant + MINUTE]


ZONES_AND_YEARS = [
    ("America/New_York", "2024-06-01"), ("Europe/Berlin", "1980-06-01"),
    ("Australia/Lord_Howe", "2024-06-01"),  # a clock change of half an hour
    ("Pacific/Apia", "2011-12-01"),  # skipped 30 December 2011 whole
    ("America/Sao_Paulo", "2018-06-01"),  # daylight saving from midnight
    ("Africa/Casablanca", "2012-06-01"),  # saving suspended for Ramadan: four changes
    ("Europe/Dublin", "2020-06-01"),  # winter time as the negative saving
    ("Asia/Kathmandu", "1986-01-01"),  # +05:30 to +05:45
]


@pytest.mark.parametrize("unit", ["hourly", "daily"])
@pytest.mark.parametrize(("tz", "within"), ZONES_AND_YEARS)
def test_whole_chunks_match_the_oracle(unit: str, tz: str, within: str) -> None:
    """Every tick of a chunk (about 407 days), across each clock change, equals the
    oracle's (which reads every quarter hour, or for days resolves each local midnight):
    hourly ticks are found from the zone's changes, read by bisection between hourly
    readings of the offset; daily ones resolve each local midnight."""
    tick = hourly(tz) if unit == "hourly" else daily(tz)
    chunk = utc(within) // CHUNK
    lo, hi = chunk * CHUNK, (chunk + 1) * CHUNK - 1
    assert ticks_in(tick, lo, hi) == calendar_ticks(tick, lo, hi)


def test_a_whole_chunk_of_a_minutes_cron_matches_the_oracle() -> None:
    """The 586,406 ticks of a minute's cron over one chunk in Berlin (the clock changes
    of October 2012 and March 2013), against the oracle reading every minute."""
    tick = cron("* * * * *", "Europe/Berlin")
    chunk = utc("2013-06-01") // CHUNK
    lo, hi = chunk * CHUNK, (chunk + 1) * CHUNK - 1
    assert ticks_in(tick, lo, hi) == calendar_ticks(tick, lo, hi)


@pytest.mark.parametrize("change", ["2024-03-10 07:00", "2024-11-03 06:00"])
@pytest.mark.parametrize("minutes", [-61, -30, -1, 0, 1, 29, 59, 60, 61, 90])
def test_a_span_starting_within_a_clock_change_matches_the_oracle(change: str,
                                                                   minutes: int) -> None:
    """The dense path's span may start anywhere, a chunk's edge inside the hour New York
    skips or repeats among them: a minute's cron from there equals the oracle's (a
    repeated minute's second instant kept, a skipped one at the jump)."""
    from wisp.spec.calendar import _instants, _local_boundaries, offset_segments, to_local

    tick = cron("* * * * *", "America/New_York")
    lo = utc(change) + minutes * MINUTE + 7
    hi = lo + 4 * HOUR
    local = _local_boundaries(tick, to_local(lo, tick.tz) - dt.timedelta(days=2),
                              to_local(hi, tick.tz) + dt.timedelta(days=2))
    assert _instants(local, offset_segments(lo, hi, tick.tz), hi) == calendar_ticks(
        tick, lo, hi - 1)
