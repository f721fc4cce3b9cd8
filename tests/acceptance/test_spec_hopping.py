"""The hopping-window example (snapping lifetimes to window assignments): its "Adjusted
Events" and "Query" tables, expected values written by hand from the document.

Edges of the example, seconds after 2012-06-28 00:00:00 UTC: e0 starts at 0 and never
ends; e1 lives on [1, 2); e2 on [3, 10); e3 on [9, 10). Windows: size 5 s, hop 2 s,
aligned to 2012-03-15 12:00:00 UTC (windows start on even seconds). The document's end
of time (the largest representable instant) is a null end here.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pyspark.sql import SparkSession

import wisp as ws
from wisp.snap import snap_to_hops
from wisp.windowed import run

pytestmark = pytest.mark.spark

UTC = dt.UTC
DAY0 = dt.datetime(2012, 6, 28, tzinfo=UTC)
ALIGN = dt.datetime(2012, 3, 15, 12, 0, 0, tzinfo=UTC)


def at(seconds: int) -> dt.datetime:
    return DAY0 + dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def edges(spark: SparkSession) -> ws.Events:
    rows = [(at(0), "start", "e0"), (at(1), "start", "e1"), (at(2), "end", "e1"),
            (at(3), "start", "e2"), (at(9), "start", "e3"), (at(10), "end", "e2"),
            (at(10), "end", "e3")]
    df = spark.createDataFrame(rows, "t timestamp, kind string, payload string")
    return ws.from_edges(df, time="t", edge="kind", id="payload")


def utc(value: Any) -> Any:
    return None if value is None else value.astimezone(UTC)


def test_edges_become_intervals(edges: ws.Events) -> None:
    got = sorted((r.payload, utc(r.t), utc(r.end)) for r in edges.df.collect())
    assert got == [("e0", at(0), None), ("e1", at(1), at(2)), ("e2", at(3), at(10)),
                   ("e3", at(9), at(10))]


def test_adjusted_events_table(edges: ws.Events) -> None:
    adjusted = snap_to_hops(edges, "5s", "2s", align=ALIGN)
    got = sorted((utc(r.t), utc(r.end), r.payload) for r in adjusted.df.collect())
    assert got == [
        (at(1), None, "e0"),  # 12:00:01 AM .. end of time
        (at(3), at(7), "e1"),
        (at(5), at(15), "e2"),
        (at(11), at(15), "e3"),
    ]


@pytest.mark.parametrize("strategy", [None, "arrow-intervals"])
def test_query_table(edges: ws.Events, strategy: str | None) -> None:
    # None: the planner's choice, panes (the events grouped by the hop-grid cells of
    # their start and last tick); "arrow-intervals": the kernel on the events themselves
    window = ws.Hopping("5s", "2s", align=ALIGN, output="changes")
    result = run(edges, window, [ws.count()], strategy=strategy)
    got = [(utc(r.window_start), utc(r.window_end), r["count"])
           for r in result.orderBy("window_start").collect()]
    assert got == [
        (at(1), at(3), 1),
        (at(3), at(5), 2),
        (at(5), at(7), 3),
        (at(7), at(11), 2),
        (at(11), at(15), 3),
        (at(15), None, 1),  # e0 alone, until the end of time
    ]


def test_query_table_is_snapshot_over_adjusted_events(edges: ws.Events) -> None:
    adjusted = snap_to_hops(edges, "5s", "2s", align=ALIGN)
    result = adjusted.window(ws.Snapshot()).agg(ws.count())
    got = [(utc(r.window_start), utc(r.window_end), utc(r.time), r["count"])
           for r in result.orderBy("window_start").collect()]
    assert got == [
        (at(1), at(3), at(1), 1),
        (at(3), at(5), at(3), 2),
        (at(5), at(7), at(5), 3),
        (at(7), at(11), at(7), 2),
        (at(11), at(15), at(11), 3),
        (at(15), None, at(15), 1),
    ]


def test_query_time_is_the_start_of_validity(edges: ws.Events) -> None:
    window = ws.Hopping("5s", "2s", align=ALIGN, output="changes")
    result = edges.window(window).agg(ws.count())
    assert [utc(r.time) for r in result.orderBy("window_start").collect()] == [
        at(1), at(3), at(5), at(7), at(11), at(15)]


def test_windows_output_stays_bounded_with_the_open_event(edges: ws.Events) -> None:
    # Windows [w, w+5) with w even. Newest finite instant: the ends at 10 s, so windows
    # beginning before 10 s are written one by one; the windows from 10 s on hold only
    # e0 and are one row with a null end (its time is the first such window's end).
    result = edges.window(ws.Hopping("5s", "2s", align=ALIGN)).agg(ws.count(),
                                                                    ws.collect("payload"))
    assert "Strategy arrow-intervals:" in ws.explain(result)  # collect lists members
    got = [(utc(r.window_start), utc(r.window_end), utc(r.time), r["count"],
            r.collect_payload) for r in result.orderBy("window_start").collect()]
    assert got == [
        (at(-4), at(1), at(1), 1, ["e0"]),
        (at(-2), at(3), at(3), 2, ["e0", "e1"]),
        (at(0), at(5), at(5), 3, ["e0", "e1", "e2"]),
        (at(2), at(7), at(7), 2, ["e0", "e2"]),
        (at(4), at(9), at(9), 2, ["e0", "e2"]),
        (at(6), at(11), at(11), 3, ["e0", "e2", "e3"]),
        (at(8), at(13), at(13), 3, ["e0", "e2", "e3"]),
        (at(10), None, at(15), 1, ["e0"]),
    ]
    # count alone runs as panes: the same windows and counts
    counts = edges.window(ws.Hopping("5s", "2s", align=ALIGN)).agg(ws.count())
    assert "Strategy panes:" in ws.explain(counts)
    assert [(utc(r.window_start), utc(r.window_end), utc(r.time), r["count"])
            for r in counts.orderBy("window_start").collect()] == [row[:4] for row in got]


def test_explain_names_the_strategy(edges: ws.Events, capsys: pytest.CaptureFixture[str]) -> None:
    result = edges.window(ws.Hopping("5s", "2s", align=ALIGN, output="changes")).agg(
        ws.count())
    assert "Strategy panes:" in ws.explain(result)
    text = ws.explain(run(edges, ws.Hopping("5s", "2s", align=ALIGN, output="changes"),
                          [ws.count()], strategy="arrow-intervals"))
    assert "Strategy arrow-intervals:" in text
    assert "equal consecutive results merge" in text
