"""A stream under `local[2,2]` (a failed task is tried once more), run by
`test_stream_retry.py` in its own process: the suite's session cannot change its task
retries. The data handler of the range query fails once (a marker file); the task is
retried inside the same run, which must finish. Prints the rows written, and the
stream report, as JSON on the last line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import wisp as ws
from wisp.engine import streaming as stream_engine
from wisp.engine.streaming import ROCKSDB, STATE_STORE


def main(base: Path, handler: str) -> None:
    import test_stream_spark as suite
    from faults import pickled_by_value

    pickled_by_value(suite)
    stream_engine.StreamKernel = suite.FailingStream  # type: ignore[misc]
    stream_engine.KeyBuckets = suite.FailingKeyBuckets  # type: ignore[misc]
    spark = (SparkSession.builder.master("local[2,2]").appName("wisp-retry")
             .config(STATE_STORE, ROCKSDB).config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    incoming = base / "in"
    incoming.mkdir()
    # FILES's events in four micro-batches (the late row as late): the failure and the
    # retry happen in the first; the batches after it check nothing was lost or repeated
    for i, events in enumerate(suite.FOUR_FILES):
        suite.write_file(incoming, i, events)
    suite.FAULTS.arm(handler)
    result = suite.range_query(ws.events(suite.source(spark, incoming), time="ts",
                                         key="k", lateness="5s"))
    running = (result.writeStream.format("parquet")
               .option("checkpointLocation", str(base / "chk"))
               .trigger(availableNow=True).start(str(base / "out")))
    running.awaitTermination()
    rows = [{k: (v.timestamp() if hasattr(v, "timestamp") else v)
             for k, v in r.asDict().items()}
            for r in spark.read.parquet(str(base / "out")).collect()]
    marker_left = (suite.FAULTS.folder / handler).exists()
    report = ws.stream_report(running)
    print(json.dumps({"rows": rows, "late": report["late"], "marker_left": marker_left}))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
