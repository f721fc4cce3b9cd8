"""Column names that Spark would parse: a dot (a struct field to Spark), a backtick
(quoting) and a space, in the time, end, key, value, order and flag columns and in
columns no query reads. Every window family runs on every strategy it has, each
judged against the brute-force oracles; a DataFrame with a duplicated column name is
refused when the events are bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from oracle import assert_rows_match, cumulative, range_window, rows_window, sort_output
from oracle_dynamic import dynamic_window
from oracle_dynamic import sessions as oracle_sessions
from oracle_intervals import count_by_start_time, hopping, snapshot
from oracle_periods import since_calendar, since_predicate, trailing_calendar
from oracle_policies import spl_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation
from wisp.windowed import _run_of, run

pytestmark = pytest.mark.spark

SECOND = 1_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
KEY, TIME, END, VALUE = "k`y", "t.s", "e`nd", "v a"
INT, TEXT, FLOAT, FLAG = "a.b", "a`b", "a b", "f.l"
COLUMNS = [KEY, TIME, END, VALUE, INT, TEXT, FLOAT, FLAG]
POINT_COLUMNS = [c for c in COLUMNS if c != END]

# two keys, no tie in time within a key; minutes from midnight 1970-01-01 UTC
EVENTS = [("x", 0, 40, 1.0, 5, "p", 0.5, False), ("x", 10, None, 2.0, 3, "q", 1.5, True),
          ("x", 25, 30, 4.0, 9, "r", 2.5, False), ("x", 70, 75, 8.0, 1, "s", 3.5, True),
          ("x", 95, 140, 16.0, 7, "t", 4.5, False), ("y", 5, 20, 32.0, 2, "u", 5.5, False),
          ("y", 50, 50, 64.0, 8, "v", 6.5, True), ("y", 130, None, 128.0, 4, "w", 7.5, False)]
ROWS: list[dict[str, Any]] = [
    {KEY: k, TIME: t * MINUTE, END: None if e is None else e * MINUTE, VALUE: v, INT: i,
     TEXT: s, FLOAT: f, FLAG: flag} for k, t, e, v, i, s, f, flag in EVENTS]
POINT_ROWS = [{c: r[c] for c in POINT_COLUMNS} for r in ROWS]

NATIVE: list[Aggregation] = [ws.count(), ws.sum(VALUE), ws.max(INT)]
"""Aggregations every native strategy takes."""
KERNEL: list[Aggregation] = [*NATIVE, ws.last(TEXT), ws.mean(FLOAT)]


@pytest.fixture(scope="module")
def table(spark: SparkSession) -> DataFrame:
    data = [tuple(r[c] for c in COLUMNS) for r in ROWS]
    raw = spark.createDataFrame(data, "k string, t long, e long, v double, i long, s string, "
                                "f double, flag boolean")
    return raw.select(F.col("k").alias(KEY), F.timestamp_micros("t").alias(TIME),
                      F.timestamp_micros("e").alias(END), F.col("v").alias(VALUE),
                      F.col("i").alias(INT), F.col("s").alias(TEXT),
                      F.col("f").alias(FLOAT), F.col("flag").alias(FLAG))


@pytest.fixture(scope="module")
def points(table: DataFrame) -> ws.Events:
    return ws.events(table.drop(END), time=TIME, key=KEY)


@pytest.fixture(scope="module")
def intervals(table: DataFrame) -> ws.Events:
    return ws.events(table, time=TIME, end=END, key=KEY)


def collect(result: DataFrame) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], [KEY])


Oracle = Callable[[list[Aggregation]], list[dict[str, Any]]]
POINT = {"time": TIME, "key": [KEY], "order": None, "columns": POINT_COLUMNS}
INTERVAL = {"time": TIME, "key": [KEY], "order": None, "columns": COLUMNS}
HOURLY = ws.hourly()

# (window, forced strategy or None, the strategy that must run, the expected rows)
POINT_CASES: list[tuple[str, Any, str | None, str, Oracle]] = [
    ("cumulative", None, None, "native-running",
     lambda aggs: cumulative(POINT_ROWS, **POINT, aggs=aggs)),
    ("cumulative", None, "arrow-frames", "arrow-frames",
     lambda aggs: cumulative(POINT_ROWS, **POINT, aggs=aggs)),
    ("rows", ws.Rows(-1, 0), None, "native-frames",
     lambda aggs: rows_window(POINT_ROWS, **POINT, window=ws.Rows(-1, 0), aggs=aggs)),
    ("rows", ws.Rows(-1, 0), "arrow-frames", "arrow-frames",
     lambda aggs: rows_window(POINT_ROWS, **POINT, window=ws.Rows(-1, 0), aggs=aggs)),
    ("range", ws.Range.past("20m"), None, "arrow-frames",
     lambda aggs: range_window(POINT_ROWS, **POINT, window=ws.Range.past("20m"),
                               aggs=aggs)),
    ("tumbling", ws.Tumbling("30m"), None, "native-buckets",
     lambda aggs: hopping(POINT_ROWS, **POINT, end=None, size=30 * MINUTE,
                          hop=30 * MINUTE, align=0, output="windows", aggs=aggs)),
    ("tumbling", ws.Tumbling("30m"), "arrow-intervals", "arrow-intervals",
     lambda aggs: hopping(POINT_ROWS, **POINT, end=None, size=30 * MINUTE,
                          hop=30 * MINUTE, align=0, output="windows", aggs=aggs)),
    ("hopping", ws.Hopping("30m", "15m"), None, "panes",
     lambda aggs: hopping(POINT_ROWS, **POINT, end=None, size=30 * MINUTE,
                          hop=15 * MINUTE, align=0, output="windows", aggs=aggs)),
    ("hopping", ws.Hopping("30m", "15m"), "arrow-intervals", "arrow-intervals",
     lambda aggs: hopping(POINT_ROWS, **POINT, end=None, size=30 * MINUTE,
                          hop=15 * MINUTE, align=0, output="windows", aggs=aggs)),
    ("snapshot", ws.Snapshot(), None, "arrow-intervals",
     lambda aggs: snapshot(POINT_ROWS, **POINT, end=None, aggs=aggs)),
    ("count-by-start-time", ws.CountByStartTime(2), None, "arrow-intervals",
     lambda aggs: count_by_start_time(POINT_ROWS, **POINT, end=None, n=2, aggs=aggs)),
    ("session", ws.Session("20m"), None, "arrow-sessions",
     lambda aggs: oracle_sessions(POINT_ROWS, **POINT, gap=20 * MINUTE, aggs=aggs)),
    ("sliding", ws.Sliding(ws.Count(2)), None, "native-frames",
     lambda aggs: spl_window(POINT_ROWS, **POINT, window=ws.Sliding(ws.Count(2)),
                             aggs=aggs)),
    ("sliding", ws.Sliding(ws.Count(2)), "arrow-spl", "arrow-spl",
     lambda aggs: spl_window(POINT_ROWS, **POINT, window=ws.Sliding(ws.Count(2)),
                             aggs=aggs)),
    ("sliding-delta", ws.Sliding(ws.Delta(INT, 4)), None, "arrow-spl",
     lambda aggs: spl_window(POINT_ROWS, **POINT, window=ws.Sliding(ws.Delta(INT, 4)),
                             aggs=aggs)),
    ("tumbling-count", ws.Tumbling(ws.Count(2)), None, "native-batches",
     lambda aggs: spl_window(POINT_ROWS, **POINT, window=ws.Tumbling(ws.Count(2)),
                             aggs=aggs)),
    ("tumbling-count", ws.Tumbling(ws.Count(2)), "arrow-spl", "arrow-spl",
     lambda aggs: spl_window(POINT_ROWS, **POINT, window=ws.Tumbling(ws.Count(2)),
                             aggs=aggs)),
    ("since", ws.Since(HOURLY), None, "native-periods",
     lambda aggs: since_calendar(POINT_ROWS, **POINT, tick=HOURLY, emit="ticks",
                                 aggs=aggs, span_before=8 * HOUR)),
    ("since", ws.Since(HOURLY), "arrow-ticks", "arrow-ticks",
     lambda aggs: since_calendar(POINT_ROWS, **POINT, tick=HOURLY, emit="ticks",
                                 aggs=aggs, span_before=8 * HOUR)),
    ("since-predicate", ws.Since(FLAG), None, "arrow-running",
     lambda aggs: since_predicate(POINT_ROWS, **POINT, flag=FLAG, emit="events",
                                  aggs=aggs)),
    ("since-predicate", ws.Since(FLAG), "arrow-ticks", "arrow-ticks",
     lambda aggs: since_predicate(POINT_ROWS, **POINT, flag=FLAG, emit="events",
                                  aggs=aggs)),
    ("trailing", ws.Trailing(2, HOURLY), None, "arrow-ticks",
     lambda aggs: trailing_calendar(POINT_ROWS, **POINT, tick=HOURLY, n=2, partial=False,
                                    aggs=aggs, span_before=8 * HOUR)),
]

INTERVAL_CASES: list[tuple[str, Any, str | None, str, Oracle]] = [
    ("tumbling", ws.Tumbling("30m"), None, "panes",
     lambda aggs: hopping(ROWS, **INTERVAL, end=END, size=30 * MINUTE, hop=30 * MINUTE,
                          align=0, output="windows", aggs=aggs)),
    ("tumbling", ws.Tumbling("30m"), "arrow-intervals", "arrow-intervals",
     lambda aggs: hopping(ROWS, **INTERVAL, end=END, size=30 * MINUTE, hop=30 * MINUTE,
                          align=0, output="windows", aggs=aggs)),
    ("hopping", ws.Hopping("30m", "15m"), None, "panes",
     lambda aggs: hopping(ROWS, **INTERVAL, end=END, size=30 * MINUTE, hop=15 * MINUTE,
                          align=0, output="windows", aggs=aggs)),
    ("hopping", ws.Hopping("30m", "15m"), "arrow-intervals", "arrow-intervals",
     lambda aggs: hopping(ROWS, **INTERVAL, end=END, size=30 * MINUTE, hop=15 * MINUTE,
                          align=0, output="windows", aggs=aggs)),
    ("snapshot", ws.Snapshot(), None, "arrow-intervals",
     lambda aggs: snapshot(ROWS, **INTERVAL, end=END, aggs=aggs)),
    ("session", ws.Session("20m"), None, "arrow-sessions",
     lambda aggs: oracle_sessions(ROWS, **INTERVAL, gap=20 * MINUTE, end=END, aggs=aggs)),
]


def check(result: DataFrame, strategy: str, expected: list[dict[str, Any]]) -> None:
    assert _run_of(result).plan.strategy == strategy
    assert result.columns[:4] == [KEY, "window_start", "window_end", "time"]
    assert_rows_match(collect(result), sort_output(expected, [KEY]))


def ids(cases: list[tuple[str, Any, str | None, str, Oracle]]) -> list[str]:
    return [f"{name}-{runs}" for name, _, _, runs, _ in cases]


@pytest.mark.parametrize(("name", "window", "force", "strategy", "oracle"), POINT_CASES,
                         ids=ids(POINT_CASES))
def test_point_events_with_parsed_names(points: ws.Events, name: str, window: Any,
                                        force: str | None, strategy: str,
                                        oracle: Oracle) -> None:
    aggs = NATIVE if strategy.startswith("native") or strategy == "panes" else KERNEL
    check(run(points, window, aggs, strategy=force), strategy, oracle(aggs))


@pytest.mark.parametrize(("name", "window", "force", "strategy", "oracle"), INTERVAL_CASES,
                         ids=ids(INTERVAL_CASES))
def test_interval_events_with_parsed_names(intervals: ws.Events, name: str, window: Any,
                                           force: str | None, strategy: str,
                                           oracle: Oracle) -> None:
    aggs = NATIVE if strategy == "panes" else KERNEL
    check(run(intervals, window, aggs, strategy=force), strategy, oracle(aggs))


def test_order_column_with_a_parsed_name(spark: SparkSession, table: DataFrame) -> None:
    # ties in time broken by a column named "o.r" (the reverse of the value order)
    df = table.drop(END).withColumn(TIME, F.timestamp_micros(F.lit(0))).withColumn(
        "o.r", -F.col(quoted(VALUE)))
    ev = ws.events(df, time=TIME, key=KEY, order="o.r")
    rows = [{**r, TIME: 0, "o.r": -r[VALUE]} for r in POINT_ROWS]
    spec = {"time": TIME, "key": [KEY], "order": "o.r", "columns": [*POINT_COLUMNS, "o.r"]}
    for force in ("native-running", "arrow-frames"):
        aggs = NATIVE if force == "native-running" else KERNEL
        check(run(ev, None, aggs, strategy=force), force,
              cumulative(rows, **spec, aggs=aggs))


def test_dynamic_anchors_with_parsed_names(spark: SparkSession, points: ws.Events) -> None:
    anchors = spark.createDataFrame([("x", 30 * MINUTE, 20 * MINUTE), ("y", 60 * MINUTE,
                                                                         15 * MINUTE)],
                                    "k string, t long, b long").select(
        F.col("k").alias(KEY), F.timestamp_micros("t").alias("at.t"),
        F.timestamp_micros(F.col("t") - F.col("b")).alias("b`egin"))
    window = ws.Dynamic(ws.events(anchors, time="at.t", key=KEY), start="b`egin", end=None)
    anchor_rows = [{KEY: "x", "at.t": 30 * MINUTE, "b`egin": 10 * MINUTE},
                   {KEY: "y", "at.t": 60 * MINUTE, "b`egin": 45 * MINUTE}]
    expected = dynamic_window(
        POINT_ROWS, anchor_rows, **POINT, anchor_time="at.t", anchor_order=None,
        anchor_columns=[KEY, "at.t", "b`egin"], start=lambda a: a["b`egin"],
        end=lambda a: a["at.t"], obsolete=None, closed="both", aggs=KERNEL)
    check(run(points, window, KERNEL), "arrow-dynamic", expected)


def test_clock_with_parsed_names(points: ws.Events) -> None:
    window = ws.Dynamic(ws.clock("1h"), start="-1h", end="0s", closed="left")
    # ticks at every hour from each key's first to its last time: x 0 .. 95 min, y 5 ..
    # 130 min; each window [tick - 1h, tick)
    anchors = [{KEY: "x", "at": 0}, {KEY: "x", "at": HOUR}, {KEY: "y", "at": HOUR},
               {KEY: "y", "at": 2 * HOUR}]
    expected = dynamic_window(
        POINT_ROWS, anchors, **POINT, anchor_time="at", anchor_order=None,
        anchor_columns=[KEY, "at"], start=lambda a: a["at"] - HOUR, end=lambda a: a["at"],
        obsolete=None, closed="left", aggs=KERNEL)
    check(run(points, window, KERNEL), "arrow-dynamic", expected)


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def test_snap_to_hops_with_parsed_names(intervals: ws.Events) -> None:
    snapped = ws.snap_to_hops(intervals, "30m", "30m")
    assert snapped.df.columns == COLUMNS
    rows = snapped.df.select(F.col(quoted(KEY)).alias("k"),
                             F.unix_micros(F.col(quoted(TIME))).alias("s"),
                             F.unix_micros(F.col(quoted(END))).alias("e")).collect()
    got = sorted(((r["k"], r["s"] // MINUTE, None if r["e"] is None else r["e"] // MINUTE)
                  for r in rows), key=lambda r: (r[0], r[1], r[2] is None, r[2] or 0))
    # [s, e) becomes [end of the window holding s, end of the window holding e - 1
    # plus one hop), windows of 30 min every 30 min (minutes)
    assert got == [("x", 30, 60), ("x", 30, 90), ("x", 30, None), ("x", 90, 120),
                   ("x", 120, 180), ("y", 30, 60), ("y", 60, 90), ("y", 150, None)]


# ---------------------------------------------------------------- duplicate names


def test_duplicate_column_names_are_refused(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, 2.0, 3.0)], "t long, v double, w double").toDF(
        "t", "v", "v")
    with pytest.raises(ws.WispInputError) as caught:
        ws.events(df, time="t")
    assert str(caught.value) == (
        "`df` must be a DataFrame whose column names are distinct, found the column 'v' "
        "2 times; rename or drop the copies (DataFrame.toDF or withColumnRenamed)")


def test_duplicate_names_differing_in_case_are_refused(spark: SparkSession) -> None:
    # Spark resolves column names case-insensitively by default: "V" and "v" collide
    df = spark.createDataFrame([(1, 2.0, 3.0)], "t long, v double, w double").toDF(
        "t", "v", "V")
    with pytest.raises(ws.WispInputError) as caught:
        ws.events(df, time="t")
    assert "found the columns 'v' and 'V', one name to Spark" in str(caught.value)
