"""`Since` over calendar ticks and `Trailing` on real Spark (the helpers of
`test_stream_spark.py`: one JSON file per micro-batch, `trigger(availableNow=True)`, the
Parquet sink), `Since` daily restarted from the checkpoint between every micro-batch,
`Trailing` hourly once, `Trailing` over a boolean tick in one run (the three streams
side by side): the rows
written equal the batch query's rows over the accepted events that are final at the
last watermark (a tick row once the watermark reaches its tick, an event row once it
reaches its time). The events cross New York's spring change (2024-03-10 07:00Z), so
one day of `daily("America/New_York")` lasts 23 hours."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from test_stream_spark import (
    Event,
    Query,
    Written,
    assert_same,
    batch_frame,
    keyed,
    run_streams,
    seconds,
    source,
)

import wisp as ws

pytestmark = pytest.mark.spark

BASE = dt.datetime(2024, 3, 9, tzinfo=dt.UTC).timestamp()


def h(hours: float) -> float:
    """`hours` after 2024-03-09 00:00Z, in seconds from the epoch."""
    return BASE + hours * 3600


# Lateness 5 s. New York's local midnights: h(5), h(29) (03-10 05:00Z), then h(52) and
# h(76) (04:00Z, summer time): the day (h(29), h(52)] lasts 23 hours.
FILES: list[list[Event]] = [
    [("a", h(10), 1.0), ("b", h(12), 2.0), ("a", h(10) + 2, 0.5)],
    [("a", h(29), 3.0), ("b", h(30), None)],  # a's row on a tick closes its day
    [("a", h(30) - 3, 4.0), ("a", h(40), float("nan")), ("b", h(53), 5.0)],
    [("a", h(29) - 10, 7.0), ("a", h(76), 6.0), ("b", h(77), 1.0)],
]
LATE = [("a", h(29) - 10, 7.0)]  # below the watermark of the batch before, h(30) - 5 s
# in one run (h(53) - 5 s with a restart, whose batch without data moves it on)
WATERMARK = h(77) - 5


def final_rows(spark: SparkSession, query: Query) -> list[dict[str, Any]]:
    """The batch query's rows over the accepted events, final at the last watermark."""
    accepted = [e for f in FILES for e in f if e not in LATE]
    result = query(ws.events(batch_frame(spark, accepted), time="ts", key="k"))
    return [r.asDict() for r in result.collect() if seconds(r["time"]) <= WATERMARK]


QUERIES: dict[str, tuple[Query, int, list[int]]] = {
    # the query, how many rows are final, and the batches its runs start at (a run reads
    # the files up to there): after every batch, once, one run.
    # a's and b's ticks h(29), h(52), h(76):
    "since-daily": (lambda ev: ev.window(ws.Since(ws.daily("America/New_York")))
                    .agg(ws.count(), ws.sum("v"), ws.max("v")), 6, [0, 1, 2, 3]),
    # every accepted row but b's at h(77):
    "trailing-hourly": (lambda ev: ev.window(ws.Trailing(3, ws.hourly()))
                        .agg(ws.count(), ws.sum("v"), ws.max("v")), 9, [1, 3]),
    "trailing-predicate": (lambda ev: ev.window(ws.Trailing(2, F.col("v") > 3))
                           .agg(ws.count(), ws.sum("v")), 9, [3]),
}


SINCE_DAILY = [  # (key, window_start, time, count, sum_v)
    ("a", h(5), h(29), 3, 4.5), ("a", h(29), h(52), 2, float("nan")),  # 23 hours
    ("a", h(52), h(76), 1, 6.0),
    ("b", h(5), h(29), 1, 2.0), ("b", h(29), h(52), 1, 0.0),  # a null value
    ("b", h(52), h(76), 1, 5.0)]


@pytest.fixture(scope="module")
def written(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Written]:
    return run_streams(streaming, tmp_path_factory.mktemp("periods"),
                       {name: keyed(query) for name, (query, _, _) in QUERIES.items()},
                       FILES, {name: starts for name, (_, _, starts) in QUERIES.items()})


@pytest.mark.parametrize("name", list(QUERIES))
def test_periods_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, written: dict[str, Written], name: str) -> None:
    query, count, _ = QUERIES[name]
    got, report = written[name]
    want = final_rows(streaming, query)
    assert len(want) == count
    assert_same(got, want)
    assert report["late"] == len(LATE)
    if name == "since-daily":  # and the hand-written rows
        rows = sorted((r["k"], seconds(r["window_start"]), seconds(r["time"]),
                       r["count"], r["sum_v"]) for r in got)
        assert repr(rows) == repr(SINCE_DAILY)  # repr: NaN equals NaN


def test_stream_explain_says_what_periods_keep_and_when_they_emit(
        streaming: SparkSession, tmp_path: Path) -> None:
    tmp_path.joinpath("in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    text = ws.explain(ev.window(ws.Since(ws.daily("Europe/Berlin"))).agg(ws.count()))
    assert "kernel of the batch strategy arrow-ticks" in text
    assert ("State per key: the rows of the open period (after the last tick row "
            "written), the key's first tick and the last tick written") in text
    assert ("Emitted: a tick's row (its period (previous tick, tick]) once the watermark "
            "reaches the tick: every tick from the key's first event's period on") in text
    text = ws.explain(ev.window(ws.Trailing(3, ws.hourly())).agg(ws.count()))
    assert "State per key: the rows of the current period and the 2 before it" in text
    # a calendar period closes: collect keeps the rows of the periods it reads
    collected = ev.window(ws.Since(ws.daily())).agg(ws.collect("v"))
    assert "collect_v" in collected.columns
