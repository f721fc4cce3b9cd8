"""`wisp run --stream` on a directory that receives Parquet files between runs: each
`--once` run processes the files that arrived since the last one and resumes from the
checkpoint; the output equals the batch query's final rows; late rows are counted in
the progress lines; bad arguments are one line with exit code 2. In this process
(click's CliRunner, the shared test session), but for one run as a real process that
is stopped by SIGINT."""

from __future__ import annotations

import datetime as dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.cli import STREAM_RECORD, lateness_value, main

pytestmark = pytest.mark.spark

Event = tuple[str, int | None, float]  # (sensor, seconds after T0 or None, v)
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
QUERY = """
events: {time: ts, key: sensor}
window: {kind: Range, start: -10s, end: 0s}
aggregations: [count, sum(v)]
"""
# Three runs, lateness 5 s. Run 1 reads the first two files in one micro-batch, then a
# batch without data moves the watermark to 20 - 5 = 15 s. In run 2, ("a", 12) is at or
# below that watermark: late, dropped and counted; ("a", 16) is above it. Run 2 ends at
# the watermark 33 - 5 = 28 s, run 3 at 60 - 5 = 55 s.
RUNS: list[list[list[Event]]] = [
    [[("a", 10, 1.0), ("b", 11, 2.0), ("a", 10, 0.5)], [("a", 20, 4.0)]],
    [[("a", 12, 5.0), ("a", 16, 3.0), ("b", 30, 6.0)], [("a", 31, 1.0), ("c", 33, -1.0)]],
    [[("a", 60, 1.0), ("b", 60, 1.0)]],
]
LATE = [("a", 12, 5.0)]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write_parquet(path: Path, events: Sequence[Event], order: int) -> None:
    """One Parquet file of events (ts, sensor, v), modified at `order` seconds."""
    table = pa.table({
        "ts": pa.array([None if t is None else T0 + dt.timedelta(seconds=t)
                        for _, t, _ in events], pa.timestamp("us", tz="UTC")),
        "sensor": pa.array([k for k, _, _ in events], pa.string()),
        "v": pa.array([v for _, _, v in events], pa.float64())})
    pq.write_table(table, path)
    os.utime(path, (1_000_000 + order, 1_000_000 + order))


@dataclass
class Dirs:
    query: Path
    input: Path
    output: Path
    checkpoint: Path

    def run(self, *more: str) -> Result:
        return invoke("run", str(self.query), "--stream", "--input", str(self.input),
                      "--output", str(self.output), "--checkpoint", str(self.checkpoint),
                      *more)


def dirs(tmp: Path, files: Sequence[Sequence[Event]] = ()) -> Dirs:
    (tmp / "q.yaml").write_text(QUERY)
    found = Dirs(tmp / "q.yaml", tmp / "in", tmp / "out", tmp / "chk")
    found.input.mkdir()
    for i, events in enumerate(files):
        write_parquet(found.input / f"part-{i:03d}.parquet", events, i)
    return found


@dataclass
class Runs:
    dirs: Dirs
    results: list[Result]


@pytest.fixture(scope="module")
def three_runs(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """`--once` three times on the same checkpoint, the files of each run added before
    it."""
    found = dirs(tmp_path_factory.mktemp("stream"))
    results = []
    written = 0
    for files in RUNS:
        for events in files:
            write_parquet(found.input / f"part-{written:03d}.parquet", events, written)
            written += 1
        results.append(found.run("--lateness", "5s", "--once"))
    return Runs(found, results)


def out_rows(spark: SparkSession, path: Path | str) -> list[tuple[Any, ...]]:
    """(sensor, window_start, window_end, time, count, sum_v), sorted: every row,
    duplicates kept."""
    df = spark.read.parquet(str(path))
    return sorted(tuple(r) for r in df.select("sensor", "window_start", "window_end",
                                              "time", "count", "sum_v").collect())


def batch_rows(spark: SparkSession, events: Sequence[Event], upto: int
               ) -> list[tuple[Any, ...]]:
    """The same query over `events` as a batch, its rows whose window ends at or
    before `upto` seconds (final at that watermark)."""
    start = int(T0.timestamp()) * 1_000_000
    rows = [(k, start + t * 1_000_000, v) for k, t, v in events if t is not None]
    df = spark.createDataFrame(rows, "sensor string, t long, v double").select(
        F.timestamp_micros("t").alias("ts"), "sensor", "v")
    result = ws.events(df, time="ts", key="sensor").window(
        ws.Range("-10s", "0s")).agg(ws.count(), ws.sum("v"))
    final = result.where(F.col("window_end") <= F.lit(T0 + dt.timedelta(seconds=upto)))
    return sorted(tuple(r) for r in final.select("sensor", "window_start", "window_end",
                                                 "time", "count", "sum_v").collect())


# ------------------------------------------------------------------ three runs


def test_each_run_resumes_and_the_output_equals_the_final_batch_rows(
        streaming: SparkSession, three_runs: Runs) -> None:
    assert [r.exit_code for r in three_runs.results] == [0, 0, 0], \
        [r.output for r in three_runs.results]
    accepted = [e for run in RUNS for f in run for e in f if e not in LATE]
    want = batch_rows(streaming, accepted, upto=55)
    assert len(want) == 8  # every accepted event's window but the two at 60 s
    got = out_rows(streaming, three_runs.dirs.output)
    assert got == want  # the same rows, none twice


def test_a_progress_line_per_micro_batch_then_the_summary(three_runs: Runs) -> None:
    """Run 1: the files in one batch, then a batch without data that moves the
    watermark; run 2 resumes at batch 2 and drops ("a", 12) as late."""
    first, second, third = (r.stdout.splitlines() for r in three_runs.results)
    assert first[:2] == [
        "batch 0: 4 rows in, 0 rows out, 0 late, watermark 1970-01-01T00:00:00Z",
        "batch 1: 0 rows in, 3 rows out, 0 late, watermark 2024-01-01T00:00:15Z"]
    assert second[:2] == [
        "batch 2: 5 rows in, 0 rows out, 1 late, watermark 2024-01-01T00:00:15Z",
        "batch 3: 0 rows in, 2 rows out, 0 late, watermark 2024-01-01T00:00:28Z"]
    assert third[:2] == [
        "batch 4: 2 rows in, 0 rows out, 0 late, watermark 2024-01-01T00:00:28Z",
        "batch 5: 0 rows in, 3 rows out, 0 late, watermark 2024-01-01T00:00:55Z"]
    summary = [line.split() for line in second[2:]]
    out = str(three_runs.dirs.output)
    assert summary[:7] == [
        ["batches", "2"], ["rows", "in", "5"], ["rows", "late", "1"],
        ["rows", "rejected", "0", "(null", "time:", "0)"],
        ["rows", "out", "2", "->", out, "(parquet)"],
        ["keys", "in", "state", "3"],  # a (31), b (30) and c (33) wait for 28 + ...
        ["watermark", "2024-01-01T00:00:28Z"]]
    assert summary[7][:2] == ["wall", "time"] and summary[7][-1] == "s"
    assert len(summary) == 8


def test_a_run_without_new_files_writes_nothing_again(streaming: SparkSession,
                                                       three_runs: Runs) -> None:
    before = out_rows(streaming, three_runs.dirs.output)
    again = three_runs.dirs.run("--lateness", "5s", "--once")
    assert again.exit_code == 0, again.output
    summary = [line.split() for line in again.stdout.splitlines()]
    assert summary[0] == ["batches", "0"]  # no file, and the watermark stays: no batch
    assert summary[4][:3] == ["rows", "out", "0"]
    assert summary[5:7] == [["keys", "in", "state", "-"], ["watermark", "-"]]
    assert out_rows(streaming, three_runs.dirs.output) == before


# ---------------------------------------------------------------- refusals


FIRST = [("a", 10, 1.0)]


def refused(result: Result, message: str, code: int = 2) -> None:
    assert (result.exit_code, result.stderr) == (code, f"error: {message}\n"), \
        result.output


def test_lateness_and_checkpoint_are_required(tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    refused(d.run("--once"),
            "`--lateness` must be given with --stream (how late a row may arrive: a "
            "duration such as 30s, or a number for numeric time), found nothing")
    no_checkpoint = invoke("run", str(d.query), "--stream", "--input", str(d.input),
                           "--output", str(d.output), "--lateness", "5s")
    refused(no_checkpoint, "`--checkpoint` must be given with --stream (the directory "
            "where the stream keeps its progress and state), found nothing")


def test_stream_flags_without_stream_are_refused(tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    refused(invoke("run", str(d.query), "--input", str(d.input), "--output",
                   str(d.output), "--lateness", "5s"),
            "`--lateness` must be given only with --stream, found '5s'")
    refused(invoke("run", str(d.query), "--input", str(d.input), "--output",
                   str(d.output), "--once"),
            "`--once` must be given only with --stream, found --once")


def test_overwrite_and_csv_are_refused(tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    refused(d.run("--lateness", "5s", "--overwrite"),
            "`--overwrite` must not be given with --stream (a stream appends to its "
            "--output, to which its --checkpoint belongs; to start over, delete both), "
            "found --overwrite")
    refused(d.run("--lateness", "5s", "--format", "csv"),
            "`--format` must be parquet with --stream (the stream writes Parquet "
            "files), found 'csv'")


def test_a_stream_needs_a_directory_with_a_file(tmp_path: Path) -> None:
    d = dirs(tmp_path)
    (d.input / "_temporary").mkdir()  # a writer's file not yet in place: not one
    (d.input / "_temporary" / "part-0.parquet").write_text("")
    refused(d.run("--lateness", "5s"),
            f"`--input` must hold a Parquet file when --stream starts (its schema is "
            f"the stream's), found no file in {str(d.input)!r}; add one, or give "
            "input.schema in the query")
    missing = invoke("run", str(d.query), "--stream", "--input", str(tmp_path / "nope"),
                     "--output", str(d.output), "--checkpoint", str(d.checkpoint),
                     "--lateness", "5s")
    refused(missing, f"`--input` must be an existing file or directory, found "
            f"{str(tmp_path / 'nope')!r}")
    write_parquet(tmp_path / "one.parquet", FIRST, 0)
    file = invoke("run", str(d.query), "--stream", "--input", str(tmp_path / "one.parquet"),
                  "--output", str(d.output), "--checkpoint", str(d.checkpoint),
                  "--lateness", "5s")
    refused(file, f"`--input` must be a directory with --stream (the stream reads the "
            f"files that arrive in it), found the file {str(tmp_path / 'one.parquet')!r}")
    assert not d.output.exists() and not d.checkpoint.exists()


def test_output_and_checkpoint_stay_apart_from_the_input_and_each_other(
        tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    inside = str(d.input / "out")

    def run(output: Path | str, checkpoint: Path | str) -> Result:
        return invoke("run", str(d.query), "--stream", "--input", str(d.input),
                      "--output", str(output), "--checkpoint", str(checkpoint),
                      "--lateness", "5s")

    refused(run(inside, d.checkpoint), f"`--output` must not lie inside the input, found "
            f"{inside!r}, inside the input {str(d.input)!r}")
    refused(run(d.output, d.input / "chk"), f"`--checkpoint` must not lie inside the "
            f"input, found {str(d.input / 'chk')!r}, inside the input {str(d.input)!r}")
    refused(run(d.output, tmp_path), f"`--checkpoint` must not hold the input, found "
            f"{str(tmp_path)!r}, which holds the input {str(d.input)!r}")
    refused(run(d.output, d.output / "chk"), f"`--checkpoint` must not lie inside "
            f"--output, found {str(d.output / 'chk')!r}, inside --output "
            f"{str(d.output)!r}")
    refused(run(d.output, d.output), f"`--checkpoint` must differ from --output, found "
            f"{str(d.output)!r}, which is --output {str(d.output)!r}")
    (tmp_path / "link").symlink_to(d.input)  # a checkpoint through a link into the input
    through = str(tmp_path / "link" / "chk")
    refused(run(d.output, through), f"`--checkpoint` must not lie inside the input, "
            f"found {through!r}, inside the input {str(d.input)!r}")
    assert sorted(p.name for p in d.input.iterdir()) == ["part-000.parquet"]


def test_an_existing_output_needs_its_checkpoint(tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    d.output.mkdir()
    (d.output / "keep.parquet").write_text("someone's")
    refused(d.run("--lateness", "5s"), f"`--output` must not exist when a stream starts "
            f"(a stream resumes only with the --checkpoint it wrote), found an existing "
            f"{str(d.output)!r}")
    d.checkpoint.mkdir()
    (d.checkpoint / "metadata").write_text("{}")
    refused(d.run("--lateness", "5s"), f"`--checkpoint` must be new, empty or the "
            f"checkpoint of a wisp stream, found {str(d.checkpoint)!r}, which holds "
            f"other files (no {STREAM_RECORD})")
    other = str(tmp_path / "elsewhere")
    (d.checkpoint / STREAM_RECORD).write_text(json.dumps(
        {"input": str(d.input), "output": other}))
    refused(d.run("--lateness", "5s"), f"`--checkpoint` must be the checkpoint of the "
            f"stream into this --output ({str(d.output)!r}), found the checkpoint of the "
            f"stream into {other!r} in {str(d.checkpoint)!r}")
    assert (d.output / "keep.parquet").read_text() == "someone's"


def test_lateness_is_a_duration_or_a_number_for_numeric_time() -> None:
    assert lateness_value("30s") == "30s"
    assert lateness_value("1h30m") == "1h30m"
    assert lateness_value("100") == 100 and isinstance(lateness_value("100"), int)
    assert lateness_value("2.5") == Decimal("2.5")
    assert lateness_value("-5") == -5  # refused by ws.events, naming --lateness


def test_a_bad_lateness_names_the_flag(streaming: SparkSession, tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    refused(d.run("--lateness", "30"), "`--lateness` must be a positive duration such "
            "as '30s' or a timedelta, found 30")
    refused(d.run("--lateness", "soon"), "`--lateness` must be a positive duration such "
            "as '30s' or a timedelta, found 'soon'")
    assert not d.output.exists() and not d.checkpoint.exists()


def test_a_window_that_does_not_run_on_a_stream_is_unsupported(
        streaming: SparkSession, tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    d.query.write_text(QUERY.replace("{kind: Range, start: -10s, end: 0s}",
                                     "{kind: Hopping, size: 10s, hop: 5s, "
                                     "output: changes}"))
    result = d.run("--lateness", "5s")
    assert result.exit_code == 1, result.output
    # the kinds that run on a stream are listed between these (and grow)
    assert result.stderr.startswith("error: not supported yet: `window` must be one of "
                                    "CountByStartTime, cumulative (ev.agg), Dynamic")
    assert result.stderr.endswith(" on a stream (the other kinds do not run on a stream "
                                  "yet), found Hopping(output='changes') (its rows can "
                                  "wait for ever for the result to change)\n")
    assert not d.output.exists() and not d.checkpoint.exists()


def test_a_null_time_fails_the_stream_with_exit_2_and_leaves_nothing(
        streaming: SparkSession, tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST, [("b", None, 2.0)]])
    result = d.run("--lateness", "5s", "--once")
    refused(result, "`time` column 'ts' must not be null, found a null time in file "
            f"{(d.input / 'part-001.parquet').as_uri()} (a file without the column reads "
            "it as null); pass on_null_time='drop' to drop such rows on purpose (they are "
            "counted by wisp.report)")
    assert not d.output.exists() and not d.checkpoint.exists()


# ------------------------------------------------------------ a running stream

WISP = str(Path(sys.executable).parent / "wisp")


class Printed:
    """The lines a process prints on stdout, as they come (read by a thread)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self.read, args=(process,), daemon=True)
        self.reader.start()

    def read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.put(line.rstrip("\n"))

    def next(self, deadline: float) -> str:
        try:
            return self.lines.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            raise AssertionError("no progress line in time") from None

    def rest(self) -> list[str]:
        """The lines left, once the process has ended."""
        self.reader.join(timeout=30)
        return [self.lines.get() for _ in range(self.lines.qsize())]


def test_a_running_stream_picks_up_new_files_and_stops_on_sigint(tmp_path: Path) -> None:
    """Without --once the stream waits for files: a file added while it runs is
    processed; SIGINT stops it cleanly (exit code 0, the summary), and what it wrote
    stays."""
    d = dirs(tmp_path, [[("a", 10, 1.0), ("b", 11, 2.0)]])
    with (tmp_path / "stderr").open("w") as errors:
        process = subprocess.Popen(
            [WISP, "run", str(d.query), "--stream", "--input", str(d.input), "--output",
             str(d.output), "--checkpoint", str(d.checkpoint), "--lateness", "5s",
             "--master", "local[1]"], stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        printed = Printed(process)
        deadline = time.monotonic() + 240
        lines = [printed.next(deadline)]
        assert lines[0] == ("batch 0: 2 rows in, 0 rows out, 0 late, watermark "
                            "1970-01-01T00:00:00Z")
        # written aside, then moved in: the stream never sees a half-written file
        write_parquet(tmp_path / "next.parquet", [("a", 30, 3.0)], 1)
        os.rename(tmp_path / "next.parquet", d.input / "part-001.parquet")
        while " 2 rows out" not in lines[-1]:
            lines.append(printed.next(deadline))
        process.send_signal(signal.SIGINT)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, (tmp_path / "stderr").read_text()[-3000:]
    assert lines[-1].endswith(", 0 late, watermark 2024-01-01T00:00:25Z")
    rest = printed.rest()
    assert rest[0] == "stopped by SIGINT: run again with the same --checkpoint to resume"
    assert rest[5].split() == ["rows", "out", "2", "->", str(d.output), "(parquet)"]
    written = pq.read_table(d.output).to_pylist()
    assert sorted((r["sensor"], r["time"].second, r["count"]) for r in written) == [
        ("a", 10, 1), ("b", 11, 1)]


def test_on_late_emit_writes_the_late_row_and_counts_it(streaming: SparkSession,
                                                        tmp_path: Path) -> None:
    """One file per micro-batch (input.options: maxFilesPerTrigger). Key a's windows
    are computed up to 25 s in the batch of ("b", 40) (its timer for 10 s fires at the
    watermark 30 - 5), so ("a", 20), in the next batch, comes out as a late row."""
    d = dirs(tmp_path, [[("a", 10, 1.0)], [("a", 30, 2.0)], [("b", 40, 3.0)],
                        [("a", 20, 4.0)]])
    d.query.write_text(QUERY + "input: {options: {maxFilesPerTrigger: 1}}\n")
    result = d.run("--lateness", "5s", "--once", "--on-late", "emit")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "batch 0: 1 rows in, 0 rows out, 0 late, watermark 1970-01-01T00:00:00Z",
        "batch 1: 1 rows in, 0 rows out, 0 late, watermark 2024-01-01T00:00:05Z",
        "batch 2: 1 rows in, 1 rows out, 0 late, watermark 2024-01-01T00:00:25Z",
        # the window of ("a", 30), final at 35 s, and the late row
        "batch 3: 1 rows in, 2 rows out, 1 late, watermark 2024-01-01T00:00:35Z"]
    assert lines[6].split() == ["rows", "late", "1", "(emitted:", "1)"]
    rows = streaming.read.parquet(str(d.output))
    late = rows.where("late_reason IS NOT NULL").select("sensor", "late_row.*").collect()
    assert [(r["sensor"], r["ts"], r["v"]) for r in late] == [
        ("a", dt.datetime(2024, 1, 1, 0, 0, 20), 4.0)]  # naive UTC, the session's zone


def test_a_checkpoint_with_finished_batches_needs_its_output(tmp_path: Path) -> None:
    d = dirs(tmp_path, [FIRST])
    (d.checkpoint / "commits").mkdir(parents=True)
    (d.checkpoint / "commits" / "0").write_text("v1\n{}")
    (d.checkpoint / STREAM_RECORD).write_text(json.dumps(
        {"input": str(d.input), "output": str(d.output)}))
    refused(d.run("--lateness", "5s"), f"`--output` must hold what the stream of "
            f"--checkpoint wrote so far (a checkpoint belongs to its output), found no "
            f"{str(d.output)!r}; to start over, delete the checkpoint too")


def test_a_file_that_is_not_parquet_fails_the_stream_naming_it(
        streaming: SparkSession, tmp_path: Path) -> None:
    """With input.schema, nothing is read before the stream runs: the stream itself
    fails on the file (Spark's error then does not say why: wisp looks at the file)."""
    d = dirs(tmp_path, [FIRST])
    d.query.write_text(QUERY + "input: {schema: 'ts TIMESTAMP, sensor STRING, v DOUBLE'}\n")
    (d.input / "notes.parquet").write_text("ts,sensor,v\n")
    refused(d.run("--lateness", "5s", "--once"), f"`--input` must hold only Parquet "
            f"files, found {str(d.input / 'notes.parquet')!r}, which is not one (it has "
            "no Parquet footer)")
    assert not d.output.exists() and not d.checkpoint.exists()


EDGES_QUERY = """
events: {time: ts, key: sensor, edge: kind, id: ride}
window: {kind: Tumbling, size: 10s}
aggregations: [count, sum(v)]
"""
# (sensor, seconds after T0, v, ride, kind), two runs, lateness 5 s: a ride 1 [10, 14),
# ride 2 [12, 40) (its end in the second run), ride 3 [50, open); b ride 1 [11, open).
EDGE_RUNS: list[list[tuple[str, int, float | None, int, str]]] = [
    [("a", 10, 1.0, 1, "start"), ("b", 11, 2.0, 1, "start"), ("a", 12, 3.0, 2, "start"),
     ("a", 14, None, 1, "end"), ("a", 25, 4.0, 4, "start"), ("a", 26, None, 4, "end")],
    [("a", 40, None, 2, "end"), ("a", 50, 5.0, 3, "start"), ("b", 60, 1.0, 2, "start")],
]


def test_edge_rows_on_a_stream_equal_the_final_batch_rows(streaming: SparkSession,
                                                          tmp_path: Path) -> None:
    """`events.edge` with --stream: the edges are paired as they pass the watermark (a
    start's end edge may come in a later run); the rows equal the batch's final ones."""
    (tmp_path / "q.yaml").write_text(EDGES_QUERY)
    found = Dirs(tmp_path / "q.yaml", tmp_path / "in", tmp_path / "out", tmp_path / "chk")
    found.input.mkdir()
    for i, edges in enumerate(EDGE_RUNS):
        table = pa.table({
            "ts": pa.array([T0 + dt.timedelta(seconds=e[1]) for e in edges],
                           pa.timestamp("us", tz="UTC")),
            "sensor": [e[0] for e in edges], "v": pa.array([e[2] for e in edges],
                                                           pa.float64()),
            "ride": [e[3] for e in edges], "kind": [e[4] for e in edges]})
        path = found.input / f"part-{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
        result = found.run("--lateness", "5s", "--once")
        assert result.exit_code == 0, result.output
    rows = [(k, int(T0.timestamp() + t) * 1_000_000, v, ride, kind)
            for run in EDGE_RUNS for k, t, v, ride, kind in run]
    df = streaming.createDataFrame(rows, "sensor string, t long, v double, ride long, "
                                   "kind string").select(
        F.timestamp_micros("t").alias("ts"), "sensor", "v", "ride", "kind")
    batch = ws.from_edges(df, "ts", edge="kind", id="ride", key="sensor").window(
        ws.Tumbling("10s")).agg(ws.count(), ws.sum("v"))
    final = batch.where(F.col("window_end") <= F.lit(T0 + dt.timedelta(seconds=55)))
    want = sorted(tuple(r) for r in final.select("sensor", "window_start", "window_end",
                                                 "time", "count", "sum_v").collect())
    # a: 10-20 (rides 1, 2), 20-30 (2, 4), 30-40 (2); b: 10-20 ... 40-50 (ride 1,
    # open); 50-60 (a's ride 3, b's ride 1) ends after the watermark 55
    assert len(want) == 7
    assert out_rows(streaming, found.output) == want
