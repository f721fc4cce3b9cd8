"""`wisp_window` in SQL against the Python API on the same table and query: the same
columns and, as sorted row lists, the same rows, for every window kind the table
function runs (seeded random data: several keys and a null key, ties in time,
duplicate rows, nulls in values, times before 1970)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
from wisp.query import build_window, load_yaml, parse_query

pytestmark = pytest.mark.spark

SCHEMA = "k string, ts timestamp, v double, i long, flag boolean"
EVENTS = "events: {time: ts, key: k}\n"
AGGREGATIONS = "aggregations: [count, count(v), sum(v), mean(v), min(v), max(i), first(v), " \
               "last(i), collect(v)]\n"

WINDOWS = {
    "Range": "window: {kind: Range, start: -30s, end: 0s}\n",
    "Range forward, partial": "window: {kind: Range, start: -10s, end: 20s}\n",
    "Rows": "window: {kind: Rows, start: -2, end: 0}\n",
    "Rows wide": "window: {kind: Rows, start: -40, end: 3, partial: true}\n",
    "Tumbling": "window: {kind: Tumbling, size: 1m}\n",
    "Hopping": "window: {kind: Hopping, size: 1m, hop: 20s}\n",
    "Snapshot": "window: Snapshot\n",
    "CountByStartTime": "window: {kind: CountByStartTime, n: 3}\n",
    "cumulative": "",
    "cumulative by name": "window: cumulative\n",
    "Sliding count": "window: {kind: Sliding, evict: {kind: Count, n: 4}}\n",
    "Sliding time": "window: {kind: Sliding, evict: {kind: Time, t: 1m}, "
                    "trigger: {kind: Count, n: 3}}\n",
    "Tumbling by count": "window: {kind: Tumbling, size: {kind: Count, n: 5}}\n",
    "Tumbling by punctuation": "window: {kind: Tumbling, size: {kind: Punctuation, "
                               "col: flag}}\n",
    "Since hourly": "window: {kind: Since, tick: {kind: hourly}, emit: events}\n",
    "Trailing": "window: {kind: Trailing, n: 2, tick: {kind: hourly}}\n",
    "Session": "window: {kind: Session, gap: 40s}\n",
    "Session capped": "window: {kind: Session, gap: 40s, max_duration: 2m}\n",
}


def table(spark: SparkSession, seed: int) -> DataFrame:
    """Random events over a null and three other keys, about an hour around 1900-01-01
    or 1970-01-01, with ties in time, duplicate rows and null values."""
    rng = random.Random(seed)
    base = rng.choice([datetime(1900, 1, 1, tzinfo=UTC),
                       datetime(1969, 12, 31, 23, 30, tzinfo=UTC)])
    rows: list[tuple[Any, ...]] = []
    for _ in range(rng.randint(40, 120)):
        row = (rng.choice(["a", "b", "", None]),
               base + timedelta(seconds=rng.randint(0, 5400) // 7 * 7),
               rng.choice([None, 0.5, -2.0, 3.25, 1e6, float(rng.randint(-50, 50))]),
               rng.choice([None, rng.randint(-10**12, 10**12)]),
               rng.random() < 0.2)
        rows.append(row)
        if rng.random() < 0.1:
            rows.append(row)  # an exact duplicate
    return spark.createDataFrame(rows, SCHEMA)


def sorted_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    """The rows as tuples, in an order that does not depend on float rounding."""
    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((v is None, f"{v:.6g}" if isinstance(v, float) else repr(v))
                     for v in row)
    return sorted((tuple(r) for r in df.collect()), key=key)


def same(a: Any, b: Any) -> bool:
    """Equal values, floats as the API's differential tests compare them (relative
    1e-9, NaN equal to NaN), lists element by element."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9,
                                                                  abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def api_result(df: DataFrame, text: str) -> DataFrame:
    """What the Python API returns for the query `text` over `df`."""
    query = parse_query(load_yaml(text, "the query"))
    events = ws.events(df, time=query.time, key=list(query.key) or None, end=query.end,
                       on_null_time=query.on_null_time)
    window = build_window(query.raw_window)
    if window is None:
        return events.agg(*query.aggregations)
    return events.window(window).agg(*query.aggregations)


def sql_result(spark: SparkSession, df: DataFrame, text: str) -> DataFrame:
    df.createOrReplaceTempView("readings")
    return spark.sql("SELECT * FROM wisp_window(TABLE(readings), :q)", args={"q": text})


def assert_same_result(spark: SparkSession, df: DataFrame, text: str) -> None:
    api, sql = api_result(df, text), sql_result(spark, df, text)
    # the API's columns and types (nullability is each strategy's own)
    assert [(f.name, f.dataType) for f in sql.schema] == \
        [(f.name, f.dataType) for f in api.schema]
    expected, found = sorted_rows(api), sorted_rows(sql)
    assert len(found) == len(expected)
    assert expected, "the query gave no row: nothing compared"
    for want, got in zip(expected, found, strict=True):
        assert all(same(x, y) for x, y in zip(want, got, strict=True)), (want, got)


@pytest.fixture(scope="module")
def registered(spark: SparkSession) -> SparkSession:
    ws.register_sql(spark)
    return spark


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("kind", list(WINDOWS))
def test_sql_gives_the_api_rows(registered: SparkSession, kind: str, seed: int) -> None:
    assert_same_result(registered, table(registered, seed),
                       EVENTS + WINDOWS[kind] + AGGREGATIONS)


def test_without_keys_and_with_interval_events(registered: SparkSession) -> None:
    df = table(registered, 3)
    assert_same_result(registered, df, "events: {time: ts}\nwindow: {kind: Range, "
                       "start: -1m, end: 0s}\naggregations: [count, sum(v), median(v)]\n")
    # an end column that cannot be null (Hopping and Tumbling over interval events whose
    # end may be null need the whole input: refused in SQL, see test_sql_errors)
    spans = registered.createDataFrame(
        df.selectExpr("k", "ts", "ts + make_interval(0, 0, 0, 0, 0, 0, abs(v) % 90) AS te",
                      "v").where("v IS NOT NULL").collect(),
        "k string, ts timestamp, te timestamp not null, v double")
    assert_same_result(registered, spans, "events: {time: ts, end: te, key: k}\n"
                       "window: {kind: Tumbling, size: 1m}\naggregations: [count, sum(v)]\n")


def test_integer_time_and_drop_of_null_times(registered: SparkSession) -> None:
    rows = [(k, t, float(t % 7)) for k in ("x", "y") for t in range(-30, 30, 3)]
    rows += [("x", None, 1.0), ("y", None, 2.0)]
    df = registered.createDataFrame(rows, "k string, t long, v double")
    assert_same_result(registered, df, "events: {time: t, key: k, on_null_time: drop}\n"
                       "window: {kind: Range, start: -10, end: 0}\n"
                       "aggregations: [count, mean(v)]\n")
