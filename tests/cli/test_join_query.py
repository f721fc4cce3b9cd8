"""The `join:` section of a query file (an as-of join with a second table): parsed and
checked without Spark, every error by its key's path; `wisp run` and `wisp explain` of
a join end to end; `ws.explain` of an `asof_join` result."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

import wisp as ws
from wisp.cli import main
from wisp.query import QueryError, parse_query
from wisp.spec.joins import AsOfJoin

BASE = "events: {time: ts, key: sym}\n"
JOIN = ("join: {kind: asof, right: {path: quotes.csv, time: ts, key: sym}, "
        "tolerance: 2s, suffixes: ['', _quote]}\n")


def test_a_join_query_is_parsed() -> None:
    query = parse_query(yaml.safe_load(BASE + JOIN))
    assert query.join is not None and query.aggregations == ()
    assert query.join.right.path == "quotes.csv" and query.join.right.key == ("sym",)
    assert query.join.spec == AsOfJoin(None, None, "backward", "2s", True, ("", "_quote"))


@pytest.mark.parametrize(("text", "message"), [
    (BASE + JOIN + "aggregations: [count]",
     "`aggregations` must be left out with join (a join gives one row per left row), "
     "found ['count']"),
    (BASE + "join: {kind: merge, right: {path: q.csv, time: ts}}",
     "`join.kind` must be one of asof, found 'merge'"),
    (BASE + "join: {kind: asof}", "`join.right` must be given, found nothing"),
    (BASE + "join: {kind: asof, right: {path: q.csv}}",
     "`join.right.time` must be given, found nothing"),
    (BASE + "join: {kind: asof, right: {path: q.csv, time: ts, on_null_time: drop}}",
     "`join.right.on_null_time` must be a known key of join.right (known: path, format, "
     "header, schema, options, time, key, order), found 'on_null_time'"),
    (BASE + "join: {kind: asof, right: {path: q.csv, time: ts}, direction: backwards}",
     "`join.direction` must be one of 'backward', 'forward', 'nearest', found "
     "'backwards'; did you mean 'backward'?"),
    (BASE + "join: {kind: asof, right: {path: q.csv, time: ts}, tolerance: -2s}",
     "`join.tolerance` must be a duration of at least 0 (the largest distance between a "
     "left and its matched right time), found '-2s'"),
    (BASE + "aggregations: [count]\njoin: {kind: asof, right: {path: q.csv, time: ts,"
     " options: {mode: FAILFAST}}}",
     "`join.right.options.mode` must be left to wisp (use join.right.header and "
     "join.right.schema), found 'FAILFAST'"),
    (BASE + "events: {time: ts}\n", None),
])
def test_join_errors_name_the_key(text: str, message: str | None) -> None:
    if message is None:  # a plain query still needs its aggregations
        message = "`aggregations` must be given, found nothing"
        text = "events: {time: ts}\n"
    with pytest.raises(QueryError) as error:
        parse_query(yaml.safe_load(text))
    assert str(error.value) == message


TRADES = """ts,sym,qty
2024-01-02T10:00:00Z,AAPL,5
2024-01-02T10:00:03Z,AAPL,1
2024-01-02T10:00:04Z,MSFT,7
2024-01-02T10:00:09Z,AAPL,2
"""
QUOTES = """ts,sym,bid
2024-01-02T10:00:00Z,AAPL,100.0
2024-01-02T10:00:01Z,MSFT,50.0
2024-01-02T10:00:02Z,AAPL,101.0
2024-01-02T10:00:05Z,AAPL,102.0
"""


@pytest.mark.spark
def test_wisp_run_and_explain_of_a_join(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "quotes.csv").write_text(QUOTES)
    (tmp_path / "trades.csv").write_text(TRADES)
    body = ("events: {time: ts, key: sym}\n"
            "input: {schema: 'ts TIMESTAMP, sym STRING, qty INT'}\n"
            f"join: {{kind: asof, tolerance: 3s, right: {{path: '{tmp_path}/quotes.csv', "
            "time: ts, key: sym, schema: 'ts TIMESTAMP, sym STRING, bid DOUBLE'}}\n")
    (tmp_path / "q.yaml").write_text(body)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.yaml"), "--input",
                                       str(tmp_path / "trades.csv"), "--output", str(out),
                                       "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = {line for p in out.glob("part-*.csv") for line in p.read_text().splitlines()}
    assert lines == {"ts,sym,qty,bid",
                     "2024-01-02T10:00:00.000Z,AAPL,5,100.0",
                     "2024-01-02T10:00:03.000Z,AAPL,1,101.0",
                     "2024-01-02T10:00:04.000Z,MSFT,7,50.0",
                     "2024-01-02T10:00:09.000Z,AAPL,2,"}  # 4 s after the last quote
    assert "rows out                 4" in result.stdout
    assert "rows rejected            0  (malformed: 0, null time: 0)" in result.stdout
    explained = CliRunner().invoke(main, ["explain", str(tmp_path / "q.yaml"), "--input",
                                          str(tmp_path / "trades.csv")])
    assert explained.exit_code == 0, explained.output
    assert explained.stdout.startswith("Strategy asof-join: As-of join (backward within "
                                       "3000000 ticks)")


@pytest.mark.spark
def test_explain_of_an_asof_join_result(spark: SparkSession) -> None:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    left = spark.createDataFrame([(t0, 1)], "ts timestamp, v int")
    right = spark.createDataFrame([(t0, 2.0)], "ts timestamp, w double")
    out = ws.asof_join(left, right, on="ts", direction="nearest")
    assert ws.explain(out) == (
        "Strategy asof-join: As-of join (nearest): the two sides' rows tagged and unioned, "
        "shuffled once in one partition (no `by`), sorted by time in each partition, and "
        "matched in one pass per key by a Python worker; no join in Spark's plan.")
