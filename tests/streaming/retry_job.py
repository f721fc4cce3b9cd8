"""A stream under `local[2,2]` (a failed task is tried once more), run by
`test_stream_retry.py` in its own process: the suite's session cannot change its task
retries. The data handler of the range query (`rows`), or of the sessions with
revisions of `test_stream_revisions_sessions_spark` (`revisions`), fails once (a marker
file); the task is retried inside the same run, which must finish. Prints the rows
written, and the stream report, as JSON on the last line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import wisp as ws
from wisp.engine import streaming as stream_engine
from wisp.engine.streaming import ROCKSDB, STATE_STORE


def revisions(base: Path) -> None:
    """The sessions with revisions over that module's files, one run (a file a
    micro-batch), its revision logic failing once in the micro-batch of the late row
    that merges two of a's sessions."""
    import test_stream_revisions_sessions_spark as suite
    from faults import pickled_by_value

    pickled_by_value(suite)
    stream_engine.RevisedKernel = suite.FailingAtTheLateRow  # type: ignore[misc]
    spark = session()
    incoming = base / "in"
    incoming.mkdir()
    for index, rows in enumerate(suite.FILES):  # read in this order (by time modified)
        os.utime(suite.write_file(incoming, index, rows), (1000 + index, 1000 + index))
    suite.FAULTS.arm("rows")
    ev = ws.events(suite.source(spark, incoming), time="ts", key="k", lateness="1s",
                   on_late="update", allowed_lateness="30s")
    running = (ev.window(ws.Session("5s")).agg(ws.count(), ws.sum("v"))
               .writeStream.format("parquet")
               .option("checkpointLocation", str(base / "chk"))
               .trigger(availableNow=True).start(str(base / "out")))
    running.awaitTermination()
    rows = [{k: (v.timestamp() if hasattr(v, "timestamp") else
                 [{b: w.timestamp() for b, w in x.asDict().items()} for x in v]
                 if isinstance(v, list) else v)
             for k, v in r.asDict().items()}
            for r in spark.read.parquet(str(base / "out")).collect()]
    report = ws.stream_report(running)
    print(json.dumps({"rows": rows, "late": report["late"],
                      "late_applied": report["late_applied"],
                      "marker_left": (suite.FAULTS.folder / "rows").exists()}))
    spark.stop()


def session() -> SparkSession:
    spark = (SparkSession.builder.master("local[2,2]").appName("wisp-retry")
             .config(STATE_STORE, ROCKSDB).config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    return spark


def main(base: Path, handler: str) -> None:
    if handler == "revisions":
        revisions(base)
        return
    import test_stream_spark as suite
    from faults import pickled_by_value

    pickled_by_value(suite)
    stream_engine.StreamKernel = suite.FailingStream  # type: ignore[misc]
    stream_engine.KeyBuckets = suite.FailingKeyBuckets  # type: ignore[misc]
    spark = session()
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
