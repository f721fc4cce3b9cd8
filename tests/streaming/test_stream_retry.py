"""A task of the stream fails once and Spark tries it again within the same run
(`local[2,2]`): the run finishes, and the rows written are the batch rows, each once
(the failed attempt's state and files are not committed); the same for the revisions
of sessions (`on_late="update"`), the task of a late row's micro-batch failing once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from test_stream_revisions_sessions_spark import BASE, batch_rows
from test_stream_spark import (
    FILES,
    LATE,
    WATERMARK,
    assert_same,
    final_batch_rows,
    range_query,
    seconds,
)

import wisp as ws

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent


def retry_job(tmp_path: Path, mode: str) -> dict[str, Any]:
    """What `retry_job.py` printed, run in its own process in `mode`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(HERE / "retry_job.py"), str(tmp_path),
                           mode], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_failed_task_is_retried_without_loss_or_repeat(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    found = retry_job(tmp_path, "rows")
    assert found["marker_left"] is False  # the handler did fail once
    got = found["rows"]  # times in seconds since the epoch
    want = [{k: (seconds(v) if isinstance(v, datetime) else v) for k, v in r.items()}
            for r in final_batch_rows(spark, range_query,
                                      lambda r: seconds(r["window_end"]) <= WATERMARK)]
    assert len(got) == len(want) == 10
    assert_same(got, want)
    assert found["late"] == len(LATE)
    assert sum(len(f) for f in FILES) > len(got)


def test_a_failed_revision_task_is_retried_without_loss_or_repeat(spark: SparkSession,
                                                                  tmp_path: Path) -> None:
    """The micro-batch of the late row that merges two sessions of a fails its task
    once; the retry writes the merged session once, as revision 1, and the latest rows
    equal the batch's over the rows kept. In one run the batches follow each other with
    no batch without data between them (a restart adds one): the watermark of the late
    row's batch (24 s) has not yet written [12, 17) final, so the merged session
    replaces [1, 9) alone."""
    found = retry_job(tmp_path, "revisions")
    assert found["marker_left"] is False  # the handler did fail once
    assert (found["late"], found["late_applied"]) == (1, 1)

    def at(seconds: float) -> float:
        return (BASE + timedelta(seconds=seconds)).timestamp()

    rows = sorted((r["window_start"], r["window_end"], r["revision"], r["final"],
                   [(x["window_start"], x["window_end"]) for x in r["replaces"]],
                   r["count"]) for r in found["rows"] if r["k"] == "a")
    assert rows == [(at(1), at(9), 0, True, [], 2),
                    (at(1), at(17), 1, True, [(at(1), at(9))], 4),
                    (at(20), at(25), 0, True, [], 1),
                    (at(60), at(65), 0, True, [], 1)]
    written = spark.read.parquet(str(tmp_path / "out"))
    latest = sorted(tuple(r) for r in ws.latest(written)
                    .drop("revision", "final", "replaces").collect())
    assert latest == batch_rows(spark)
