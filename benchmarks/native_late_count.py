"""What Spark's own streaming aggregation reports of late rows, against the late rows.

    python -m benchmarks.native_late_count

A user's hand-written `groupBy(window(...), key)` with a watermark drops the rows of
windows it already wrote, and reports `numRowsDroppedByWatermark`. This runs four
micro-batches (one Parquet file each) through it, the last holding three rows of windows
already written (two of key 1, one of key 2), and prints what Spark reports: the count
is of the groups left after aggregation, not of the rows. That is why a stream's
`Tumbling` cannot run on Spark's aggregation and still count every late row
(`wisp.stream_report`'s `late`): it runs on the stateful operator for Python.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

SCHEMA = "k long, ts timestamp, v double"
FILES = [[(1, 0), (1, 5), (2, 3)], [(1, 100), (2, 100)],
         [(1, 1), (2, 4)], [(1, 4), (1, 8), (2, 9), (1, 200)]]
LATE_ROWS = 3
"""The last file's rows of the window [0 s, 10 s), written in the batch before."""


def put(spark: SparkSession, folder: Path, index: int, rows: list[tuple[int, int]]) -> None:
    """One Parquet file, its modification time in file order (the source's order)."""
    start = dt.datetime(2020, 1, 1)
    df = spark.createDataFrame([(k, start + dt.timedelta(seconds=s), 1.0) for k, s in rows],
                               SCHEMA)
    staging = folder.parent / f"staging{index}"
    df.coalesce(1).write.parquet(str(staging))
    (part,) = staging.glob("*.parquet")
    target = folder / f"{index:03d}.parquet"
    part.rename(target)
    os.utime(target, (1_000 + index, 1_000 + index))
    shutil.rmtree(staging)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("native-late-count")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    scratch = Path(tempfile.mkdtemp(prefix="wisp-native-late-"))
    try:
        folder = scratch / "in"
        folder.mkdir()
        for index, rows in enumerate(FILES):
            put(spark, folder, index, rows)
        source = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                  .parquet(str(folder)))
        counts = (source.withWatermark("ts", "2 seconds")
                  .groupBy(F.window("ts", "10 seconds"), "k").count())
        query = (counts.writeStream.format("noop").outputMode("append")
                 .option("checkpointLocation", str(scratch / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        dropped = sum(int(op.get("numRowsDroppedByWatermark", 0))
                      for p in query.recentProgress for op in p["stateOperators"])
        print(f"late rows: {LATE_ROWS}; Spark's numRowsDroppedByWatermark: {dropped}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
