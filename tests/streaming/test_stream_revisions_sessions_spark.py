"""Revisions of sessions on real streams (`on_late="update"`, `emit="changes"`): a
stream over files, restarted after every file, against the batch result over the rows
it kept; a late row that bridges two sessions written makes one session that replaces
both."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from faults import Faults, pickled_by_value
from pyspark.sql import DataFrame, SparkSession
from test_stream_revisions_spark import BASE, source

import wisp as ws
from wisp.engine import streaming as stream_engine
from wisp.runtime.streaming.revised import RevisedKernel

pytestmark = pytest.mark.spark

FILES = [[("a", 1, 1.0), ("a", 4, 2.0), ("a", 12, 4.0), ("b", 2, 10.0)],
         # then the watermark is 11 s: a's [1, 9) and b's [2, 7) are final
         [("a", 20, 8.0), ("b", 25, 20.0)],  # then 24 s: a's [12, 17) is final
         [("a", 8, 16.0)],  # late, within the allowed lateness: bridges [1, 9), [12, 17)
         [("a", 60, 32.0)],  # then 59 s: a's sessions up to [20, 25) are retired
         [("b", 5, 40.0)],  # late beyond the allowed lateness: counted
         [("z", 1000, 0.0)]]  # the watermark passes every session of a and b
"""Files of (key, seconds after BASE, value), each read by its own run; sessions of a
5 s gap, lateness 1 s, allowed lateness 30 s."""
NOT_KEPT = {("b", 5), ("z", 1000)}
"""The row counted late, and z's, whose session is still open at the end."""


FAULTS = Faults.named("revision")


@dataclasses.dataclass(frozen=True)
class FailingRevised(RevisedKernel):
    """The revision logic, failing once where a marker says."""

    def on_rows(self, state: Any, rows: Any, watermark_ms: int) -> Any:
        FAULTS.fail_once("rows")
        return super().on_rows(state, rows, watermark_ms)

    def on_timer(self, state: Any, watermark_ms: int) -> Any:
        FAULTS.fail_once("timer")
        return super().on_timer(state, watermark_ms)


LATE_ROW_WATERMARK_MS = int((BASE + dt.timedelta(seconds=24)).timestamp() * 1000)
"""The watermark of the late row's micro-batch in one run over every file, a file a
micro-batch (`retry_job.py`)."""


@dataclasses.dataclass(frozen=True)
class FailingAtTheLateRow(RevisedKernel):
    """The revision logic, failing once in the late row's micro-batch where a marker
    says."""

    def on_rows(self, state: Any, rows: Any, watermark_ms: int) -> Any:
        if watermark_ms == LATE_ROW_WATERMARK_MS:
            FAULTS.fail_once("rows")
        return super().on_rows(state, rows, watermark_ms)


def write_file(directory: Path, index: int, rows: list[tuple[str, int, float]]) -> Path:
    """File `index` of `FILES` (its `rows`) as JSON lines in `directory`."""
    path = directory / f"part-{index:03d}.json"
    with path.open("w") as out:
        out.writelines(json.dumps({"k": k, "t": (BASE + dt.timedelta(seconds=s))
                                   .timestamp(), "v": v}) + "\n" for k, s, v in rows)
    return path


def run(spark: SparkSession, tmp: Path, emit: str, fail: tuple[int, str] | None = None
        ) -> tuple[DataFrame, dict[str, int]]:
    """Every file by a run of its own, each resuming the one before: the table written
    and the reports' counts summed. `fail`: before the run of that file, a marker makes
    that handler fail once; the query stops with the error and is started again."""
    (tmp / "in").mkdir(parents=True)
    counts = {"late": 0, "late_applied": 0, "rows_in": 0}
    failed = 0
    for index, rows in enumerate(FILES):
        write_file(tmp / "in", index, rows)
        if fail is not None and fail[0] == index:
            FAULTS.arm(fail[1])
        for _attempt in range(2):
            ev = ws.events(source(spark, tmp / "in"), time="ts", key="k", lateness="1s",
                           on_late="update", allowed_lateness="30s")
            query = (ev.window(ws.Session("5s")).agg(ws.count(), ws.sum("v"), emit=emit)
                     .writeStream.format("parquet").option("path", str(tmp / "out"))
                     .option("checkpointLocation", str(tmp / "chk"))
                     .trigger(availableNow=True).start())
            try:
                query.awaitTermination()
            except Exception as error:  # the injected failure, and only that
                assert fail is not None and f"injected failure in the {fail[1]} " \
                    "handler" in str(error)
                failed += 1
                continue
            report = ws.stream_report(query)
            counts = {name: counts[name] + report[name] for name in counts}
            break
    assert failed == (0 if fail is None else 1)
    return spark.read.parquet(str(tmp / "out")), counts


def batch_rows(spark: SparkSession) -> list[tuple[Any, ...]]:
    kept = [(k, BASE + dt.timedelta(seconds=s), v) for rows in FILES for k, s, v in rows
            if (k, s) not in NOT_KEPT]
    df = spark.createDataFrame(kept, "k string, ts timestamp, v double")
    out = ws.events(df, time="ts", key="k").window(ws.Session("5s")).agg(
        ws.count(), ws.sum("v"))
    return sorted(tuple(r) for r in out.collect())


@pytest.mark.parametrize("fail", [None, (2, "rows"), (3, "timer")],
                         ids=["no failure", "rows handler fails", "timer handler fails"])
def test_a_late_row_merging_two_sessions_replaces_both(
        streaming: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fail: tuple[int, str] | None) -> None:
    """Restarted after every file; with a failure injected once in the data handler
    (the run of the late row) or the timer handler (the run whose watermark closes and
    retires a's sessions), then started again: the same rows, each once."""
    if fail is not None:
        pickled_by_value(sys.modules[__name__])
        monkeypatch.setattr(stream_engine, "RevisedKernel", FailingRevised)
    written, counts = run(streaming, tmp_path, "final", fail)
    assert written.columns == ["k", "window_start", "window_end", "time", "revision",
                               "final", "replaces", "count", "sum_v"]
    start = BASE.replace(tzinfo=None)

    def at(seconds: float) -> dt.datetime:
        return start + dt.timedelta(seconds=seconds)

    rows = sorted((r["k"], r["window_start"], r["window_end"], r["revision"], r["final"],
                   [(x["window_start"], x["window_end"]) for x in r["replaces"]],
                   r["count"]) for r in written.collect() if r["k"] == "a")
    assert rows == [("a", at(1), at(9), 0, True, [], 2),
                    ("a", at(1), at(17), 1, True, [(at(1), at(9)), (at(12), at(17))], 4),
                    ("a", at(12), at(17), 0, True, [], 1),
                    ("a", at(20), at(25), 0, True, [], 1),
                    ("a", at(60), at(65), 0, True, [], 1)]
    if fail is None:  # a failed run's rows are read again by the next one
        assert counts == {"late": 1, "late_applied": 1, "rows_in": 10}
    latest = sorted(tuple(r) for r in ws.latest(written)
                    .drop("revision", "final", "replaces").collect())
    assert latest == batch_rows(streaming)


def test_early_rows_of_open_sessions_then_final_rows(streaming: SparkSession,
                                                     tmp_path: Path) -> None:
    """emit="changes": open sessions are written early (`final` false); the latest rows
    that are final equal the batch's over the rows kept; z's open session is written
    early only."""
    written, counts = run(streaming, tmp_path, "changes")
    assert counts["late"] == 1 and counts["late_applied"] == 1
    z = [(r["revision"], r["final"]) for r in written.collect() if r["k"] == "z"]
    assert z == [(0, False)]
    latest = ws.latest(written)
    final = sorted(tuple(r) for r in latest.where("final")
                   .drop("revision", "final", "replaces").collect())
    assert final == batch_rows(streaming)
    assert latest.where("not final").count() == 1
