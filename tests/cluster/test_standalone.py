"""wisp on a real Spark standalone cluster: a master and a worker on loopback, started
with `spark-class` and stopped by their process ids, whose executors run a Python that
has numpy, pyarrow and pandas but not wisp. A job submitted with `spark-submit` (in a
process of its own: the test run holds one local session) finds that its executors
cannot import wisp, ships wisp as a zip the way docs/cluster.md describes, and runs one
query of every window family; the rows are checked here, written out by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from spark_processes import (
    LOOPBACK,
    SPARK_CLASS,
    SPARK_SUBMIT,
    executor_python,
    free_port,
    spark_env,
    spark_process,
    wisp_zip,
)

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("standalone_job.py")


def test_executors_without_wisp_run_every_family_once_wisp_is_shipped(
        tmp_path: Path) -> None:
    python = executor_python(tmp_path / "executor-env")
    imports = subprocess.run(
        [str(python), "-c", "import numpy, pyarrow, pandas\nimport wisp"],
        capture_output=True, text=True, check=False, cwd=tmp_path)
    assert "No module named 'wisp'" in imports.stderr, imports.stderr

    shipped = wisp_zip(tmp_path / "wisp.zip")

    port = free_port()
    master_url = f"spark://{LOOPBACK}:{port}"
    env = spark_env(SPARK_WORKER_DIR=str(tmp_path / "work"),
                    SPARK_LOCAL_DIRS=str(tmp_path / "local"))
    master_args = [SPARK_CLASS, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                   "--port", str(port), "--webui-port", str(free_port())]
    worker_args = [SPARK_CLASS, "org.apache.spark.deploy.worker.Worker", master_url,
                   "--host", LOOPBACK, "--webui-port", str(free_port()), "--cores", "1",
                   "--memory", "1g", "--work-dir", str(tmp_path / "work")]
    submit = [SPARK_SUBMIT, "--master", master_url,
              "--conf", f"spark.pyspark.python={python}",
              "--conf", f"spark.pyspark.driver.python={sys.executable}",
              "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=1",
              "--conf", "spark.ui.enabled=false",
              "--conf", "spark.sql.session.timeZone=UTC",
              "--conf", "spark.sql.shuffle.partitions=2",
              "--conf", "spark.default.parallelism=2",
              str(JOB), str(shipped)]
    with spark_process("master", master_args, tmp_path, env) as master:
        master.wait_for("I have been elected leader!")
        with spark_process("worker", worker_args, tmp_path, env) as worker:
            worker.wait_for("Successfully registered with master")
            done = subprocess.run(submit, capture_output=True, text=True, timeout=180,
                                  check=False, cwd=tmp_path,
                                  env=spark_env(PYSPARK_PYTHON=str(python)))
    found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert found, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    result = json.loads(found[0].removeprefix("RESULT "))

    # the job ran on the cluster, its driver on the Python that has wisp, its executors
    # on the environment without it: nothing to import until shipped
    assert result["master"] == master_url
    assert result["driver"] == sys.executable
    assert result["before"] == [str(python), None]
    # and after: from the zip the executor fetched into its working directory
    assert result["after"][0] == str(python)
    assert result["after"][1].endswith("/wisp.zip/wisp/__init__.py")
    # every query runs wisp's own code in the executors' Python workers
    assert result["strategies"] == {
        "frames": "arrow-frames", "intervals": "panes", "policies": "arrow-spl",
        "periods": "arrow-ticks", "dynamic": "arrow-dynamic", "sessions": "arrow-sessions"}
    rows = result["rows"]
    # a: v = t at 1, 2, 4, 7, 8; b: v = 30 at 3, 50 at 5. Rows(-1, 0): complete windows,
    # bounds the times of their first and last events
    assert rows["frames"] == [["a", 1, 2, 2, [1.0, 2.0]], ["a", 2, 4, 4, [2.0, 4.0]],
                              ["a", 4, 7, 7, [4.0, 7.0]], ["a", 7, 8, 8, [7.0, 8.0]],
                              ["b", 3, 5, 5, [30.0, 50.0]]]
    # Hopping(4, 2): [2n, 2n + 4) with events, time = window_end; count, sum
    assert rows["intervals"] == [
        ["a", -2, 2, 2, 1, 1.0], ["a", 0, 4, 4, 2, 3.0], ["a", 2, 6, 6, 2, 6.0],
        ["a", 4, 8, 8, 2, 11.0], ["a", 6, 10, 10, 2, 15.0], ["a", 8, 12, 12, 1, 8.0],
        ["b", 0, 4, 4, 1, 30.0], ["b", 2, 6, 6, 2, 80.0], ["b", 4, 8, 8, 1, 50.0]]
    # Sliding(Time(3), trigger=Count(2)): every second tuple fires over the tuples at
    # most 3 older than it (a: {1, 2} at 2, {4, 7} at 7; b: {3, 5} at 5)
    assert rows["policies"] == [["a", 1, 2, 2, 3.0], ["a", 4, 7, 7, 11.0],
                                ["b", 3, 5, 5, 80.0]]
    # Trailing(2, v > 3): ticks at a's 4, 7, 8 and b's 3, 5; the row's period and the one
    # before, null until a tick lies strictly before the row
    assert rows["periods"] == [["a", 1, 1, 1, None], ["a", 1, 2, 2, None],
                               ["a", 1, 4, 4, None], ["a", 1, 7, 7, 14.0],
                               ["a", 7, 8, 8, 15.0], ["b", 3, 3, 3, None],
                               ["b", 3, 5, 5, 80.0]]
    # Dynamic(clock(4), start=-4, end=0): anchors at 4 and 8 for a, 4 for b; [t-4, t]
    assert rows["dynamic"] == [["a", 0, 4, 4, 7.0], ["a", 4, 8, 8, 19.0],
                               ["b", 0, 4, 4, 30.0]]
    # Session(2): an event at most 2 after the last joins; [first, last + 2)
    assert rows["sessions"] == [["a", 1, 6, 6, 3, 7.0], ["a", 7, 10, 10, 2, 15.0],
                                ["b", 3, 7, 7, 2, 80.0]]
