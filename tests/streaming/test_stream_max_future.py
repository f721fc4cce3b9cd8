"""`max_future`: one row from a clock a year ahead would move a stream's watermark a year
ahead and make every later row late; with `max_future` it is rejected and counted
(`stream_report`'s `rejected_future`), and the on-time rows after it are not late. On a
real stream over files, the processing time being the machine's clock."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispInputError

pytestmark = pytest.mark.spark


def write(directory: Path, name: str, rows: list[tuple[str, dt.datetime, float]]) -> None:
    with (directory / name).open("w") as out:
        for key, at, value in rows:
            out.write(json.dumps({"k": key, "t": at.timestamp(), "v": value}) + "\n")


def source(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, t double, v double")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"),
                      "v")


def run(spark: SparkSession, tmp: Path, max_future: Any) -> tuple[list[Any], dict[str, Any]]:
    """Two files, each read by a run of the query (the second resuming the first),
    counted per key by `Tumbling("1h")` (lateness 1 minute) over the hour two days back:
    key a and b in both files, a row of key a a year ahead in the first, and in the
    second a row two hours later (key c) whose watermark closes the hour. The report's
    counts summed over the runs."""
    now = dt.datetime.now(dt.UTC)
    base = now.replace(minute=0, second=0, microsecond=0) - dt.timedelta(days=2)
    minutes = [base + dt.timedelta(minutes=m) for m in range(5)]
    (tmp / "in").mkdir(parents=True)
    files = [[("a", minutes[1], 1.0), ("a", now + dt.timedelta(days=365), 2.0),
              ("b", minutes[2], 3.0)],
             [("a", minutes[3], 4.0), ("b", minutes[4], 5.0),
              ("c", base + dt.timedelta(hours=2), 6.0)]]
    rows: list[Any] = []
    report: dict[str, Any] = {}
    for index, events in enumerate(files):  # a run a file, the second resuming the first
        write(tmp / "in", f"part-{index:03d}.json", events)
        ev = ws.events(source(spark, tmp / "in"), time="ts", key="k", lateness="1m",
                       max_future=max_future)
        query = (ev.window(ws.Tumbling("1h")).agg(ws.count(), ws.sum("v"))
                 .writeStream.format("parquet").option("path", str(tmp / "out"))
                 .option("checkpointLocation", str(tmp / "chk"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        found = ws.stream_report(query)
        report = {name: report.get(name, 0) + found[name]
                  for name in ("rejected_future", "late", "rows_in")}
    rows = spark.read.parquet(str(tmp / "out")).collect()
    return sorted((r["k"], r["count"], r["sum_v"]) for r in rows), report


def test_a_row_a_year_ahead_is_rejected_and_the_rows_after_it_are_on_time(
        streaming: SparkSession, tmp_path: Path) -> None:
    rows, report = run(streaming, tmp_path / "guarded", "1h")
    assert (report["rejected_future"], report["late"], report["rows_in"]) == (1, 0, 6)
    assert rows == [("a", 2, 5.0), ("b", 2, 8.0)]  # the hour, whole; c's is open


def test_without_it_the_row_makes_the_later_rows_late(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    """The year-ahead row moves the watermark past every window: the hour closes with
    the first run's rows alone, and the second run's rows of that hour are late."""
    rows, report = run(streaming, tmp_path / "open", None)
    assert (report["rejected_future"], report["late"]) == (0, 2)
    assert rows == [("a", 1, 1.0), ("b", 1, 3.0), ("c", 1, 6.0)]


@pytest.mark.parametrize(("time", "value", "message"), [
    ("ts", "-1h", "a positive duration such as '1h' or a timedelta, found '-1h'"),
    ("ts", 3600, "a positive duration such as '1h' or a timedelta, found 3600"),
    ("n", "1h", "None for integer time (it compares the time with the processing time: "
     "timestamp, timestamp_ntz or date time), found '1h'"),
])
def test_bad_max_future_names_the_parameter(streaming: SparkSession, tmp_path: Path,
                                            time: str, value: Any, message: str) -> None:
    (tmp_path / "in").mkdir()
    df = source(streaming, tmp_path / "in").withColumn("n", F.lit(1).cast("long"))
    lateness = 5 if time == "n" else "5s"
    with pytest.raises(WispInputError, match=re.escape(f"`max_future` must be {message}")):
        ws.events(df, time=time, lateness=lateness, max_future=value)


def test_a_batch_table_takes_no_max_future(spark: SparkSession) -> None:
    df = spark.range(1).select(F.timestamp_seconds("id").alias("ts"))
    with pytest.raises(WispInputError, match=re.escape(
            "`max_future` must be None for a batch DataFrame (it bounds how far ahead of "
            "the processing time a stream's rows may be), found '1h'")):
        ws.events(df, time="ts", max_future="1h")
