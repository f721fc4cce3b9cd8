"""`wisp_window`'s errors: a bad query text fails when Spark analyses the statement, with
wisp's own message on the SQL error's first line (no Python traceback); bad data fails
when it runs, with wisp's message; the query text is data (no path read, no code run)."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

import wisp as ws

pytestmark = pytest.mark.spark

PREFIX = "[TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON] Failed to analyze the Python " \
         "user defined table function: "


@pytest.fixture(scope="module")
def readings(spark: SparkSession) -> SparkSession:
    ws.register_sql(spark)
    spark.createDataFrame([("a", 1, 1.0), ("a", 2, 2.0), ("b", 1, None)],
                          "k string, t long, v double").createOrReplaceTempView("readings")
    return spark


def first_line(spark: SparkSession, text: object, table: str = "readings") -> str:
    """The first line of the error of `wisp_window` over `table` with the query `text`."""
    with pytest.raises(Exception) as caught:
        spark.sql(f"SELECT * FROM wisp_window(TABLE({table}), :q)",
                  args={"q": text}).collect()
    return str(caught.value).strip().splitlines()[0]


def test_a_misspelt_key_is_named(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\n"
                                "window: {kind: Range, strat: -1, end: 0}\n"
                                "aggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `window.strat` must be a known key "
                           "of Range (known: kind, start, end")
    assert "did you mean 'start'?" in line
    line = first_line(readings, "events: {time: t, key: k}\nwindow: Rnage\n"
                                "aggregations: [count]\n")
    assert "`window.kind` must be one of Rows, Range," in line
    assert "found 'Rnage'; did you mean 'Range'?" in line


def test_an_unknown_function_is_named(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nwindow: {kind: Rows, start: -1, "
                                "end: 0}\naggregations: [meen(v)]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `aggregations[0].fn` must be one "
                           "of count, sum, mean,")
    assert "found 'meen'; did you mean 'mean'?" in line
    line = first_line(readings, "events: {time: t, key: k}\nwindow: {kind: Since, tick: "
                                "{expr: \"evil(v) > 0\"}}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `window.tick.expr`")
    assert "evil" in line


def test_a_missing_column_is_named(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nwindow: {kind: Rows, start: -1, "
                                "end: 0}\naggregations: [mean(w)]\n")
    assert line == (PREFIX + "wisp.errors.WispInputError: `col` must be a column of the "
                    "DataFrame for mean() (columns: k, t, v), found 'w' SQLSTATE: 38000; "
                    "line 1 pos 14")
    line = first_line(readings, "events: {time: ts, key: k}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispInputError: `time` must be a column of "
                           "the DataFrame (columns: k, t, v), found 'ts'")


def test_the_query_must_be_a_constant_string(readings: SparkSession) -> None:
    with pytest.raises(Exception) as caught:  # uuid() is known only when the query runs
        readings.sql("SELECT * FROM wisp_window(TABLE(readings), uuid())").collect()
    assert str(caught.value).splitlines()[0].startswith(
        PREFIX + "wisp.query.QueryError: `query` must be a query file's text given as a "
        "constant string (a literal, or a named parameter such as :q passed with "
        "spark.sql(text, args=...)), found 'a value known only when the query runs'")
    line = first_line(readings, "- just\n- a list\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `query` must be a mapping")


def test_what_sql_does_not_run_is_refused_by_name(readings: SparkSession) -> None:
    line = first_line(readings, "events: {time: t, key: k}\nwindow: {kind: Session, gap: "
                                "{col: v}}\naggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.errors.WispUnsupportedError: `window.gap` must not "
                           "be a {col: ...} or {expr: ...} value in SQL")
    line = first_line(readings, "events: {time: t, key: k}\njoin: {kind: asof, right: "
                                "{path: quotes.parquet, time: t}}\n")
    assert "`join` must be left out of a query run by wisp_window" in line
    spans = readings.createDataFrame([(1, 3, 1.0), (2, None, 2.0)], "t long, e long, v double")
    spans.createOrReplaceTempView("spans")
    line = first_line(readings, "events: {time: t, end: e}\nwindow: {kind: Hopping, size: 4, "
                                "hop: 2}\naggregations: [count]\n", "spans")
    assert "`window` must not need the whole input in SQL (Hopping over interval events" in line


def test_the_query_text_is_data(readings: SparkSession, tmp_path: object) -> None:
    # an input path is not read (the table is the input), however it is written
    rows = readings.sql("SELECT * FROM wisp_window(TABLE(readings), :q)", args={"q": (
        "events: {time: t, key: k}\ninput: {path: /etc/shadow, format: csv}\n"
        "output: {path: /tmp/x}\naggregations: [count]\n")}).collect()
    assert sorted(r["count"] for r in rows) == [1, 1, 2]
    # an expression outside the safe subset fails as the query file's does, before Spark
    # would run it; a YAML tag that would build a Python object is refused by the loader
    line = first_line(readings, "events: {time: t, key: k}\nwindow: {kind: Since, tick: "
                                "{expr: \"reflect('java.lang.Runtime', 'getRuntime')\"}}\n"
                                "aggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `window.tick.expr`")
    line = first_line(readings, "events: !!python/object/apply:os.system ['touch /tmp/pwn']\n"
                                "aggregations: [count]\n")
    assert line.startswith(PREFIX + "wisp.query.QueryError: `QUERY` must be valid YAML")
    assert "python/object/apply" in line


def test_a_null_time_fails_with_wisps_message(readings: SparkSession) -> None:
    df: DataFrame = readings.createDataFrame([("a", None, 1.0), ("a", 2, 2.0)],
                                             "k string, t long, v double")
    df.createOrReplaceTempView("nulls")
    with pytest.raises(Exception) as caught:
        readings.sql("SELECT * FROM wisp_window(TABLE(nulls), :q)", args={"q": (
            "events: {time: t, key: k}\naggregations: [count]\n")}).collect()
    assert ("wisp.errors.WispInputError: `time` column 't' must not be null, found a null "
            "time; pass on_null_time='drop' to drop such rows on purpose") in str(caught.value)
