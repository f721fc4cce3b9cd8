"""Revisions on real streams (`on_late="update"`, `emit="changes"`): a stream over files,
restarted after every file, against the batch result over the rows it kept; and the
queries that cannot have revisions refused when they are built."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark

BASE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
FILES = [[("a", 1, 1.0), ("b", 2, 10.0)],
         [("a", 12, 2.0), ("b", 15, 20.0)],  # then the watermark is 14 s: [0, 10) final
         [("a", 3, 4.0)],  # late, within the allowed lateness of [0, 10): applied
         [("a", 50, 8.0)],  # then the watermark is 49 s: [0, 10) leaves the state
         [("b", 5, 40.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 0.0)]]  # the watermark passes every window of a and b
"""Files of (key, seconds after BASE, value), each read by its own run."""
NOT_KEPT = {("b", 5), ("z", 1000)}
"""The row counted late, and z's, whose window is still open at the end."""


def source(spark: SparkSession, directory: Path) -> DataFrame:
    raw = (spark.readStream.schema("k string, t double, v double")
           .option("maxFilesPerTrigger", 1).json(str(directory)))
    return raw.select("k", F.timestamp_micros((F.col("t") * 1e6).cast("long")).alias("ts"),
                      "v")


def run_files(spark: SparkSession, tmp: Path, files: list[list[dict[str, Any]]],
              read: Callable[[SparkSession, Path], DataFrame],
              query: Callable[[ws.Events], DataFrame], **binding: Any
              ) -> tuple[DataFrame, dict[str, int]]:
    """Each file of JSON rows by a run of its own (`query` over the events `read` from
    the folder, bound by `binding`, lateness 1 s), each resuming the one before: the
    table written and the reports' counts summed."""
    (tmp / "in").mkdir(parents=True)
    counts = {"late": 0, "late_applied": 0, "rows_in": 0}
    for index, rows in enumerate(files):
        with (tmp / "in" / f"part-{index:03d}.json").open("w") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        ev = ws.events(read(spark, tmp / "in"), lateness="1s", **binding)
        started = (query(ev).writeStream.format("parquet").option("path", str(tmp / "out"))
                   .option("checkpointLocation", str(tmp / "chk"))
                   .trigger(availableNow=True).start())
        started.awaitTermination()
        report = ws.stream_report(started)
        counts = {name: counts[name] + report[name] for name in counts}
    return spark.read.parquet(str(tmp / "out")), counts


def at_seconds(rows: list[tuple[str, float, float]]) -> list[dict[str, Any]]:
    """(key, seconds after BASE, value) as JSON rows of `source`."""
    return [{"k": k, "t": (BASE + dt.timedelta(seconds=s)).timestamp(), "v": v}
            for k, s, v in rows]


def run(spark: SparkSession, tmp: Path, emit: str) -> tuple[DataFrame, dict[str, int]]:
    """Every file by a run of its own, each resuming the one before: the table written
    and the reports' counts summed."""
    return run_files(spark, tmp, [at_seconds(rows) for rows in FILES], source,
                     lambda ev: ev.window(ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"),
                                                                  emit=emit),
                     time="ts", key="k", on_late="update", allowed_lateness="30s")


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), v) for rows in FILES for k, s, v in rows
            if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, v double")
    out = ws.events(df, time="ts", key="k").window(ws.Tumbling("10s")).agg(
        ws.count(), ws.sum("v"))
    return sorted(tuple(r) for r in out.collect())


def test_late_rows_within_the_allowed_lateness_revise_their_windows(
        streaming: SparkSession, tmp_path: Path) -> None:
    written, counts = run(streaming, tmp_path, "final")
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "count", "sum_v"]
    rows = sorted((r["k"], r["window_start"], r["revision"], r["final"], r["count"],
                   r["sum_v"]) for r in written.collect())
    start = BASE.replace(tzinfo=None)
    assert rows[:2] == [("a", start, 0, True, 1, 1.0), ("a", start, 1, True, 2, 5.0)]
    assert counts == {"late": 1, "late_applied": 1, "rows_in": 8}
    latest = sorted(tuple(r) for r in ws.latest(written).drop("revision", "final")
                    .collect())
    assert latest == batch_rows(streaming)


def test_early_rows_of_open_windows_then_one_final_row(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    """emit="changes": each window's rows are revisions 0, 1, ..., those before the
    window is final have `final` false; the latest equal the batch's over the rows kept,
    z's open window included as written early."""
    written, counts = run(streaming, tmp_path, "changes")
    by_window: dict[tuple[Any, ...], list[Any]] = {}
    for r in sorted(written.collect(), key=lambda r: r["revision"]):
        by_window.setdefault((r["k"], r["window_start"]), []).append(r)
    for rows in by_window.values():
        assert [r["revision"] for r in rows] == list(range(len(rows)))
        finals = [r["final"] for r in rows]
        assert finals == sorted(finals)
    assert [r["final"] for r in by_window[("z", dt.datetime(2024, 1, 1, 0, 16, 40))]] == \
        [False]
    assert counts["late"] == 1 and counts["late_applied"] == 1
    latest = ws.latest(written)
    final = sorted(tuple(r) for r in latest.where("final").drop("revision", "final")
                   .collect())
    assert final == batch_rows(streaming)


def test_queries_that_cannot_have_revisions_are_refused(streaming: SparkSession,
                                                        tmp_path: Path) -> None:
    stream = source(streaming, tmp_path)
    update = ws.events(stream, time="ts", key="k", lateness="1s", on_late="update",
                       allowed_lateness="1m")
    with pytest.raises(ws.WispUnsupportedError) as caught:
        update.window(ws.Rows(-2, 0)).agg(ws.count())
    assert str(caught.value) == (
        "`on_late` must be 'count' for Rows here: revisions (on_late='update', "
        "emit='changes') run on Tumbling and Hopping by duration (over point or "
        "interval events), Session, Snapshot and CountByStartTime (not over "
        "wisp.from_edges); this query runs arrow-frames")
    with pytest.raises(ws.WispInputError, match=r"`allowed_lateness` must be a positive "
                                                r"duration with on_late='update'"):
        ws.events(stream, time="ts", lateness="1s", on_late="update")
    with pytest.raises(ws.WispInputError, match=r"`allowed_lateness` must be None unless "
                                                r"on_late='update'"):
        ws.events(stream, time="ts", lateness="1s", allowed_lateness="1m")
    batch = streaming.createDataFrame([("a", BASE, 1.0)], "k string, ts timestamp, v double")
    with pytest.raises(ws.WispInputError, match=r"`emit` must be 'final' for a batch "
                                                r"DataFrame \(early rows of open windows "
                                                r"are a stream's\), found 'changes'"):
        ws.events(batch, time="ts").window(ws.Tumbling("10s")).agg(ws.count(),
                                                                   emit="changes")
    with pytest.raises(ws.WispInputError, match=r"`emit` must be 'final' or 'changes', "
                                                r"found 'early'"):
        ws.events(stream, time="ts", lateness="1s").window(ws.Tumbling("10s")).agg(
            ws.count(), emit="early")  # type: ignore[arg-type]
    with pytest.raises(ws.WispInputError, match=r"`df` must be a result with `revision` "
                                                r"and `final` columns"):
        ws.latest(batch)
    text = ws.explain(update.window(ws.Tumbling("10s")).agg(ws.count()))
    assert "Revisions: a window's panes are kept 60000000 ticks past" in text
