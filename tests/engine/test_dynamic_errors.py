"""Dynamic windows: the obsolete rules (failing queries naming the anchor's time) and bad
input (each bad argument a WispError naming the parameter)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispError, WispInputError, WispUnsupportedError
from wisp.windowed import run

pytestmark = pytest.mark.spark
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@contextmanager
def fails(*fragments: str, error: type[Exception] = WispInputError) -> Iterator[None]:
    with pytest.raises(error) as caught:
        yield
    text = str(caught.value)
    for fragment in fragments:
        assert fragment in text, (fragment, text)


@pytest.fixture(scope="module")
def source(spark: SparkSession) -> ws.Events:
    rows = [("a", T0 + dt.timedelta(seconds=s), float(s)) for s in range(6)]
    return ws.events(spark.createDataFrame(rows, "k string, ts timestamp, v double"),
                     time="ts", key="k")


@pytest.fixture(scope="module")
def anchor_df(spark: SparkSession) -> DataFrame:
    """Anchors at 1, 2 and 3 s with absolute bounds lo/hi and an obsolete time ob."""
    def at(s: float | None) -> dt.datetime | None:
        return None if s is None else T0 + dt.timedelta(seconds=s)

    rows = [("a", at(1), at(0), at(1), at(0.5), "x"),
            ("a", at(2), at(1), at(2), at(1.5), "y"),
            ("a", at(3), at(1), at(3), at(1.0), "z")]
    return spark.createDataFrame(
        rows, "k string, at timestamp, lo timestamp, hi timestamp, ob timestamp, s string")


# ---------------------------------------------------------------- obsolete rules


def test_obsolete_must_not_decrease(source: ws.Events, anchor_df: DataFrame) -> None:
    anchors = ws.events(anchor_df, time="at", key="k")
    result = source.window(ws.Dynamic(anchors, start="-1s", end="0s", obsolete="ob")) \
        .agg(ws.count())
    with pytest.raises(Exception) as caught:
        result.collect()
    assert ("WispError: `obsolete` must not decrease from one anchor to the next, found "
            "obsolete 2024-01-01 00:00:01.000000 UTC at the anchor at time "
            "2024-01-01 00:00:03.000000 UTC (key {'k': 'a'}) after obsolete "
            "2024-01-01 00:00:01.500000 UTC of the anchor before it") in str(caught.value)


def test_no_window_may_start_before_an_earlier_obsolete(source: ws.Events,
                                                        anchor_df: DataFrame) -> None:
    anchors = ws.events(anchor_df.filter(F.col("s") != "z"), time="at", key="k")
    # obsolete 0.5 s then 1.5 s; the anchor at 2 s starts at 1 s, after the earlier 0.5 s
    # (its own obsolete, 1.5 s, only binds later anchors)
    ok = source.window(ws.Dynamic(anchors, start="lo", end="hi", obsolete="ob"))
    assert [r["count"] for r in ok.agg(ws.count()).orderBy("time").collect()] == [2, 2]
    # obsolete + 600 ms: the anchor at 1 s promises 1.1 s, the next one starts at 1 s
    late = source.window(ws.Dynamic(anchors, start="lo", end="hi",
                                    obsolete=F.col("ob") + F.expr("INTERVAL 600 millisecond")))
    with pytest.raises(Exception) as caught:
        late.agg(ws.count()).collect()
    assert ("WispError: `start` must not be before an earlier anchor's obsolete "
            "2024-01-01 00:00:01.100000 UTC, found start 2024-01-01 00:00:01.000000 UTC at "
            "the anchor at time 2024-01-01 00:00:02.000000 UTC") in str(caught.value)


def test_a_null_start_reaches_the_start_of_time(spark: SparkSession,
                                                source: ws.Events) -> None:
    rows = [("a", T0 + dt.timedelta(seconds=2), None, T0 + dt.timedelta(seconds=1)),
            ("a", T0 + dt.timedelta(seconds=4), None, None)]
    df = spark.createDataFrame(rows, "k string, at timestamp, lo timestamp, ob timestamp")
    anchors = ws.events(df, time="at", key="k")
    unbounded = source.window(ws.Dynamic(anchors, start="lo", end="0s")).agg(ws.count())
    assert [(r["window_start"], r["count"]) for r in unbounded.orderBy("time").collect()] \
        == [(None, 3), (None, 5)]
    broken = source.window(ws.Dynamic(anchors, start="lo", end="0s", obsolete="ob"))
    with pytest.raises(Exception, match=re.escape(
            "found obsolete the start of time at the anchor at time "
            "2024-01-01 00:00:04.000000 UTC")):
        broken.agg(ws.count()).collect()


def test_clock_obsolete_rule_is_checked_eagerly() -> None:
    with fails("`obsolete` must be at most `start` + `every` for clock anchors", "'1s'"):
        ws.Dynamic(ws.clock("500ms"), start="-1s", end="0s", obsolete="1s")
    assert ws.Dynamic(ws.clock("1s"), start="-1s", end="0s", obsolete="0s").obsolete == "0s"


def test_null_anchor_time_fails_the_query(spark: SparkSession, source: ws.Events) -> None:
    df = spark.createDataFrame([("a", None), ("a", T0)], "k string, at timestamp")
    result = source.window(ws.Dynamic(ws.events(df, time="at", key="k"), start="-1s")) \
        .agg(ws.count())
    with pytest.raises(Exception, match="anchor `time` column 'at' must not be null"):
        result.collect()
    dropped = ws.events(df, time="at", key="k", on_null_time="drop")
    assert source.window(ws.Dynamic(dropped, start="-1s")).agg(ws.count()).count() == 1


# --------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("param", "value"), [
    ("start", True), ("end", ""), ("obsolete", [1]), ("start", object()),
])
def test_bad_bounds_name_the_parameter(param: str, value: Any) -> None:
    with fails(f"`{param}` must be", "a column name of the anchor table"):
        ws.Dynamic(("anchors",), **{param: value})


def test_offsets_must_be_finite() -> None:
    with fails("`end` must be a finite duration, found nan"):
        ws.Dynamic(("anchors",), end=float("nan"))


def test_offsets_must_share_a_unit() -> None:
    with fails("`end` must be the same kind of duration as `start`", "found 5"):
        ws.Dynamic(("anchors",), start="-1s", end=5)


def test_clock_anchors_have_no_columns() -> None:
    with fails("`start` must be a duration (an offset from the clock's tick) or None",
               "'lo'"):
        ws.Dynamic(ws.clock("1s"), start="lo")


def test_anchors_must_be_events(source: ws.Events, anchor_df: DataFrame) -> None:
    with fails("`anchors` must be an event table (wisp.events(...)) or wisp.clock(...)",
               "found 'DataFrame'"):
        source.window(ws.Dynamic(anchor_df)).agg(ws.count())


def test_anchor_keys_must_match(source: ws.Events, anchor_df: DataFrame) -> None:
    with fails("`anchors` must be an event table with the source's key columns ['k']",
               "found []"):
        source.window(ws.Dynamic(ws.events(anchor_df, time="at"))).agg(ws.count())
    other = anchor_df.withColumn("k", F.lit(1))
    with fails("`anchors` must be key column 'k' of type string", "found 'int'"):
        source.window(ws.Dynamic(ws.events(other, time="at", key="k"))).agg(ws.count())


def test_anchor_time_type_must_match(source: ws.Events, anchor_df: DataFrame) -> None:
    numeric = anchor_df.withColumn("n", F.lit(1))
    with fails("`anchors` must be an event table whose `time` has the type of the "
               "source's (timestamp)", "found \"int column 'n'\""):
        source.window(ws.Dynamic(ws.events(numeric, time="n", key="k"))).agg(ws.count())


def test_bound_columns_must_exist_and_be_times(source: ws.Events,
                                               anchor_df: DataFrame) -> None:
    anchors = ws.events(anchor_df, time="at", key="k")
    with fails("`start` must be a duration or a column of the anchor table", "found 'low'"):
        source.window(ws.Dynamic(anchors, start="low")).agg(ws.count())
    with fails("`end` must be a time of the same type as the source's `time` (timestamp)",
               "found 'string s'"):
        source.window(ws.Dynamic(anchors, end="s")).agg(ws.count())
    with fails("`obsolete` must be a Column over the anchor table's columns"):
        source.window(ws.Dynamic(anchors, obsolete=F.col("nope"))).agg(ws.count())


def test_durations_must_fit_the_time_column(spark: SparkSession) -> None:
    numeric = ws.events(spark.createDataFrame([(1, 2.0)], "t long, v double"), time="t")
    with fails("`start` must be a number (durations are plain numbers"):
        numeric.window(ws.Dynamic(ws.clock(2), start="-1s")).agg(ws.count())
    with fails("`every` must be a number (durations are plain numbers"):
        numeric.window(ws.Dynamic(ws.clock("1s"))).agg(ws.count())
    with fails("`align` must be a number for integer time column 't'"):
        numeric.window(ws.Dynamic(ws.clock(2, align=T0))).agg(ws.count())


def test_clock_instants_must_fit_the_time_column(source: ws.Events) -> None:
    with fails("`start` must be a datetime or a date for timestamp time column 'ts'",
               "found 5"):
        source.window(ws.Dynamic(ws.clock("1s", start=5))).agg(ws.count())
    with fails("`align` must be a datetime, a date, a finite number or None"):
        ws.clock("1s", align="midnight")


def test_interval_sources_and_strategies(spark: SparkSession, source: ws.Events) -> None:
    df = spark.createDataFrame([(1, 2)], "t long, e long")
    interval = ws.events(df, time="t", end="e")
    with pytest.raises(WispUnsupportedError) as caught:
        interval.window(ws.Dynamic(ws.clock(1))).agg(ws.count())
    assert str(caught.value) == (
        "`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
        "Session for interval events (bound with `end`: column 'e'), found Dynamic, which "
        "reads point events; bind the events without `end` to window their start times")
    anchors = ws.events(df, time="t", end="e")
    with pytest.raises(WispUnsupportedError) as caught:
        source.window(ws.Dynamic(anchors)).agg(ws.count())
    assert str(caught.value) == (
        "`anchors` must be point events (wisp.events without `end`), with the window "
        "bounds as columns, found interval events (`end` column 'e')")
    with fails("`strategy` must be 'arrow-dynamic' for Dynamic windows or None"):
        run(source, ws.Dynamic(ws.clock("1s")), [ws.count()], strategy="arrow-frames")
    with fails("time_weighted_mean", "found Dynamic", error=WispUnsupportedError):
        source.window(ws.Dynamic(ws.clock("1s"))).agg(ws.time_weighted_mean("v"))
    assert issubclass(WispInputError, WispError)


# ------------------------------------------------------------ output explosions


def test_a_clock_from_the_epoch_is_refused_before_it_ticks(source: ws.Events) -> None:
    """The clock of the docs started at the epoch over 2024 data: ~3.4 billion ticks for
    the key, refused in the worker before one is made, with the count and the option."""
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    last = T0 + dt.timedelta(seconds=5)
    expected = (last - epoch) // dt.timedelta(milliseconds=500) + 1
    result = source.window(ws.Dynamic(ws.clock("500ms", start=epoch), start="-500ms",
                                      end="500ms")).agg(ws.count())
    with pytest.raises(Exception, match=re.escape(
            f"`every` must make at most max_ticks=10,000,000 clock ticks per key, found "
            f"about {expected:,} for one key (key {{'k': 'a'}}); pass clock(..., "
            "max_ticks=...) to allow more")):
        result.collect()


def test_a_bounded_clock_is_refused_when_the_query_is_built(source: ws.Events) -> None:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    expected = (T0 - epoch) // dt.timedelta(seconds=1) + 1
    with fails(f"`every` must make at most max_ticks=1,000 clock ticks per key, found "
               f"about {expected:,} for one key between the clock's start", "pass clock("):
        source.window(ws.Dynamic(ws.clock("1s", start=epoch, end=T0, max_ticks=1000))) \
            .agg(ws.count())


def test_max_ticks_raises_the_limit(source: ws.Events) -> None:
    """Ticks every 100 ms over the key's 5 s: 51 ticks, refused under 50, made under 51."""
    def ticks(limit: int) -> DataFrame:
        return source.window(ws.Dynamic(ws.clock("100ms", max_ticks=limit), end="0s")) \
            .agg(ws.count())

    with pytest.raises(Exception, match="found about 51 for one key"):
        ticks(50).collect()
    assert ticks(51).count() == 51


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "many"])
def test_max_ticks_must_be_a_positive_integer(value: Any) -> None:
    with fails("`max_ticks` must be an integer >= 1", f"found {value!r}"):
        ws.clock("1s", max_ticks=value)
    with fails("`max_ticks` must be an integer >= 1", f"found {value!r}"):
        ws.Time("1s", max_ticks=value)
