"""`ws.from_edges` over a stream on real Spark: one JSON file of start/end edges per
micro-batch, a restart between every batch; the rows written equal the batch query's
(`from_edges` over the same edges, paired in Spark) that are final at the last
watermark."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import assert_same, seconds

import wisp as ws

pytestmark = pytest.mark.spark

Edge = tuple[str, float, float | None, int, str]
# (key, seconds, value, id, edge), lateness 5 s; no edge is late (each file's times lie
# above the watermark of the files before it). Paired: a 1 [10, 14), 2 [12, 40),
# 3 [31, 45), 4 [60, open); b 1 [11, 25), 2 [22, open), 3 [60, open). The ends of a 2
# and a 3 arrive batches after their starts were fed as open-ended events.
FILES: list[list[Edge]] = [
    [("a", 10, 1.0, 1, "start"), ("b", 11, 2.0, 1, "start")],
    [("a", 12, 3.0, 2, "start")],
    [("a", 14, None, 1, "end"), ("b", 22, 5.0, 2, "start")],
    [("b", 25, None, 1, "end"), ("a", 31, 6.0, 3, "start")],
    [("a", 40, None, 2, "end"), ("a", 45, None, 3, "end")],
    [("a", 60, 1.0, 4, "start"), ("b", 60, 1.0, 3, "start")],
]
WATERMARK = 55  # the newest time (60) minus the lateness (5 s)
SCHEMA = "k string, t double, v double, id long, edge string"


def write_file(directory: Path, index: int, edges: Sequence[Edge]) -> None:
    path = directory / f"part-{index:03d}.json"
    with path.open("w") as out:
        for key, t, value, ident, edge in edges:
            out.write(json.dumps({"k": key, "t": t, "v": value, "id": ident,
                                  "edge": edge}) + "\n")
    os.utime(path, (1_000_000 + index, 1_000_000 + index))


def shaped(df: DataFrame) -> DataFrame:
    return df.select("k", F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"),
                     "v", "id", "edge")


KINDS: dict[str, tuple[ws.Window, str, int]] = {
    # the window, the column at or below the watermark, the final rows
    "tumbling": (ws.Tumbling("10s"), "window_end", 8),  # a and b: 10-50 s
    "snapshot": (ws.Snapshot(), "window_end", 7),  # a: 10-12 12-14 14-31 31-40 40-45;
    # b: 11-22 22-25 (25-60 ends after the watermark)
    "count": (ws.CountByStartTime(2), "time", 3),  # a: 10-12 12-31; b: 11-22
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_edges_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path, kind: str) -> None:
    window, closing, count = KINDS[kind]

    def query(ev: ws.Events) -> DataFrame:
        return ev.window(window).agg(ws.count(), ws.sum("v"))

    incoming, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    incoming.mkdir()
    late = 0
    for i, edges in enumerate(FILES):  # a restart between every micro-batch
        write_file(incoming, i, edges)
        stream = shaped(streaming.readStream.schema(SCHEMA)
                        .option("maxFilesPerTrigger", 1).json(str(incoming)))
        ev = ws.from_edges(stream, "ts", edge="edge", id="id", key="k", lateness="5s")
        running = (query(ev).writeStream.format("parquet")
                   .option("checkpointLocation", str(checkpoint))
                   .trigger(availableNow=True).start(str(out)))
        running.awaitTermination()
        late += ws.stream_report(running)["late"]
    got: list[dict[str, Any]] = [r.asDict() for r in streaming.read.parquet(str(out))
                                 .collect()]
    rows = [(k, float(t), v, ident, edge) for f in FILES for k, t, v, ident, edge in f]
    batch = shaped(streaming.createDataFrame(rows, SCHEMA))
    result = query(ws.from_edges(batch, "ts", edge="edge", id="id", key="k"))
    want = [r.asDict() for r in result.collect()
            if r[closing] is not None and seconds(r[closing]) <= WATERMARK]
    assert len(want) == count
    assert_same(got, want)
    assert late == 0
