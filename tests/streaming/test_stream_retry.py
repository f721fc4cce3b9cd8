"""A task of the stream fails once and Spark tries it again within the same run
(`local[2,2]`): the run finishes, and the rows written are the batch rows, each once
(the failed attempt's state and files are not committed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from test_stream_spark import (
    FILES,
    LATE,
    WATERMARK,
    assert_same,
    final_batch_rows,
    range_query,
    seconds,
)

pytestmark = pytest.mark.spark

HERE = Path(__file__).resolve().parent


def test_a_failed_task_is_retried_without_loss_or_repeat(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(HERE / "retry_job.py"), str(tmp_path),
                           "rows"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["marker_left"] is False  # the handler did fail once
    got = found["rows"]  # times in seconds since the epoch
    want = [{k: (seconds(v) if isinstance(v, datetime) else v) for k, v in r.items()}
            for r in final_batch_rows(spark, range_query,
                                      lambda r: seconds(r["window_end"]) <= WATERMARK)]
    assert len(got) == len(want) == 10
    assert_same(got, want)
    assert found["late"] == len(LATE)
    assert sum(len(f) for f in FILES) > len(got)
