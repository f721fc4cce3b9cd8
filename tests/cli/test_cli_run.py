"""`wisp run`, `wisp explain` and `wisp demo` end to end on real files, in this process
(click's CliRunner; the CLI reuses the shared test session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from wisp.cli import main

pytestmark = pytest.mark.spark

CSV = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0
2024-01-01T00:00:04Z,a,5.0
2024-01-01T00:00:01Z,b,10.0
2024-01-01T00:00:03Z,b,20.0
"""
SCHEMA = "ts TIMESTAMP, sensor STRING, v DOUBLE"


@pytest.fixture(autouse=True)
def shared_session(spark: SparkSession) -> None:
    """Start the shared test session first: the CLI then reuses it instead of starting
    its own."""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def query(tmp_path: Path, body: str, name: str = "query.yaml") -> str:
    return write(tmp_path / name, body)


def rows(spark: SparkSession, path: str, *values: str) -> list[tuple[Any, ...]]:
    """(sensor, window_start, window_end, time as HH:mm:ss, *values), sorted."""
    df = spark.read.parquet(path)
    hms = [F.date_format(c, "HH:mm:ss").alias(c) for c in ("window_start", "window_end",
                                                            "time")]
    return sorted(tuple(r) for r in df.select("sensor", *hms, *values).collect())


@pytest.fixture(scope="module")
def parquet_input(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("parquet")
    csv = write(folder / "events.csv", CSV)
    path = str(folder / "events.parquet")
    spark.read.option("header", True).schema(SCHEMA).csv(csv).write.parquet(path)
    return path


QUERY = """
events: {time: ts, key: sensor}
window: {kind: Range, start: -1s, end: 0s}
aggregations:
  - count
  - {fn: mean, col: v, as: m}
"""


def test_parquet_in_parquet_out(spark: SparkSession, parquet_input: str,
                                tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    result = invoke("run", query(tmp_path, QUERY), "--input", parquet_input,
                    "--output", out)
    assert result.exit_code == 0, result.output
    # Range(-1s, 0s): [t - 1 s, t], both ends included, one output per event.
    assert rows(spark, out, "count", "m") == [
        ("a", "00:00:00", "00:00:01", "00:00:01", 1, 1.0),
        ("a", "00:00:01", "00:00:02", "00:00:02", 2, 2.0),
        ("a", "00:00:03", "00:00:04", "00:00:04", 1, 5.0),
        ("b", "00:00:00", "00:00:01", "00:00:01", 1, 10.0),
        ("b", "00:00:02", "00:00:03", "00:00:03", 1, 20.0)]
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["rows", "in", "5"]
    assert lines[1].split() == ["rows", "rejected", "0", "(null", "time:", "0)"]
    assert lines[2].split() == ["rows", "out", "5", "->", out, "(parquet)"]
    assert lines[3].startswith("wall time") and lines[3].endswith(" s")


def test_csv_in_csv_out(tmp_path: Path) -> None:
    body = ("events: {time: ts, key: sensor}\nwindow: {kind: Range, start: -2s, end: 0s}\n"
            f"aggregations: [sum(v)]\ninput: {{schema: '{SCHEMA}'}}\n")
    out = tmp_path / "out"
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "events.csv", CSV), "--output", str(out),
                    "--format", "csv")
    assert result.exit_code == 0, result.output
    parts = sorted(out.glob("part-*.csv"))
    lines = [line for p in parts for line in p.read_text().splitlines()]
    header = "sensor,window_start,window_end,time,sum_v"
    assert set(lines) == {
        header,
        "a,2023-12-31T23:59:59.000Z,2024-01-01T00:00:01.000Z,2024-01-01T00:00:01.000Z,1.0",
        "a,2024-01-01T00:00:00.000Z,2024-01-01T00:00:02.000Z,2024-01-01T00:00:02.000Z,4.0",
        "a,2024-01-01T00:00:02.000Z,2024-01-01T00:00:04.000Z,2024-01-01T00:00:04.000Z,8.0",
        "b,2023-12-31T23:59:59.000Z,2024-01-01T00:00:01.000Z,2024-01-01T00:00:01.000Z,10.0",
        "b,2024-01-01T00:00:01.000Z,2024-01-01T00:00:03.000Z,2024-01-01T00:00:03.000Z,30.0"}
    assert len(lines) == 5 + len(parts)  # one header per part file, five data rows
    assert "rows out                 5" in result.stdout


JSON = "\n".join([
    '{"ts": "2024-01-01T00:00:01Z", "sensor": "a", "v": 1.0}',
    '{"ts": "2024-01-01T00:00:02Z", "sensor": "a", "v": 3.0}',
    '{"ts": "2024-01-01T00:00:04Z", "sensor": "a", "v": 5.0}',
    '{"ts": "2024-01-01T00:00:01Z", "sensor": "b", "v": 10.0}',
    '{"ts": "2024-01-01T00:00:03Z", "sensor": "b", "v": 20.0}']) + "\n"


def test_json_in_parquet_out_cumulative(spark: SparkSession, tmp_path: Path) -> None:
    body = ("events: {time: ts, key: sensor}\nwindow: cumulative\n"
            f"aggregations: [count, max(v), collect(v)]\ninput: {{schema: '{SCHEMA}'}}\n")
    out = str(tmp_path / "out")
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "events.json", JSON), "--output", out)
    assert result.exit_code == 0, result.output
    assert rows(spark, out, "count", "max_v", "collect_v") == [
        ("a", "00:00:01", "00:00:01", "00:00:01", 1, 1.0, [1.0]),
        ("a", "00:00:01", "00:00:02", "00:00:02", 2, 3.0, [1.0, 3.0]),
        ("a", "00:00:01", "00:00:04", "00:00:04", 3, 5.0, [1.0, 3.0, 5.0]),
        ("b", "00:00:01", "00:00:01", "00:00:01", 1, 10.0, [10.0]),
        ("b", "00:00:01", "00:00:03", "00:00:03", 2, 20.0, [10.0, 20.0])]


def test_arrays_are_json_text_in_csv_output(tmp_path: Path) -> None:
    body = ("events: {time: ts, key: sensor}\nwindow: {kind: Rows, start: -1, end: 0}\n"
            f"aggregations: [collect(v)]\ninput: {{schema: '{SCHEMA}'}}\n")
    out = tmp_path / "out"
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "events.json", JSON), "--output", str(out),
                    "--format", "csv")
    assert result.exit_code == 0, result.output
    lines = {line for p in out.glob("part-*.csv") for line in p.read_text().splitlines()}
    t = "2024-01-01T00:00:0{}.000Z"
    assert lines == {
        "sensor,window_start,window_end,time,collect_v",
        f'a,{t.format(1)},{t.format(2)},{t.format(2)},"[1.0,3.0]"',
        f'a,{t.format(2)},{t.format(4)},{t.format(4)},"[3.0,5.0]"',
        f'b,{t.format(1)},{t.format(3)},{t.format(3)},"[10.0,20.0]"'}


def test_json_time_as_text_gets_a_hint(tmp_path: Path) -> None:
    body = "events: {time: ts, key: sensor}\naggregations: [count]\n"
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "events.json", JSON), "--output", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "`time` must be a timestamp" in result.stderr
    assert "found \"string column 'ts'\"" in result.stderr
    assert "give input.schema" in result.stderr


MALFORMED = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0,oops
2024-01-01T00:00:03Z,a
2024-01-01T00:00:04Z,a,not-a-number
2024-01-01T00:00:05Z,a,5.0
"""


def test_a_malformed_csv_row_is_an_error_by_default(tmp_path: Path) -> None:
    body = (f"events: {{time: ts, key: sensor}}\naggregations: [count]\n"
            f"input: {{schema: '{SCHEMA}'}}\n")
    out = tmp_path / "out"
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "bad.csv", MALFORMED), "--output", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: `input` must be well-formed CSV, found a malformed row; set "
        "input.on_malformed: drop to drop such rows on purpose (they are counted); "
        "first malformed row: 2024-01-01T00:00:0")
    assert not out.exists()  # the failed run leaves no partial output behind


def test_malformed_csv_rows_dropped_on_purpose_are_counted(spark: SparkSession,
                                                           tmp_path: Path) -> None:
    body = (f"events: {{time: ts, key: sensor}}\naggregations: [count, sum(v)]\n"
            f"input: {{schema: '{SCHEMA}', on_malformed: drop}}\n")
    out = str(tmp_path / "out")
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "bad.csv", MALFORMED), "--output", out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["rows", "in", "5"]
    assert lines[1].split() == ["rows", "rejected", "3", "(malformed:", "3,", "null",
                                "time:", "0)"]
    assert lines[2].split()[:3] == ["rows", "out", "2"]
    assert rows(spark, out, "count", "sum_v") == [
        ("a", "00:00:01", "00:00:01", "00:00:01", 1, 1.0),
        ("a", "00:00:01", "00:00:05", "00:00:05", 2, 6.0)]


def test_a_malformed_json_line_is_counted_when_dropped(tmp_path: Path) -> None:
    text = JSON + '{"ts": "2024-01-01T00:00:09Z", "sensor": \n'
    body = (f"events: {{time: ts, key: sensor}}\naggregations: [count]\n"
            f"input: {{schema: '{SCHEMA}', on_malformed: drop}}\n")
    result = invoke("run", query(tmp_path, body), "--input",
                    write(tmp_path / "e.json", text), "--output", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split()[:4] == ["rows", "rejected", "1",
                                                         "(malformed:"]


NULL_TIME = "ts,sensor,v\n2024-01-01T00:00:01Z,a,1.0\n,a,2.0\n2024-01-01T00:00:03Z,a,3.0\n"


def test_a_null_time_is_bad_input_unless_dropped(tmp_path: Path) -> None:
    data = write(tmp_path / "nulls.csv", NULL_TIME)
    body = (f"events: {{time: ts, key: sensor}}\naggregations: [count]\n"
            f"input: {{schema: '{SCHEMA}'}}\n")
    failed = invoke("run", query(tmp_path, body), "--input", data, "--output",
                    str(tmp_path / "o1"))
    assert failed.exit_code == 2
    assert failed.stderr.startswith("error: `time` column 'ts' must not be null, found a "
                                    f"null time in file {Path(data).as_uri()} (a file "
                                    "without the column reads it as null); pass "
                                    "on_null_time='drop'")
    dropped = body.replace("key: sensor}", "key: sensor, on_null_time: drop}")
    result = invoke("run", query(tmp_path, dropped, "q2.yaml"), "--input", data, "--output",
                    str(tmp_path / "o2"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].split() == [
        "rows", "rejected", "1", "(malformed:", "0,", "null", "time:", "1)"]


def test_refuses_to_overwrite_without_the_flag(parquet_input: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    q = query(tmp_path, QUERY)
    refused = invoke("run", q, "--input", parquet_input, "--output", str(out))
    assert refused.exit_code == 2
    assert refused.stderr == (f"error: `--output` must not exist (pass --overwrite to "
                              f"replace it), found an existing {str(out)!r}\n")
    assert (out / "keep.txt").read_text() == "mine"
    replaced = invoke("run", q, "--input", parquet_input, "--output", str(out),
                      "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert not (out / "keep.txt").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--input", "missing.parquet", "--output", "o"],
     "error: `--input` must be an existing file or directory, found 'missing.parquet'"),
    (["--output", "o"], "error: `--input` must be given (or input.path in the query), "
     "found nothing"),
    (["--input", "data.txt", "--output", "o"], "error: `input.format` must be given for "
     "a path without a known extension (.parquet, .pq, .csv, .json, .jsonl, .ndjson), "
     "found 'data.txt'"),
])
def test_bad_arguments_exit_with_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.txt").write_text("x")
    result = invoke("run", query(tmp_path, QUERY), *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)


def test_a_yaml_error_exits_with_two_and_names_the_key(tmp_path: Path) -> None:
    body = QUERY.replace("end: 0s", "ned: 0s")
    result = invoke("run", query(tmp_path, body), "--input", "x.parquet", "--output", "o")
    assert result.exit_code == 2
    assert result.stderr == ("error: `window.ned` must be a known key of Range (known: kind, "
                             "start, end, closed), found 'ned'; did you mean 'end'?\n")


def test_an_unknown_column_is_bad_input(parquet_input: str, tmp_path: Path) -> None:
    body = QUERY.replace("col: v", "col: temperature")
    result = invoke("run", query(tmp_path, body), "--input", parquet_input, "--output",
                    str(tmp_path / "o"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: `col` must be a column of the DataFrame for "
                                    "mean() (columns: ts, sensor, v), found 'temperature'")


def test_what_cannot_run_is_a_failure_with_one(parquet_input: str, tmp_path: Path) -> None:
    body = QUERY.replace("- count", "- time_weighted_mean(v)")
    result = invoke("run", query(tmp_path, body), "--input", parquet_input, "--output",
                    str(tmp_path / "o"))
    assert result.exit_code == 1
    assert result.stderr == (
        "error: not supported yet: `window` must be one of Hopping, Tumbling, Snapshot, "
        "CountByStartTime for time_weighted_mean (it weighs each value by its lifetime "
        "within the window), found Range\n")


def test_an_unexpected_failure_exits_with_one(parquet_input: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("wisp.cli.build", broken)
    result = invoke("run", query(tmp_path, QUERY), "--input", parquet_input,
                    "--output", str(tmp_path / "o"))
    assert result.exit_code == 1
    assert result.stderr == "error: RuntimeError: disk on fire\n"


def test_explain_prints_the_strategy(parquet_input: str, tmp_path: Path) -> None:
    q = query(tmp_path, QUERY)
    result = invoke("explain", q, "--input", parquet_input)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Range(start='-1s', end='0s', closed='both') "
                                    "per key (sensor), time column 'ts' (timestamp)")
    assert "\nStrategy " in result.stdout and "\nWhy: " in result.stdout
    run = invoke("run", q, "--input", parquet_input, "--output", str(tmp_path / "o"),
                 "--explain")
    assert run.exit_code == 0, run.output
    assert run.stdout.startswith(result.stdout)  # the strategy, then the summary


def test_paths_may_come_from_the_query(spark: SparkSession, parquet_input: str,
                                       tmp_path: Path) -> None:
    out = str(tmp_path / "from-query")
    body = QUERY + f"input: {{path: '{parquet_input}'}}\n" \
        f"output: {{path: '{out}', format: csv}}\n"
    result = invoke("run", query(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2].split()[4:] == [out, "(csv)"]
    assert len(spark.read.option("header", True).csv(out).collect()) == 5


@pytest.mark.parametrize("command", [[], ["run"], ["explain"], ["plot"], ["demo"]])
def test_help_of_every_command(command: list[str]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"Usage: wisp {' '.join(command)}".rstrip() + " [")
    for word in {"run": ["--input", "--output", "--master", "--explain", "--overwrite",
                         "--format"],
                 "plot": ["--out", "--width", "--height", "--max-keys", "--max-events"],
                 "explain": ["--input", "--master"], "demo": ["--events", "--keys"],
                 }.get(command[0] if command else "", ["run", "explain", "plot", "demo"]):
        assert word in result.stdout


def test_demo_runs(tmp_path: Path) -> None:
    result = invoke("demo", "--events", "300", "--keys", "3", "--output",
                    str(tmp_path / "demo"))
    assert result.exit_code == 0, result.output
    assert "300 readings from 3 sensors" in result.stdout
    for name in ("rolling", "last3", "running"):
        assert (tmp_path / "demo" / name / "_SUCCESS").exists()


def test_bad_data_found_while_the_query_runs_is_one_line_and_exit_two(
        spark: SparkSession, tmp_path: Path) -> None:
    """A null delta attribute, found by the sliding kernel in a Python worker: the
    command prints wisp's message alone on one line, not Spark's traceback."""
    path = str(tmp_path / "bad.parquet")
    spark.createDataFrame([(1, None, 1.0)], "t long, a double, v double").write.parquet(path)
    body = ("events: {time: t}\nwindow: {kind: Sliding, evict: {kind: Delta, attr: a, "
            "d: 1.0}}\naggregations: [count]\n")
    result = invoke("run", query(tmp_path, body), "--input", path, "--output",
                    str(tmp_path / "o"))
    assert result.exit_code == 2
    assert result.stderr == ("error: `attr` column 'a' must not be null or NaN (a Delta "
                             "policy compares its values), found a null or NaN value\n")
