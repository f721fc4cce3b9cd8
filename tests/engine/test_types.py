"""Every time kind and value type runs and gives the right answer.

Expected values are computed by hand and written literally. Timestamps are compared as
microseconds since the epoch (`F.unix_micros`, computed in Spark), so the Python side never
converts an instant through a time zone; only the timestamp *values* of min/max are compared
as naive datetimes (the session time zone and the machine's are both UTC).
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import wisp as ws
from wisp.windowed import run

pytestmark = pytest.mark.spark

T0_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in microseconds
T0_DAY = 19_723  # 2024-01-01 as days since the epoch
SECOND = 1_000_000
DAY_US = 86_400 * SECOND


def micros(df: DataFrame, *columns: str) -> DataFrame:
    """`df` with the named timestamp columns replaced by their epoch microseconds."""
    return df.withColumns({c: F.unix_micros(F.col(c)) for c in columns})


def sorted_rows(df: DataFrame, *columns: str) -> list[Row]:
    """`df.collect()` sorted in Python by `columns`, nulls first (no Spark sort job)."""
    return sorted(df.collect(),
                  key=lambda r: tuple((r[c] is not None, r[c]) for c in columns))


# ------------------------------------------------------- every time kind, three windows

# Key "a" at ticks 0, 1, 3, 4 (v = 1, 2, 3, 4) and key "b" at tick 10 (v = 10).
EVENTS = [("a", 0, 1), ("a", 1, 2), ("a", 3, 3), ("a", 4, 4), ("b", 10, 10)]

# (window, key, window_start, window_end, time, sum_v, count) with times in units of
# the kind (second, day, 1, 0.125 or 0.5): Range(-2 units, 0), Rows(-1, 0), cumulative.
EXPECTED_TICKS = [
    ("range", "a", -2, 0, 0, 1, 1),
    ("range", "a", -1, 1, 1, 3, 2),
    ("range", "a", 1, 3, 3, 5, 2),
    ("range", "a", 2, 4, 4, 7, 2),
    ("range", "b", 8, 10, 10, 10, 1),
    ("rows", "a", 0, 1, 1, 3, 2),
    ("rows", "a", 1, 3, 3, 5, 2),
    ("rows", "a", 3, 4, 4, 7, 2),
    ("running", "a", 0, 0, 0, 1, 1),
    ("running", "a", 0, 1, 1, 3, 2),
    ("running", "a", 0, 3, 3, 6, 3),
    ("running", "a", 0, 4, 4, 10, 4),
    ("running", "b", 10, 10, 10, 10, 1),
]

# kind: (time column expression over the long `tick`, Range(-2 units, 0), output type,
# tick -> expected Python value of an output time column)
KINDS: dict[str, tuple[str, ws.Range, T.DataType, Any]] = {
    "timestamp": (f"timestamp_micros({T0_US} + tick * {SECOND})", ws.Range("-2s", 0),
                  T.TimestampType(), lambda n: T0_US + n * SECOND),
    "timestamp_ntz": (f"CAST(timestamp_micros({T0_US} + tick * {SECOND}) AS timestamp_ntz)",
                      ws.Range("-2s", 0), T.TimestampNTZType(),
                      lambda n: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=n)),
    "date": (f"date_from_unix_date({T0_DAY} + CAST(tick AS int))", ws.Range("-2d", 0),
             T.DateType(), lambda n: dt.date(2024, 1, 1) + dt.timedelta(days=n)),
    "int": ("CAST(tick AS int)", ws.Range(-2, 0), T.LongType(), lambda n: n),
    "long": ("tick", ws.Range(-2, 0), T.LongType(), lambda n: n),
    "decimal": ("CAST(tick * 0.125 AS decimal(12,3))", ws.Range(Decimal("-0.25"), 0),
                T.DecimalType(38, 3), lambda n: Decimal(n) * Decimal("0.125")),
    "float": ("CAST(tick * 0.5 AS float)", ws.Range(-1.0, 0), T.DoubleType(),
              lambda n: n * 0.5),
    "double": ("CAST(tick * 0.5 AS double)", ws.Range(-1, 0), T.DoubleType(),
               lambda n: n * 0.5),
}


@pytest.fixture(scope="module")
def tick_df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(EVENTS, "k string, tick long, v long")


@pytest.mark.parametrize("kind", list(KINDS))
def test_time_kind(tick_df: DataFrame, kind: str) -> None:
    expression, range_window, out_type, value = KINDS[kind]
    df = tick_df.select("k", F.expr(expression).alias("t"), "v")
    ev = ws.events(df, time="t", key="k")
    aggs = (ws.sum("v"), ws.count())
    results = {"range": ev.window(range_window).agg(*aggs),
               "rows": ev.window(ws.Rows(-1, 0)).agg(*aggs),
               "running": ev.agg(*aggs)}
    for name, result in results.items():
        assert result.columns == ["k", "window_start", "window_end", "time", "sum_v",
                                  "count"], name
        for column in ("window_start", "window_end", "time"):
            assert result.schema[column].dataType == out_type, (name, column)
    union = None
    for name, result in results.items():
        tagged = result.select(F.lit(name).alias("w"), "*")
        union = tagged if union is None else union.unionByName(tagged)
    assert union is not None
    if kind == "timestamp":
        union = micros(union, "window_start", "window_end", "time")
    rows = [tuple(r) for r in sorted_rows(union, "w", "k", "time")]
    expected = [(w, k, value(s), value(e), value(t), total, n)
                for w, k, s, e, t, total, n in EXPECTED_TICKS]
    assert rows == expected


def test_date_time_one_day_range(spark: SparkSession) -> None:
    d = dt.date
    df = spark.createDataFrame(
        [("a", d(2024, 2, 28), 1), ("a", d(2024, 2, 29), 2), ("a", d(2024, 3, 1), 4),
         ("a", d(2024, 3, 3), 8), ("b", d(1969, 12, 31), 16), ("b", d(1970, 1, 1), 32)],
        "k string, day date, v int")
    out = ws.events(df, time="day", key="k").window(ws.Range("-1d", 0)).agg(
        ws.sum("v"), ws.count())
    assert out.schema["time"].dataType == T.DateType()
    assert [tuple(r) for r in sorted_rows(out, "k", "time")] == [
        ("a", d(2024, 2, 27), d(2024, 2, 28), d(2024, 2, 28), 1, 1),
        ("a", d(2024, 2, 28), d(2024, 2, 29), d(2024, 2, 29), 3, 2),
        ("a", d(2024, 2, 29), d(2024, 3, 1), d(2024, 3, 1), 6, 2),
        ("a", d(2024, 3, 2), d(2024, 3, 3), d(2024, 3, 3), 8, 1),
        ("b", d(1969, 12, 30), d(1969, 12, 31), d(1969, 12, 31), 16, 1),
        ("b", d(1969, 12, 31), d(1970, 1, 1), d(1970, 1, 1), 48, 2),
    ]


def test_decimal_time_fractional_range(spark: SparkSession) -> None:
    df = spark.createDataFrame(
        [(Decimal("-1.000"), 1), (Decimal("-0.250"), 2), (Decimal("0.250"), 3),
         (Decimal("0.375"), 4)], "t decimal(12,3), v int")
    out = ws.events(df, time="t").window(ws.Range(-0.75, 0)).agg(ws.sum("v"))
    for column in ("window_start", "window_end", "time"):
        assert out.schema[column].dataType == T.DecimalType(38, 3)
    assert [tuple(r) for r in sorted_rows(out, "time")] == [
        (Decimal("-1.750"), Decimal("-1.000"), Decimal("-1.000"), 1),
        (Decimal("-1.000"), Decimal("-0.250"), Decimal("-0.250"), 3),
        (Decimal("-0.500"), Decimal("0.250"), Decimal("0.250"), 5),
        (Decimal("-0.375"), Decimal("0.375"), Decimal("0.375"), 9),
    ]


@pytest.mark.parametrize("window", [ws.Range(-1, 0), ws.Sliding(ws.Time(1)), ws.Session(1),
                                    ws.Snapshot()], ids=["Range", "Sliding", "Session",
                                                         "Snapshot"])
def test_decimal_time_beyond_64_bit_ticks_fails_the_query(spark: SparkSession,
                                                          window: Any) -> None:
    # decimal(38, 18) counts in 10^-18: 10 is 10^19 ticks, beyond 64 bits
    df = spark.createDataFrame([(Decimal(10), 1.0), (Decimal(11), 2.0)],
                               "t decimal(38,18), v double")
    result = ws.events(df, time="t").window(window).agg(ws.sum("v"))
    with pytest.raises(Exception) as caught:  # Spark wraps the Python worker's error
        result.collect()
    assert ("wisp: a decimal(38, 18) time or attribute holds a value whose ticks (units of "
            "10^-18) leave 64 bits; windows are computed on 64-bit ticks: cast the column "
            "to a decimal with fewer decimal places, e.g. decimal(38, 6)") in str(caught.value)


@pytest.mark.parametrize("type_name", ["float", "double"])
def test_float_time_range(spark: SparkSession, type_name: str) -> None:
    df = spark.createDataFrame([(0.0, 1), (1.0, 2), (1.5, 3), (3.0, 4)],
                               f"t {type_name}, v int")
    out = ws.events(df, time="t").window(ws.Range(-1.5, 0.5)).agg(ws.sum("v"), ws.count())
    for column in ("window_start", "window_end", "time"):
        assert out.schema[column].dataType == T.DoubleType()
    assert [tuple(r) for r in sorted_rows(out, "time")] == [
        (-1.5, 0.5, 0.0, 1, 1),
        (-0.5, 1.5, 1.0, 6, 3),
        (0.0, 2.0, 1.5, 6, 3),
        (1.5, 3.5, 3.0, 7, 2),
    ]


# ------------------------------------------------------------ extreme timestamps

Y1900 = -2_208_988_800 * SECOND  # 1900-01-01T00:00:00Z
Y9999 = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z


@pytest.fixture(scope="module")
def extreme_ev(spark: SparkSession) -> ws.Events:
    df = spark.createDataFrame([("k", Y1900, 1), ("k", -1, 2), ("k", 0, 4), ("k", Y9999, 8)],
                               "k string, us long, v long")
    df = df.select("k", F.timestamp_micros("us").alias("ts"), "v")
    return ws.events(df, time="ts", key="k")


def test_pre_1970_and_far_future_timestamps(extreme_ev: ws.Events) -> None:
    aggs = (ws.sum("v"), ws.count())
    results = {"range": extreme_ev.window(ws.Range.past("1d")).agg(*aggs),
               "rows": extreme_ev.window(ws.Rows(-1, 0)).agg(*aggs),
               "running": extreme_ev.agg(*aggs)}
    union = None
    for name, result in results.items():
        assert result.schema["time"].dataType == T.TimestampType()
        tagged = micros(result.select(F.lit(name).alias("w"), "*"),
                        "window_start", "window_end", "time")
        union = tagged if union is None else union.unionByName(tagged)
    assert union is not None
    rows = [tuple(r) for r in sorted_rows(union, "w", "time")]
    assert rows == [
        ("range", "k", Y1900 - DAY_US, Y1900, Y1900, 1, 1),
        ("range", "k", -1 - DAY_US, -1, -1, 2, 1),
        ("range", "k", -DAY_US, 0, 0, 6, 2),
        ("range", "k", Y9999 - DAY_US, Y9999, Y9999, 8, 1),
        ("rows", "k", Y1900, -1, -1, 3, 2),
        ("rows", "k", -1, 0, 0, 6, 2),
        ("rows", "k", 0, Y9999, Y9999, 12, 2),
        ("running", "k", Y1900, Y1900, Y1900, 1, 1),
        ("running", "k", Y1900, -1, -1, 3, 2),
        ("running", "k", Y1900, 0, 0, 7, 3),
        ("running", "k", Y1900, Y9999, Y9999, 15, 4),
    ]


def test_window_bounds_past_year_9999(extreme_ev: ws.Events) -> None:
    """`window_end` of the last anchor lies beyond 9999-12-31: still exact microseconds."""
    out = extreme_ev.window(ws.Range(0, "1d")).agg(ws.count())
    rows = sorted_rows(micros(out, "window_start", "window_end", "time"), "time")
    assert [tuple(r) for r in rows] == [
        ("k", Y1900, Y1900 + DAY_US, Y1900, 1),
        ("k", -1, -1 + DAY_US, -1, 2),
        ("k", 0, DAY_US, 0, 1),
        ("k", Y9999, Y9999 + DAY_US, Y9999, 1),
    ]


# --------------------------------------------------------------------- value types

BIG = 2**60 + 1
INT_MAX = 2**31 - 1
T0 = dt.datetime(2024, 1, 1)  # naive: collected timestamps are UTC wall time (TZ is UTC)


@pytest.fixture(scope="module")
def values_ev(spark: SparkSession) -> ws.Events:
    d = dt.date
    rows = [
        ("k", 1, BIG, Decimal("12345678.91"), "pear", True, d(2024, 3, 1), 1.0, INT_MAX,
         T0 + dt.timedelta(seconds=3)),
        ("k", 2, BIG, Decimal("0.01"), None, None, d(2023, 12, 31), float("nan"), INT_MAX,
         None),
        ("k", 3, BIG, None, "apple", False, None, 3.0, None, T0 + dt.timedelta(seconds=1)),
        ("k", 4, 1, Decimal("0.10"), "fig", True, d(2024, 1, 15), 4.0, -1,
         T0 + dt.timedelta(seconds=2)),
    ]
    df = spark.createDataFrame(rows, "k string, t long, big long, dec decimal(10,2), "
                                     "s string, b boolean, d date, x double, i int, "
                                     "w timestamp")
    return ws.events(df, time="t", key="k")


VALUE_AGGS = (
    ws.sum("big"), ws.sum("dec"), ws.mean("dec"),
    ws.min("s"), ws.max("s"), ws.first("s"), ws.last("s"), ws.collect("s"),
    ws.count(), ws.count("s"),
    ws.min("b"), ws.max("b"), ws.min("d"), ws.max("d"),
    ws.max("x"), ws.min("x"), ws.sum("x"),
    ws.sum("i"), ws.min("dec"), ws.max("dec"), ws.min("w"), ws.max("w"),
)

VALUE_TYPES = {
    "sum_big": T.LongType(), "sum_dec": T.DecimalType(20, 2), "mean_dec": T.DoubleType(),
    "min_s": T.StringType(), "max_s": T.StringType(), "first_s": T.StringType(),
    "last_s": T.StringType(), "collect_s": T.ArrayType(T.StringType(), False),
    "count": T.LongType(), "count_s": T.LongType(),
    "min_b": T.BooleanType(), "max_b": T.BooleanType(),
    "min_d": T.DateType(), "max_d": T.DateType(),
    "max_x": T.DoubleType(), "min_x": T.DoubleType(), "sum_x": T.DoubleType(),
    "sum_i": T.LongType(), "min_dec": T.DecimalType(10, 2), "max_dec": T.DecimalType(10, 2),
    "min_w": T.TimestampType(), "max_w": T.TimestampType(),
}

NAN = float("nan")
S1, S3 = dt.timedelta(seconds=1), dt.timedelta(seconds=3)
# Running values over the four rows (the same frames as Rows(-3, 0, partial=True)).
VALUES_EXPECTED: list[dict[str, Any]] = [
    {"sum_big": BIG, "sum_dec": Decimal("12345678.91"), "mean_dec": 12345678.91,
     "min_s": "pear", "max_s": "pear", "first_s": "pear", "last_s": "pear",
     "collect_s": ["pear"], "count": 1, "count_s": 1, "min_b": True, "max_b": True,
     "min_d": dt.date(2024, 3, 1), "max_d": dt.date(2024, 3, 1),
     "max_x": 1.0, "min_x": 1.0, "sum_x": 1.0, "sum_i": INT_MAX,
     "min_dec": Decimal("12345678.91"), "max_dec": Decimal("12345678.91"),
     "min_w": T0 + S3, "max_w": T0 + S3},
    {"sum_big": 2 * BIG, "sum_dec": Decimal("12345678.92"), "mean_dec": 6172839.46,
     "min_s": "pear", "max_s": "pear", "first_s": "pear", "last_s": "pear",
     "collect_s": ["pear"], "count": 2, "count_s": 1, "min_b": True, "max_b": True,
     "min_d": dt.date(2023, 12, 31), "max_d": dt.date(2024, 3, 1),
     "max_x": NAN, "min_x": 1.0, "sum_x": NAN, "sum_i": 2 * INT_MAX,
     "min_dec": Decimal("0.01"), "max_dec": Decimal("12345678.91"),
     "min_w": T0 + S3, "max_w": T0 + S3},
    {"sum_big": 3 * BIG, "sum_dec": Decimal("12345678.92"), "mean_dec": 6172839.46,
     "min_s": "apple", "max_s": "pear", "first_s": "pear", "last_s": "apple",
     "collect_s": ["pear", "apple"], "count": 3, "count_s": 2, "min_b": False,
     "max_b": True, "min_d": dt.date(2023, 12, 31), "max_d": dt.date(2024, 3, 1),
     "max_x": NAN, "min_x": 1.0, "sum_x": NAN, "sum_i": 2 * INT_MAX,
     "min_dec": Decimal("0.01"), "max_dec": Decimal("12345678.91"),
     "min_w": T0 + S1, "max_w": T0 + S3},
    {"sum_big": 3 * BIG + 1, "sum_dec": Decimal("12345679.02"), "mean_dec": 4115226.34,
     "min_s": "apple", "max_s": "pear", "first_s": "pear", "last_s": "fig",
     "collect_s": ["pear", "apple", "fig"], "count": 4, "count_s": 3, "min_b": False,
     "max_b": True, "min_d": dt.date(2023, 12, 31), "max_d": dt.date(2024, 3, 1),
     "max_x": NAN, "min_x": 1.0, "sum_x": NAN, "sum_i": 2 * INT_MAX - 1,
     "min_dec": Decimal("0.01"), "max_dec": Decimal("12345678.91"),
     "min_w": T0 + S1, "max_w": T0 + S3},
]


def same(actual: Any, expected: Any) -> bool:
    """Equality where NaN equals NaN and floats match to 1e-12 relative."""
    if isinstance(expected, float) and not isinstance(actual, bool):
        if math.isnan(expected):
            return isinstance(actual, float) and math.isnan(actual)
        return isinstance(actual, float) and actual == pytest.approx(expected, rel=1e-12)
    return type(actual) is type(expected) and actual == expected


def assert_rows(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected)
    for i, (got, want) in enumerate(zip(actual, expected, strict=True)):
        for name, value in want.items():
            assert same(got[name], value), (i, name, got[name], value)


@pytest.mark.parametrize("window", [None, ws.Rows(-3, 0, partial=True)],
                         ids=["running-native", "rows-frames"])
def test_value_types(values_ev: ws.Events, window: ws.Rows | None) -> None:
    out = values_ev.agg(*VALUE_AGGS) if window is None else \
        values_ev.window(window).agg(*VALUE_AGGS)
    for name, data_type in VALUE_TYPES.items():
        assert out.schema[name].dataType == data_type, name
    rows = [r.asDict() for r in sorted_rows(out, "time")]
    assert [r["time"] for r in rows] == [1, 2, 3, 4]
    assert_rows(rows, VALUES_EXPECTED)
    # exact beyond 2^53: no detour through a double
    assert rows[3]["sum_big"] == 3 * 2**60 + 4 == 3_458_764_513_820_540_932


@pytest.mark.parametrize("strategy", [None, "arrow-frames"], ids=["chosen", "arrow-frames"])
def test_nan_values_leave_the_window(values_ev: ws.Events, strategy: Any) -> None:
    aggs = (ws.max("x"), ws.min("x"), ws.sum("x"), ws.mean("x"))
    pairs = run(values_ev, ws.Rows(-1, 0), aggs, strategy=strategy)
    alone = run(values_ev, ws.Rows(0, 0), aggs, strategy=strategy)
    assert_rows([r.asDict() for r in sorted_rows(pairs, "time")], [
        {"time": 2, "max_x": NAN, "min_x": 1.0, "sum_x": NAN, "mean_x": NAN},
        {"time": 3, "max_x": NAN, "min_x": 3.0, "sum_x": NAN, "mean_x": NAN},
        {"time": 4, "max_x": 4.0, "min_x": 3.0, "sum_x": 7.0, "mean_x": 3.5},
    ])
    nan_row = alone.filter(F.col("time") == 2).collect()
    assert_rows([r.asDict() for r in nan_row],
                [{"max_x": NAN, "min_x": NAN, "sum_x": NAN, "mean_x": NAN}])


def test_decimal_sum_beyond_int64_is_exact(spark: SparkSession) -> None:
    big = Decimal("900000000000000000")  # 9e17: 11 of them exceed 2^63 ~ 9.22e18
    df = spark.createDataFrame([("k", t, big) for t in range(11)],
                               "k string, t long, v decimal(18,0)")
    ev = ws.events(df, time="t", key="k")
    native = run(ev, None, [ws.sum("v")], strategy="native-running")
    frames = ev.window(ws.Rows(-10, 0, partial=True)).agg(ws.sum("v"))
    assert frames.schema["sum_v"].dataType == T.DecimalType(28, 0)
    expected = [Decimal(900000000000000000 * (t + 1)) for t in range(11)]
    assert [r.sum_v for r in sorted_rows(native, "time")] == expected
    assert [r.sum_v for r in sorted_rows(frames, "time")] == expected


def test_decimal_values_beyond_18_digits(spark: SparkSession) -> None:
    df = spark.createDataFrame([("k", 1, Decimal("99999999999999999.99")),
                                ("k", 2, Decimal("1.00"))], "k string, t long, v decimal(20,2)")
    out = ws.events(df, time="t", key="k").window(ws.Rows(-1, 0, partial=True)).agg(
        ws.sum("v"), ws.max("v"))
    assert [(r.sum_v, r.max_v) for r in sorted_rows(out, "time")] == [
        (Decimal("99999999999999999.99"), Decimal("99999999999999999.99")),
        (Decimal("100000000000000000.99"), Decimal("99999999999999999.99")),
    ]


def test_long_sum_overflow_is_not_silent(spark: SparkSession) -> None:
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    df = spark.createDataFrame([("k", t, 2**62) for t in range(3)],
                               "k string, t long, v long")
    ev = ws.events(df, time="t", key="k")
    with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
        run(ev, None, [ws.sum("v")], strategy="native-running").collect()
    frames = ev.window(ws.Rows(-2, 0, partial=True)).agg(ws.sum("v"))
    with pytest.raises(Exception, match=r"(?i)overflow"):
        frames.collect()


# ----------------------------------------------------------------------------- keys

KEY_ROWS = [
    ("a", 1.0, 1, 1), ("a", 1.0, 2, 2),
    ("a", NAN, 1, 4), ("a", NAN, 3, 8),
    (None, 1.0, 1, 16), (None, 1.0, 2, 32),
    ("a", None, 5, 64),
    (None, None, 1, 128),
    ("b", NAN, 1, 256),
]


def key_label(value: Any) -> Any:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


@pytest.fixture(scope="module")
def keys_ev(spark: SparkSession) -> ws.Events:
    df = spark.createDataFrame(KEY_ROWS, "k1 string, k2 double, t long, v long")
    return ws.events(df, time="t", key=["k1", "k2"])


@pytest.mark.parametrize("window", [None, ws.Range(-10, 0)], ids=["running", "range"])
def test_null_and_nan_keys_two_columns(keys_ev: ws.Events, window: ws.Range | None) -> None:
    out = keys_ev.agg(ws.sum("v"), ws.count()) if window is None else \
        keys_ev.window(window).agg(ws.sum("v"), ws.count())
    assert out.columns[:2] == ["k1", "k2"]
    rows = sorted(((key_label(r.k1), key_label(r.k2), r.time, r.sum_v, r["count"])
                   for r in out.collect()), key=repr)
    assert rows == sorted([
        ("a", 1.0, 1, 1, 1), ("a", 1.0, 2, 3, 2),
        ("a", "NaN", 1, 4, 1), ("a", "NaN", 3, 12, 2),
        (None, 1.0, 1, 16, 1), (None, 1.0, 2, 48, 2),
        ("a", None, 5, 64, 1),
        (None, None, 1, 128, 1),
        ("b", "NaN", 1, 256, 1),
    ], key=repr)


@pytest.mark.parametrize("window", [None, ws.Range(-10, 0)], ids=["running", "range"])
def test_negative_zero_key_is_zero(spark: SparkSession, window: ws.Range | None) -> None:
    """Spark groups -0.0 with 0.0 (and NaN with NaN); one key, whatever the strategy."""
    df = spark.createDataFrame([(0.0, 1, 1), (-0.0, 2, 2), (0.0, 3, 4), (-0.0, 4, 8)],
                               "k double, t long, v long")
    ev = ws.events(df, time="t", key="k")
    out = ev.agg(ws.sum("v")) if window is None else ev.window(window).agg(ws.sum("v"))
    rows = sorted_rows(out, "time")
    assert [(abs(r.k), r.time, r.sum_v) for r in rows] == [
        (0.0, 1, 1), (0.0, 2, 3), (0.0, 3, 7), (0.0, 4, 15)]


# ----------------------------------------------- cumulative: both strategies agree


def test_cumulative_strategies_agree(spark: SparkSession) -> None:
    rows = [
        ("a", 1, 5, 0.5, "p", None),
        ("a", 1, 3, 0.25, "q", 1),       # tie in time with the row above
        ("a", 2, None, None, None, 2),
        ("a", 4, 7, NAN, "r", 3),
        ("a", 5, -2, 2.0, "a", 4),
        ("b", 1, 10, 1.5, "z", 5),
        ("b", 3, 11, -1.5, None, 6),
        (None, 2, 1, 3.0, "n", 7),
        (None, 2, 2, 0.1, "m", 7),       # full tie in time and seq: broken by v
    ]
    df = spark.createDataFrame(rows, "k string, t long, v long, x double, s string, "
                                     "seq long")
    ev = ws.events(df, time="t", key="k")
    aggs = [ws.count(), ws.count("x"), ws.sum("v"), ws.sum("x"), ws.mean("v"),
            ws.mean("x"), ws.min("x"), ws.max("x"), ws.min("s"), ws.max("s"),
            ws.first("s"), ws.last("s"), ws.first("x"), ws.last("v"), ws.stddev("v"),
            ws.variance("x"), ws.collect("s"), ws.collect("v")]
    native = run(ev, None, aggs, strategy="native-running")
    frames = run(ev, None, aggs, strategy="arrow-frames")
    assert "native-running" in ws.explain(native)
    assert "arrow-frames" in ws.explain(frames)
    assert native.schema.simpleString() == frames.schema.simpleString()

    def collected(result: DataFrame) -> list[dict[str, Any]]:
        out = [r.asDict() for r in result.collect()]
        return sorted(out, key=lambda r: (repr(r["k"]), r["time"], r["count"]))

    left, right = collected(native), collected(frames)
    assert len(left) == len(right) == len(rows)
    for a, b in zip(left, right, strict=True):
        for name in a:
            if isinstance(a[name], float):
                assert same(b[name], a[name]), (name, a, b)
            else:
                assert a[name] == b[name], (name, a, b)
    # spot checks by hand: key "a", ties at t=1 broken by v (3 before 5)
    a_rows = [r for r in left if r["k"] == "a"]
    assert [r["collect_v"] for r in a_rows] == [[3], [3, 5], [3, 5], [3, 5, 7],
                                                [3, 5, 7, -2]]
    assert [r["collect_s"] for r in a_rows] == [["q"], ["q", "p"], ["q", "p"],
                                                ["q", "p", "r"], ["q", "p", "r", "a"]]
    assert [r["sum_v"] for r in a_rows] == [3, 8, 8, 15, 13]
    assert [r["window_start"] for r in a_rows] == [1, 1, 1, 1, 1]
    null_rows = [r for r in left if r["k"] is None]
    assert [r["collect_v"] for r in null_rows] == [[1], [1, 2]]


# ---------------------------------------------------------------------------- udaf


def test_udaf_spread_over_rows(spark: SparkSession) -> None:
    df = spark.createDataFrame([("k", 1, 5.0), ("k", 2, 1.0), ("k", 3, 4.0), ("k", 4, 10.0),
                                ("j", 1, 2.0)], "k string, t long, v double")
    ev = ws.events(df, time="t", key="k")

    def spread(v: np.ndarray, t: np.ndarray) -> float:
        return float(v.max() - v.min())

    out = ev.window(ws.Rows(-2, 0)).agg(
        ws.udaf(lambda v, t: float(v.max() - v.min()), "v", returns="double").alias("r"),
        ws.udaf(spread, "v", returns="double"))
    assert out.columns == ["k", "window_start", "window_end", "time", "r", "spread_v"]
    assert out.schema["r"].dataType == T.DoubleType()
    assert [tuple(r) for r in sorted_rows(out, "k", "time")] == [
        ("k", 1, 3, 3, 4.0, 4.0),
        ("k", 2, 4, 4, 9.0, 9.0),
    ]


def test_udaf_array_of_times(extreme_ev: ws.Events) -> None:
    out = extreme_ev.window(ws.Rows(-1, 0)).agg(
        ws.udaf(lambda v, t: t.tolist(), "v", returns="array<long>").alias("times"),
        ws.udaf(lambda v, t: [int(x) for x in v], "v", returns="array<bigint>")
        .alias("values"))
    assert out.schema["times"].dataType == T.ArrayType(T.LongType())
    rows = sorted_rows(micros(out, "time").select("time", "times", "values"), "time")
    assert [tuple(r) for r in rows] == [
        (-1, [Y1900, -1], [1, 2]),
        (0, [-1, 0], [2, 4]),
        (Y9999, [0, Y9999], [4, 8]),
    ]
