"""Windows that read point events refuse interval events (events bound with `end`)
instead of ignoring their ends, batch and stream alike; `Range` bounds in ticks of a
decimal time column stay within the 64-bit range. No Spark: inputs described by hand."""

from __future__ import annotations

import dataclasses

import pytest
from schema import source

import wisp.spec.aggregates as A
import wisp.spec.windows as W
from wisp.errors import WispInputError, WispUnsupportedError
from wisp.plan.planner import plan
from wisp.plan.source import Inputs, Settings, Source

INTERVALS = source("k string, ts timestamp, e timestamp, v double", "ts", end="e", key="k")
REFUSAL = ("`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
           "Session for interval events (bound with `end`: column 'e'), found {}, which "
           "reads point events; bind the events without `end` to window their start times")


def planned(window: object | None, src: Source, strategy: str | None = None) -> object:
    return plan(Inputs(src, settings=Settings(False)), window, (A.sum("v"),), strategy)


@pytest.mark.parametrize(("window", "name", "strategy"), [
    (W.Rows(-2, 0), "Rows", None),
    (W.Rows(-2, 0), "Rows", "arrow-frames"),
    (W.Range.past("10s"), "Range", None),
    (None, "cumulative aggregation (Events.agg)", None),
    (None, "cumulative aggregation (Events.agg)", "native-running"),
    (None, "cumulative aggregation (Events.agg)", "arrow-frames"),
])
def test_frames_refuse_interval_events(window: object | None, name: str,
                                       strategy: str | None) -> None:
    with pytest.raises(WispUnsupportedError) as caught:
        planned(window, INTERVALS, strategy)
    assert str(caught.value) == REFUSAL.format(name)


def test_a_stream_of_interval_events_refuses_cumulative_aggregation() -> None:
    stream = dataclasses.replace(INTERVALS, lateness=5_000_000)
    with pytest.raises(WispUnsupportedError) as caught:
        planned(None, stream)
    assert str(caught.value) == REFUSAL.format("cumulative aggregation (Events.agg)")


def test_interval_windows_still_take_interval_events() -> None:
    for window in (W.Tumbling("1m"), W.Hopping("1m", "30s"), W.Snapshot(),
                   W.CountByStartTime(2), W.Session("1m")):
        assert planned(window, INTERVALS) is not None


def test_a_decimal_range_bound_leaves_the_tick_range() -> None:
    decimals = source("t decimal(38,18), v double", "t")
    assert planned(W.Range(-9, 0), decimals) is not None  # 9e18 ticks fit
    with pytest.raises(WispInputError) as caught:
        planned(W.Range(0, 10), decimals)
    assert str(caught.value) == (
        "`end` must be a duration within the 64-bit tick range (at most 2^63 - 1 ticks of "
        "10^-18, the unit of decimal time column 't'), found 10")
