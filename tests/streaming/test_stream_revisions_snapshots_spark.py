"""Revisions of Snapshot windows on real streams (`on_late="update"`): interval events
over files, restarted after every file, against the batch result over the rows kept; a
late event splits the windows it starts and ends in."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_revisions_spark import BASE, run_files

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 5, 1.0), ("a", 3, 9, 2.0), ("a", 20, 21, 4.0), ("b", 2, 4, 10.0)],
         # then the watermark is 19 s: a's [1, 3), [3, 5), [5, 9) and b's [2, 4) are final
         [("a", 2, 4, 8.0)],  # late, within the allowed lateness: splits two windows
         [("a", 60, 61, 16.0)],  # then 59 s: a's windows up to [20, 21) are retired
         [("a", 10, 12, 32.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 1001, 0.0)]]  # the watermark passes every window of a and b
"""Files of (key, start and end seconds after BASE, value), each read by its own run;
Snapshot windows, lateness 1 s, allowed lateness 30 s."""
NOT_KEPT = {("a", 10), ("z", 1000)}


def moment(seconds: float) -> float:
    return (BASE + dt.timedelta(seconds=seconds)).timestamp()


def source(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, t double, e double, v double")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"),
                      F.timestamp_micros((F.col("e") * 1e6).cast("long")).alias("te"), "v")


def query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Snapshot()).agg(ws.count(), ws.sum("v"))


def run(spark: SparkSession, tmp: Path) -> tuple[DataFrame, dict[str, int]]:
    files = [[{"k": k, "t": moment(s), "e": moment(e), "v": v} for k, s, e, v in rows]
             for rows in FILES]
    return run_files(spark, tmp, files, source, query, time="ts", end="te", key="k",
                     on_late="update", allowed_lateness="30s")


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), BASE + dt.timedelta(seconds=e), v)
            for rows in FILES for k, s, e, v in rows if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, te timestamp, v double")
    return sorted(tuple(r) for r in query(ws.events(df, time="ts", end="te", key="k"))
                  .collect())


def test_a_late_event_splits_the_windows_it_starts_and_ends_in(
        streaming: SparkSession, tmp_path: Path) -> None:
    written, counts = run(streaming, tmp_path)
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "replaces", "count", "sum_v"]
    start = BASE.replace(tzinfo=None)

    def at(seconds: float) -> dt.datetime:
        return start + dt.timedelta(seconds=seconds)

    rows = sorted((r["window_start"], r["window_end"], r["revision"], r["final"],
                   [x["window_start"] for x in r["replaces"]], r["count"])
                  for r in written.collect() if r["k"] == "a")
    assert rows == [(at(1), at(2), 1, True, [at(1)], 1),
                    (at(1), at(3), 0, True, [], 1),
                    (at(2), at(3), 1, True, [at(1)], 2),
                    (at(3), at(4), 1, True, [at(3)], 3),
                    (at(3), at(5), 0, True, [], 2),
                    (at(4), at(5), 1, True, [at(3)], 2),
                    (at(5), at(9), 0, True, [], 1),
                    (at(20), at(21), 0, True, [], 1),
                    (at(60), at(61), 0, True, [], 1)]
    assert counts == {"late": 1, "late_applied": 1, "rows_in": 8}
    latest = sorted(tuple(r) for r in ws.latest(written)
                    .drop("revision", "final", "replaces").collect())
    assert latest == [r for r in batch_rows(streaming) if r[0] != "z"]
