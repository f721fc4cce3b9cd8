"""Sessions with a per-row gap (`Session(gap=<column or Column>)`) on Spark: against
Spark's own `session_window(time, gapColumn)` on random point events with positive
gaps, against the brute-force oracle (tests/oracle_calendar.py) with `max_duration` and
numeric time, the null/zero/negative gap rule (the query fails, naming the gap), and bad
input by its text."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_calendar import gap_sessions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispInputError, WispUnsupportedError
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]
AGGS: list[Aggregation] = [ws.count(), ws.sum("i"), ws.min("i"), ws.collect("i"),
                           ws.first("i")]


@st.composite
def gap_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    base = draw(st.sampled_from(BASES))
    return [{"k": draw(st.sampled_from(["a", "b", None])),
             "t": base + draw(st.integers(-40, 40)) * SECOND // 2,
             "g": draw(st.integers(1, 8)) * SECOND // 2 + draw(st.sampled_from([0, 0, 1])),
             "i": draw(st.one_of(st.none(), st.integers(-9, 9))),
             "seq": n}
            for n in range(draw(st.integers(1, 16)))]


def to_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    df = spark.createDataFrame([(r["k"], r["t"], r["g"], r["i"], r["seq"]) for r in rows],
                               "k string, t long, g long, i long, seq int")
    return df.select("k", F.timestamp_micros("t").alias("ts"), "g", "i", "seq")


def micros(result: DataFrame) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], ["k"])


@settings(max_examples=10)
@given(rows=gap_rows())
def test_gap_column_matches_spark_session_window(spark: SparkSession,
                                                 rows: list[dict[str, Any]]) -> None:
    df = to_frame(spark, rows).withColumns({
        "gap": F.make_dt_interval(secs=F.col("g") / F.lit(SECOND)),
        "cgap": F.make_interval(secs=F.col("g") / F.lit(SECOND))})
    ev = ws.events(df, time="ts", key="k", order="seq")
    ours = micros(ev.window(ws.Session("gap")).agg(ws.count(), ws.sum("i")))
    expression = micros(ev.window(ws.Session(F.col("cgap"))).agg(ws.count(), ws.sum("i")))
    spark_own = df.groupBy("k", F.session_window("ts", F.col("cgap")).alias("w")).agg(
        F.count(F.lit(1)).alias("count"), F.coalesce(F.sum("i"), F.lit(0)).alias("sum_i"))
    theirs = sort_output([{"k": r.k, "window_start": r.s, "window_end": r.e, "time": r.e,
                           "count": r["count"], "sum_i": r["sum_i"]}
                          for r in spark_own.select(
                              "k", F.unix_micros("w.start").alias("s"),
                              F.unix_micros("w.end").alias("e"), "count", "sum_i").collect()],
                         ["k"])
    assert_rows_match(ours, theirs)
    assert_rows_match(expression, theirs)


@settings(max_examples=10)
@given(rows=gap_rows(), cap=st.sampled_from([None, 2 * SECOND, 5 * SECOND + 1]))
def test_gap_column_with_max_duration_matches_oracle(spark: SparkSession,
                                                     rows: list[dict[str, Any]],
                                                     cap: int | None) -> None:
    df = to_frame(spark, rows).withColumn("gap", F.make_dt_interval(
        secs=F.col("g") / F.lit(SECOND)))
    ev = ws.events(df, time="ts", key="k", order="seq")
    window = ws.Session("gap", max_duration=None if cap is None
                        else dt.timedelta(microseconds=cap))
    expected = gap_sessions(rows, time="t", gap="g", key=["k"], order="seq",
                            columns=["k", "t", "g", "i", "seq"], max_duration=cap,
                            aggs=AGGS)
    assert_rows_match(micros(ev.window(window).agg(*AGGS)), sort_output(expected, ["k"]))


@settings(max_examples=6)
@given(rows=gap_rows(), cap=st.sampled_from([None, 3 * SECOND]))
def test_integer_time_gap_expression_matches_oracle(spark: SparkSession,
                                                    rows: list[dict[str, Any]],
                                                    cap: int | None) -> None:
    df = spark.createDataFrame([(r["k"], r["t"], r["g"], r["i"], r["seq"]) for r in rows],
                               "k string, t long, g long, i long, seq int")
    ev = ws.events(df, time="t", key="k", order="seq")
    result = ev.window(ws.Session(F.col("g") * 2, max_duration=cap)).agg(*AGGS)
    doubled = [{**r, "g": 2 * r["g"]} for r in rows]
    expected = gap_sessions(doubled, time="t", gap="g", key=["k"], order="seq",
                            columns=["k", "t", "g", "i", "seq"], max_duration=cap, aggs=AGGS)
    assert_rows_match(sort_output([r.asDict() for r in result.collect()], ["k"]),
                      sort_output(expected, ["k"]))


def test_interval_event_session_reaches_its_end_plus_its_gap(spark: SparkSession) -> None:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    df = spark.createDataFrame(
        [(t0, t0 + dt.timedelta(seconds=10), 5), (t0 + dt.timedelta(seconds=14), None, 1),
         (t0 + dt.timedelta(seconds=30), t0 + dt.timedelta(seconds=31), 2)],
        "ts timestamp, te timestamp, g int")
    ev = ws.events(df, time="ts", end="te")
    out = ev.window(ws.Session(F.make_dt_interval(secs=F.col("g")))).agg(ws.count())
    naive = dt.datetime(2024, 1, 1)
    assert [(r.window_start, r.window_end, r["count"]) for r in out.orderBy("time").collect()] \
        == [(naive, None, 3)]  # the open event keeps the session open for ever


# ------------------------------------------------------------- gaps Spark drops


@pytest.mark.parametrize("bad", [None, 0, -3])
def test_a_null_zero_or_negative_gap_fails_the_query(spark: SparkSession,
                                                     bad: int | None) -> None:
    df = spark.createDataFrame([(1, 5), (2, bad)], "t long, g int")
    result = ws.events(df, time="t").window(ws.Session("g")).agg(ws.count())
    with pytest.raises(Exception) as failure:
        result.collect()
    found = ws.wisp_error(failure.value)
    assert isinstance(found, WispInputError)
    assert str(found) == ("`gap` must be positive in every row (a per-row gap: g), found a "
                          "null, zero or negative gap at time 2")


# --------------------------------------------------------------------- bad input


def test_gap_column_must_exist(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, 5)], "t long, gap_s int")
    with pytest.raises(WispInputError, match=r"^`gap` must be a duration or a column of "
                       r"the DataFrame \(columns: t, gap_s\), found 'gaps'; did you mean "
                       r"'gap_s'\?$"):
        ws.events(df, time="t").window(ws.Session("gaps")).agg(ws.count())


def test_gap_column_type_must_fit_the_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.datetime(2024, 1, 1), 5, "x")], "ts timestamp, g int, s string")
    with pytest.raises(WispInputError, match=r"^`gap` must be an interval column or "
                       r"expression .* for timestamp time column 'ts', found \"int column "
                       r"'g'\"$"):
        ws.events(df, time="ts").window(ws.Session("g")).agg(ws.count())
    ints = spark.createDataFrame([(1, 2.5)], "t long, g double")
    with pytest.raises(WispInputError, match=r"^`gap` must be an integer column or "
                       r"expression for integer time column 't', found \"double column 'g'\"$"):
        ws.events(ints, time="t").window(ws.Session("g")).agg(ws.count())


def test_gap_column_refused_for_date_time(spark: SparkSession) -> None:
    df = spark.createDataFrame([(dt.date(2024, 1, 1), 5)], "d date, g int")
    with pytest.raises(WispInputError, match=r"^`gap` must be a duration \(a per-row gap "
                       r"needs a timestamp, integer or float time column; date time column "
                       r"'d' has none\), found 'g'$"):
        ws.events(df, time="d").window(ws.Session("g")).agg(ws.count())


def test_gap_column_refused_on_a_stream(spark: SparkSession) -> None:
    stream = spark.readStream.format("rate").load()
    ev = ws.events(stream, time="timestamp", lateness="1s")
    with pytest.raises(WispUnsupportedError, match=r"^`gap` must be a duration on a stream "
                       r"\(a per-row gap runs on batch tables only\), found 'value'$"):
        ev.window(ws.Session("value")).agg(ws.count())
