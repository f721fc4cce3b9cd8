"""What a query file and the command line must not do: run code through `{expr: ...}`,
delete the input by writing over it, take the memory of a YAML alias bomb, hang on a
master that does not answer, or fail on a file that is not its format with a message
from Spark's internals."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.cli import main
from wisp.query import (
    MAX_MESSAGE_CHARS,
    MAX_QUERY_BYTES,
    MAX_QUOTED_CHARS,
    MAX_YAML_NODES,
    QueryError,
    load_query,
    parse_query,
)

DOCS = "docs/cli.md#expressions"
WISP = str(Path(sys.executable).parent / "wisp")
SCHEMA = "ts TIMESTAMP, sensor STRING, v DOUBLE"
CSV = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0
2024-01-01T00:00:04Z,a,5.0
2024-01-01T00:00:05Z,a,2.0
2024-01-01T00:00:01Z,b,10.0
2024-01-01T00:00:03Z,b,20.0
"""
QUERY = f"""
events: {{time: ts, key: sensor}}
aggregations: [count, sum(v)]
input: {{schema: '{SCHEMA}'}}
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


# ----------------------------------------------------------- expressions run no code


@pytest.mark.parametrize(("window", "param", "name"), [
    ("{kind: Since, tick: {expr: \"java_method('java.lang.System', 'exit', 0) = 1\"}}",
     "window.tick.expr", "java_method"),
    ("{kind: Trailing, n: 2, tick: {expr: \"reflect('java.lang.System', 'getProperty', "
     "'user.home') = 'x'\"}}", "window.tick.expr", "reflect"),
    ("{kind: Dynamic, anchors: {kind: clock, every: 1m}, start: -1m, "
     "end: {expr: \"ts + CAST(java_method('java.lang.System', 'exit', 0) AS INT)\"}}",
     "window.end.expr", "java_method"),
])
def test_an_expression_that_would_run_code_is_refused_on_load(window: str, param: str,
                                                              name: str) -> None:
    data = yaml.safe_load(QUERY + f"window: {window}\n")
    with pytest.raises(QueryError) as caught:
        parse_query(data)
    assert str(caught.value) == (f"`{param}` must use only the listed functions ({DOCS}), "
                                 f"found {name!r}")


def test_wisp_run_refuses_java_method_before_spark_starts(tmp_path: Path) -> None:
    """In a process of its own, as a user runs it: before the check, the expression
    reached Spark, which called `System.exit` in its JVM."""
    window = "window: {kind: Since, tick: {expr: \"java_method('java.lang.System', " \
        "'exit', 0) = 1\"}}\n"
    done = subprocess.run([WISP, "run", write(tmp_path / "q.yaml", QUERY + window),
                           "--input", write(tmp_path / "e.csv", CSV), "--output",
                           str(tmp_path / "out"), "--master", "local[1]"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2
    assert done.stderr == (f"error: `window.tick.expr` must use only the listed functions "
                           f"({DOCS}), found 'java_method'\n")


@pytest.mark.spark
def test_a_safe_expression_runs_as_the_same_column_written_in_python(
        spark: SparkSession, tmp_path: Path) -> None:
    events = write(tmp_path / "e.csv", CSV)
    expr = "v >= 3 AND hour(ts) = 0 OR sensor IN ('b') AND v > 15"
    out = str(tmp_path / "out")
    result = invoke("run", write(tmp_path / "q.yaml", QUERY +
                                 f"window: {{kind: Since, tick: {{expr: \"{expr}\"}}}}\n"),
                    "--input", events, "--output", out)
    assert result.exit_code == 0, result.output
    df = spark.read.option("header", True).schema(SCHEMA).csv(events)
    tick = ((F.col("v") >= 3) & (F.hour("ts") == 0)) | \
        (F.col("sensor").isin("b") & (F.col("v") > 15))
    expected = ws.events(df, "ts", key="sensor").window(ws.Since(tick)).agg(
        ws.count(), ws.sum("v"))
    got = spark.read.parquet(out)
    assert sorted(got.collect()) == sorted(expected.collect())
    assert got.count() == 6


# ------------------------------------------------------ the output never holds the input


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory holding the input, `victim/events.csv`."""
    folder = tmp_path / "victim"
    folder.mkdir()
    write(folder / "events.csv", CSV)
    return folder


def holds(output: str, source: str) -> str:
    return (f"error: `--output` must not hold the input (replacing it would delete the "
            f"input), found {output!r}, which holds the input {source!r}\n")


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
def test_an_output_that_holds_the_input_is_refused_even_with_overwrite(
        victim: Path, tmp_path: Path) -> None:
    """Before, `--overwrite` replaced `victim/` and the input in it was gone."""
    source = str(victim / "events.csv")
    result = invoke("run", write(tmp_path / "q.yaml", QUERY), "--input", source,
                    "--output", str(victim), "--overwrite")
    assert result.exit_code == 2
    assert result.stderr == holds(str(victim), source)
    assert (victim / "events.csv").read_text() == CSV


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
def test_symlinks_do_not_hide_the_input(victim: Path, tmp_path: Path) -> None:
    query = write(tmp_path / "q.yaml", QUERY)
    link = tmp_path / "link"
    link.symlink_to(victim)
    source = str(victim / "events.csv")
    through_output = invoke("run", query, "--input", source, "--output", str(link),
                            "--overwrite")
    assert through_output.exit_code == 2
    assert through_output.stderr == holds(str(link), source)
    linked_source = str(link / "events.csv")
    through_input = invoke("run", query, "--input", linked_source, "--output", str(victim),
                           "--overwrite")
    assert through_input.exit_code == 2
    assert through_input.stderr == holds(str(victim), linked_source)
    assert (victim / "events.csv").read_text() == CSV


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize(("output", "message"), [
    ("victim/events.csv/", "error: `--output` must differ from the input, found "
     "'{output}', which is the input '{source}'\n"),
    ("victim/./events.csv", "error: `--output` must differ from the input, found "
     "'{output}', which is the input '{source}'\n"),
    ("victim/events.csv/out", "error: `--output` must not lie inside the input, found "
     "'{output}', inside the input '{source}'\n"),
])
def test_an_output_that_is_or_lies_inside_the_input_is_refused(
        victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str,
        message: str) -> None:
    monkeypatch.chdir(tmp_path)
    source = "victim/events.csv"
    result = invoke("run", write(tmp_path / "q.yaml", QUERY), "--input", source,
                    "--output", output, "--overwrite")
    assert result.exit_code == 2
    assert result.stderr == message.format(output=output, source=source)
    assert (victim / "events.csv").read_text() == CSV


def test_a_picture_never_lands_inside_the_input(
        victim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`wisp plot --out` keeps apart from the input like `run --output`, before Spark
    starts (a picture inside an input directory would be read as input next time)."""
    monkeypatch.chdir(tmp_path)
    result = invoke("plot", write(tmp_path / "q.yaml", QUERY), "--input", "victim",
                    "--out", "victim/picture.png", "--overwrite")
    assert result.exit_code == 2
    assert result.stderr == ("error: `--out` must not lie inside the input, found "
                             "'victim/picture.png', inside the input 'victim'\n")
    assert sorted(p.name for p in victim.iterdir()) == ["events.csv"]


def test_remote_outputs_are_compared_by_their_paths() -> None:
    from wisp.cli import BadInput, check_apart

    with pytest.raises(BadInput) as caught:
        check_apart("hdfs://nn:8020/data/", "hdfs://NN:8020/data/day/events.parquet")
    assert str(caught.value) == (
        "`--output` must not hold the input (replacing it would delete the input), found "
        "'hdfs://nn:8020/data/', which holds the input 'hdfs://NN:8020/data/day/"
        "events.parquet'")
    check_apart("hdfs://nn:8020/data/out", "hdfs://nn:8020/data/in")  # siblings: fine
    check_apart("s3a://bucket/data", "hdfs://nn:8020/data/in")  # another file system


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
def test_wisp_demo_refuses_an_existing_output_without_overwrite(tmp_path: Path) -> None:
    """Before, `wisp demo --output` replaced what was there without a word."""
    out = tmp_path / "demo"
    (out / "rolling").mkdir(parents=True)
    (out / "rolling" / "keep.txt").write_text("mine")
    refused = invoke("demo", "--events", "50", "--keys", "2", "--output", str(out))
    assert refused.exit_code == 2
    assert refused.stderr == (f"error: `--output` must not exist (pass --overwrite to "
                              f"replace it), found an existing {str(out)!r}\n")
    assert (out / "rolling" / "keep.txt").read_text() == "mine"
    replaced = invoke("demo", "--events", "50", "--keys", "2", "--output", str(out),
                      "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert not (out / "rolling" / "keep.txt").exists()
    assert all((out / name / "_SUCCESS").exists() for name in ("rolling", "last3", "running"))


# ------------------------------------------------------------------ bounded YAML

BOMB = "\n".join(
    ["events:", '  - &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'] +
    [f"  - &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdef", "bcdefg", strict=True)]
    + ["aggregations: [count]"]) + "\n"


def test_a_yaml_alias_bomb_is_refused_small_and_fast(tmp_path: Path) -> None:
    """Seven levels of nine aliases: 4,782,969 strings once expanded. Before, the error
    quoting `events` (a list, not a mapping) was a message of 39 MB."""
    path = write(tmp_path / "bomb.yaml", BOMB)
    assert len(BOMB) == 365
    started = time.perf_counter()
    with pytest.raises(QueryError) as caught:
        load_query(path)
    assert time.perf_counter() - started < 5
    assert str(caught.value) == (f"`QUERY` must be YAML of at most {MAX_YAML_NODES:,} "
                                 "nodes, each alias counted at every use, found more by "
                                 f"line 6 of {path}")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "q.yaml", "events: &e {time: ts, more: *e}\naggregations: "
                 "[count]\n")
    with pytest.raises(QueryError) as caught:
        load_query(path)
    assert str(caught.value) == ("`QUERY` must be YAML without a recursive alias, found an "
                                 f"alias inside its own anchor at line 1 of {path}")


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    path = write(tmp_path / "q.yaml", "events: {time: &t ts, key: sensor, order: *t}\n"
                 "aggregations: [count]\n")
    assert load_query(path).order == "ts"


def test_a_query_file_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "big.yaml", QUERY + "#" * MAX_QUERY_BYTES + "\n")
    with pytest.raises(QueryError) as caught:
        load_query(path)
    assert str(caught.value) == ("`QUERY` must be a file of at most 1,048,576 bytes "
                                 f"(1 MiB), found more in {path}")


def test_a_query_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"events: {time: t\xe9}\n")
    with pytest.raises(QueryError) as caught:
        load_query(path)
    assert str(caught.value) == ("`QUERY` must be UTF-8 text, found a byte that is not "
                                 f"UTF-8 at offset 16 of {path}")


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "deep.yaml", "events: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(QueryError) as caught:
        load_query(path)
    assert str(caught.value) == ("`QUERY` must be YAML that nests less deeply, found too "
                                 f"deep a nesting to read in {path}")


def test_a_quoted_value_is_cut(tmp_path: Path) -> None:
    """A large value in the wrong place is quoted in at most MAX_QUOTED_CHARS."""
    items = ", ".join(["reading"] * 3000)
    path = write(tmp_path / "q.yaml", f"events: [{items}]\naggregations: [count]\n")
    with pytest.raises(QueryError) as caught:
        load_query(path)
    shown = "[" + "'reading', " * 30
    assert str(caught.value) == ("`events` must be a mapping, found "
                                 f"{shown[:MAX_QUOTED_CHARS - 3]}...")
    with pytest.raises(QueryError) as caught:
        parse_query({"events": {"time": "t" * 5000}, "aggregations": [{"fn": "count",
                                                                      "as": ["x"] * 5000}]})
    assert str(caught.value) == ("`aggregations[0].as` must be a string, found "
                                 f"{('[' + ', '.join([repr('x')] * 60))[:MAX_QUOTED_CHARS - 3]}"
                                 "...")
    long_key = "k" * 5000
    with pytest.raises(QueryError) as caught:
        parse_query({"events": {"time": "ts"}, "aggregations": ["count"], long_key: 1})
    assert len(str(caught.value)) == MAX_MESSAGE_CHARS
    assert str(caught.value).startswith("`kkkk")
    assert str(caught.value).endswith("k...")


# ------------------------------------------------------------------ the input format


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
def test_a_file_that_is_not_parquet_is_bad_input_naming_it(tmp_path: Path) -> None:
    """Before, exit code 1 and "Py4JJavaError: An error occurred while calling
    o40.parquet."."""
    text = tmp_path / "events.parquet"
    text.write_text(CSV)
    body = "events: {time: ts, key: sensor}\naggregations: [count]\n"
    result = invoke("run", write(tmp_path / "q.yaml", body), "--input", str(text),
                    "--output", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr == (f"error: `--input` must hold only Parquet files, found "
                             f"{str(text)!r}, which is not one (it has no Parquet footer)\n")


@pytest.mark.spark
def test_a_bad_part_file_found_while_running_is_bad_input_naming_it(
        spark: SparkSession, tmp_path: Path) -> None:
    """With a schema, Spark reads no footer up front: the bad file fails a task."""
    folder = tmp_path / "events"
    spark.read.option("header", True).schema(SCHEMA).csv(
        write(tmp_path / "e.csv", CSV)).coalesce(1).write.parquet(str(folder))
    bad = folder / "part-99999-bad.parquet"
    bad.write_text("not parquet\n")
    body = (f"events: {{time: ts, key: sensor}}\naggregations: [count]\n"
            f"input: {{format: parquet, schema: '{SCHEMA}'}}\n")
    result = invoke("run", write(tmp_path / "q.yaml", body), "--input", str(folder),
                    "--output", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr == (f"error: `--input` must hold only Parquet files, found "
                             f"{str(bad)!r}, which is not one (it has no Parquet footer)\n")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ masters


@pytest.fixture
def events_and_query(tmp_path: Path) -> tuple[str, str]:
    return write(tmp_path / "e.csv", CSV), write(tmp_path / "q.yaml", QUERY)


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_spark_connect_master_fails_at_once(
        events_and_query: tuple[str, str], tmp_path: Path) -> None:
    """In a process of its own, as a user runs it. Before, Spark Connect retried for
    about ten minutes without a word (the timeout below would end the test)."""
    events, query = events_and_query
    master = f"sc://127.0.0.1:{closed_port()}"
    started = time.perf_counter()
    done = subprocess.run([WISP, "run", query, "--input", events, "--output",
                           str(tmp_path / "out"), "--master", master],
                          capture_output=True, text=True, timeout=120, check=False)
    assert time.perf_counter() - started < 60
    assert done.returncode == 2
    port = master.rpartition(":")[2]
    assert done.stderr == (f"error: `--master` must be a Spark master that answers within "
                           f"10 s, found {master!r} (127.0.0.1:{port}: connection "
                           "refused)\n")


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
def test_an_unreachable_standalone_master_fails_at_once(
        events_and_query: tuple[str, str], tmp_path: Path) -> None:
    events, query = events_and_query
    master = f"spark://127.0.0.1:{closed_port()},127.0.0.1:{closed_port()}"
    ports = [part.rpartition(":")[2] for part in master.removeprefix("spark://").split(",")]
    result = invoke("run", query, "--input", events, "--output", str(tmp_path / "out"),
                    "--master", master)
    assert result.exit_code == 2
    assert result.stderr == (f"error: `--master` must be a Spark master that answers within "
                             f"10 s, found {master!r} (127.0.0.1:{ports[0]}: connection "
                             f"refused; 127.0.0.1:{ports[1]}: connection refused)\n")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A local port that accepts connections and never says a word (not gRPC)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    for connection in accepted:
        connection.close()
    thread.join(timeout=5)


def test_a_connect_master_that_speaks_no_grpc_fails_within_the_bound(
        events_and_query: tuple[str, str], tmp_path: Path, silent_server: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("wisp.cli_support.CONNECT_SECONDS", 1.0)
    events, query = events_and_query
    master = f"sc://127.0.0.1:{silent_server}"
    started = time.perf_counter()
    result = invoke("run", query, "--input", events, "--output", str(tmp_path / "out"),
                    "--master", master)
    assert time.perf_counter() - started < 10
    assert result.exit_code == 2
    assert result.stderr == (f"error: `--master` must be a Spark Connect server that answers "
                             f"within 1 s, found {master!r} (no gRPC answer)\n")


@pytest.mark.parametrize("master", ["sc://host:port", "spark://a:1,", "spark://a:99999"])
def test_a_malformed_master_address_is_bad_input(events_and_query: tuple[str, str],
                                                 tmp_path: Path, master: str) -> None:
    events, query = events_and_query
    result = invoke("run", query, "--input", events, "--output", str(tmp_path / "out"),
                    "--master", master)
    assert result.exit_code == 2
    scheme = master.partition("://")[0]
    assert result.stderr == (f"error: `--master` must be {scheme}://host[:port], found "
                             f"{master!r}\n")


@pytest.mark.spark
@pytest.mark.usefixtures("spark")
@pytest.mark.parametrize("master", ["nowhere", "local[0]", "local[x]", "mesos://h:5050", "spark://"])
def test_a_master_spark_would_not_start_with_is_refused_first(
        events_and_query: tuple[str, str], tmp_path: Path, master: str) -> None:
    """Before: a stack trace of Spark's, or a Py4J message, and exit code 1."""
    events, query = events_and_query
    result = invoke("run", query, "--input", events, "--output", str(tmp_path / "out"),
                    "--master", master)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: `--master` must be one of local, local[N], local[*], local[N,F], "
        "local-cluster[N,C,M], yarn, spark://host:port, k8s://..., sc://host:port, found "
        f"{master!r}\n")
