"""wisp over a Spark Connect server whose Python lacks wisp: a query fails in the
server's Python workers until the client ships wisp as a session artifact
(`spark.addArtifacts("wisp.zip", pyfile=True)`, docs/cluster.md), then runs. The client
runs in a process of its own: the test run holds one classic session."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from spark_processes import connect_server, executor_python, script_result, wisp_zip

pytestmark = pytest.mark.spark

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import wisp as ws

    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    df = spark.createDataFrame([(1, "a", 1.0), (2, "a", 2.0), (4, "a", 4.0), (7, "a", 7.0),
                                (3, "b", 30.0)], "t long, k string, v double")

    def sessions():
        out = ws.events(df, time="t", key="k").window(ws.Session(2)).agg(ws.sum("v"))
        return [list(r) for r in out.orderBy("k", "time").collect()]

    try:
        before = sessions()
    except Exception as error:
        before = str(error)
    spark.addArtifacts(sys.argv[2], pyfile=True)
    print("RESULT " + json.dumps({"before": before, "after": sessions()}))
    spark.stop()
""")


def test_a_connect_client_ships_wisp_to_a_server_without_it(tmp_path: Path) -> None:
    python = executor_python(tmp_path / "server-env")
    shipped = wisp_zip(tmp_path / "wisp.zip")
    with connect_server(tmp_path, str(python)) as remote:
        done = subprocess.run([sys.executable, "-c", CLIENT, remote, str(shipped)],
                              capture_output=True, text=True, timeout=240, check=False)
    result = script_result(done)
    assert isinstance(result["before"], str)
    assert "No module named 'wisp'" in result["before"]
    # Session(2) per key: a's 1, 2, 4 (each at most 2 after the last) and 7 alone; b's 3
    assert result["after"] == [["a", 1, 6, 6, 7.0], ["a", 7, 9, 9, 7.0],
                               ["b", 3, 5, 5, 30.0]]
