"""Feature sets (`features:`) through `wisp_window` in SQL against the Python API's
`Events.features` on the same table: the same columns and, as sorted row lists, the
same rows (seeded random data: several keys and a null key, ties in time, duplicate
rows, nulls in values, times before 1970); and the feature-set queries SQL refuses, by
name."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_sql_differential import assert_same_result as assert_same_window_result
from test_sql_differential import same, sorted_rows, sql_result, table
from test_sql_errors import PREFIX, first_line

import wisp as ws
from wisp.query import load_yaml, parse_query
from wisp.sql import resolve

pytestmark = pytest.mark.spark

EVENTS = "events: {time: ts, key: k}\n"
AGGREGATIONS = "aggregations: [count, sum(v), mean(v), min(v), max(i), first(v), last(i), " \
               "collect(v)]\n"
SETS = {
    "Range, Rows, cumulative":
        "features:\n  windows:\n"
        "    past30s: {kind: Range, start: -30s, end: 0s}\n"
        "    around: {kind: Range, start: -10s, end: 20s, closed: left}\n"
        "    last3: {kind: Rows, start: -2, end: 0}\n"
        "    ahead: {kind: Rows, start: -1, end: 4}\n"
        "    all: cumulative\n",
    "Since and Trailing, calendar and column ticks":
        "features:\n  windows:\n"
        "    hour: {kind: Since, tick: {kind: hourly}}\n"
        "    hours2: {kind: Trailing, n: 2, tick: {kind: hourly}}\n"
        "    flagged: {kind: Since, tick: flag}\n"
        "    flagged3: {kind: Trailing, n: 3, tick: flag}\n"
        "    '10': {kind: Rows, start: -9, end: 0}\n",
    "every kind": "features:\n  windows:\n"
        "    r: {kind: Range, start: -1m, end: 0s}\n"
        "    w: {kind: Rows, start: -4, end: 0}\n"
        "    s: {kind: Since, tick: flag}\n"
        "    t: {kind: Trailing, n: 2, tick: {kind: hourly}}\n"
        "    c: {kind: cumulative}\n",
}


def api_features(df: DataFrame, text: str) -> DataFrame:
    """What the Python API's `Events.features` returns for the query `text` over `df`."""
    query = parse_query(load_yaml(text, "the query"))
    events = ws.events(df, time=query.time, key=list(query.key) or None)
    return events.features(query.feature_windows(), *query.aggregations)


def assert_same_features(spark: SparkSession, df: DataFrame, text: str) -> None:
    api, sql = api_features(df, text), sql_result(spark, df, text)
    assert [(f.name, f.dataType) for f in sql.schema] == \
        [(f.name, f.dataType) for f in api.schema]
    expected, found = sorted_rows(api), sorted_rows(sql)
    assert len(found) == len(expected) == df.count()  # one row per event
    for want, got in zip(expected, found, strict=True):
        assert all(same(x, y) for x, y in zip(want, got, strict=True)), (want, got)


@pytest.fixture(scope="module")
def registered(spark: SparkSession) -> SparkSession:
    ws.register_sql(spark)
    return spark


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", list(SETS))
def test_a_feature_set_gives_the_api_rows(registered: SparkSession, name: str,
                                          seed: int) -> None:
    assert_same_features(registered, table(registered, seed),
                         EVENTS + SETS[name] + AGGREGATIONS)


def test_without_keys_with_two_keys_and_a_tie_break(registered: SparkSession) -> None:
    df = table(registered, 4).selectExpr("*", "length(k) AS j", "i AS seq")
    windows = SETS["every kind"]
    assert_same_features(registered, df, "events: {time: ts}\n" + windows +
                         "aggregations: [count, sum(v)]\n")
    assert_same_features(registered, df, "events: {time: ts, key: [k, j], order: seq}\n" +
                         windows + "aggregations: [count, first(v), last(i)]\n")


@pytest.mark.parametrize("key_type", ["STRING", "STRING COLLATE UTF8_LCASE"])
def test_a_long_key_in_pieces(registered: SparkSession, key_type: str) -> None:
    """One key of 33,320 events (the kernel reads a long key in pieces of 16,384: three
    here), and a short one of 680 beside it; the API's rows, for a feature set and for a
    window. A plain string key: the table function sorts each partition (as the API's
    worker does); a collated one (an order Arrow does not share): Spark sorts, and each
    batch goes to the kernel as it comes."""
    df = registered.range(34_000).selectExpr(
        f"CAST(IF(id % 50 = 0, 'short', 'long') AS {key_type}) AS k",
        "timestamp_seconds(id * 3 + id % 7) AS ts", "CAST(id % 13 AS DOUBLE) AS v",
        "id AS i", "id % 97 = 0 AS flag")
    window = EVENTS + "window: {kind: Range, start: -10m, end: 0s}\n" \
        "aggregations: [count, mean(v), max(i)]\n"
    assert resolve(df.schema, window).sorts_in_worker == (key_type == "STRING")
    assert_same_features(registered, df, EVENTS + SETS["every kind"] +
                         "aggregations: [count, sum(v), max(i)]\n")
    assert_same_window_result(registered, df, window)


# ----------------------------------------------------------------------- refused


@pytest.fixture(scope="module")
def readings(registered: SparkSession) -> SparkSession:
    registered.createDataFrame([("a", 1, 1.0, True), ("a", 2, 2.0, False)],
                               "k string, t long, v double, b boolean"
                               ).createOrReplaceTempView("readings")
    return registered


def test_label_rows_are_refused_by_name(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    w: {kind: Rows, start: -1, end: 0}\n"
                      "  at: {path: labels.parquet}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispUnsupportedError: `features.at` must be "
                           "left out of a query run by wisp_window (it takes one table, the "
                           "events, and reads no path), found label rows at "
                           "'labels.parquet'; run the query with wisp run or the Python API")


def test_a_tick_expression_is_refused_by_name(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    s: {kind: Since, tick: {col: b}}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispUnsupportedError: "
                           "`features.windows.s.tick` must not be a {col: ...} or "
                           "{expr: ...} value in SQL")


def test_bad_feature_sets_are_named(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    s: {kind: Since, tick: bb}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispInputError: `features.windows` must be "
                           "a boolean tick column of the events for 's'")
    assert "found 'bb'; did you mean 'b'?" in line
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    s: {kind: Since, tick: v}\naggregations: [count]\n")
    assert "`features.windows` must be a boolean tick column or expression for 's'" in line
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    w: {kind: Range, strat: -1, end: 0}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `features.windows.w.strat` must "
                           "be a known key of Range")
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    w: {kind: Session, gap: 5}\naggregations: [count]\n")
    assert "`features.windows.w.kind` must be one of Range, Rows, Since, Trailing" in line
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    ok: {kind: Rows, start: -1, end: 0}\n"
                      "    w: {kind: Range, start: -1m, end: 0s}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispInputError: `features.windows.w.start`")
    line = first_line(readings, "events: {time: t, key: k}\nfeatures:\n  windows:\n"
                      "    w: {kind: Rows, start: -1, end: 0}\n"
                      "aggregations: [count]\nwindow: {kind: Rows, start: -1, end: 0}\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `window` must be left out with "
                           "features")
