"""timestamp_ntz time on Spark's own strategies: the same rows as the kernels, at every
instant Spark holds (before 1970, wall-clock times a daylight-saving zone skips), and
the kernels where the session time zone is not UTC."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation
from wisp.windowed import run

pytestmark = pytest.mark.spark

AGGREGATIONS: list[Aggregation] = [ws.count(), ws.sum("v"), ws.max("v")]


@pytest.fixture(scope="module")
def ntz(spark: SparkSession) -> DataFrame:
    """Point events on a timestamp_ntz column: random seconds around the epoch, a
    spring-forward wall-clock hour of New York, the years 1600 and 2999."""
    rng = np.random.default_rng(7)
    seconds = rng.integers(-400_000, 400_000, 300).tolist()
    rows = [(f"k{i % 3}", s, float(rng.integers(-5, 6))) for i, s in enumerate(seconds)]
    gap = int(dt.datetime(2024, 3, 10, 2, 30, tzinfo=dt.UTC).timestamp())
    rows += [("k0", gap, 1.0), ("k0", gap + 60, 2.0), ("k1", -11676096000, 3.0),
             ("k1", 32503676400, 4.0)]
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


@pytest.mark.usefixtures("new_york")
def test_ntz_runs_on_the_kernel_where_the_session_is_not_utc(ntz: DataFrame) -> None:
    ev = ws.events(ntz, time="ts", key="k")
    elsewhere = ev.window(ws.Tumbling("1h")).agg(*AGGREGATIONS)
    assert "Strategy arrow-intervals:" in ws.explain(elsewhere)
    got = rows(elsewhere)
    assert got == rows(run(ev, ws.Tumbling("1h"), AGGREGATIONS, strategy="arrow-intervals"))
    assert any(r[1] == dt.datetime(2024, 3, 10, 2) for r in got)  # a skipped hour stays
