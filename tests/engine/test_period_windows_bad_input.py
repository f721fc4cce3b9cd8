"""Bad arguments of `Since`, `Trailing` and calendar ticks: each is a `wisp.WispError`
naming the parameter, what was expected and what was found. No Spark job runs."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispError, WispInputError, WispUnsupportedError

pytestmark = pytest.mark.spark
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def df(spark: SparkSession) -> DataFrame:
    rows = [(T0, dt.datetime(2024, 1, 1), dt.date(2024, 1, 1), 1, "a", 1.0, True, 7)]
    return spark.createDataFrame(
        rows, "ts timestamp, ntz timestamp_ntz, d date, n long, k string, v double, "
              "reset boolean, flag int")


@pytest.fixture(scope="module")
def ev(df: DataFrame) -> ws.Events:
    return ws.events(df, time="ts", key="k")


@contextmanager
def bad(param: str, *fragments: str) -> Iterator[None]:
    with pytest.raises(WispInputError) as info:
        yield
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(f"`{param}` must be "), message
    for fragment in fragments:
        assert fragment in message, message


def test_unknown_cron_field() -> None:
    with bad("expr", "a day of week field of numbers in 0..7", "found 'MON'"):
        ws.cron("0 0 * * MON")
    with bad("expr", "a cron expression of five fields", "found '0 0 * *'"):
        ws.cron("0 0 * *")


def test_unknown_time_zone() -> None:
    with bad("tz", "an IANA time zone name", "found 'Europe/Berln'", "Europe/Berlin"):
        ws.daily(tz="Europe/Berln")


@pytest.mark.parametrize("n", [0, -1])
def test_n_below_one(n: int) -> None:
    with bad("n", "an integer >= 1", f"found {n}"):
        ws.Trailing(n, ws.daily())


@pytest.mark.parametrize("tick", [5, 1.5, dt.timedelta(days=1), ["reset"]])
def test_tick_of_a_wrong_type(ev: ws.Events, tick: object) -> None:
    with bad("tick", "a boolean column (a column name or a PySpark Column expression) or "
             "a calendar tick such as wisp.daily()", f"found {tick!r}"):
        ev.window(ws.Since(tick)).agg(ws.sum("v"))
    with bad("tick", "or a calendar tick", f"found {tick!r}"):
        ev.window(ws.Trailing(2, tick)).agg(ws.sum("v"))


def test_non_boolean_predicate_column(ev: ws.Events) -> None:
    with bad("tick", "a boolean column or expression", "found \"int column 'flag'\""):
        ev.window(ws.Since("flag")).agg(ws.sum("v"))
    with bad("tick", "a boolean column or expression", "double expression"):
        ev.window(ws.Trailing(2, F.col("v") * 2)).agg(ws.sum("v"))


def test_unknown_predicate_column(ev: ws.Events) -> None:
    with bad("tick", "a boolean column of the DataFrame", "found 'rest'", "reset"):
        ev.window(ws.Since("rest")).agg(ws.sum("v"))
    with bad("tick", "a boolean Column expression over the DataFrame's columns"):
        ev.window(ws.Since(F.col("nowhere") > 1)).agg(ws.sum("v"))


def test_calendar_tick_on_numeric_time(df: DataFrame) -> None:
    numeric = ws.events(df, time="n")
    with bad("tick", "calendar ticks need a timestamp or date time column",
             "integer time column 'n'"):
        numeric.window(ws.Since(ws.daily())).agg(ws.count())


def test_time_zone_on_wall_clock_times(df: DataFrame) -> None:
    with bad("tz", "'UTC' for timestamp_ntz time column 'ntz'", "found 'Europe/Berlin'"):
        ws.events(df, time="ntz").window(ws.Since(ws.daily("Europe/Berlin"))).agg(ws.count())


def test_hourly_tick_on_dates(df: DataFrame) -> None:
    with bad("tick", "a daily, weekly, monthly or yearly tick for date time column 'd'"):
        ws.events(df, time="d").window(ws.Trailing(2, ws.hourly())).agg(ws.count())


def test_cron_that_never_matches(ev: ws.Events) -> None:
    with bad("expr", "a cron expression that matches some day", "found '0 0 30 2 *'"):
        ev.window(ws.Since(ws.cron("0 0 30 2 *"))).agg(ws.count())


def test_bad_emit_and_partial() -> None:
    with bad("emit", "'ticks', 'events' or 'both'", "found 'tick'"):
        ws.Since(ws.daily(), emit="tick")  # type: ignore[arg-type]
    with bad("partial", "True or False", "found 1"):
        ws.Trailing(2, ws.daily(), partial=1)  # type: ignore[arg-type]


def test_unknown_strategy(ev: ws.Events) -> None:
    from wisp.windowed import run

    with bad("strategy", "one of arrow-ticks, native-periods for Since windows or None",
             "found 'native-running'"):
        run(ev, ws.Since("reset"), [ws.sum("v")], strategy="native-running")
    with bad("strategy", "one of arrow-ticks for Trailing windows or None",
             "found 'native-periods'"):
        run(ev, ws.Trailing(2, ws.daily()), [ws.sum("v")], strategy="native-periods")


def test_native_periods_need_fixed_utc_ticks_and_order_free_aggregates(
        ev: ws.Events, df: DataFrame) -> None:
    from wisp.windowed import run

    cases = [
        (ws.Since("reset"), [ws.sum("v")],
         "(only calendar ticks emitted at the ticks are groups of events)"),
        (ws.Since(ws.daily(), emit="both"), [ws.sum("v")],
         "(only calendar ticks emitted at the ticks are groups of events)"),
        (ws.Since(ws.daily("Europe/Berlin")), [ws.sum("v")],
         "(only hourly, daily and weekly ticks in UTC have periods of one length)"),
        (ws.Since(ws.monthly()), [ws.sum("v")],
         "(only hourly, daily and weekly ticks in UTC have periods of one length)"),
        (ws.Since(ws.daily()), [ws.first("v")],
         "(first_v has no order-free Spark aggregate giving wisp's result)"),
    ]
    for window, aggs, why in cases:
        with bad("strategy", f"'arrow-ticks' or None here {why}", "found 'native-periods'"):
            run(ev, window, aggs, strategy="native-periods")
    # timestamp_ntz time runs natively in every session time zone
    ntz = ws.events(df, time="ntz")
    df.sparkSession.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        assert "Strategy native-periods:" in ws.explain(ntz.window(ws.Since(ws.daily()))
                                                        .agg(ws.count()))
    finally:
        df.sparkSession.conf.set("spark.sql.session.timeZone", "UTC")
    # chosen without asking where it can run
    assert "Strategy native-periods:" in ws.explain(ev.window(ws.Since(ws.hourly())).agg(
        ws.sum("v"), ws.max("k")))
    assert "Strategy arrow-ticks:" in ws.explain(ev.window(ws.Since(ws.hourly())).agg(
        ws.last("v")))


def test_interval_events_are_refused(df: DataFrame) -> None:
    intervals = ws.events(df.withColumn("e", F.col("ts")), time="ts", end="e")
    with pytest.raises(WispUnsupportedError) as caught:
        intervals.window(ws.Since(ws.daily())).agg(ws.count())
    assert str(caught.value) == (
        "`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
        "Session for interval events (bound with `end`: column 'e'), found Since, which "
        "reads point events; bind the events without `end` to window their start times")
    assert issubclass(WispUnsupportedError, WispError)


def test_hidden_columns_never_replace_input_columns() -> None:
    from wisp.engine.periods import unused

    assert unused("__wisp_tick__", ["v", "k"]) == "__wisp_tick__"
    assert unused("__wisp_tick__", ["__wisp_tick__", "__wisp_tick__1"]) == "__wisp_tick__2"
