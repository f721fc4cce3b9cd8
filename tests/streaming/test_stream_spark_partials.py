"""`Tumbling`/`Hopping` on pane partials on real Spark, late rows counted: each bucket's
rows become pane partials where they are read, Spark's late filter is off, and a row
is late once its key has closed the earliest window holding it. Over every time type
the pane kernel takes (timestamp, timestamp_ntz, date, integer), without a key, with
two key columns and with rows spread over several partitions (so that partials of one
key and pane come from several places), restarted twice or run once: the rows written
equal the batch query's rows over the events that are not late and are final at the
last watermark, and exactly the late rows are counted."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import RESTARTED_TWICE, Event, assert_same, batch_frame, run_streams

import wisp as ws

pytestmark = pytest.mark.spark

# (key, seconds, value); lateness 5 s (5 days for date time, 5,000,000 ticks for integer
# time). Watermarks: 6 after file 0, 19 after 1, 25 after 2, 28 after 3, 55 after 5.
# ("a", 12) arrives after key a was fed up to 25 (file 3's batch), past the end of
# [10, 20): late. ("b", 18): b's timer closed [10, 20) at watermark 25: late. ("a", 25)
# lies in [20, 30), still open at 28: it goes in (Spark's own late filter, at or below
# the watermark of the batch before, would drop it).
FILES: list[list[Event]] = [
    [("a", 10, 1.0), ("b", 11, 2.0), ("a", 10, 0.5)],
    [("a", 20, None), ("b", 24, 1.5)],
    [("a", 16, math.nan), ("a", 17, 4.0), ("b", 30, 5.0)],
    [("a", 31, 6.0), ("c", 33, -1.0)],
    [("a", 12, 7.0), ("a", 25, 3.0), ("b", 18, 1.0)],
    [("a", 60, 1.0), ("b", 60, 1.0)],
]
LATE: list[Event] = [("a", 12, 7.0), ("b", 18, 1.0)]
WATERMARK = 55


def aggregated(ev: ws.Events, size: object) -> DataFrame:
    return ev.window(ws.Tumbling(size)).agg(ws.count(), ws.count("v"), ws.sum("v"),
                                            ws.mean("v"), ws.max("v"), ws.stddev("v"))


Shape = Callable[[DataFrame], DataFrame]
EPOCH = dt.datetime(1970, 1, 1)


def of_timestamp(moment: dt.datetime) -> float:
    """A window end in seconds since the epoch (timestamp_ntz: as UTC)."""
    return moment.timestamp() if moment.tzinfo else (moment - EPOCH).total_seconds()


@dataclass(frozen=True)
class Case:
    shape: Shape
    binding: dict[str, Any]
    size: object
    end: Callable[[Any], float]
    """A window end in seconds (days for date time)."""


CASES = {
    "keyed": Case(lambda df: df.repartition(3), {"key": "k", "lateness": "5s"}, "10s",
                  of_timestamp),
    "keyless": Case(lambda df: df, {"lateness": "5s"}, "10s", of_timestamp),
    "two-keys": Case(lambda df: df.withColumn("g", F.lit(1)),
                     {"key": ["k", "g"], "lateness": "5s"}, "10s", of_timestamp),
    "ntz": Case(lambda df: df.withColumn("ts", F.col("ts").cast("timestamp_ntz")),
                {"key": "k", "lateness": "5s"}, "10s", of_timestamp),
    "date": Case(lambda df: df.withColumn("ts", F.date_from_unix_date(
        F.unix_seconds("ts").cast("int"))), {"key": "k", "lateness": "5d"}, "10d",
                 lambda d: float((d - EPOCH.date()).days)),
    "integer": Case(lambda df: df.withColumn("ts", F.unix_micros("ts")),
                    {"key": "k", "lateness": 5_000_000}, 10_000_000,
                    lambda t: t / 1_000_000),
}


def pipeline(case: Case) -> Callable[[DataFrame], DataFrame]:
    return lambda df: aggregated(ws.events(case.shape(df), time="ts", **case.binding),
                                 case.size)


@pytest.fixture(scope="module")
def written(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """Every shape's stream side by side; "keyed" restarted twice (runs over files 0-1,
    2-3 and 4-5)."""
    pipelines = {name: pipeline(case) for name, case in CASES.items()}
    return run_streams(streaming, tmp_path_factory.mktemp("partials"), pipelines, FILES,
                       {"keyed": RESTARTED_TWICE})


@pytest.mark.parametrize("name", list(CASES))
def test_pane_partials_on_a_stream_equal_the_final_batch_rows_and_count_late_rows(
        streaming: SparkSession, written: dict[str, Any], name: str) -> None:
    case = CASES[name]
    got, report = written[name]
    accepted = [e for f in FILES for e in f if e not in LATE]
    batch = aggregated(ws.events(case.shape(batch_frame(streaming, accepted)), time="ts",
                                 key=case.binding.get("key")), case.size)
    want = [r.asDict() for r in batch.collect() if case.end(r["window_end"]) <= WATERMARK]
    assert len(want) == (3 if name == "keyless" else 7)  # keyed: a 10-40, b 10-40, c
    # 30-40; keyless: 10-40
    assert len(got) == len(want)
    assert_same(got, want)
    assert report["late"] == len(LATE)


def test_a_late_row_counts_once_and_its_window_is_written_once(
        written: dict[str, Any]) -> None:
    """("a", 12) is late after [10, 20) of key a was written: that window is written
    once, without it (10, 10, 16 and 17; NaN is a value), and ("a", 25) is in [20, 30)."""
    got, _ = written["keyed"]
    a = sorted((r for r in got if r["k"] == "a"), key=lambda r: r["window_start"])
    assert [(r["count"], r["count_v"]) for r in a] == [(4, 4), (2, 1), (1, 1)]
