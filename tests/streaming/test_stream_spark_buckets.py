"""Keys sharing stored values (`runtime.streaming.buckets`) on real Spark: a pane query over
many keys (more than the buckets), float keys that Spark groups together (NaN, `-0.0`
and `0.0`) and a null key, a restart and a late row emitted; the rows written equal the
batch query's rows that are final at the last watermark. (A failure inside a bucket:
test_stream_spark.py, the timer case of its handler-failure test.)"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from oracle import assert_rows_match, sort_output
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.plan.streaming import KEY_BUCKETS

pytestmark = pytest.mark.spark

Event = tuple[str | None, float, float]
# (key as text, seconds, value), lateness 5 s. Keys "0".."39" spread over the buckets;
# "NaN", "-0.0", "0.0" and null are Spark's keys NaN, 0.0 (with "0") and null.
SPECIAL = ["NaN", "-0.0", "0.0", None]
FILES: list[list[Event]] = [
    [(str(k), 10 + k % 7, float(k)) for k in range(40)]
    + [(k, 11, 1.0) for k in SPECIAL],
    [(str(k), 21 + k % 5, 0.5) for k in range(0, 40, 3)] + [(k, 22, 2.0) for k in SPECIAL],
    [("NaN", 12, 9.0), ("-0.0", 31, 3.0), ("7", 33, 1.0)],  # ("NaN", 12): late
    [(str(k), 60, 1.0) for k in range(40)] + [(k, 60, 1.0) for k in SPECIAL],
]
LATE = [("NaN", 12, 9.0)]
WATERMARK = 55


def write_file(directory: Path, index: int, events: list[Event]) -> None:
    path = directory / f"part-{index:03d}.json"
    with path.open("w") as out:
        for key, seconds, value in events:
            out.write(json.dumps({"k": key, "t": seconds, "v": value}) + "\n")
    os.utime(path, (1_000_000 + index, 1_000_000 + index))


def shaped(df: DataFrame) -> DataFrame:
    return df.select(F.col("k").cast("double").alias("k"),
                     F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"), "v")


def query(ev: ws.Events) -> DataFrame:
    return ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"), ws.max("v"))


def test_many_keys_per_bucket_through_restarts_equal_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path) -> None:
    assert len(FILES[0]) > 2 * KEY_BUCKETS
    incoming, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    incoming.mkdir()
    late = 0
    for files in (range(2), range(2, len(FILES))):  # a restart between them
        for i in files:
            write_file(incoming, i, FILES[i])
        stream = shaped(streaming.readStream.schema("k string, t double, v double")
                        .option("maxFilesPerTrigger", 1).json(str(incoming)))
        ev = ws.events(stream, time="ts", key="k", lateness="5s", on_late="emit")
        running = (query(ev).writeStream.format("parquet")
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(availableNow=True).start(str(out)))
        running.awaitTermination()
        late += ws.stream_report(running)["late_emitted"]
    got = [r.asDict() for r in streaming.read.parquet(str(out)).collect()]
    windows = [{k: v for k, v in r.items() if k not in ("late_reason", "late_row")}
               for r in got if r["late_reason"] is None]
    late_rows = [r for r in got if r["late_reason"] is not None]
    accepted = [(k, float(t), v) for f in FILES for k, t, v in f if (k, t, v) not in LATE]
    batch = shaped(streaming.createDataFrame(accepted, "k string, t double, v double"))
    want: list[dict[str, Any]] = [
        r.asDict() for r in query(ws.events(batch, time="ts", key="k")).collect()
        if r["window_end"].timestamp() <= WATERMARK]
    assert len(want) == 60  # [10, 20): 40 keys ("0" is 0.0 too), NaN, null; [20, 30):
    # 14 keys, NaN, null; [30, 40): 0.0 and 7
    assert_rows_match(sort_output(windows, ["k"]), sort_output(want, ["k"]), rel=1e-12)
    keys = {repr(r["k"]) for r in windows}
    assert {"nan", "0.0", "None"} <= keys and "-0.0" not in keys
    assert [(repr(r["k"]), r["late_row"]["v"]) for r in late_rows] == [("nan", 9.0)]
    assert late == 1

