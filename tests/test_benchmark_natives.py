"""The benchmark's hand-written native queries for `Since` and for `Hopping` over interval
events are equivalents of wisp's windows for any events, not only on the benchmark's
data: here they meet data that needs what that data never does (hours without events,
keys that begin late or stop early, open-ended and zero-length lifetimes, lifetimes
falling between windows, times before 1970), and must give wisp's rows exactly."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
from benchmarks.cases import VALUES, native_interval_hopping, native_since

Rows = list[tuple[Any, ...]]


def _rows(df: DataFrame, on: tuple[str, ...]) -> Rows:
    return sorted((tuple(r) for r in df.select(*on, *VALUES).collect()),
                  key=lambda r: tuple((x is None, x) for x in r))


def _aggregated(events: ws.Events, window: Any) -> DataFrame:
    return events.window(window).agg(ws.sum("v"), ws.mean("v"), ws.max("v"))


# ------------------------------------------------------------------------------ Since


def _stamped(spark: SparkSession, rows: list[tuple[int, dt.datetime, float]]) -> DataFrame:
    return spark.createDataFrame(rows, "k long, ts timestamp, v double")


def _since_pair(df: DataFrame) -> tuple[Rows, Rows]:
    ours = _aggregated(ws.events(df, time="ts", key="k"), ws.Since(ws.hourly()))
    return (_rows(ours.withColumnRenamed("time", "t"), ("k", "t")),
            _rows(native_since(df), ("k", "t")))


def at(hours: int, minutes: int = 0) -> dt.datetime:
    return dt.datetime(2024, 3, 1) + dt.timedelta(hours=hours, minutes=minutes)


def test_native_since_fills_the_hours_without_events(spark: SparkSession) -> None:
    # key 1: hours closing at 1:00 (0:10, 0:50 and 1:00 itself), 4:00 (3:30), empty
    # hours between; key 2 begins late; key 3 holds the newest event (5:20), so every
    # key's hours run to 6:00
    df = _stamped(spark, [(1, at(0, 10), 1.0), (1, at(0, 50), 2.0), (1, at(1), 4.0),
                          (1, at(3, 30), 8.0), (2, at(2, 15), 16.0), (3, at(5, 20), 32.0)])
    ours, theirs = _since_pair(df)
    empty = (0.0, None, None)
    assert theirs == [
        (1, at(1), 7.0, 7.0 / 3, 4.0), (1, at(2), *empty), (1, at(3), *empty),
        (1, at(4), 8.0, 8.0, 8.0), (1, at(5), *empty), (1, at(6), *empty),
        (2, at(3), 16.0, 16.0, 16.0), (2, at(4), *empty), (2, at(5), *empty),
        (2, at(6), *empty), (3, at(6), 32.0, 32.0, 32.0)]
    assert ours == theirs


@pytest.mark.parametrize("seed", [1, 2])
def test_native_since_matches_wisp_on_scattered_events(spark: SparkSession,
                                                       seed: int) -> None:
    # about 40 events of 4 keys over 30 hours around the epoch, on the hour or not
    rand = random.Random(seed)
    epoch = dt.datetime(1970, 1, 1)
    rows = [(rand.randrange(4), epoch + dt.timedelta(
        minutes=rand.choice([60 * rand.randrange(-15, 15), rand.randrange(-900, 900)])),
        float(rand.randrange(-50, 50))) for _ in range(40)]
    ours, theirs = _since_pair(_stamped(spark, rows))
    assert len(theirs) > len({(k, ts.replace(minute=0)) for k, ts, _ in rows}) / 2
    assert ours == theirs


# --------------------------------------------------------------- Hopping over intervals


def _lived(spark: SparkSession, rows: list[tuple[int, int, int | None, float]]) -> DataFrame:
    return spark.createDataFrame(rows, "k long, t long, e long, v double")


def _hopping_pair(df: DataFrame, size: int, hop: int) -> tuple[Rows, Rows]:
    on = ("k", "window_start", "window_end")
    ours = _aggregated(ws.events(df, time="t", end="e", key="k"), ws.Hopping(size, hop))
    return _rows(ours, on), _rows(native_interval_hopping(df, size, hop), on)


LIVED = [(1, 3, 14, 1.0), (1, 12, None, 2.0), (1, 25, 25, 4.0), (2, 40, 47, 8.0),
         (3, -7, None, 16.0), (4, 5, 6, 32.0)]
"""Lifetimes `[t, e)`: open-ended ones (key 1 from 12, key 3 from -7), a zero-length one
(key 1 at 25); the horizon is 47 (key 2's end, after its start 40)."""


def test_native_interval_hopping_bounds_open_ended_events(spark: SparkSession) -> None:
    # windows [10n, 10n + 20): below the horizon 47 each window one by one, then one row
    # from 50 on (a null end) for the open-ended events alone
    ours, theirs = _hopping_pair(_lived(spark, LIVED), 20, 10)
    assert theirs == [
        (1, -10, 10, 1.0, 1.0, 1.0), (1, 0, 20, 3.0, 1.5, 2.0), (1, 10, 30, 7.0, 7 / 3, 4.0),
        (1, 20, 40, 6.0, 3.0, 4.0), (1, 30, 50, 2.0, 2.0, 2.0), (1, 40, 60, 2.0, 2.0, 2.0),
        (1, 50, None, 2.0, 2.0, 2.0),
        (2, 30, 50, 8.0, 8.0, 8.0), (2, 40, 60, 8.0, 8.0, 8.0),
        (3, -20, 0, 16.0, 16.0, 16.0), (3, -10, 10, 16.0, 16.0, 16.0),
        (3, 0, 20, 16.0, 16.0, 16.0), (3, 10, 30, 16.0, 16.0, 16.0),
        (3, 20, 40, 16.0, 16.0, 16.0), (3, 30, 50, 16.0, 16.0, 16.0),
        (3, 40, 60, 16.0, 16.0, 16.0), (3, 50, None, 16.0, 16.0, 16.0),
        (4, -10, 10, 32.0, 32.0, 32.0), (4, 0, 20, 32.0, 32.0, 32.0)]
    assert ours == theirs


@pytest.mark.parametrize(("size", "hop"), [(20, 10), (10, 10), (4, 10), (35, 5)])
def test_native_interval_hopping_matches_wisp(spark: SparkSession, size: int,
                                              hop: int) -> None:
    # the lifetimes above and about 50 more of 4 keys, a fifth of them open-ended;
    # with hop 10 and size 4, some lie between two windows and are in none
    rand = random.Random(size * 100 + hop)
    rows = list(LIVED)
    for _ in range(50):
        t = rand.randrange(-100, 100)
        end = None if rand.random() < 0.2 else t + rand.randrange(0, 25)
        rows.append((rand.randrange(4), t, end, float(rand.randrange(-50, 50))))
    ours, theirs = _hopping_pair(_lived(spark, rows), size, hop)
    assert len(theirs) > 20
    assert ours == theirs


def test_native_interval_hopping_without_open_ended_events(spark: SparkSession) -> None:
    # no horizon row where every lifetime is finite
    ours, theirs = _hopping_pair(_lived(spark, [r for r in LIVED if r[2] is not None]),
                                 20, 10)
    assert all(row[2] is not None for row in theirs)
    assert ours == theirs
