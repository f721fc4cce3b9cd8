"""Bad input on a stream: each bad argument a `WispError` naming the parameter (tested by
its text), each kind that does not run on a stream yet refused when the query is built.
Building a stream's query reads no data: no Spark job runs here."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.engine.streaming import ROCKSDB, STATE_STORE

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def stream(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> DataFrame:
    spark.conf.set(STATE_STORE, ROCKSDB)
    directory: Path = tmp_path_factory.mktemp("incoming")
    return (spark.readStream.schema("k string, t long, v double, f double, p boolean")
            .json(str(directory))
            .withColumn("ts", F.timestamp_seconds("t"))
            .withColumn("d", F.to_date("ts"))
            .withColumn("dec", F.col("f").cast("decimal(12, 3)")))


def test_a_stream_needs_a_lateness(stream: DataFrame) -> None:
    with pytest.raises(ws.WispInputError, match=re.escape(
            "`lateness` must be a positive duration for a streaming DataFrame (how late "
            "its rows may arrive, e.g. '30s'), or a time column with a watermark "
            "(withWatermark), found None")):
        ws.events(stream, time="ts", key="k")


def test_a_watermark_on_the_time_column_gives_the_lateness(stream: DataFrame) -> None:
    ev = ws.events(stream.withWatermark("ts", "3 seconds"), time="ts", key="k")
    assert ev.lateness == 3_000_000


def test_a_batch_table_takes_no_lateness(spark: SparkSession) -> None:
    df = spark.createDataFrame([(1, 1.0)], "t long, v double")
    with pytest.raises(ws.WispInputError, match="`lateness` must be None for a batch "
                       "DataFrame \\(lateness is how late a stream's rows may arrive\\), "
                       "found '5s'"):
        ws.events(df, time="t", lateness="5s")


@pytest.mark.parametrize(("time", "lateness", "expected"), [
    ("ts", "0s", "a positive duration such as '30s' or a timedelta, found '0s'"),
    ("ts", "-2s", "a positive duration such as '30s' or a timedelta, found '-2s'"),
    ("ts", 5, "a positive duration such as '30s' or a timedelta, found 5"),
    ("ts", "soon", "a positive duration such as '30s' or a timedelta, found 'soon'"),
    ("d", "12h", "whole days for date time, found '12h'"),
    ("t", "5s", "a positive integer (ticks of the integer time column), found '5s'"),
    ("t", 0, "a positive integer (ticks of the integer time column), found 0"),
    ("f", "5s", "a positive number (units of the numeric time column), found '5s'"),
    ("f", -1.5, "a positive number (units of the numeric time column), found -1.5"),
    ("f", float("inf"), "a positive number (units of the numeric time column), found inf"),
    ("dec", True, "a positive number (units of the numeric time column), found True"),
])
def test_bad_lateness_names_the_parameter(stream: DataFrame, time: str, lateness: Any,
                                          expected: str) -> None:
    with pytest.raises(ws.WispInputError) as caught:
        ws.events(stream, time=time, key="k", lateness=lateness)
    assert str(caught.value) == f"`lateness` must be {expected}"


def test_numeric_lateness_is_in_whole_ticks_rounded_up(stream: DataFrame) -> None:
    """Float time: one tick is one unit; decimal(12, 3) time: one tick is 0.001."""
    assert ws.events(stream, time="f", lateness=2.5).lateness == 3
    assert ws.events(stream, time="f", lateness=4).lateness == 4
    assert ws.events(stream, time="dec", lateness=1.5).lateness == 1500
    assert ws.events(stream, time="dec", lateness=0.0001).lateness == 1


@pytest.mark.parametrize(("df", "on_late", "expected"), [
    ("stream", "keep", "'count', 'emit' or 'update', found 'keep'"),
    ("batch", "emit", "'count' for a batch DataFrame (late rows are a stream's), "
     "found 'emit'"),
])
def test_bad_on_late_names_the_parameter(stream: DataFrame, spark: SparkSession, df: str,
                                         on_late: Any, expected: str) -> None:
    table = stream if df == "stream" else spark.createDataFrame([(1, 1.0)],
                                                                "t long, v double")
    lateness = 5 if df == "stream" else None
    with pytest.raises(ws.WispInputError) as caught:
        ws.events(table, time="t", lateness=lateness, on_late=on_late)
    assert str(caught.value) == f"`on_late` must be {expected}"


def test_lateness_takes_timedeltas_and_days(stream: DataFrame) -> None:
    assert ws.events(stream, time="ts", lateness=dt.timedelta(seconds=2)).lateness == 2_000_000
    assert ws.events(stream, time="d", lateness="1d").lateness == 86_400_000_000
    assert ws.events(stream, time="t", lateness=7).lateness == 7


@pytest.mark.parametrize(("window", "name"), [
    (ws.Hopping("4s", "2s", output="changes"), "Hopping(output='changes') (its rows can "
     "wait for ever for the result to change)"),
])
def test_kinds_that_do_not_run_on_a_stream_yet_are_refused(
        stream: DataFrame, window: ws.Window, name: str) -> None:
    ev = ws.events(stream, time="ts", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(window).agg(ws.count())
    # kinds a test defines register too (tests/pairs_kind.py), when imported first
    text = str(caught.value).replace(", Pairs, ", ", ")
    assert text.startswith(
        "`window` must be one of CountByStartTime, cumulative (ev.agg), Dynamic (anchors "
        "from a stream, or a clock), feature sets (Events.features; label rows from a "
        "second stream), Range, Rows, Session, Since, Sliding, Snapshot, Trailing, "
        "Tumbling and Hopping by duration (output='windows'), Tumbling by policy on a "
        f"stream (the other kinds do not run on a stream yet), found {name}"
    ), text


@pytest.mark.parametrize(("window", "refusal"), [
    (ws.Sliding(ws.Count(2)), "`window` must be Hopping, Tumbling by duration, Snapshot, "
     "CountByStartTime or Session for interval events"),
    (ws.Rows(-1, 0), "`window` must be Hopping, Tumbling by duration, Snapshot, "
     "CountByStartTime or Session for interval events"),
    (ws.Since(ws.daily()), "`window` must be Hopping, Tumbling by duration, Snapshot, "
     "CountByStartTime or Session for interval events (bound with `end`: column 'e'), "
     "found Since, which reads point events"),
])
def test_other_windows_over_interval_events_are_refused(
        stream: DataFrame, window: ws.Window, refusal: str) -> None:
    ev = ws.events(stream.withColumn("e", F.col("ts") + F.expr("interval 1 second")),
                   time="ts", end="e", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(window).agg(ws.count())
    assert str(caught.value).startswith(refusal), str(caught.value)


@pytest.mark.parametrize(("window", "name"), [
    (ws.Sliding(ws.Count(3), ws.Time("2s")), "Sliding"),
    (ws.Tumbling(ws.Punctuation("p")), "Tumbling"),
])
def test_an_arrival_order_is_refused_for_policy_windows_on_a_stream(
        stream: DataFrame, window: ws.Window, name: str) -> None:
    ev = ws.events(stream, time="ts", key="k", order="t", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(window).agg(ws.count())
    assert str(caught.value) == (
        f"`order` must be None for {name} on a stream (tuples enter in time order once "
        "the watermark passes them; an arrival order other than time has no watermark to "
        "wait for), found 't'")


@pytest.mark.parametrize("window", [None, ws.Since("p"), ws.Trailing(2, "p")])
def test_collect_over_a_window_that_never_closes_is_refused(
        stream: DataFrame, window: ws.Window | None) -> None:
    ev = ws.events(stream, time="ts", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError, match=(
            r"`aggregations` must not read every value of a window that never closes "
            r"\(.*\) on a stream, found collect_v: its state would keep every row of a "
            r"key for ever; use a bounded window")):
        if window is None:
            ev.agg(ws.collect("v"))
        else:
            ev.window(window).agg(ws.collect("v"))


def test_only_the_stream_strategy_runs_a_stream(stream: DataFrame) -> None:
    from wisp.windowed import run

    ev = ws.events(stream, time="ts", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError,
                       match="`strategy` must be 'stream' or None for a query over a "
                       "stream, found 'arrow-frames'"):
        run(ev, ws.Rows(-1, 0), [ws.count()], strategy="arrow-frames")


def test_a_column_of_another_type_is_refused_on_a_stream(stream: DataFrame) -> None:
    ev = ws.events(stream.withColumn("arr", F.array("v")), time="ts", key="k",
                   lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(ws.Rows(-1, 0)).agg(ws.collect("arr"))
    assert str(caught.value) == (
        "`arr` must be a number, boolean, string, binary, decimal or time column for a "
        "query over a stream to read it (other types do not cross into its operator yet), "
        "found array<double>")


def test_anchors_and_events_must_both_be_streams_or_both_batch_tables(
        spark: SparkSession, stream: DataFrame) -> None:
    batch = spark.createDataFrame([("a", dt.datetime(2024, 1, 1))], "k string, ts timestamp")
    streamed = ws.events(stream, time="ts", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        streamed.window(ws.Dynamic(ws.events(batch, time="ts", key="k"))).agg(ws.count())
    assert str(caught.value) == (
        "`anchors` must be a streaming event table (wisp.events over a streaming "
        "DataFrame, with its lateness) when the source is a stream, found a batch table: "
        "a batch table's rows cannot join the stream's watermark")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ws.events(batch, time="ts", key="k").window(ws.Dynamic(streamed)).agg(ws.count())
    assert str(caught.value) == (
        "`anchors` must be a batch event table when the source is a batch table, found a "
        "streaming event table (lateness 5000000 ticks): make the source a stream too, "
        "with its lateness")


def test_dynamic_windows_on_a_stream_count_their_late_rows(stream: DataFrame) -> None:
    ev = ws.events(stream, time="ts", key="k", lateness="5s", on_late="emit")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(ws.Dynamic(ws.clock("1s"))).agg(ws.count())
    assert str(caught.value) == (
        "`on_late` must be 'count' for Dynamic windows on a stream, found 'emit': their "
        "late anchors and events are counted (wisp.stream_report), not output as rows")


def test_dynamic_windows_on_a_stream_explain_their_state(stream: DataFrame) -> None:
    ev = ws.events(stream, time="ts", key="k", lateness="5s")
    anchors = ws.events(stream.withColumnRenamed("ts", "at"), time="at", key="k",
                        lateness="2s")
    text = ws.explain(ev.window(ws.Dynamic(anchors, start="-3s")).agg(ws.count()))
    assert "arrow-dynamic" in text and "State per key: the anchors whose windows" in text
    assert "the smaller of the anchors' and the events' watermarks" in text
    text = ws.explain(ev.window(ws.Dynamic(ws.clock("1s"), start="-1s")).agg(ws.count()))
    assert "up to the watermark, for ever (a stream has no last event)" in text


def test_edges_on_a_stream_need_a_lateness_and_an_interval_kind(stream: DataFrame) -> None:
    """from_edges over a stream: the lateness is required as for `events`; only the
    interval kinds run (the others do not read the end that an end edge sets later)."""
    edges = stream.withColumn("edge", F.lit("start")).withColumn("id", F.col("k"))
    with pytest.raises(ws.WispInputError, match="`lateness` must be"):
        ws.from_edges(edges, "ts", edge="edge", id="id", key="k")
    ev = ws.from_edges(edges, "ts", edge="edge", id="id", key="k", lateness="5s")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(ws.Range.past("10s")).agg(ws.count())
    assert str(caught.value) == (
        "`window` must be one of CountByStartTime, Snapshot, Tumbling and Hopping by "
        "duration (output='windows') over wisp.from_edges on a stream, found Range: the "
        "other kinds do not read an interval's end, which the stream knows only once its "
        "end edge passes the watermark")
    with pytest.raises(ws.WispUnsupportedError, match=r"found Hopping\(output='changes'\)"):
        ev.window(ws.Hopping("10s", "5s", output="changes")).agg(ws.count())
    text = ws.explain(ev.window(ws.Tumbling("10s")).agg(ws.count()))
    assert "Start and end edges ('edge') are paired per id ('id') in time order" in text
    assert "and per id whose last edge was a start, that start's time" in text


def test_a_streamed_file_without_the_time_column_is_named(streaming: SparkSession,
                                                          tmp_path: Path) -> None:
    """A JSON file whose rows lack the time field reads it as null: the error names the
    file and the column, not a bare null time."""
    source = tmp_path / "in"
    source.mkdir()
    (source / "good.json").write_text('{"k": "a", "t": 1, "v": 1.0}\n')
    (source / "no-time.json").write_text('{"k": "a", "v": 2.0}\n')
    raw = (streaming.readStream.schema("k string, t long, v double")
           .option("maxFilesPerTrigger", 1).json(str(source)))
    ev = ws.events(raw.withColumn("ts", F.timestamp_seconds("t")), time="ts", key="k",
                   lateness="5s")
    query = (ev.window(ws.Rows(-1, 0)).agg(ws.sum("v")).writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(availableNow=True).start())
    with pytest.raises(Exception) as caught:
        query.awaitTermination()
    found = ws.wisp_error(caught.value)
    assert found is not None
    assert str(found) == (
        "`time` column 'ts' must not be null, found a null time in file "
        f"{(source / 'no-time.json').as_uri()} (a file without the column reads it as "
        "null); pass on_null_time='drop' to drop such rows on purpose (they are counted "
        "by wisp.report)")
