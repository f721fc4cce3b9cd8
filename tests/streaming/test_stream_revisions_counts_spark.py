"""Revisions of CountByStartTime windows on real streams (`on_late="update"`): a stream
over files, restarted after every file, against the batch result over the rows it
kept; a late row with a new start time shifts the windows over it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_stream_revisions_spark import BASE, at_seconds, run_files, source

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 1.0), ("a", 3, 2.0), ("a", 5, 4.0), ("a", 9, 8.0), ("b", 2, 10.0),
          ("b", 4, 20.0)],  # then the watermark is 8 s: a's [1, 3], [3, 5] are final
         [("a", 2, 16.0)],  # late, within the allowed lateness: [1, 3] becomes [1, 2], [2, 3]
         [("a", 60, 32.0)],  # then 59 s: a's windows up to [5, 9] are retired
         [("a", 4, 64.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 0.0)]]  # the watermark passes every window of a and b
"""Files of (key, seconds after BASE, value), each read by its own run;
CountByStartTime(2), lateness 1 s, allowed lateness 30 s."""
NOT_KEPT = {("a", 4), ("z", 1000)}


def query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.CountByStartTime(2)).agg(ws.count(), ws.sum("v"))


def run(spark: SparkSession, tmp: Path) -> tuple[DataFrame, dict[str, int]]:
    return run_files(spark, tmp, [at_seconds(rows) for rows in FILES], source, query,
                     time="ts", key="k", on_late="update", allowed_lateness="30s")


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), v) for rows in FILES for k, s, v in rows
            if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, v double")
    return sorted(tuple(r) for r in query(ws.events(df, time="ts", key="k")).collect())


def test_a_late_start_time_replaces_the_window_over_it(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    written, counts = run(streaming, tmp_path)
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "replaces", "count", "sum_v"]
    start = BASE.replace(tzinfo=None)

    def at(seconds: float) -> dt.datetime:
        return start + dt.timedelta(seconds=seconds)

    rows = sorted((r["window_start"], r["time"], r["revision"], r["final"],
                   [x["window_start"] for x in r["replaces"]], r["count"])
                  for r in written.collect() if r["k"] == "a")
    assert rows == [(at(1), at(2), 1, True, [at(1)], 2),
                    (at(1), at(3), 0, True, [], 2),
                    (at(2), at(3), 1, True, [at(1)], 2),
                    (at(3), at(5), 0, True, [], 2),
                    (at(5), at(9), 0, True, [], 2),
                    (at(9), at(60), 0, True, [], 2)]
    assert counts == {"late": 1, "late_applied": 1, "rows_in": 10}
    latest = sorted(tuple(r) for r in ws.latest(written)
                    .drop("revision", "final", "replaces").collect())
    assert latest == batch_rows(streaming)
