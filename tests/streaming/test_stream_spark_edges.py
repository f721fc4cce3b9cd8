"""`ws.from_edges` over a stream on real Spark: one JSON file of start/end edges per
micro-batch; snapshot windows restarted between every batch, the others once, between
the starts of a's edges 2 and 3 and their ends (the three streams side by side); the
rows written equal the batch query's (`from_edges` over the same edges, paired in Spark)
that are final at the last watermark."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import Pipeline, Written, assert_same, run_streams, seconds

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


def query_of(kind: str) -> Callable[[ws.Events], DataFrame]:
    window = KINDS[kind][0]
    return lambda ev: ev.window(window).agg(ws.count(), ws.sum("v"))


def read(spark: SparkSession, directory: Path) -> DataFrame:
    return shaped(spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1)
                  .json(str(directory)))


def edges_query(kind: str) -> Pipeline:
    return lambda df: query_of(kind)(ws.from_edges(df, "ts", edge="edge", id="id", key="k",
                                                   lateness="5s"))


@pytest.fixture(scope="module")
def restarted(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Written]:
    """Snapshot windows restarted between every micro-batch; tumbling and count windows
    once (a run over files 0-2, one over 3-5)."""
    return run_streams(streaming, tmp_path_factory.mktemp("edges"),
                       {kind: edges_query(kind) for kind in KINDS}, FILES,
                       {kind: range(len(FILES)) if kind == "snapshot" else [2, 5]
                        for kind in KINDS}, write=write_file, read=read)


@pytest.mark.parametrize("kind", list(KINDS))
def test_edges_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, restarted: dict[str, Written], kind: str) -> None:
    _, closing, count = KINDS[kind]
    got, report = restarted[kind]
    rows = [(k, float(t), v, ident, edge) for f in FILES for k, t, v, ident, edge in f]
    batch = shaped(streaming.createDataFrame(rows, SCHEMA))
    result = query_of(kind)(ws.from_edges(batch, "ts", edge="edge", id="id", key="k"))
    want = [r.asDict() for r in result.collect()
            if r[closing] is not None and seconds(r[closing]) <= WATERMARK]
    assert len(want) == count
    assert_same(got, want)
    assert report["late"] == 0
