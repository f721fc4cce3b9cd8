"""`wisp_window` from beeline, through a Thrift JDBC server started with wisp registered
(docs/sql.md, "The Thrift server, spark-sql and beeline"): the documented driver script
run as a process of its own, bound to loopback, and pip PySpark's own `beeline` as the
client, each a process this test starts and stops by its id."""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from spark_processes import LOOPBACK, SPARK_HOME, free_port, spark_env, spark_process

import wisp

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SCRIPT_START = "```python no-run\n# thrift_wisp.py"
PROMPT = re.compile(r"^\d+: jdbc:hive2://\S+> ")


def documented(page: str, start: str) -> str:
    """The fenced block of docs/`page` that begins with `start`, without its fences."""
    text = (ROOT / "docs" / page).read_text()
    begin = text.index(start) + len(start.split("\n")[0]) + 1
    return text[begin:text.index("```", begin)]


def documented_query() -> str:
    """The query of the page's beeline example (the statement inside its double quotes,
    its lines joined as the shell joins them)."""
    text = documented("sql.md", "```\nbeeline -u")
    statement = text[text.index('"') + 1:text.rindex('"')]
    return " ".join(line.strip() for line in statement.splitlines())


def beeline(port: int, statement: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """pip PySpark's `beeline` running `statement` against the server, rows as CSV."""
    return subprocess.run(
        [str(SPARK_HOME / "bin" / "beeline"), "-u", f"jdbc:hive2://{LOOPBACK}:{port}/default",
         "-n", "wisp", "--silent=true", "--outputformat=csv2", "-e", statement],
        capture_output=True, text=True, timeout=180, check=False, cwd=cwd,
        env=spark_env(SPARK_HOME=str(SPARK_HOME)))


def test_a_query_from_beeline_through_the_thrift_server(spark: SparkSession,
                                                        tmp_path: Path) -> None:
    script = tmp_path / "thrift_wisp.py"
    script.write_text(documented("sql.md", SCRIPT_START))
    start = dt.datetime(2024, 1, 1)
    # two sensors, a reading every 2 minutes each, the temperature the minute's number
    spark.createDataFrame([(f"s{m % 2}", start + dt.timedelta(minutes=m), float(m))
                           for m in range(8)], "sensor string, ts timestamp, "
                          "temperature double").write.parquet(str(tmp_path / "readings.parquet"))
    port = free_port()
    env = spark_env(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                    PYTHONPATH=str(Path(wisp.__file__).resolve().parent.parent),
                    HIVE_SERVER2_THRIFT_PORT=str(port), HIVE_SERVER2_THRIFT_BIND_HOST=LOOPBACK)
    query = documented_query()
    assert query.startswith("SELECT * FROM wisp_window(TABLE(readings), '{events:")
    with spark_process("thrift-server", [sys.executable, script], tmp_path, env) as server:
        server.wait_for("wisp Thrift server ready", timeout=240)
        done = beeline(port, f"SELECT sensor, mean_temperature FROM ({query}) "
                             "ORDER BY sensor, time", tmp_path)
        assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        # beeline echoes its prompt before the first line it prints
        rows = [PROMPT.sub("", line) for line in done.stdout.splitlines() if line.strip()]
        # the 10 minutes up to each reading hold every earlier reading of its sensor
        assert rows == ["sensor,mean_temperature", "s0,0.0", "s0,1.0", "s0,2.0", "s0,3.0",
                        "s1,1.0", "s1,2.0", "s1,3.0", "s1,4.0"]
        bad = beeline(port, query.replace("start", "strat"), tmp_path)
        assert bad.returncode != 0
        assert "wisp.query.QueryError: `window.strat` must be a known key of Range" in \
            bad.stdout + bad.stderr
