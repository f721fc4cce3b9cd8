"""Revisions of Tumbling windows over interval events on real streams
(`on_late="update"`, `emit="changes"`): the rows-carrying operator, restarted after
every file, against the batch result over the rows kept; a late event revises each
window it overlaps."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_stream_revisions_snapshots_spark import moment, source
from test_stream_revisions_spark import BASE, run_files

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 15, 1.0), ("a", 22, 23, 2.0), ("b", 2, 4, 10.0)],
         # then the watermark is 21 s: a's [0, 10), [10, 20) and b's [0, 10) are final
         [("a", 8, 12, 4.0)],  # late, within the allowed lateness: [0, 10), [10, 20) again
         [("a", 60, 61, 8.0)],  # then 59 s: a's [0, 10), [10, 20) and b's retired
         [("b", 5, 6, 40.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 1001, 0.0)]]  # the watermark passes every window of a and b
"""Files of (key, start and end seconds after BASE, value), each read by its own run;
Tumbling 10 s, lateness 1 s, allowed lateness 30 s."""
NOT_KEPT = {("b", 5), ("z", 1000)}


def query(emit: str) -> Any:
    return lambda ev: ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"),
                                                         emit=emit)


def run(spark: SparkSession, tmp: Path, emit: str) -> tuple[DataFrame, dict[str, int]]:
    files = [[{"k": k, "t": moment(s), "e": moment(e), "v": v} for k, s, e, v in rows]
             for rows in FILES]
    return run_files(spark, tmp, files, source, query(emit), time="ts", end="te",
                     key="k", on_late="update", allowed_lateness="30s")


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), BASE + dt.timedelta(seconds=e), v)
            for rows in FILES for k, s, e, v in rows if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, te timestamp, v double")
    return sorted(tuple(r) for r in query("final")(ws.events(df, time="ts", end="te",
                                                              key="k")).collect())


def at(seconds: float) -> dt.datetime:
    return BASE.replace(tzinfo=None) + dt.timedelta(seconds=seconds)


def test_a_late_event_revises_each_window_it_overlaps(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    written, counts = run(streaming, tmp_path, "final")
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "count", "sum_v"]
    rows = sorted((r["window_start"], r["revision"], r["final"], r["count"], r["sum_v"])
                  for r in written.collect() if r["k"] == "a")
    assert rows == [(at(0), 0, True, 1, 1.0), (at(0), 1, True, 2, 5.0),
                    (at(10), 0, True, 1, 1.0), (at(10), 1, True, 2, 5.0),
                    (at(20), 0, True, 1, 2.0), (at(60), 0, True, 1, 8.0)]
    assert counts == {"late": 1, "late_applied": 1, "rows_in": 7}
    latest = ws.latest(written).drop("revision", "final")
    assert sorted(tuple(r) for r in latest.collect()) == batch_rows(streaming)


def test_early_rows_of_open_windows_then_final_rows(streaming: SparkSession,
                                                    tmp_path: Path) -> None:
    """emit="changes": a window's rows are revisions 0, 1, ..., those before it is
    final with `final` false; the latest of the final ones equal the batch's."""
    written, counts = run(streaming, tmp_path, "changes")
    by_window: dict[tuple[Any, ...], list[Any]] = {}
    for r in sorted(written.collect(), key=lambda r: r["revision"]):
        by_window.setdefault((r["k"], r["window_start"]), []).append(r)
    for rows in by_window.values():
        assert [r["revision"] for r in rows] == list(range(len(rows)))
        finals = [r["final"] for r in rows]
        assert finals == sorted(finals)
    assert [r["final"] for r in by_window[("z", at(1000))]] == [False]
    assert counts["late"] == 1 and counts["late_applied"] == 1
    latest = ws.latest(written).where("final").drop("revision", "final")
    assert sorted(tuple(r) for r in latest.collect()) == batch_rows(streaming)
