"""The `features:` section of a query file (a feature set, `Events.features`): parsed
and checked without Spark, every error by its key's path; `wisp run` of a feature set at
every event and at label rows gives the API's rows; `wisp explain` names arrow-features;
the label table's path is checked as the input's."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from pyspark.sql import DataFrame, SparkSession

import wisp as ws
from wisp.cli import main
from wisp.errors import WispUnsupportedError
from wisp.query import QueryError, parse_query

BASE = "events: {time: t, key: user}\naggregations: [sum(amount), count]\n"
WINDOWS = ("features:\n  windows:\n    1h: {kind: Range, start: -1h, end: 0s}\n"
           "    last2: {kind: Rows, start: -1, end: 0}\n    all: cumulative\n")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_a_features_query_is_parsed() -> None:
    query = parse_query(yaml.safe_load(
        BASE + WINDOWS + "  at: {path: labels.csv, time: when, key: user}\n"
        "  include_current: true\n"))
    assert query.features is not None and query.raw_window is None
    assert query.feature_windows() == {"1h": ws.Range("-1h", "0s"), "last2": ws.Rows(-1, 0),
                                       "all": None}
    at = query.features.at
    assert at is not None and (at.path, at.format, at.time, at.key) == \
        ("labels.csv", "csv", "when", ("user",))
    assert query.features.include_current
    assert query.aggregations == (ws.sum("amount"), ws.count())


@pytest.mark.parametrize("text", ["all: cumulative", "all: {kind: cumulative}",
                                  "all: CUMULATIVE", "all: null"])
def test_the_cumulative_window_is_none(text: str) -> None:
    query = parse_query(yaml.safe_load(BASE + f"features: {{windows: {{{text}}}}}"))
    assert query.feature_windows() == {"all": None}


def test_tick_periods_go_in_a_feature_set() -> None:
    """`Since` over a boolean column and `Trailing` over a calendar tick, as in `window:`."""
    query = parse_query(yaml.safe_load(
        BASE + "features: {windows: {s: {kind: Since, tick: flag}, "
        "d3: {kind: Trailing, n: 3, tick: {kind: daily, tz: Europe/Paris}}}}"))
    assert query.feature_windows() == {"s": ws.Since("flag"),
                                       "d3": ws.Trailing(3, ws.daily("Europe/Paris"))}


@pytest.mark.parametrize(("text", "message"), [
    ("window: {kind: Rows, start: -1, end: 0}\n" + WINDOWS,
     "`window` must be left out with features (a query has one window, or a feature set "
     "of windows under features.windows), found {'kind': 'Rows', 'start': -1, 'end': 0}"),
    ("features: {windows: {all: cumulative}, widows: {}}",
     "`features.widows` must be a known key of features (known: windows, at, "
     "include_current), found 'widows'; did you mean 'windows'?"),
    ("features: {windows: {all: cumulative}, include_curent: true}",
     "`features.include_curent` must be a known key of features (known: windows, at, "
     "include_current), found 'include_curent'; did you mean 'include_current'?"),
    ("features: {windows: {1-h: {kind: Range, start: -1h, end: 0s}}}",
     "`features.windows` must be labels made of letters, digits and underscores (each "
     "names its columns: sum_v_<label>), found '1-h'"),
    ("features: {windows: {10: cumulative}}",
     "`features.windows` must be labels made of letters, digits and underscores (each "
     "names its columns: sum_v_<label>), found 10; YAML reads it as a int: quote it "
     "('10')"),
    ("features: {windows: {all: cumulative}, at: {format: csv, time: t}}",
     "`features.at.path` must be given, found nothing"),
    ("features: {windows: {all: cumulative}, at: {path: labels.csv, tme: t}}",
     "`features.at.tme` must be a known key of features.at (known: path, format, header, "
     "schema, options, time, key), found 'tme'; did you mean 'time'?"),
    ("features: {windows: {all: cumulative}, at: {path: labels.orc}}",
     "`features.at.format` must be given for a path without a known extension (.parquet, "
     ".pq, .csv, .json, .jsonl, .ndjson), found 'labels.orc'"),
    ("features: {windows: {all: cumulative}, at: {path: labels, format: orc}}",
     "`features.at.format` must be one of parquet, csv, json, found 'orc'"),
    ("features: {windows: {all: cumulative}, at: {path: l.csv, options: {mode: FAILFAST}}}",
     "`features.at.options.mode` must be left to wisp (use features.at.header and "
     "features.at.schema), found 'FAILFAST'"),
    ("features: {windows: {all: cumulative}, at: {path: l.csv, key: customer}}",
     "`features.at.key` must be the events' key columns ['user'] (label rows meet the "
     "events by the key's names; a CSV table's columns can be named by "
     "features.at.schema), found 'customer'"),
    ("features: {windows: {all: cumulative}, include_current: true}",
     "`features.include_current` must be false without features.at (every event's "
     "windows hold the event itself), found True"),
    ("features: {windows: {}}",
     "`features.windows` must be a mapping of at least one label to a window (Range, "
     "Rows, Since, Trailing, cumulative), found {}"),
    ("features: {windows: [1h]}", "`features.windows` must be a mapping, found ['1h']"),
    ("features: {windows: {1h: {kind: Rnage, start: -1h, end: 0s}}}",
     "`features.windows.1h.kind` must be one of Range, Rows, Since, Trailing, cumulative, "
     "found 'Rnage'; did you mean 'Range'?"),
    ("features: {windows: {n: {kind: Count, n: 3}}}",
     "`features.windows.n.kind` must be one of Range, Rows, Since, Trailing, cumulative, "
     "found 'Count'"),
    ("features: {windows: {1h: {start: -1h, end: 0s}}}",
     "`features.windows.1h.kind` must be given (one of Range, Rows, Since, Trailing, "
     "cumulative), found nothing"),
    ("features: {windows: {1h: {kind: Range, start: -1h, edn: 0s}}}",
     "`features.windows.1h.edn` must be a known key of Range (known: kind, start, end, "
     "closed), found 'edn'; did you mean 'end'?"),
    ("features: {windows: {all: {kind: cumulative, start: 0}}}",
     "`features.windows.all.start` must be a known key of cumulative (known: kind), "
     "found 'start'"),
    ("features: {windows: {1h: {kind: Range, start: -1h, end: 0s, closed: lft}}}",
     "`features.windows.1h.closed` must be one of 'both', 'left', 'right', 'neither', "
     "found 'lft'; did you mean 'left'?"),
    ("events: {time: t, end: u}\n" + WINDOWS,
     "`events.end` must be left out with features (a feature set's windows read point "
     "events), found 'u'"),
])
def test_features_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(QueryError) as error:
        parse_query(yaml.safe_load(BASE + text))
    assert str(error.value) == message


def test_a_session_window_in_a_feature_set_is_not_supported(tmp_path: Path) -> None:
    text = BASE + "features: {windows: {s: {kind: Session, gap: 30m}}}"
    with pytest.raises(WispUnsupportedError) as error:
        parse_query(yaml.safe_load(text))
    message = ("`features.windows.s.kind` must be one of Range, Rows, Since, Trailing, "
               "cumulative in a feature set, found 'Session'; run it as a query of its own, "
               "with `window:`")
    assert str(error.value) == message
    (tmp_path / "q.yaml").write_text(text)
    result = invoke("run", str(tmp_path / "q.yaml"), "--input", str(tmp_path / "q.yaml"),
                    "--output", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert result.stderr == f"error: not supported yet: {message}\n"


def test_a_missing_label_table_is_bad_input_before_spark(tmp_path: Path) -> None:
    (tmp_path / "e.parquet").mkdir()
    (tmp_path / "q.yaml").write_text(
        BASE + WINDOWS + f"  at: {{path: '{tmp_path}/labels.parquet'}}\n")
    for command in (["run", "--output", str(tmp_path / "out")], ["explain"]):
        result = invoke(command[0], str(tmp_path / "q.yaml"), "--input",
                        str(tmp_path / "e.parquet"), *command[1:])
        assert result.exit_code == 2
        assert result.stderr == ("error: `features.at.path` must be an existing file or "
                                 f"directory, found '{tmp_path}/labels.parquet'\n")


def test_an_output_that_holds_the_label_table_is_refused(tmp_path: Path) -> None:
    (tmp_path / "e.parquet").mkdir()
    (tmp_path / "data" / "labels.parquet").mkdir(parents=True)
    (tmp_path / "q.yaml").write_text(
        BASE + WINDOWS + f"  at: {{path: '{tmp_path}/data/labels.parquet'}}\n")
    result = invoke("run", str(tmp_path / "q.yaml"), "--input", str(tmp_path / "e.parquet"),
                    "--output", str(tmp_path / "data"), "--overwrite")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: `--output` must not hold the label table (replacing it would delete the "
        f"label table), found '{tmp_path}/data', which holds the label table "
        f"'{tmp_path}/data/labels.parquet'\n")
    assert (tmp_path / "data" / "labels.parquet").is_dir()


def test_a_feature_set_neither_streams_nor_plots(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(BASE + WINDOWS)
    streamed = invoke("run", str(tmp_path / "q.yaml"), "--stream", "--input",
                      str(tmp_path / "in"), "--output", str(tmp_path / "out"))
    assert streamed.exit_code == 1
    assert streamed.stderr == (
        "error: not supported yet: `--stream` must be left out for a query with features "
        "(feature sets do not run on a stream yet), found --stream; run each window as a "
        "stream query of its own, with `window:`\n")
    plotted = invoke("plot", str(tmp_path / "q.yaml"), "--input", str(tmp_path / "q.yaml"),
                     "--out", str(tmp_path / "p.png"))
    assert plotted.exit_code == 2
    assert plotted.stderr.startswith("error: `QUERY` must be a query with one window for "
                                     "wisp plot (it draws one window's outputs; a feature "
                                     "set has several, under features.windows)")


# ------------------------------------------------------------------- on Spark

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EVENTS = [("alice", 0, 10.0), ("alice", 40, 5.0), ("alice", 70, 20.0), ("alice", 300, 1.0),
          ("bob", 10, 7.0), ("bob", 20, None), ("bob", 20, 2.0)]
LABELS = [("alice", 60, True), ("alice", 70, False), ("bob", 15, True), ("carol", 5, False)]


def at_minute(rows: list[tuple[str, int, Any]]) -> list[tuple[str, dt.datetime, Any]]:
    return [(k, T0 + dt.timedelta(minutes=m), v) for k, m, v in rows]


@pytest.fixture(scope="module")
def files(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Events and labels as Parquet files (time in minutes), labels also as CSV with
    their own names for time and key."""
    folder = tmp_path_factory.mktemp("features")
    spark.createDataFrame(at_minute(EVENTS), "user string, t timestamp, amount double") \
        .write.parquet(str(folder / "events.parquet"))
    labels = spark.createDataFrame(at_minute(LABELS), "user string, t timestamp, "
                                   "churned boolean")
    labels.write.parquet(str(folder / "labels.parquet"))
    labels.withColumnsRenamed({"user": "customer", "t": "when"}).coalesce(1) \
        .write.option("header", True).csv(str(folder / "labels_csv"))
    return folder


def api_events(spark: SparkSession, folder: Path) -> ws.Events:
    return ws.events(spark.read.parquet(str(folder / "events.parquet")), time="t",
                     key="user")


API_WINDOWS: dict[str, ws.Range | ws.Rows | None] = {
    "1h": ws.Range("-1h", "0s"), "last2": ws.Rows(-1, 0), "all": None}


def sorted_rows(df: DataFrame) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def run_query(folder: Path, body: str, out: str) -> Result:
    (folder / f"{out}.yaml").write_text(body)
    return invoke("run", str(folder / f"{out}.yaml"), "--input",
                  str(folder / "events.parquet"), "--output", str(folder / out))


def test_wisp_run_of_three_windows_gives_the_api_rows(spark: SparkSession,
                                                      files: Path) -> None:
    result = run_query(files, BASE + WINDOWS, "every_event")
    assert result.exit_code == 0, result.output
    assert "rows out                 7" in result.stdout
    got = spark.read.parquet(str(files / "every_event"))
    want = api_events(spark, files).features(API_WINDOWS, ws.sum("amount"), ws.count())
    assert got.columns == want.columns == [
        "user", "time", "sum_amount_1h", "sum_amount_last2", "sum_amount_all",
        "count_1h", "count_last2", "count_all"]
    assert sorted_rows(got) == sorted_rows(want)


@pytest.mark.parametrize("at", [
    "{path: labels.parquet}",
    # the key named by the schema (a CSV's columns by position), the time by `time`
    "{path: labels_csv, format: csv, time: when, key: user, "
    "schema: 'user STRING, when TIMESTAMP, churned BOOLEAN'}"])
def test_wisp_run_at_label_rows_gives_the_api_point_in_time_rows(
        spark: SparkSession, files: Path, at: str) -> None:
    at = at.replace("path: ", f"path: {files}/")
    out = "at_csv" if "csv" in at else "at_parquet"
    result = run_query(files, BASE + WINDOWS + f"  at: {at}\n  include_current: true\n",
                       out)
    assert result.exit_code == 0, result.output
    assert "rows out                 4" in result.stdout
    got = spark.read.parquet(str(files / out))
    labels = spark.read.parquet(str(files / "labels.parquet"))
    want = api_events(spark, files).features(API_WINDOWS, ws.sum("amount"), ws.count(),
                                             at=labels, include_current=True)
    assert got.columns == want.columns
    assert sorted_rows(got) == sorted_rows(want)


def test_wisp_explain_of_a_feature_set_says_arrow_features(spark: SparkSession,
                                                           files: Path) -> None:
    (files / "explain.yaml").write_text(BASE + WINDOWS +
                                        f"  at: {{path: '{files}/labels.parquet'}}\n")
    result = invoke("explain", str(files / "explain.yaml"), "--input",
                    str(files / "events.parquet"))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("features({'1h': Range(start='-1h', end='0s', "
                                    "closed='both'), 'last2': Rows(start=-1, end=0, ")
    assert "\nStrategy arrow-features: " in result.stdout
    assert "each label row's 3 windows (1h, last2, all) over the key's events strictly " \
        "before its time" in result.stdout


def test_a_bound_that_does_not_fit_the_time_column_names_its_window(
        spark: SparkSession, files: Path) -> None:
    (files / "bound.yaml").write_text(
        BASE + "features:\n  windows:\n    1h: {kind: Range, start: -1h, end: 0}\n"
        "    hour: {kind: Range, start: -60, end: 0}\n")
    result = invoke("explain", str(files / "bound.yaml"), "--input",
                    str(files / "events.parquet"))
    assert result.exit_code == 2
    assert result.stderr.endswith(
        "error: `features.windows.hour.start` must be a duration such as '2s' or a "
        "timedelta for timestamp time column 't', found -60\n")


@pytest.mark.parametrize(("at", "message"), [
    ("{path: labels.csv, schema: 'customer STRING, t TIMESTAMP'}",
     "`features.at` must be a label table with the events' key columns ['user'] (a CSV "
     "table's columns can be named by features.at.schema), found \"columns ['customer', "
     "'t']\""),
    ("{path: labels.csv, schema: 'user STRING, customer STRING, t LONG'}",
     "`features.at` must be label rows whose `time` has the type of the events' "
     "(timestamp), found \"bigint column 't'\""),
])
def test_a_label_table_that_does_not_fit_the_events_names_features_at(
        spark: SparkSession, files: Path, tmp_path: Path, at: str, message: str) -> None:
    (tmp_path / "labels.csv").write_text("customer,user,t\n")
    (tmp_path / "q.yaml").write_text(
        BASE + WINDOWS + "  at: " + at.replace("path: ", f"path: {tmp_path}/") + "\n")
    result = invoke("explain", str(tmp_path / "q.yaml"), "--input",
                    str(files / "events.parquet"))
    assert result.exit_code == 2
    assert result.stderr.endswith(f"error: {message}\n")
