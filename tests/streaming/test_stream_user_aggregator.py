"""User aggregators (`ws.Aggregator`, `tests/aggregators.py`) on real Spark streams (the
files and helpers of `test_stream_spark`: one JSON file per micro-batch,
`trigger(availableNow=True)`, the Parquet sink with a checkpoint), every stream restarted
from its checkpoint after every micro-batch, a few kinds side by side: `Spread`,
`Trajectory` (order-sensitive) and `Total` (with `min_count`) beside a built-in count.
The rows written equal the batch query's rows over the accepted events that are final
at the last watermark: the row-carrying kinds (Rows, Range, Tumbling, Hopping, Session,
a clock) run the batch kernels on each micro-batch's final rows; Tumbling and
Hopping over the commutative aggregators alone keep their pickled states per pane; the
cumulative window and `Since(predicate)` carry each key's pickled state from one
micro-batch (and one run) to the next. `explain` says what runs; a checkpoint made with
another aggregator class is refused."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from aggregators import Spread, Total, Trajectory
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import (
    AT_ONCE,
    FILES,
    FOUR_FILES,
    LATE,
    PANE_LATE,
    WATERMARK,
    Event,
    Query,
    Written,
    assert_checkpoint_refused,
    assert_same,
    batch_frame,
    run_streams,
    seconds,
    source,
)

import wisp as ws
from wisp.engine.streaming import spec_text
from wisp.windowed import _run_of

pytestmark = pytest.mark.spark

SECOND = 1_000_000
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
USER = (ws.count(), ws.aggregate(Spread(), "v"), ws.aggregate(Trajectory, "v"),
        ws.aggregate(Total(), "n", min_count=2))
PANES = (ws.count(), ws.aggregate(Spread(), "v"), ws.aggregate(Total(), "n", min_count=2))
"""The commutative ones, which Tumbling and Hopping keep per pane."""


def numbered(df: DataFrame) -> DataFrame:
    """The events with `n`: the event's second (a whole number for `Total`), null where
    `v` is null."""
    return df.withColumn("n", F.when(F.col("v").isNotNull(), F.unix_seconds("ts")))


def clock(end: dt.datetime | None) -> Query:
    """Every 5 s from each key's first event, each tick's window (tick - 5 s, tick]; the
    batch clock ends at the watermark, as the stream's ticks run up to it."""
    return lambda ev: ev.window(ws.Dynamic(ws.clock("5s", end=end), start="-5s",
                                           closed="right")).agg(*USER)


Kind = tuple[Query, Query | None, str, Sequence[Event]]
KINDS: dict[str, Kind] = {
    # the stream's query, the batch's (None: the same), the column whose time must be at
    # or below the watermark for a row to be final, and the late rows
    "rows": (lambda ev: ev.window(ws.Rows(-1, 1)).agg(*USER), None, "window_end", LATE),
    "range": (lambda ev: ev.window(ws.Range("-10s", "2s")).agg(*USER), None, "window_end",
              LATE),
    # with the order-sensitive Trajectory: the rows of the open windows, no pane partials
    "tumbling": (lambda ev: ev.window(ws.Tumbling("10s")).agg(*USER), None, "window_end",
                 LATE),
    "hopping": (lambda ev: ev.window(ws.Hopping("10s", "4s")).agg(*USER), None,
                "window_end", LATE),
    # commutative aggregators only (Spread, Total): pickled states per pane. A row is
    # late when a window holding it was closed for its key: ("a", 25) lies in [20, 30),
    # open at watermark 28; with Hopping("10s", "4s") in [16, 26) too, which the batch
    # without data of a's restart before it closed at 28
    "tumbling-panes": (lambda ev: ev.window(ws.Tumbling("10s")).agg(*PANES), None,
                       "window_end", PANE_LATE),
    "hopping-panes": (lambda ev: ev.window(ws.Hopping("10s", "4s")).agg(*PANES), None,
                      "window_end", LATE),
    "session": (lambda ev: ev.window(ws.Session("4s")).agg(*USER), None, "window_end",
                LATE),
    "clock": (clock(None), clock(EPOCH + dt.timedelta(seconds=WATERMARK)), "time", LATE),
    "cumulative": (lambda ev: ev.agg(*USER), None, "time", LATE),
    "since": (lambda ev: ev.window(ws.Since(F.col("v") > 3)).agg(*USER), None, "time",
              LATE),
}


def pipeline(query: Query) -> Callable[[DataFrame], DataFrame]:
    return lambda df: query(ws.events(numbered(df), time="ts", key="k", lateness="5s"))


@pytest.fixture(scope="module")
def restarted(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Written]:
    """Each kind's stream over FOUR_FILES (FILES in four micro-batches), restarted from
    its checkpoint after every micro-batch, AT_ONCE kinds side by side."""
    every = range(len(FOUR_FILES))
    kinds = list(KINDS)
    written: dict[str, Written] = {}
    for first in range(0, len(kinds), AT_ONCE):
        group = kinds[first:first + AT_ONCE]
        written |= run_streams(streaming, tmp_path_factory.mktemp("user"),
                               {kind: pipeline(KINDS[kind][0]) for kind in group},
                               FOUR_FILES, dict.fromkeys(group, every))
    return written


def final_rows(spark: SparkSession, kind: str) -> list[dict[str, Any]]:
    """The batch rows of `kind` over the accepted events, final at the last watermark."""
    query, batch, closing, late = KINDS[kind]
    accepted = [e for f in FILES for e in f if e not in late]
    result = (batch or query)(ws.events(numbered(batch_frame(spark, accepted)), time="ts",
                                        key="k"))
    return [r.asDict() for r in result.collect()
            if r[closing] is not None and seconds(r[closing]) <= WATERMARK]


@pytest.mark.parametrize("kind", list(KINDS))
def test_user_aggregators_on_a_restarted_stream_equal_the_final_batch_rows(
        streaming: SparkSession, restarted: dict[str, Written], kind: str) -> None:
    got, report = restarted[kind]
    want = final_rows(streaming, kind)
    assert want, "the batch has final rows to compare"
    assert any(r["spread_v"] is not None for r in want)
    assert sorted(got[0]) == sorted(want[0])  # the same columns
    assert_same(got, want)
    assert report["late"] == len(KINDS[kind][3])


def test_running_user_states_carried_over_restarts_give_the_hand_computed_rows(
        restarted: dict[str, Written]) -> None:
    """The cumulative window's rows at a's 31 s and b's 30 s, by hand: a's values in
    time order (ties by value) 0.5, 1.0 at 10 s, NaN, 4.0, null at 20 s, 6.0; b's 2.0
    at 11 s, 8.0 at 29 s (in the micro-batch after 30 s's, not late), 5.0 at 30 s."""
    got, _ = restarted["cumulative"]
    at = {(r["k"], seconds(r["time"])): r for r in got}
    a, b = at[("a", 31)], at[("b", 30)]
    assert math.isnan(a["spread_v"])
    assert (a["trajectory_v"]["change"], a["trajectory_v"]["span"]) == (5.5, 21 * SECOND)
    assert (a["total_n"], a["count"]) == (10 + 10 + 16 + 17 + 31, 6)
    assert (b["spread_v"], b["total_n"]) == (6.0, 11 + 29 + 30)
    assert (b["trajectory_v"]["change"], b["trajectory_v"]["span"]) == (3.0, 19 * SECOND)
    # min_count=2: c's one value gives null, a's first row (one value) too
    assert at[("c", 33)]["total_n"] is None
    assert at[("c", 33)]["spread_v"] == 0.0
    firsts = sorted((r for r in got if r["k"] == "a"), key=lambda r: (r["time"], r["count"]))
    assert firsts[0]["total_n"] is None and firsts[1]["total_n"] == 20


def test_stream_explain_says_how_user_aggregators_run(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(numbered(source(streaming, tmp_path / "in")), time="ts", key="k",
                   lateness="5s")
    running = ws.explain(KINDS["cumulative"][0](ev))
    assert "Strategy stream: Structured Streaming" in running
    assert "resumable kernel of the batch strategy arrow-running" in running
    assert ("Aggregators: spread_v, trajectory_v, total_n are mergeable (the aggregator's "
            "merge)") in running
    assert "running windows by one state carried per key" in running
    # an order-sensitive aggregator (Trajectory) has no pane partials: Tumbling keeps
    # the rows of its open windows; commutative ones alone, a state per pane
    tumbling = ws.explain(KINDS["tumbling"][0](ev))
    assert "resumable kernel of the batch strategy arrow-intervals" in tumbling
    assert "State per key: the rows of the windows not yet final" in tumbling
    assert "panes of gcd(size, hop)" not in tumbling
    panes = ws.explain(KINDS["tumbling-panes"][0](ev))
    assert "panes of gcd(size, hop)" in panes
    assert "State per key: one row of partial aggregates per non-empty pane" in panes
    assert "Aggregators: spread_v, total_n are mergeable" in panes


def test_stream_explain_names_the_user_states_kept_per_pane(streaming: SparkSession,
                                                             tmp_path: Path) -> None:
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(numbered(source(streaming, tmp_path / "in")), time="ts", key="k",
                   lateness="5s")
    panes = ws.explain(KINDS["tumbling-panes"][0](ev))
    assert "a commutative user aggregator's state" in panes


def test_a_checkpoint_made_with_another_aggregator_class_is_refused(
        streaming: SparkSession, tmp_path: Path) -> None:
    """The cumulative window's state holds `Spread`'s pickled states: a restart with
    `Trajectory` under the same output name on that checkpoint is refused."""
    assert_checkpoint_refused(
        streaming, tmp_path, lambda ev: ev.agg(ws.aggregate(Spread, "v").alias("u")),
        lambda ev: ev.agg(ws.aggregate(Trajectory, "v").alias("u")))


class Largest(ws.Aggregator):
    """The `n` largest values: a parameter the state depends on (driver side only)."""

    returns = "array<double>"

    def __init__(self, n: int = 2) -> None:
        self.n = n

    def zero(self) -> Any:
        return []

    def add(self, state: Any, values: Any, times: Any) -> Any:
        return sorted([*state, *map(float, values)])[-self.n:]

    def merge(self, a: Any, b: Any) -> Any:
        return sorted([*a, *b])[-self.n:]

    def finish(self, state: Any) -> Any:
        return list(state)


def test_a_checkpoint_made_with_other_aggregator_parameters_is_refused(
        streaming: SparkSession, tmp_path: Path) -> None:
    """`Largest(2)`'s states (two values each) would be read as `Largest(5)`'s: the
    two queries' checkpoint specs must differ, as a built-in quantile's `q` makes
    them differ."""
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    two, five = (spec_text(_run_of(ev.agg(ws.aggregate(Largest(n), "v"))).plan)
                 for n in (2, 5))
    assert two != five
