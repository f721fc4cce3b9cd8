"""The safe subset of SQL a query file's `{expr: ...}` may hold: what it accepts, the
canonical text Spark then parses, and what it refuses (without Spark), plus a check
against Spark's own parser that the canonical text means what the user wrote."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from wisp.errors import WispInputError
from wisp.spec.safe_sql import MAX_NESTING, SAFE_FUNCTIONS, canonical_sql

DOCS = "docs/cli.md#expressions"


@pytest.mark.parametrize(("text", "canonical"), [
    ("flag", "`flag`"),
    ("`odd name`.`f``x`", "`odd name`.`f``x`"),
    ("a.b", "`a`.`b`"),
    ("NOT a AND b OR c", "(((NOT `a`) AND `b`) OR `c`)"),
    ("!flag", "(NOT `flag`)"),
    ("1 + 2 * 3 - 4 || 'x'", "(1 + (2 * 3) - 4 || 'x')"),
    ("- - 1", "(- (- 1))"),
    ("a DIV 2 % 3", "(`a` DIV 2 % 3)"),
    ("a == b AND a <> c", "((`a` = `b`) AND (`a` != `c`))"),
    ("coalesce(a, 0) <=> 1", "(coalesce(`a`, 0) <=> 1)"),
    ("HOUR(ts) = 0", "(hour(`ts`) = 0)"),
    ("10L + 1.5BD + 1e3 + .5 + 2d", "(10L + 1.5BD + 1E3 + .5 + 2D)"),
    ("ts - INTERVAL 5 MINUTES", "(`ts` - INTERVAL 5 MINUTES)"),
    ("INTERVAL -5 minutes 3 seconds", "INTERVAL -5 MINUTES 3 SECONDS"),
    ("INTERVAL '1:30' HOUR TO MINUTE", "INTERVAL '1:30' HOUR TO MINUTE"),
    ("INTERVAL '1 day'", "INTERVAL '1 day'"),
    ("INTERVAL 5 MINUTES - 3", "(INTERVAL 5 MINUTES - 3)"),
    ("date '2024-01-01' < d", "(DATE '2024-01-01' < `d`)"),
    ("timestamp", "`timestamp`"),
    ("a BETWEEN 1 AND 2 AND b", "((`a` BETWEEN 1 AND 2) AND `b`)"),
    ("x NOT IN (1, 2)", "(`x` NOT IN (1, 2))"),
    ("s NOT LIKE 'a!%%' ESCAPE '!'", "(`s` NOT LIKE 'a!%%' ESCAPE '!')"),
    ("r REGEXP '^x'", "(`r` RLIKE '^x')"),
    ("a IS NOT NULL", "(`a` IS NOT NULL)"),
    ("a IS DISTINCT FROM b", "(`a` IS DISTINCT FROM `b`)"),
    ("CASE WHEN a > 1 THEN 'x' ELSE 'y' END", "CASE WHEN (`a` > 1) THEN 'x' ELSE 'y' END"),
    ("CASE a WHEN 1 THEN 2 END", "CASE `a` WHEN 1 THEN 2 END"),
    ("try_cast(a AS decimal(10, 2))", "TRY_CAST(`a` AS DECIMAL(10, 2))"),
    ("'it\\'s' = s", "('it\\'s' = `s`)"),
    ("\"say 'hi'\" = s", "('say \\'hi\\'' = `s`)"),
])
def test_the_subset_is_written_canonically(text: str, canonical: str) -> None:
    assert canonical_sql(text, "window.tick.expr") == canonical


def test_the_canonical_text_is_its_own_canonical_text() -> None:
    text = "CASE WHEN hour(ts) BETWEEN 9 AND 17 THEN v * 2 ELSE -v END > 3 OR s LIKE 'x%'"
    once = canonical_sql(text)
    assert canonical_sql(once) == once


def message(text: str, param: str = "window.end.expr") -> str:
    with pytest.raises(WispInputError) as caught:
        canonical_sql(text, param)
    return str(caught.value)


@pytest.mark.parametrize(("text", "name"), [
    ("java_method('java.lang.System', 'exit', 0) = 1", "java_method"),
    ("reflect('java.lang.System', 'getProperty', 'user.home')", "reflect"),
    ("try_reflect('java.lang.System', 'exit', 0)", "try_reflect"),
    ("JAVA_METHOD('java.lang.System', 'exit', 0)", "JAVA_METHOD"),
    ("`java_method`('java.lang.System', 'exit', 0)", "java_method"),
    ("system.builtin.java_method('java.lang.System', 'exit', 0)",
     "system.builtin.java_method"),
    ("abs(reflect('java.lang.System', 'exit', 0))", "reflect"),
    ("CASE WHEN true THEN java_method('a', 'b') END", "java_method"),
    ("exists(x)", "exists"),
    ("rand() > 0.5", "rand"),
    ("version()", "version"),
])
def test_a_function_outside_the_list_is_refused_by_name(text: str, name: str) -> None:
    assert message(text) == (f"`window.end.expr` must use only the listed functions "
                             f"({DOCS}), found {name!r}")


def test_a_near_miss_gets_a_hint() -> None:
    assert message("coalesec(a, 0)") == (f"`window.end.expr` must use only the listed "
                                         f"functions ({DOCS}), found 'coalesec'; did you "
                                         "mean 'coalesce'?")


@pytest.mark.parametrize("name", ["current_user", "USER", "session_user", "current_timestamp"])
def test_a_bare_name_spark_reads_as_a_call_is_refused(name: str) -> None:
    assert message(f"{name} = 'x'") == (
        f"`window.end.expr` must use only the listed functions ({DOCS}), found {name!r}; "
        f"Spark reads {name!r} as a call when no column has that name; name such a column "
        "with {col: ...}")


@pytest.mark.parametrize(("text", "found", "expected", "at"), [
    ("a --x", "'--'", "no comment", 3),
    ("a /* x */", "'/*'", "no comment", 3),
    ("(SELECT 1)", "'1'", "')'", 9),
    ("x -> x", "'>'", "a value", 4),
    ("a[0]", "'['", "a value or an operator", 2),
    ("a::int", "':'", "a value or an operator", 2),
    ("a & b", "'&'", "a value or an operator", 3),
    ("'open", "\"'\"", "a closing '", 1),
    ("`open", "'`'", "a closing `", 1),
    ("a ==", "the end of the expression", "a value", 5),
    ("1a", "'1a'", "a number (digits, then at most a type suffix)", 1),
    ("abs(a) OVER (w)", "'OVER'", "an operator or the end of the expression", 8),
    ("a IS 1", "'1'", "NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS", 6),
    ("CAST(a AS map<int, int>)", "'map'", "a type (BOOLEAN, TINYINT, BYTE, SMALLINT, SHORT, "
     "INT, INTEGER, BIGINT, LONG, FLOAT, REAL, DOUBLE, STRING, DATE, TIMESTAMP, "
     "TIMESTAMP_NTZ, TIMESTAMP_LTZ, DECIMAL, DEC, NUMERIC)", 11),
    ("INTERVAL 5", "the end of the expression", "a unit (YEAR, MONTH, WEEK, DAY, HOUR, "
     "MINUTE, SECOND, MILLISECOND, MICROSECOND)", 11),
])
def test_syntax_outside_the_subset_is_refused_where_it_starts(text: str, found: str,
                                                              expected: str, at: int) -> None:
    assert message(text) == (f"`window.end.expr` must be an expression of the documented "
                             f"subset ({DOCS}), found {found}; expected {expected} at "
                             f"character {at}")


def test_the_size_and_nesting_are_bounded() -> None:
    deep = "(" * (MAX_NESTING + 1) + "a" + ")" * (MAX_NESTING + 1)
    assert message(deep) == (f"`window.end.expr` must be an expression nested at most "
                             f"{MAX_NESTING} deep, found deeper nesting; at character "
                             f"{MAX_NESTING + 1}")
    # the whole expression is one level, each sign another: the 32nd sign is too deep,
    # and the error points past it, at the 33rd (character 65)
    assert message("- " * 40 + "a") == (f"`window.end.expr` must be an expression nested at "
                                        f"most {MAX_NESTING} deep, found deeper nesting; at "
                                        "character 65")
    assert message("a + " * 1000 + "a") == ("`window.end.expr` must be an expression of at "
                                            "most 4,000 characters, found 4,001 characters")
    assert message("  ") == "`window.end.expr` must be a non-empty SQL expression, found '  '"


def test_what_hid_code_around_a_string_is_only_a_string() -> None:
    """A string whose quotes Spark and a naive reader could see differently stays one
    string literal in the canonical text: the call inside is never a call."""
    text = "s = 'a\\' , java_method(1) , \\''"
    assert canonical_sql(text) == "(`s` = 'a\\' , java_method(1) , \\'')"
    with pytest.raises(WispInputError, match="found 'java_method'"):
        canonical_sql("s = concat('a\\\\', java_method(1), '\\'')")


# ------------------------------------------------------------------- with Spark

SAMPLE = [
    ("a", 1, 2.5, dt.datetime(2024, 1, 1, 9, 30), "x%y", True, None),
    ("b", -3, 0.0, dt.datetime(2024, 1, 2, 23, 5), "it's", False, 4),
    (None, 0, -1.25, dt.datetime(2023, 12, 31, 0, 0), "", None, 0),
]
SCHEMA = "s STRING, n INT, v DOUBLE, ts TIMESTAMP, t STRING, flag BOOLEAN, m INT"


@pytest.mark.spark
def test_spark_reads_the_canonical_text_as_it_reads_the_original(spark: SparkSession
                                                                 ) -> None:
    """Spark's own parser is the reference: each expression, as written and in its
    canonical form, gives the same value on every row."""
    texts = [
        "NOT flag AND n > 0 OR s IS NULL", "n + 2 * 3 - 4 || 'x'", "- n * 2", "n DIV 2 % 3",
        "v BETWEEN -1 AND 1 AND NOT flag", "n NOT IN (0, 1)", "t LIKE 'x!%%' ESCAPE '!'",
        "t RLIKE '^i'", "m IS DISTINCT FROM n", "flag IS NOT TRUE", "s <=> 'a'",
        "CASE WHEN n > 0 THEN 'p' WHEN n < 0 THEN 'n' ELSE 'z' END",
        "CASE s WHEN 'a' THEN 1 ELSE 2 END", "CAST(v AS DECIMAL(6, 2))",
        "ts - INTERVAL 5 MINUTES", "ts + INTERVAL '1:30' HOUR TO MINUTE",
        "ts + INTERVAL 1 HOUR 30 MINUTES", "ts + INTERVAL -5 SECONDS",
        "ts + INTERVAL '1 day'", "s = 'reset' OR hour(ts) = 9",
        "ts < TIMESTAMP '2024-01-02 00:00:00'", "date_trunc('hour', ts)",
        "hour(ts) BETWEEN 9 AND 17", "coalesce(m, n, 0) + 10L", "1.5BD * v", "1e3 + v",
        "concat_ws('-', s, t) = 'a-x%y'", "t = 'it\\'s'", "t = \"it's\"", "!flag",
        "n = 1 = flag", "if(flag, greatest(n, m), least(n, m))",
    ]
    df = spark.createDataFrame(SAMPLE, SCHEMA)
    columns = [f"{text} AS c{i}" for i, text in enumerate(texts)]
    canonical = [f"{canonical_sql(text)} AS c{i}" for i, text in enumerate(texts)]
    as_written = df.selectExpr("s", *columns).orderBy("s").collect()
    assert df.selectExpr("s", *canonical).orderBy("s").collect() == as_written
    assert len(as_written) == 3


@pytest.mark.spark
def test_every_listed_function_is_a_spark_builtin(spark: SparkSession) -> None:
    builtin = {row[0] for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect()}
    assert sorted(SAFE_FUNCTIONS - builtin) == []
    assert {"reflect", "java_method", "try_reflect"} <= builtin  # what the list leaves out
    assert not SAFE_FUNCTIONS & {"reflect", "java_method", "try_reflect", "current_user",
                                 "now", "rand", "uuid", "version", "assert_true",
                                 "raise_error", "input_file_name"}


def test_the_documented_list_is_the_list() -> None:
    """docs/cli.md#expressions names exactly the functions of `SAFE_FUNCTIONS`."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    section = docs.split("Functions (pure: their value depends on their arguments "
                         "alone):")[1].split("Left out on purpose")[0]
    assert set(re.findall(r"`(\w+)`", section)) == SAFE_FUNCTIONS
