"""timestamp_ntz time on a stream in a session whose time zone has daylight saving:
the rows cross into the operator as wall-clock microseconds read from the value's
fields, so a wall time that New York's spring-forward skips (2024-03-10 02:30) keeps
its place, as in batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark

ROWS = [("a", "2024-03-10 01:50:00", 1.0), ("a", "2024-03-10 02:30:00", 2.0),
        ("a", "2024-03-10 02:40:00", 4.0), ("a", "2024-03-10 03:10:00", 8.0),
        ("b", "2024-03-10 02:59:59.5", 16.0), ("b", "2024-03-10 09:00:00", 32.0)]
"""Wall-clock times (timestamp_ntz), three in the hour New York skips."""


def frame(df: DataFrame) -> DataFrame:
    return df.select("k", F.col("s").cast("timestamp_ntz").alias("ts"), "v")


@pytest.mark.usefixtures("new_york")
def test_wall_times_a_zone_skips_stay_where_they_are(streaming: SparkSession,
                                                     tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    with (tmp_path / "in" / "part-0.json").open("w") as out:
        out.writelines(json.dumps({"k": k, "s": s, "v": v}) + "\n" for k, s, v in ROWS)
    stream = frame(streaming.readStream.schema("k string, s string, v double")
                   .json(str(tmp_path / "in")))
    ev = ws.events(stream, time="ts", key="k", lateness="1s")
    query = (ev.window(ws.Range.past("1h")).agg(ws.count(), ws.sum("v"))
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "chk"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    found = sorted(tuple(r) for r in streaming.read.parquet(str(tmp_path / "out")).collect())
    batch = frame(streaming.createDataFrame(ROWS, "k string, s string, v double"))
    expected = sorted(tuple(r) for r in ws.events(batch, time="ts", key="k")
                      .window(ws.Range.past("1h")).agg(ws.count(), ws.sum("v")).collect())
    # b's 09:00 waits for the watermark; every other row is written, as in batch
    assert found == [r for r in expected if not (r[0] == "b" and r[3].hour == 9)]
    skipped = [r for r in found if r[3].hour == 2 and r[3].minute == 30]
    assert [(r[4], r[5]) for r in skipped] == [(2, 3.0)]  # with 01:50, not moved to 03:30
