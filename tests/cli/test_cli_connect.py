"""The `wisp` command over Spark Connect: `wisp run --master sc://...` against a Connect
server of its own (a separate JVM on loopback whose Python has wisp installed), run as
a real process like a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from spark_processes import connect_server

pytestmark = pytest.mark.spark

WISP = str(Path(sys.executable).parent / "wisp")

CSV = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0
2024-01-01T00:00:02Z,a,bad
2024-01-01T00:00:04Z,a,5.0
2024-01-01T00:00:03Z,b,10.0
"""
QUERY = """
events: {time: ts, key: sensor}
window: {kind: Range, start: -1s, end: 0s}
aggregations: [count, {fn: sum, col: v, as: total}]
input: {schema: "ts TIMESTAMP, sensor STRING, v DOUBLE", on_malformed: drop}
"""
T = "2024-01-01T00:00:0{}.000Z"
ROWS = {"sensor,window_start,window_end,time,count,total",
        f"a,{T.format(0)},{T.format(1)},{T.format(1)},1,1.0",
        f"a,{T.format(1)},{T.format(2)},{T.format(2)},2,4.0",
        f"a,{T.format(3)},{T.format(4)},{T.format(4)},1,5.0",
        f"b,{T.format(2)},{T.format(3)},{T.format(3)},1,10.0"}


def wisp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([WISP, *args], capture_output=True, text=True, timeout=300,
                          check=False)


def csv_lines(out: Path) -> set[str]:
    return {line for p in out.glob("part-*.csv") for line in p.read_text().splitlines()}


def test_wisp_run_over_spark_connect(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(QUERY)
    (tmp_path / "e.csv").write_text(CSV)
    query, events, out = str(tmp_path / "q.yaml"), str(tmp_path / "e.csv"), tmp_path / "out"
    with connect_server(tmp_path, sys.executable) as master:
        # a new output: the write mode is "error" (fail if it exists), which Connect takes
        done = wisp("run", query, "--input", events, "--output", str(out), "--format", "csv",
                    "--master", master)
        assert done.returncode == 0, done.stderr[-3000:]
        summary = done.stdout.splitlines()
        assert summary[0].split() == ["rows", "in", "5"]
        assert summary[1].split() == ["rows", "rejected", "1", "(malformed:", "1,", "null",
                                      "time:", "0)"]
        assert summary[2].split() == ["rows", "out", "4", "->", str(out), "(csv)"]
        assert csv_lines(out) == ROWS

        again = wisp("run", query, "--input", events, "--output", str(out), "--format", "csv",
                     "--master", master)
        assert again.returncode == 2
        assert again.stderr == (f"error: `--output` must not exist (pass --overwrite to "
                                f"replace it), found an existing {str(out)!r}\n")

        (out / "stale.csv").write_text("not a result\n")
        replaced = wisp("run", query, "--input", events, "--output", str(out), "--format",
                        "csv", "--master", master, "--overwrite", "--explain")
        assert replaced.returncode == 0, replaced.stderr[-3000:]
        assert "Strategy arrow-frames" in replaced.stdout
        assert not (out / "stale.csv").exists()
        assert csv_lines(out) == ROWS
