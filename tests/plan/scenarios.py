"""One planning scenario per physical strategy (and a few variants), shared by the
planner tests and by the script that recorded the golden explain texts.

Each scenario names an input schema (DDL), the roles bound to it, a window spec, the
aggregations, an optional `strategy=`, whether the session measures Arrow batches and,
for a stream, its lateness and late policy (`STREAMS`: each stream strategy, panes and
row-carrying, keyed and not). Nothing here needs Spark."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import wisp.spec.aggregates as A
import wisp.spec.policies as P
import wisp.spec.windows as W
from wisp.spec.features import FeatureSet

POINTS = "k string, ts timestamp, v double, flag boolean"
INTERVALS = "k string, ts timestamp, e timestamp, v double"


@dataclass(frozen=True)
class Scenario:
    name: str
    ddl: str
    roles: dict[str, Any]
    window: Callable[[], object | None]
    aggregations: Callable[[], tuple[A.Aggregation, ...]]
    strategy: str | None = None
    measured: bool = False
    tags: tuple[str, ...] = field(default=())
    lateness: int | None = None
    """A stream's lateness in ticks (None: a batch table)."""
    on_late: str = "count"
    allowed_lateness: int | None = None
    emit: str = "final"


def _sum() -> tuple[A.Aggregation, ...]:
    return (A.sum("v"), A.count())


SCENARIOS = (
    Scenario("native-running", POINTS, {"time": "ts", "key": "k"}, lambda: None, _sum),
    Scenario("arrow-frames-running", POINTS, {"time": "ts", "key": "k"}, lambda: None,
             _sum, strategy="arrow-frames"),
    Scenario("arrow-frames-rows", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Rows(-99, 0), lambda: (A.mean("v"), A.max("v").alias("peak"))),
    Scenario("arrow-frames-range", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Range.past("10s"), lambda: (A.mean("v"),)),
    Scenario("arrow-features", POINTS, {"time": "ts", "key": "k"},
             lambda: FeatureSet((("10s", W.Range.past("10s")), ("last3", W.Rows(-2, 0)),
                                 ("all", None))), _sum),
    Scenario("native-frames", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Rows(-2, 0), lambda: (A.sum("v"),), measured=True),
    Scenario("native-batches", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Tumbling(P.Count(3)), _sum),
    Scenario("native-buckets", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Tumbling("1m"), _sum),
    Scenario("panes-points", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Hopping("10m", "4m"), _sum),
    Scenario("panes-intervals", INTERVALS, {"time": "ts", "end": "e", "key": "k"},
             lambda: W.Hopping("10m", "5m"), _sum),
    Scenario("arrow-intervals-hopping", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Hopping("10m", "5m"), lambda: (A.collect("v"),)),
    Scenario("arrow-intervals-changes", INTERVALS, {"time": "ts", "end": "e", "key": "k"},
             lambda: W.Hopping("5s", "2s", output="changes"), lambda: (A.count(),),
             strategy="arrow-intervals"),
    Scenario("arrow-intervals-snapshot", INTERVALS, {"time": "ts", "end": "e", "key": "k"},
             lambda: W.Snapshot(), lambda: (A.time_weighted_mean("v"),)),
    Scenario("arrow-intervals-count", INTERVALS, {"time": "ts", "end": "e", "key": "k"},
             lambda: W.CountByStartTime(3), _sum),
    Scenario("arrow-spl-sliding", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Sliding(P.Count(3), P.Time("5s")), lambda: (A.mean("v"),)),
    Scenario("arrow-spl-tumbling", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Tumbling(P.Delta("v", 1.5), partial=True), lambda: (A.mean("v"),)),
    Scenario("arrow-ticks-predicate", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Since("flag"), _sum, strategy="arrow-ticks"),
    Scenario("arrow-running", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Since("flag"), _sum),
    Scenario("arrow-ticks-calendar", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Since(W.monthly(), emit="both"), _sum),
    Scenario("arrow-ticks-trailing", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Trailing(2, W.daily()), _sum),
    Scenario("native-periods", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Since(W.daily()), _sum),
    Scenario("arrow-dynamic-clock", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Dynamic(W.clock("1m"), start="-5m"), _sum),
    Scenario("arrow-sessions", POINTS, {"time": "ts", "key": "k"},
             lambda: W.Session("5m"), _sum),
    Scenario("arrow-sessions-capped", INTERVALS, {"time": "ts", "end": "e"},
             lambda: W.Session("5m", max_duration="1h"), _sum),

)

SECONDS = 1_000_000
STREAM = {"time": "ts", "key": "k"}


def _picks() -> tuple[A.Aggregation, ...]:
    return (A.count(), A.sum("v"), A.first("v"), A.max_by("v", "ts"),
            A.count_distinct("v"))


STREAMS = (
    Scenario("stream-panes-keyed", POINTS, STREAM, lambda: W.Tumbling("10s"), _picks,
             lateness=5 * SECONDS),
    Scenario("stream-panes-keyless", POINTS, {"time": "ts"},
             lambda: W.Hopping("10s", "4s"), _sum, lateness=5 * SECONDS),
    Scenario("stream-panes-late-rows", POINTS, STREAM, lambda: W.Tumbling("10s"), _sum,
             lateness=5 * SECONDS, on_late="emit"),
    Scenario("stream-panes-keyless-late-rows", POINTS, {"time": "ts"},
             lambda: W.Hopping("10s", "4s"), _sum, lateness=5 * SECONDS, on_late="emit"),
    Scenario("stream-rows-tumbling", POINTS, STREAM, lambda: W.Tumbling("10s"),
             lambda: (A.collect("v"),), lateness=5 * SECONDS),
    Scenario("stream-rows-tumbling-revisions", POINTS, STREAM, lambda: W.Tumbling("10s"),
             lambda: (A.collect("v"),), lateness=5 * SECONDS,
             on_late="update", allowed_lateness=60 * SECONDS),
    Scenario("stream-rows-range", POINTS, STREAM, lambda: W.Range.past("10s"),
             lambda: (A.mean("v"),), lateness=5 * SECONDS),
    Scenario("stream-rows-range-keyless", POINTS, {"time": "ts"},
             lambda: W.Range.past("10s"), lambda: (A.mean("v"),), lateness=5 * SECONDS),
    Scenario("stream-features", POINTS, STREAM,
             lambda: FeatureSet((("10s", W.Range.past("10s")), ("last3", W.Rows(-2, 0)),
                                 ("all", None))), _sum, lateness=5 * SECONDS),
    Scenario("stream-running", POINTS, STREAM, lambda: None, _sum, lateness=5 * SECONDS),
    Scenario("stream-since-predicate", POINTS, STREAM, lambda: W.Since("flag"), _sum,
             lateness=5 * SECONDS),
    Scenario("stream-since-calendar", POINTS, STREAM, lambda: W.Since(W.daily()), _sum,
             lateness=5 * SECONDS),
    Scenario("stream-sessions", POINTS, STREAM, lambda: W.Session("1m"), _sum,
             lateness=5 * SECONDS),
    Scenario("stream-sessions-revisions", POINTS, STREAM, lambda: W.Session("1m"), _sum,
             lateness=5 * SECONDS, on_late="update", allowed_lateness=60 * SECONDS,
             emit="changes"),
    Scenario("stream-sliding", POINTS, STREAM,
             lambda: W.Sliding(P.Count(10), P.Count(2)), _sum, lateness=5 * SECONDS),
    Scenario("stream-dynamic-clock", POINTS, STREAM,
             lambda: W.Dynamic(W.clock("1s"), start="-2s"), _sum, lateness=5 * SECONDS),
    Scenario("stream-intervals", INTERVALS, {"time": "ts", "end": "e", "key": "k"},
             lambda: W.Hopping("10s", "5s"), _sum, lateness=5 * SECONDS),
    Scenario("stream-intervals-revisions", INTERVALS,
             {"time": "ts", "end": "e", "key": "k"}, lambda: W.Hopping("10s", "5s"), _sum,
             lateness=5 * SECONDS, on_late="update", allowed_lateness=60 * SECONDS,
             emit="changes"),
)
"""A scenario per stream strategy (panes and row-carrying, keyed and not)."""
