"""Revisions of Tumbling windows whose aggregation has no pane partials (`collect`), on
the rows-carrying operator, on a real stream (`on_late="update"`) restarted after every
file, against the batch result over the rows kept."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_stream_revisions_spark import BASE, at_seconds, run_files, source

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 1.0), ("a", 12, 2.0), ("b", 2, 10.0)],  # then 11 s: [0, 10) final
         [("a", 3, 4.0)],  # late, within the allowed lateness: [0, 10) again
         [("a", 50, 8.0)],  # then 49 s: [0, 10) retired
         [("b", 5, 40.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 0.0)]]  # the watermark passes every window of a and b
"""Files of (key, seconds after BASE, value), each read by its own run; Tumbling 10 s,
lateness 1 s, allowed lateness 30 s."""
NOT_KEPT = {("b", 5), ("z", 1000)}


def query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.collect("v"))


def run(spark: SparkSession, tmp: Path) -> tuple[DataFrame, dict[str, int]]:
    return run_files(spark, tmp, [at_seconds(rows) for rows in FILES], source, query,
                     time="ts", key="k", on_late="update", allowed_lateness="30s")


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), v) for rows in FILES for k, s, v in rows
            if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, v double")
    return sorted(tuple(r) for r in query(ws.events(df, time="ts", key="k")).collect()
                  if r["k"] != "z")


def test_a_late_row_revises_its_window_on_the_rows_carrying_operator(
        streaming: SparkSession, tmp_path: Path) -> None:
    written, counts = run(streaming, tmp_path)
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "count", "collect_v"]
    start = BASE.replace(tzinfo=None)
    rows = sorted((r["window_start"], r["revision"], r["final"], r["count"],
                   list(r["collect_v"])) for r in written.collect() if r["k"] == "a")
    assert rows == [(start, 0, True, 1, [1.0]), (start, 1, True, 2, [1.0, 4.0]),
                    (start + dt.timedelta(seconds=10), 0, True, 1, [2.0]),
                    (start + dt.timedelta(seconds=50), 0, True, 1, [8.0])]
    assert counts == {"late": 1, "late_applied": 1, "rows_in": 7}
    latest = sorted(tuple(r) for r in ws.latest(written).drop("revision", "final")
                    .collect())
    assert latest == batch_rows(streaming)
