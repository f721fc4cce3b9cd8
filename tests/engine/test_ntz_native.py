"""timestamp_ntz time on Spark's own strategies: the same rows as the kernels, at every
instant Spark holds (before 1970, wall-clock times a daylight-saving zone skips or
repeats), in every session time zone: the ticks are read and written without one."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.engine.columns import ntz_from_micros, ntz_micros
from wisp.spec.aggregates import Aggregation
from wisp.windowed import run

pytestmark = pytest.mark.spark

AGGREGATIONS: list[Aggregation] = [ws.count(), ws.sum("v"), ws.max("v")]


@pytest.fixture(scope="module")
def ntz(spark: SparkSession) -> DataFrame:
    """Point events on a timestamp_ntz column: random seconds around the epoch, wall
    clocks that New York's and Berlin's spring-forward skip and their fall-back repeats,
    the years 1600 and 2999."""
    rng = np.random.default_rng(7)
    seconds = rng.integers(-400_000, 400_000, 300).tolist()
    rows = [(f"k{i % 3}", s, float(rng.integers(-5, 6))) for i, s in enumerate(seconds)]
    gap = int(dt.datetime(2024, 3, 10, 2, 30, tzinfo=dt.UTC).timestamp())
    rows += [("k0", gap, 1.0), ("k0", gap + 60, 2.0), ("k1", -11676096000, 3.0),
             ("k1", 32503676400, 4.0)]
    rows += [(f"k{i % 3}", wall_seconds(wall), float(i))
             for i, wall in enumerate(DST_WALL_TIMES)]
    df = spark.createDataFrame(rows, "k string, s long, v double")
    return df.selectExpr("k", "CAST(timestamp_seconds(s) AS TIMESTAMP_NTZ) AS ts", "v")


def rows(df: DataFrame) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in df.collect())


def unmatched_rows(got: DataFrame, want: DataFrame) -> list[tuple[object, ...]]:
    """The rows (at most ten, with how many more `got` holds than `want`) whose counts
    differ between the two results: none when they hold the same rows, duplicates
    counted. Compared in Spark: since-daily from 1600 to 2999 gives over a million rows,
    which would take far longer to collect than to compare."""
    side = "__wisp_test_side"
    tagged = got.withColumn(side, F.lit(1)).unionByName(want.withColumn(side, F.lit(-1)))
    differing = (tagged.groupBy(*got.columns).agg(F.sum(side).alias(side))
                 .where(F.col(side) != 0))
    return [tuple(r) for r in differing.limit(10).collect()]


@pytest.mark.parametrize("window, native, kernel", [
    (ws.Tumbling("1h"), "native-buckets", "arrow-intervals"),
    (ws.Tumbling("7m", align=dt.datetime(1969, 12, 31, 23, 58)), "native-buckets",
     "arrow-intervals"),
    (ws.Hopping("1h", "20m"), "panes", "arrow-intervals"),
    (ws.Since(ws.daily()), "native-periods", "arrow-ticks"),
], ids=["tumbling", "tumbling-aligned", "hopping", "since-daily"])
def test_ntz_native_strategies_give_the_kernels_rows(ntz: DataFrame, window: ws.Tumbling,
                                                     native: str, kernel: str) -> None:
    ev = ws.events(ntz, time="ts", key="k")
    chosen = ev.window(window).agg(*AGGREGATIONS)
    assert f"Strategy {native}:" in ws.explain(chosen)
    forced = run(ev, window, AGGREGATIONS, strategy=kernel)
    assert [f.dataType for f in chosen.schema] == [f.dataType for f in forced.schema]
    assert unmatched_rows(chosen, forced) == []


ZONES = ["UTC", "Etc/UTC", "America/New_York", "Europe/Berlin"]

DST_WALL_TIMES = [dt.datetime(2024, 3, 10, 2, 0), dt.datetime(2024, 3, 10, 2, 59, 59, 999999),
                  dt.datetime(2024, 11, 3, 1, 30), dt.datetime(2024, 3, 31, 2, 30, 0, 1),
                  dt.datetime(2024, 10, 27, 2, 30)]
"""Wall clocks New York skips (2024-03-10 02:00 to 03:00) and repeats (2024-11-03 01:00
to 02:00), Berlin skips (2024-03-31 02:00 to 03:00) and repeats (2024-10-27 02:00 to
03:00)."""


def wall_seconds(wall: dt.datetime) -> int:
    """Whole seconds of a wall clock from the epoch (no zone)."""
    return int(wall.replace(tzinfo=dt.UTC).timestamp())


@pytest.fixture(params=ZONES)
def zone(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """The shared session in each of `ZONES` for one test, UTC again after it."""
    spark.conf.set("spark.sql.session.timeZone", request.param)
    try:
        yield request.param
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_wall_clock_micros_and_back_in_every_zone(spark: SparkSession, zone: str) -> None:
    walls = [*DST_WALL_TIMES, dt.datetime(1600, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59,
                                                                   500000)]
    df = spark.createDataFrame([(w,) for w in walls], "ts timestamp_ntz")
    got = df.select("ts", ntz_micros(F.col("ts")).alias("us"),
                    ntz_from_micros(ntz_micros(F.col("ts"))).alias("back")).collect()
    epoch = dt.datetime(1970, 1, 1)
    assert [(r.ts, r.us, r.back) for r in got] == [
        (w, (w - epoch) // dt.timedelta(microseconds=1), w) for w in walls]


@pytest.mark.parametrize("window, native, kernel", [
    (ws.Tumbling("1h"), "native-buckets", "arrow-intervals"),
    (ws.Tumbling("7m", align=dt.datetime(1969, 12, 31, 23, 58)), "native-buckets",
     "arrow-intervals"),
    (ws.Hopping("1h", "20m"), "panes", "arrow-intervals"),
    (None, "native-running", "arrow-frames"),
], ids=["tumbling", "tumbling-aligned", "hopping", "cumulative"])
def test_ntz_stays_native_in_every_session_time_zone(
        ntz: DataFrame, zone: str, window: ws.Tumbling | ws.Hopping | None, native: str,
        kernel: str) -> None:
    ev = ws.events(ntz, time="ts", key="k")
    chosen = (ev if window is None else ev.window(window)).agg(*AGGREGATIONS)
    assert f"Strategy {native}:" in ws.explain(chosen)
    forced = run(ev, window, AGGREGATIONS, strategy=kernel)
    assert unmatched_rows(chosen, forced) == []
    if window is not None and window.size == "1h":
        starts = {r[0] for r in chosen.select("window_start").collect()}
        # the hours a zone skips or repeats are windows as any other hour
        assert {dt.datetime(2024, 3, 10, 2), dt.datetime(2024, 3, 31, 2),
                dt.datetime(2024, 11, 3, 1), dt.datetime(2024, 10, 27, 2)} <= starts


@pytest.mark.usefixtures("new_york")
def test_since_daily_stays_native_in_a_daylight_saving_zone(ntz: DataFrame) -> None:
    ev = ws.events(ntz, time="ts", key="k")
    chosen = ev.window(ws.Since(ws.daily())).agg(*AGGREGATIONS)
    assert "Strategy native-periods:" in ws.explain(chosen)
    forced = run(ev, ws.Since(ws.daily()), AGGREGATIONS, strategy="arrow-ticks")
    assert unmatched_rows(chosen, forced) == []
