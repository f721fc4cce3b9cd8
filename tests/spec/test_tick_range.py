"""`Range` bounds must lie within the 64-bit tick range: beyond it a bound could only
be clamped (moving the window) or wrap around. Checked where the bound is written, and
for numbers whose ticks depend on the column (decimal time) when the query is planned."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from wisp.errors import WispInputError
from wisp.spec.windows import Range

LIMIT = (1 << 63) - 1
MESSAGE = ("`{}` must be a duration within the 64-bit tick range (at most 2^63 - 1 ticks; "
           "a tick of a time duration is a microsecond, so at most about 106,751,991 "
           "days), found {!r}")


@pytest.mark.parametrize("duration", [dt.timedelta.max, dt.timedelta(days=106_751_992),
                                      "106751992d", LIMIT + 1, 1 << 70])
def test_range_past_beyond_the_tick_range(duration: Any) -> None:
    with pytest.raises(WispInputError) as caught:
        Range.past(duration)
    assert str(caught.value) == MESSAGE.format("duration", duration)


@pytest.mark.parametrize(("start", "end", "param", "found"), [
    (dt.timedelta.min, 0, "start", dt.timedelta.min),
    ("-106751992d", "0s", "start", "-106751992d"),
    (0, LIMIT + 1, "end", LIMIT + 1),
    (-(LIMIT + 1), 0, "start", -(LIMIT + 1)),
])
def test_range_bounds_beyond_the_tick_range(start: Any, end: Any, param: str,
                                            found: Any) -> None:
    with pytest.raises(WispInputError) as caught:
        Range(start, end)
    assert str(caught.value) == MESSAGE.format(param, found)


def test_range_bounds_at_the_edges_of_the_tick_range() -> None:
    assert Range.past(LIMIT).start_ticks == -LIMIT
    assert Range(-LIMIT, LIMIT).end_ticks == LIMIT
    # the largest whole number of days within the range
    assert Range.past("106751991d").start_ticks == -106_751_991 * 86_400_000_000
    assert Range.past(dt.timedelta(microseconds=LIMIT)).start_ticks == -LIMIT
