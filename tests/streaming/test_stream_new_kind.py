"""A window kind defined outside wisp (`tests/pairs_kind.py`: spec, batch and stream
rules, plan, kernel builder and kernel) runs on a stream like wisp's own kinds: on the
operator that carries each key's rows, restarted after every micro-batch, with the
batch's rows; and `explain` says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pairs_kind import Pairs
from pyspark.sql import DataFrame, SparkSession

import wisp as ws

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 1.0), ("b", 2, 10.0), ("a", 4, 2.0)],
         [("a", 3, 4.0), ("b", 9, 20.0), ("a", 9, 8.0)],  # a's 3 arrives after 4: in order
         [("b", 12, 40.0), ("a", 20, 16.0), ("a", 20, 32.0)],  # a tie in time
         [("z", 1000, 0.0)]]  # moves the watermark past every other row
"""Four files of (key, time, value), each read by its own run of the query."""


def batch(spark: SparkSession) -> DataFrame:
    rows = [row for file in FILES for row in file]
    return spark.createDataFrame(rows, "k string, t long, v double")


def test_a_kind_defined_outside_wisp_runs_on_a_restarted_stream(
        streaming: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    for index, rows in enumerate(FILES):  # a run a file, each resuming the one before
        with (tmp_path / "in" / f"part-{index:03d}.json").open("w") as out:
            out.writelines(json.dumps({"k": k, "t": t, "v": v}) + "\n" for k, t, v in rows)
        source = (streaming.readStream.schema("k string, t long, v double")
                  .option("maxFilesPerTrigger", 1).json(str(tmp_path / "in")))
        ev = ws.events(source, time="t", key="k", lateness=2)
        query = (ev.window(Pairs()).agg(ws.count(), ws.sum("v"))
                 .writeStream.format("parquet").option("path", str(tmp_path / "out"))
                 .option("checkpointLocation", str(tmp_path / "chk"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        assert ws.stream_report(query)["late"] == 0
    found = sorted(tuple(r) for r in streaming.read.parquet(str(tmp_path / "out")).collect())
    expected = sorted(tuple(r) for r in ws.events(batch(streaming), time="t", key="k")
                      .window(Pairs()).agg(ws.count(), ws.sum("v")).collect())
    # by hand: each key's events in time order, then value; each with the one before
    assert expected == [("a", 1, 3, 3, 2, 5.0), ("a", 3, 4, 4, 2, 6.0),
                        ("a", 4, 9, 9, 2, 10.0), ("a", 9, 20, 20, 2, 24.0),
                        ("a", 20, 20, 20, 2, 48.0), ("b", 2, 9, 9, 2, 30.0),
                        ("b", 9, 12, 12, 2, 60.0)]
    assert found == expected


def test_its_stream_plan_names_its_kernel(streaming: SparkSession, tmp_path: Path) -> None:
    source = streaming.readStream.schema("k string, t long, v double").json(str(tmp_path))
    out = ws.events(source, time="t", key="k", lateness=2).window(Pairs()).agg(ws.count())
    text = ws.explain(out)
    assert ("fed to the resumable kernel of the batch strategy arrow-pairs" in text
            and "State per key: the key's last event." in text), text
