"""Dynamic windows, clocks and sessions over every kind of time column: integer, float,
decimal, date and timestamp without time zone (output times keep the column's kind)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession

import wisp as ws

pytestmark = pytest.mark.spark

DAY0 = dt.date(2024, 1, 1)
NTZ0 = dt.datetime(2024, 1, 1)

# kind -> (Spark type, relative units -> value, one unit as a duration, instant of 0)
KINDS: dict[str, tuple[str, Callable[[int], Any], Any, Any]] = {
    "integer": ("int", lambda u: u, 1, 0),
    "float": ("double", lambda u: float(u), 1.0, 0.0),
    "decimal": ("decimal(10,2)", lambda u: Decimal(u).quantize(Decimal("0.01")), 1, 0),
    "date": ("date", lambda u: DAY0 + dt.timedelta(days=u), "1d", DAY0),
    "timestamp_ntz": ("timestamp_ntz", lambda u: NTZ0 + dt.timedelta(seconds=u), "1s",
                      NTZ0),
}
TIMES = [0, 1, 2, 3, 5]


def events(spark: SparkSession, kind: str) -> ws.Events:
    spark_type, at, _, _ = KINDS[kind]
    df = spark.createDataFrame([(at(u), float(u)) for u in TIMES], f"t {spark_type}, v double")
    return ws.events(df, time="t")


def twice(unit: Any) -> Any:
    return "2d" if unit == "1d" else "2s" if unit == "1s" else 2 * unit


def minus(unit: Any) -> Any:
    return "-" + unit if isinstance(unit, str) else -unit


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_clock_windows_keep_the_time_kind(spark: SparkSession, kind: str) -> None:
    _, at, unit, zero = KINDS[kind]
    window = ws.Dynamic(ws.clock(twice(unit), start=zero), start=minus(unit), end=unit)
    result = events(spark, kind).window(window).agg(ws.count(), ws.sum("v"))
    got = [tuple(r) for r in result.orderBy("time").collect()]
    # ticks 0, 2, 4 (up to the last event at 5); windows [t - 1, t + 1]
    assert got == [(at(-1), at(1), at(0), 2, 1.0), (at(1), at(3), at(2), 3, 6.0),
                   (at(3), at(5), at(4), 2, 8.0)]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_sessions_keep_the_time_kind(spark: SparkSession, kind: str) -> None:
    _, at, unit, _ = KINDS[kind]
    result = events(spark, kind).window(ws.Session(unit)).agg(ws.count())
    got = [tuple(r) for r in result.orderBy("time").collect()]
    # 0, 1, 2, 3 are each one unit apart (joins); 5 is two units after 3
    assert got == [(at(0), at(4), at(4), 4), (at(5), at(6), at(6), 1)]
