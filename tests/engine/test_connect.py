"""A specification example over Spark Connect (`SparkSession.builder.remote("local[2]")`),
batch and stream, a stream with revisions (`on_late="update"`) among them.

It runs in a subprocess: the test run's own session is a classic one, and a process
holds one kind of session at a time."""

from __future__ import annotations

import textwrap

import pytest
from spark_processes import run_local_connect

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent("""
    import json, os, sys
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession, functions as F
    import wisp as ws
    spark = (SparkSession.builder.remote("local[2]")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    df = spark.createDataFrame([(k, float(k + 1)) for k in range(8)], "t long, v double")
    ev = ws.events(df.withColumn("ts", F.timestamp_micros(F.col("t") * 1000000)), time="ts")
    out = ev.window(ws.Rows(-2, 0)).agg(ws.collect("v"))
    rows = out.select((F.unix_micros("time") / 1000000).alias("s"), "collect_v")
    running = ev.agg(ws.max("v")).select((F.unix_micros("time") / 1000000).alias("s"),
                                         "max_v")
    # interval events [t, t + 1) and [3, open) in Hopping(4, 2): the newest start and
    # end (the horizon) come from a scalar subquery
    spans = df.select("t", F.when(F.col("t") == 3, None).otherwise(F.col("t") + 1).alias("e"),
                      "v")
    hopping = ws.events(spans, time="t", end="e").window(ws.Hopping(4, 2)).agg(
        ws.count(), ws.sum("v"))
    # a stream over Connect: three files, Range(-2s, 0s), lateness 1 s
    import tempfile
    base = tempfile.mkdtemp()
    def write_files(folder, batches):
        # a file a batch of times, read in this order (by time modified)
        for i, times in enumerate(batches):
            path = os.path.join(base, folder, f"{i}.json")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as out_file:
                out_file.write("".join(json.dumps({"t": t, "v": t * 10}) + "\\n"
                                       for t in times))
            os.utime(path, (1000 + i, 1000 + i))
    write_files("in", [[1, 2], [3, 7], [0.5, 9]])
    spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                   "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    raw = (spark.readStream.schema("t double, v double").option("maxFilesPerTrigger", 1)
           .json(os.path.join(base, "in")))
    stream = ws.events(raw.select(F.timestamp_micros((F.col("t") * 1e6).cast("long"))
                                  .alias("ts"), "v"), time="ts", lateness="1s")
    query = (stream.window(ws.Range("-2s", "0s")).agg(ws.count(), ws.sum("v"))
             .writeStream.format("parquet")
             .option("checkpointLocation", os.path.join(base, "chk"))
             .trigger(availableNow=True).start(os.path.join(base, "out")))
    query.awaitTermination()
    streamed = spark.read.parquet(os.path.join(base, "out")).select(
        (F.unix_micros("time") / 1000000).alias("s"), "count", "sum_v")
    # revisions over Connect: Tumbling(10s), lateness 1 s, late rows applied up to 20 s
    # past a window's end
    write_files("late", [[1, 2], [12, 15], [25], [3, 4.5]])
    late_raw = (spark.readStream.schema("t double, v double").option("maxFilesPerTrigger", 1)
                .json(os.path.join(base, "late")))
    revised = ws.events(late_raw.select(F.timestamp_micros((F.col("t") * 1e6).cast("long"))
                                        .alias("ts"), "v"), time="ts", lateness="1s",
                        on_late="update", allowed_lateness="20s")
    revised_query = (revised.window(ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"))
                     .writeStream.format("parquet")
                     .option("checkpointLocation", os.path.join(base, "late_chk"))
                     .trigger(availableNow=True).start(os.path.join(base, "late_out")))
    revised_query.awaitTermination()
    written = spark.read.parquet(os.path.join(base, "late_out"))
    def seconds(frame):
        return frame.select((F.unix_micros("window_start") / 1000000).alias("s"), "count",
                            "sum_v", "revision", "final").orderBy("s", "revision")
    # a report before any action under on_null_time="drop", then after one; a null
    # time under "error" (a data error) read back with ws.wisp_error
    nulls = spark.createDataFrame([(1, 1.0), (None, 2.0)], "t long, v double")
    dropped = ws.events(nulls, time="t", on_null_time="drop").agg(ws.count())
    try:
        ws.report(dropped)
        early = None
    except ws.WispError as error:
        early = [type(error).__name__, str(error)]
    dropped.collect()
    try:
        ws.events(nulls, time="t").agg(ws.count()).collect()
        failed = None
    except Exception as error:
        found = ws.wisp_error(error)
        failed = None if found is None else [type(found).__name__, str(found)]
    print("RESULT " + json.dumps({
        "early_report": early,
        "late_report": ws.report(dropped),
        "null_time": failed,
        "rows": [list(r) for r in rows.orderBy("s").collect()],
        "running": [list(r) for r in running.orderBy("s").collect()],
        "hopping": [list(r) for r in hopping.orderBy("window_start").collect()],
        "report": ws.report(out),
        "stream": [list(r) for r in streamed.orderBy("s").collect()],
        "stream_report": {k: v for k, v in ws.stream_report(query).items()
                          if k in ("rows_in", "late")},
        "revisions": [list(r) for r in seconds(written).collect()],
        "latest": [list(r) for r in seconds(ws.latest(written)).collect()],
        "revisions_report": {k: v for k, v in ws.stream_report(revised_query).items()
                             if k in ("rows_in", "late", "late_applied")}}))
    spark.stop()
""")


def test_a_specification_window_over_spark_connect() -> None:
    result = run_local_connect(SCRIPT)
    assert result["rows"] == [
        [2.0, [1.0, 2.0, 3.0]], [3.0, [2.0, 3.0, 4.0]], [4.0, [3.0, 4.0, 5.0]],
        [5.0, [4.0, 5.0, 6.0]], [6.0, [5.0, 6.0, 7.0]], [7.0, [6.0, 7.0, 8.0]]]
    assert result["running"] == [[float(k), float(k + 1)] for k in range(8)]
    # windows [2n, 2n + 4) up to the horizon 8 (one tick after the newest start, 7), then
    # one row for [8, ...) and later, which hold [3, open) alone; v = t + 1
    assert result["hopping"] == [
        [-2, 2, 2, 2, 3.0], [0, 4, 4, 4, 10.0], [2, 6, 6, 4, 18.0], [4, 8, 8, 5, 30.0],
        [6, 10, 10, 3, 19.0], [8, None, 12, 1, 4.0]]
    assert result["report"] == {"rows_in": 8, "rejected_null_time": 0}
    # the stream: 0.5 s arrives in the third batch, whose late filter is the watermark
    # of the second (1 s: the first batch's newest, 2 s, minus 1 s): late. The watermark
    # ends at 8 s (9 s - 1 s): the windows of 1, 2, 3 and 7 s are final, 9 s waits
    assert result["stream"] == [[1.0, 1, 10.0], [2.0, 2, 30.0], [3.0, 3, 60.0],
                                [7.0, 1, 70.0]]
    assert result["stream_report"] == {"rows_in": 6, "late": 1}
    # revisions: the third batch's watermark (14 s) makes [0, 10) final, with 1 and 2 s;
    # the fourth's (24 s) makes [10, 20) final, and 3 and 4.5 s arrive late but within
    # 20 s of [0, 10)'s end: revision 1 of it; [20, 30) is still open (24 s)
    assert result["revisions"] == [[0.0, 2, 30.0, 0, True], [0.0, 4, 105.0, 1, True],
                                   [10.0, 2, 270.0, 0, True]]
    assert result["latest"] == [[0.0, 4, 105.0, 1, True], [10.0, 2, 270.0, 0, True]]
    # (counters read from the observed metrics, which Connect reports in its own shape)
    assert result["revisions_report"] == {"rows_in": 7, "late": 0, "late_applied": 2}
    assert result["early_report"] == [
        "WispInputError", "`result` must have been computed by an action (collect, count, "
        "show, write, ...) before its report under on_null_time='drop' (the query counts "
        "its rows as it reads them), found a result no action has finished on yet; run an "
        "action first"]
    assert result["late_report"] == {"rows_in": 2, "rejected_null_time": 1}
    assert result["null_time"] == [
        "WispInputError", "`time` column 't' must not be null, found a null time; pass "
        "on_null_time='drop' to drop such rows on purpose (they are counted by "
        "wisp.report)"]
