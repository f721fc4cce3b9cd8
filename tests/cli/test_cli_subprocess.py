"""The installed `wisp` console script, run as a real process (its own JVM: slow, so
only one full run; a bad query fails before Spark starts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

WISP = str(Path(sys.executable).parent / "wisp")

CSV = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0
2024-01-01T00:00:02Z,a,bad
2024-01-01T00:00:04Z,a,5.0
"""
QUERY = """
events: {time: ts, key: sensor}
window: {kind: Range, start: -1s, end: 0s}
aggregations: [count, {fn: sum, col: v, as: total}]
input: {schema: "ts TIMESTAMP, sensor STRING, v DOUBLE", on_malformed: drop}
"""


def wisp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([WISP, *args], capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.mark.spark
def test_wisp_run_in_a_real_process(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(QUERY)
    (tmp_path / "e.csv").write_text(CSV)
    out = tmp_path / "out"
    done = wisp("run", str(tmp_path / "q.yaml"), "--input", str(tmp_path / "e.csv"),
                "--output", str(out), "--format", "csv", "--master", "local[1]")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = done.stdout.splitlines()
    assert summary[0].split() == ["rows", "in", "4"]
    assert summary[1].split() == ["rows", "rejected", "1", "(malformed:", "1,", "null",
                                  "time:", "0)"]
    assert summary[2].split() == ["rows", "out", "3", "->", str(out), "(csv)"]
    lines = {line for p in out.glob("part-*.csv") for line in p.read_text().splitlines()}
    t = "2024-01-01T00:00:0{}.000Z"
    assert lines == {"sensor,window_start,window_end,time,count,total",
                     f"a,{t.format(0)},{t.format(1)},{t.format(1)},1,1.0",
                     f"a,{t.format(1)},{t.format(2)},{t.format(2)},2,4.0",
                     f"a,{t.format(3)},{t.format(4)},{t.format(4)},1,5.0"}


def test_a_bad_query_fails_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(QUERY.replace("window:", "windw:"))
    done = wisp("run", str(tmp_path / "q.yaml"), "--input", "x.csv", "--output", "o")
    assert done.returncode == 2
    assert done.stderr == ("error: `windw` must be a known key of query (known: events, "
                           "window, features, aggregations, input, output, join), found "
                           "'windw'; did you mean 'window'?\n")
    assert wisp("--help").returncode == 0
    usage = wisp("run")
    assert usage.returncode == 2
    assert "Missing argument 'QUERY.yaml'" in usage.stderr
