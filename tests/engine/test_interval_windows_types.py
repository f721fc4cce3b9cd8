"""Hopping, tumbling, snapshot and count-by-start-time windows over every exact kind of
time column (timestamp without time zone, date, decimal, integer), with interval events
whose end column has the time column's type, keys of two columns (a string with nulls
and empty strings, and an integer with nulls), and aggregations over decimal, string,
float (NaN, nulls) and long values.

Random data is judged against the brute-force oracle (tests/oracle_intervals.py), which
works on integer ticks: microseconds for timestamp_ntz, days for date (interval windows
over dates run in whole days), units of 0.001 for decimal(12,3), the column's units for
integers. Output times are converted back to ticks in Python after checking their
Python type, so values are compared exactly. Hand-computed cases pin the same semantics
literally, before 1970 and far in the future, with a non-zero alignment.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_intervals import count_by_start_time, hopping, snapshot
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import wisp as ws
from wisp.snap import snap_to_hops
from wisp.spec.aggregates import Aggregation
from wisp.spec.windows import Window
from wisp.windowed import run

pytestmark = pytest.mark.spark

EPOCH_NTZ = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
MICRO = dt.timedelta(microseconds=1)
TIME_COLUMNS = ("window_start", "window_end", "time")


def _ntz_ticks(value: Any) -> int:
    assert isinstance(value, dt.datetime) and value.tzinfo is None, repr(value)
    return (value - EPOCH_NTZ) // MICRO


def _date_ticks(value: Any) -> int:
    assert type(value) is dt.date, repr(value)
    return (value - EPOCH_DATE).days


def _decimal_ticks(value: Any, scale: int = 3) -> int:
    assert isinstance(value, Decimal) and value.as_tuple().exponent == -scale, repr(value)
    return int(value.scaleb(scale))


def _integer_ticks(value: Any) -> int:
    assert type(value) is int, repr(value)
    return value


def _days(day: dt.date) -> int:
    return (day - EPOCH_DATE).days


@dataclass(frozen=True)
class Kind:
    """A time column type: how random ticks become its values and back.

    `unit`: the grid of the random times (ticks); `durations` and `aligns`: window
    parameters as the user writes them, with their value in ticks; `value`: ticks ->
    the Python value Spark takes for the column; `ticks`: an output time value -> ticks
    (asserting its Python type)."""

    ddl: str
    out: T.DataType
    unit: int
    bases: tuple[int, ...]
    durations: tuple[tuple[Any, int], ...]
    aligns: tuple[tuple[Any, int], ...]
    value: Callable[[int], Any]
    ticks: Callable[[Any], int]


SECOND = 1_000_000
KINDS: dict[str, Kind] = {
    "timestamp_ntz": Kind(
        "timestamp_ntz", T.TimestampNTZType(), SECOND // 4,
        (0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2),
        (("250ms", SECOND // 4), ("500ms", SECOND // 2), ("750ms", 3 * SECOND // 4),
         ("1s", SECOND), (dt.timedelta(seconds=1.25), 5 * SECOND // 4), ("2s", 2 * SECOND)),
        ((None, 0), (dt.datetime(1969, 12, 31, 23, 59, 59, 250_000), -3 * SECOND // 4),
         (dt.datetime(1900, 1, 1, 0, 0, 0, 500_000), -2_208_988_800 * SECOND + SECOND // 2),
         (dt.date(1969, 12, 31), -86_400 * SECOND)),
        lambda t: EPOCH_NTZ + t * MICRO, _ntz_ticks),
    "date": Kind(
        "date", T.DateType(), 2,
        (0, _days(dt.date(1900, 1, 1)), _days(dt.date(9999, 6, 1)), -1),
        (("1d", 1), ("2d", 2), ("3d", 3), (dt.timedelta(days=4), 4), ("5d", 5), ("7d", 7)),
        ((None, 0), (dt.date(1969, 12, 30), -2), (dt.date(1900, 1, 2), -25_566),
         (dt.datetime(1969, 12, 29), -3)),
        lambda t: EPOCH_DATE + dt.timedelta(days=t), _date_ticks),
    "decimal": Kind(
        "decimal(12,3)", T.DecimalType(38, 3), 250,
        (0, -900_000_000_000, 999_000_000_000, -1),
        ((Decimal("0.25"), 250), (0.5, 500), (Decimal("0.750"), 750), (1, 1000),
         (Decimal("1.25"), 1250), (2, 2000)),
        ((None, 0), (Decimal("-0.750"), -750), (Decimal("-123456789.125"), -123_456_789_125)),
        lambda t: Decimal(t).scaleb(-3), _decimal_ticks),
    "decimal0": Kind(
        "decimal(18,0)", T.DecimalType(38, 0), 4,
        (0, -10**17, 10**17, -1),
        ((3, 3), (Decimal(4), 4), (6.0, 6), (8, 8), (Decimal("10"), 10), (16, 16)),
        ((None, 0), (Decimal(-3), -3), (-10**17 - 1, -10**17 - 1)),
        lambda t: Decimal(t), lambda x: _decimal_ticks(x, 0)),
    "integer": Kind(
        "int", T.LongType(), 4,
        (0, -2_147_483_000, 2_147_483_000, -1),
        ((3, 3), (4, 4), (6, 6), (8, 8), (10, 10), (16, 16)),
        ((None, 0), (-3, -3), (-1_000_000_001, -1_000_000_001)),
        lambda t: t, _integer_ticks),
    "smallint": Kind(
        "smallint", T.LongType(), 4, (0, -32_000, 32_000, -1),
        ((3, 3), (4, 4), (6, 6), (8, 8), (10, 10), (16, 16)),
        ((None, 0), (-3, -3), (-20_001, -20_001)), lambda t: t, _integer_ticks),
}

SCHEMA = "k string, g int, ts {t}, te {t}, d decimal(10,2), v double, s string, i long"
COLUMNS = ["k", "g", "ts", "te", "d", "v", "s", "i"]
KEYS: list[list[str]] = [[], ["k", "g"]]
DECIMALS = [Decimal("99999999.99"), Decimal("-99999999.99"), Decimal("12.34"),
            Decimal("-0.01"), Decimal("0.00"), Decimal("5.50")]

# Aggregations whose results are exact (decimals, strings, picks of floats, counts):
# "changes" merges equal consecutive results, so every result must compare exactly.
EXACT: list[Aggregation] = [
    ws.count(), ws.count("d"), ws.sum("d"), ws.min("d"), ws.max("d"), ws.first("d"),
    ws.min("s"), ws.max("s"), ws.first("s"), ws.last("s"), ws.min("v"), ws.max("v"),
    ws.last("v"), ws.sum("i"), ws.collect("s"),
]
ALL: list[Aggregation] = [
    *EXACT, ws.mean("d"), ws.time_weighted_mean("d"), ws.sum("v"), ws.mean("v"),
    ws.time_weighted_mean("v"), ws.time_weighted_mean("i"),
]
AGG_TYPES = {
    "count": T.LongType(), "count_d": T.LongType(), "sum_d": T.DecimalType(20, 2),
    "min_d": T.DecimalType(10, 2), "max_d": T.DecimalType(10, 2),
    "first_d": T.DecimalType(10, 2), "min_s": T.StringType(), "max_s": T.StringType(),
    "first_s": T.StringType(), "last_s": T.StringType(), "min_v": T.DoubleType(),
    "max_v": T.DoubleType(), "last_v": T.DoubleType(), "sum_i": T.LongType(),
    "collect_s": T.ArrayType(T.StringType(), containsNull=False),
    "mean_d": T.DoubleType(), "time_weighted_mean_d": T.DoubleType(),
    "sum_v": T.DoubleType(), "mean_v": T.DoubleType(),
    "time_weighted_mean_v": T.DoubleType(), "time_weighted_mean_i": T.DoubleType(),
}


@st.composite
def event_rows(draw: st.DrawFn, kind: Kind) -> list[dict[str, Any]]:
    base = draw(st.sampled_from(kind.bases))
    rows = []
    for _ in range(draw(st.integers(0, 12))):
        t = base + draw(st.integers(-10, 10)) * kind.unit + draw(st.sampled_from([0, 0, 0, 1]))
        shape = draw(st.sampled_from(["open", "short", "long", "zero"]))
        e = {"open": None, "zero": t,
             "short": t + draw(st.integers(1, 3)) * kind.unit,
             "long": t + draw(st.integers(4, 60)) * kind.unit}[shape]
        rows.append({
            "k": draw(st.sampled_from(["a", "", None])),
            "g": draw(st.sampled_from([1, 2, None])),
            "ts": t, "te": e,
            "d": draw(st.one_of(st.none(), st.sampled_from(DECIMALS))),
            "v": draw(st.one_of(st.none(), st.just(math.nan),
                                st.floats(-1e9, 1e9, allow_nan=False))),
            "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "", "xy"]))),
            "i": draw(st.one_of(st.none(), st.integers(-2**40, 2**40))),
        })
    return rows


def to_events(spark: SparkSession, kind: Kind, rows: list[dict[str, Any]], interval: bool,
              key: list[str]) -> ws.Events:
    data = [(r["k"], r["g"], kind.value(r["ts"]),
             None if r["te"] is None else kind.value(r["te"]), r["d"], r["v"], r["s"], r["i"])
            for r in rows]
    df = spark.createDataFrame(data, SCHEMA.format(t=kind.ddl))
    if not interval:
        df = df.drop("te")
    return ws.events(df, time="ts", end="te" if interval else None, key=key)


def check_schema(result: DataFrame, kind: Kind, key: list[str],
                 aggs: list[Aggregation]) -> None:
    assert result.columns == [*key, *TIME_COLUMNS, *(a.output_name for a in aggs)]
    for name in key:
        assert result.schema[name].dataType == {"k": T.StringType(), "g": T.IntegerType()}[name]
    for name in TIME_COLUMNS:
        assert result.schema[name].dataType == kind.out, name
    for agg in aggs:
        assert result.schema[agg.output_name].dataType == AGG_TYPES[agg.output_name], agg


def collect(result: DataFrame, kind: Kind, key: list[str]) -> list[dict[str, Any]]:
    rows = []
    for row in result.collect():
        out = row.asDict()
        for name in TIME_COLUMNS:
            if out[name] is not None:
                out[name] = kind.ticks(out[name])
        rows.append(out)
    return sort_output(rows, key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]],
          rows: list[dict[str, Any]], key: list[str]) -> None:
    v_scale = math.fsum(abs(r["v"]) for r in rows if r["v"] is not None and r["v"] == r["v"])
    d_scale = float(sum((abs(r["d"]) for r in rows if r["d"] is not None), Decimal(0)))
    i_scale = float(sum(abs(r["i"]) for r in rows if r["i"] is not None))
    scales = {"sum_v": v_scale, "mean_v": v_scale, "time_weighted_mean_v": v_scale,
              "mean_d": d_scale, "time_weighted_mean_d": d_scale,
              "time_weighted_mean_i": i_scale}
    assert_rows_match(sort_output(actual, key), sort_output(expected, key),
                      scales={c: max(s, 1.0) for c, s in scales.items()})


def columns(interval: bool) -> list[str]:
    return COLUMNS if interval else [c for c in COLUMNS if c != "te"]


kinds = st.sampled_from(sorted(KINDS))


# ------------------------------------------------------------- random data, the oracle


@settings(max_examples=12)
@given(data=st.data(), name=kinds, key=st.sampled_from(KEYS), interval=st.booleans(),
       tumbling=st.booleans())
def test_hopping_and_tumbling_windows_match_oracle(spark: SparkSession, data: st.DataObject,
                                                   name: str, key: list[str],
                                                   interval: bool, tumbling: bool) -> None:
    kind = KINDS[name]
    rows = data.draw(event_rows(kind), "rows")
    size, size_ticks = data.draw(st.sampled_from(kind.durations), "size")
    hop, hop_ticks = (size, size_ticks) if tumbling else data.draw(
        st.sampled_from(kind.durations), "hop")
    align, align_ticks = data.draw(st.sampled_from(kind.aligns), "align")
    window = ws.Tumbling(size, align=align) if tumbling else ws.Hopping(size, hop,
                                                                        align=align)
    result = to_events(spark, kind, rows, interval, key).window(window).agg(*ALL)
    check_schema(result, kind, key, ALL)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key, order=None,
                       columns=columns(interval), size=size_ticks, hop=hop_ticks,
                       align=align_ticks, output="windows", aggs=ALL)
    check(collect(result, kind, key), expected, rows, key)


@settings(max_examples=8)
@given(data=st.data(), key=st.sampled_from(KEYS), interval=st.booleans(),
       align=st.sampled_from([2**63 - 2, 2**63 - 1, -(2**63), -(2**63) + 1]),
       output=st.sampled_from(["windows", "changes"]))
def test_hopping_windows_aligned_near_the_limits_match_oracle(
        spark: SparkSession, data: st.DataObject, key: list[str], interval: bool, align: int,
        output: str) -> None:
    # integer time around 0 and +-2^31, windows aligned near -2^63 or 2^63 - 1: the
    # kernel reduces the align modulo the hop (it used to compute `time - size - align`
    # in 64 bits, which wrapped around)
    kind = KINDS["integer"]
    rows = data.draw(event_rows(kind), "rows")
    (size, size_ticks), (hop, hop_ticks) = sorted(
        [data.draw(st.sampled_from(kind.durations), "size"),
         data.draw(st.sampled_from(kind.durations), "hop")], key=lambda d: -d[1])
    aggs = EXACT if output == "changes" else ALL
    window = ws.Hopping(size, hop, align=align, output=output)
    result = to_events(spark, kind, rows, interval, key).window(window).agg(*aggs)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key, order=None,
                       columns=columns(interval), size=size_ticks, hop=hop_ticks,
                       align=align, output=output, aggs=aggs)
    check(collect(result, kind, key), expected, rows, key)


@settings(max_examples=12)
@given(data=st.data(), name=kinds, key=st.sampled_from(KEYS), interval=st.booleans())
def test_hopping_changes_match_oracle(spark: SparkSession, data: st.DataObject, name: str,
                                      key: list[str], interval: bool) -> None:
    kind = KINDS[name]
    rows = data.draw(event_rows(kind), "rows")
    (size, size_ticks), (hop, hop_ticks) = sorted(
        [data.draw(st.sampled_from(kind.durations), "size"),
         data.draw(st.sampled_from(kind.durations), "hop")], key=lambda d: -d[1])
    align, align_ticks = data.draw(st.sampled_from(kind.aligns), "align")
    window = ws.Hopping(size, hop, align=align, output="changes")
    result = to_events(spark, kind, rows, interval, key).window(window).agg(*EXACT)
    check_schema(result, kind, key, EXACT)
    expected = hopping(rows, time="ts", end="te" if interval else None, key=key, order=None,
                       columns=columns(interval), size=size_ticks, hop=hop_ticks,
                       align=align_ticks, output="changes", aggs=EXACT)
    check(collect(result, kind, key), expected, rows, key)


@settings(max_examples=12)
@given(data=st.data(), name=kinds, key=st.sampled_from(KEYS), interval=st.booleans(),
       n=st.integers(1, 4))
def test_snapshot_and_count_windows_match_oracle(spark: SparkSession, data: st.DataObject,
                                                 name: str, key: list[str], interval: bool,
                                                 n: int) -> None:
    kind = KINDS[name]
    rows = data.draw(event_rows(kind), "rows")
    ev = to_events(spark, kind, rows, interval, key)
    end = "te" if interval else None
    snap = ev.window(ws.Snapshot()).agg(*ALL)
    count = ev.window(ws.CountByStartTime(n)).agg(*ALL)
    check_schema(snap, kind, key, ALL)
    check_schema(count, kind, key, ALL)
    both = collect(snap.select(F.lit("snapshot").alias("window"), "*").unionByName(
        count.select(F.lit("count").alias("window"), "*")), kind, key)
    actual = {w: [{c: v for c, v in r.items() if c != "window"} for r in both
                  if r["window"] == w] for w in ("snapshot", "count")}
    check(actual["snapshot"], snapshot(rows, time="ts", end=end, key=key, order=None,
                                       columns=columns(interval), aggs=ALL), rows, key)
    check(actual["count"], count_by_start_time(rows, time="ts", end=end, key=key,
                                               order=None, columns=columns(interval), n=n,
                                               aggs=ALL), rows, key)


# ------------------------------------------------- by hand: every kind, 1900 and 9999

# Interval events in units of the kind, keys (k, g) interleaved in arrival order:
# ("a", 1) has two events sharing its key, one of them open-ended; ("a", None),
# ("", None) and (None, 1) are three more keys (an empty string is not a null).
HAND_EVENTS: list[tuple[str | None, int | None, int, int | None, str, str | None]] = [
    ("", None, 2, 3, "10.00", None),
    ("a", 1, 1, 4, "1.50", "x"),
    ("a", None, 0, 1, "0.01", None),
    (None, 1, 5, 6, "-0.75", "y"),
    ("a", 1, 2, None, "2.25", ""),
]
TICK = "tick"  # one tick after 2 units: the span end of the count window
# (window, k, g, window_start, window_end, time, count, sum_d, last_s); None = end of time
HAND_EXPECTED: list[tuple[str, str | None, int | None, int, int | str | None, int | str,
                          int, str, str | None]] = [
    # Tumbling(2 units, align = 1 unit): windows [1 + 2n, 3 + 2n); the horizon is the
    # newest finite end, 6, so [5, 7) is written and [7, ...) is the open-ended tail
    ("tumbling", None, 1, 5, 7, 7, 1, "-0.75", "y"),
    ("tumbling", "", None, 1, 3, 3, 1, "10.00", None),
    ("tumbling", "a", None, -1, 1, 1, 1, "0.01", None),
    ("tumbling", "a", 1, 1, 3, 3, 2, "3.75", ""),
    ("tumbling", "a", 1, 3, 5, 5, 2, "3.75", ""),
    ("tumbling", "a", 1, 5, 7, 7, 1, "2.25", ""),
    ("tumbling", "a", 1, 7, None, 9, 1, "2.25", ""),
    # Hopping(2 units, 1 unit, output="changes"): window [w, w + 2) is valid on
    # [w + 2, w + 3); equal neighbours merge
    ("changes", None, 1, 6, 8, 6, 1, "-0.75", "y"),
    ("changes", "", None, 3, 5, 3, 1, "10.00", None),
    ("changes", "a", None, 1, 3, 1, 1, "0.01", None),
    ("changes", "a", 1, 2, 3, 2, 1, "1.50", "x"),
    ("changes", "a", 1, 3, 6, 3, 2, "3.75", ""),
    ("changes", "a", 1, 6, None, 6, 1, "2.25", ""),
    # Snapshot: between consecutive start/end points, time = window_start
    ("snapshot", None, 1, 5, 6, 5, 1, "-0.75", "y"),
    ("snapshot", "", None, 2, 3, 2, 1, "10.00", None),
    ("snapshot", "a", None, 0, 1, 0, 1, "0.01", None),
    ("snapshot", "a", 1, 1, 2, 1, 1, "1.50", "x"),
    ("snapshot", "a", 1, 2, 4, 2, 2, "3.75", ""),
    ("snapshot", "a", 1, 4, None, 4, 1, "2.25", ""),
    # CountByStartTime(2): only ("a", 1) has two distinct starts (1 and 2)
    ("count", "a", 1, 1, TICK, 2, 2, "3.75", ""),
]


@dataclass(frozen=True)
class HandKind:
    """`at(origin, u)`: the column value `u` units after `origin`; `tick`: one tick."""

    ddl: str
    out: T.DataType
    origins: tuple[Any, Any]  # before 1970, far in the future
    one: Any
    two: Any
    at: Callable[[Any, int], Any]
    tick: Callable[[Any], Any]


HALF = Decimal("0.500")
HAND_KINDS: dict[str, HandKind] = {
    "timestamp_ntz": HandKind(
        "timestamp_ntz", T.TimestampNTZType(),
        (dt.datetime(1900, 1, 1), dt.datetime(9999, 12, 31)), "1s", "2s",
        lambda o, u: o + dt.timedelta(seconds=u), lambda x: x + MICRO),
    "date": HandKind(
        "date", T.DateType(), (dt.date(1900, 1, 1), dt.date(9999, 12, 1)), "1d",
        dt.timedelta(days=2), lambda o, u: o + dt.timedelta(days=u),
        lambda x: x + dt.timedelta(days=1)),
    "decimal": HandKind(
        "decimal(12,3)", T.DecimalType(38, 3),
        (Decimal("-999999000.000"), Decimal("999999000.000")), HALF, 1,
        lambda o, u: o + HALF * u, lambda x: x + Decimal("0.001")),
    "integer": HandKind(
        "int", T.LongType(), (-2**31, 2**31 - 8), 1, 2, lambda o, u: o + u,
        lambda x: x + 1),
}


@pytest.mark.parametrize("name", sorted(HAND_KINDS))
def test_hand_computed_windows_before_1970_and_far_in_the_future(spark: SparkSession,
                                                                 name: str) -> None:
    kind = HAND_KINDS[name]
    aggs = [ws.count(), ws.sum("d"), ws.last("s")]
    union = None
    for origin in kind.origins:
        df = spark.createDataFrame(
            [(k, g, kind.at(origin, s), None if e is None else kind.at(origin, e),
              Decimal(d), text) for k, g, s, e, d, text in HAND_EVENTS],
            f"k string, g int, ts {kind.ddl}, te {kind.ddl}, d decimal(10,2), s string")
        ev = ws.events(df, time="ts", end="te", key=["k", "g"])
        align = kind.at(origin, 1)
        windows: dict[str, Window] = {
            "tumbling": ws.Tumbling(kind.two, align=align),
            "changes": ws.Hopping(kind.two, kind.one, align=align, output="changes"),
            "snapshot": ws.Snapshot(),
            "count": ws.CountByStartTime(2)}
        for label, window in windows.items():
            result = ev.window(window).agg(*aggs)
            assert result.columns == ["k", "g", *TIME_COLUMNS, "count", "sum_d", "last_s"]
            for column in TIME_COLUMNS:
                assert result.schema[column].dataType == kind.out, (label, column)
            assert result.schema["sum_d"].dataType == T.DecimalType(20, 2)
            tagged = result.select(F.lit(str(origin)).alias("origin"),
                                   F.lit(label).alias("window"), "*")
            union = tagged if union is None else union.unionByName(tagged)
    assert union is not None
    got = sorted((tuple(r) for r in union.collect()), key=repr)

    def value(origin: Any, u: int | str | None) -> Any:
        if u is None:
            return None
        return kind.tick(kind.at(origin, 2)) if u == TICK else kind.at(origin, u)

    expected = sorted(((str(o), w, k, g, value(o, s), value(o, e), value(o, t), n,
                        Decimal(d), text)
                       for o in kind.origins
                       for w, k, g, s, e, t, n, d, text in HAND_EXPECTED), key=repr)
    assert got == expected


# --------------------------------------------------------- value types, by hand

BIG = Decimal("99999999.99")  # the largest decimal(10,2)
LONG_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def values_ev(spark: SparkSession) -> ws.Events:
    # lifetimes [0, 3), [1, 3), [2, 3) on long time; every value type of the brief
    df = spark.createDataFrame(
        [(0, 3, BIG, LONG_MAX, 1.5, "b"), (1, 3, BIG, -5, math.nan, ""),
         (2, 3, Decimal("-0.01"), 4, None, "ab")],
        "t long, e long, d decimal(10,2), i long, v double, s string")
    return ws.events(df, time="t", end="e")


VALUE_AGGS = [ws.sum("d"), ws.mean("d"), ws.min("d"), ws.max("d"), ws.time_weighted_mean("d"),
              ws.sum("i"), ws.min("v"), ws.max("v"), ws.sum("v"), ws.mean("v"),
              ws.first("v"), ws.last("v"), ws.time_weighted_mean("v"), ws.min("s"),
              ws.max("s"), ws.first("s"), ws.last("s")]


def same(got: tuple[Any, ...], want: tuple[Any, ...]) -> bool:
    """Equal item by item, NaN equal to NaN, floats to the last few bits."""
    def eq(a: Any, b: Any) -> bool:
        if isinstance(b, float):
            return isinstance(a, float) and (a == b or (a != a and b != b)
                                             or math.isclose(a, b, rel_tol=1e-15))
        return type(a) is type(b) and a == b
    return len(got) == len(want) and all(eq(a, b) for a, b in zip(got, want, strict=True))


def test_decimal_long_float_and_string_values_in_snapshot_windows(
        values_ev: ws.Events) -> None:
    result = values_ev.window(ws.Snapshot()).agg(*VALUE_AGGS)
    for name, want in [("sum_d", T.DecimalType(20, 2)), ("min_d", T.DecimalType(10, 2)),
                       ("mean_d", T.DoubleType()), ("sum_i", T.LongType()),
                       ("max_s", T.StringType())]:
        assert result.schema[name].dataType == want, name
    got = [tuple(r) for r in result.orderBy("time").collect()]
    nan = math.nan
    expected = [
        # [0, 1): the first event alone
        (0, 1, 0, BIG, float(BIG), BIG, BIG, float(BIG), LONG_MAX, 1.5, 1.5, 1.5, 1.5,
         1.5, 1.5, 1.5, "b", "b", "b", "b"),
        # [1, 2): NaN is the greatest value (max, sum and mean are NaN; min is not)
        (1, 2, 1, 2 * BIG, float(BIG), BIG, BIG, float(BIG), LONG_MAX - 5, 1.5, nan, nan,
         nan, 1.5, nan, nan, "", "b", "b", ""),
        # [2, 3): last(v) skips the null and takes the NaN; sums stay exact
        (2, 3, 2, 2 * BIG - Decimal("0.01"), (2 * 99999999.99 - 0.01) / 3,
         Decimal("-0.01"), BIG, (2 * 99999999.99 - 0.01) / 3, LONG_MAX - 1, 1.5, nan,
         nan, nan, 1.5, nan, nan, "", "b", "b", "ab"),
    ]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert same(row, want), (row, want)


def test_count_window_weighs_decimal_values_by_clipped_lifetimes(values_ev: ws.Events) -> None:
    # CountByStartTime(3): one window spanning [0, 3) (starts 0, 1, 2; span to 2 + 1):
    # the lifetimes weigh 3, 2 and 1
    result = values_ev.window(ws.CountByStartTime(3)).agg(
        ws.time_weighted_mean("d"), ws.time_weighted_mean("i"), ws.sum("d"), ws.count())
    got = [tuple(r) for r in result.collect()]
    assert len(got) == 1
    assert same(got[0], (0, 3, 2, (99999999.99 * 5 - 0.01) / 6,
                         ((LONG_MAX * 3) - 5 * 2 + 4) / 6, 2 * BIG - Decimal("0.01"), 3))


def test_long_sums_near_the_limit_are_exact_and_beyond_it_fail(spark: SparkSession) -> None:
    # exact: [0, 1) holds 2^63 - 1 alone, [1, 2) adds -5, [2, 3) adds 4
    exact = spark.createDataFrame([(0, 3, LONG_MAX), (1, 3, -5), (2, 3, 4)],
                                  "t long, e long, i long")
    ev = ws.events(exact, time="t", end="e")
    for aggs in ([ws.sum("i")], [ws.sum("i"), ws.max("i")]):
        rows = ev.window(ws.Snapshot()).agg(*aggs).orderBy("time").collect()
        assert [r["sum_i"] for r in rows] == [LONG_MAX, LONG_MAX - 5, LONG_MAX - 1], aggs
    # beyond: two events of 2^62 alive together sum to 2^63, out of a long's range
    beyond = spark.createDataFrame([(0, 10, 2**62), (1, 10, 2**62)], "t long, e long, i long")
    ev = ws.events(beyond, time="t", end="e")
    # integer sums alone (summed without listing the members) and beside an aggregate
    # that lists them
    cases: list[tuple[Window, list[Aggregation]]] = [
        (ws.Tumbling(100), [ws.sum("i")]), (ws.Snapshot(), [ws.sum("i")]),
        (ws.CountByStartTime(2), [ws.sum("i")]),
        (ws.Hopping(100, 50, output="changes"), [ws.sum("i"), ws.max("i")])]
    for window, aggs in cases:
        with pytest.raises(Exception, match="overflows a long"):
            ev.window(window).agg(*aggs).collect()


# ------------------------------------------------ integer time at the 64-bit limits

LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


@pytest.mark.parametrize("strategy", ["panes", "arrow-intervals"])
@pytest.mark.parametrize("row", [
    (LONG_MIN, LONG_MIN),  # a point at the bottom: its first windows begin below it
    (LONG_MIN + 1, LONG_MIN + 3),  # an interval there
    (LONG_MAX - 5, LONG_MAX - 1),  # its last window ends beyond the top
    (LONG_MAX, LONG_MAX),  # a point at the top: the horizon is one tick beyond it
    (LONG_MAX, None),  # open-ended from the top
])
def test_hopping_windows_beyond_the_tick_range_fail_the_query(
        spark: SparkSession, strategy: str, row: tuple[int, int | None]) -> None:
    # Hopping(10, 4): each event lies in windows reaching 6 to 10 ticks beyond it
    df = spark.createDataFrame([(*row, 1.0)], "t long, e long, v double")
    assert_beyond_tick_range(ws.events(df, time="t", end="e"), ws.Hopping(10, 4), strategy)


@pytest.mark.parametrize("strategy", ["panes", "arrow-intervals"])
@pytest.mark.parametrize("t", [LONG_MIN, LONG_MIN + 1, LONG_MAX, LONG_MAX - 1, LONG_MAX - 7])
def test_hopping_point_windows_beyond_the_tick_range_fail_the_query(
        spark: SparkSession, strategy: str, t: int) -> None:
    # Hopping(6, 3): panes of 3 ticks from 0, so the pane of -2^63 (or of -2^63 + 1)
    # starts one tick (or two) below the range, and so do its windows. At the top, a
    # point at 2^63 - 1 would live to one tick beyond the range, one at 2^63 - 2 until
    # its last tick (the end of time, which stands for open-ended events); at 2^63 - 8
    # its windows fit, but their indices ((start - align) / hop, above 2^61) do not
    # stay apart from the index of open-ended runs. Each used to give wrong rows or none.
    df = spark.createDataFrame([(t, 1.0)], "t long, v double")
    assert_beyond_tick_range(ws.events(df, time="t"), ws.Hopping(6, 3), strategy)


@pytest.mark.parametrize("window", [ws.Snapshot(), ws.CountByStartTime(1)], ids=repr)
@pytest.mark.parametrize("row", [
    (LONG_MAX, LONG_MAX),  # one tick at the last tick: it would end beyond the range
    (LONG_MAX - 3, LONG_MAX),  # a finite end at the last tick reads as "open-ended"
    (LONG_MAX, None),  # open-ended from the last tick: its start is "the end of time"
])
def test_snapshot_and_count_lifetimes_at_the_last_tick_fail_the_query(
        spark: SparkSession, window: Window, row: tuple[int, int | None]) -> None:
    # beside an ordinary event of the same key. These used to give an open window for a
    # finite event, or no row at all for the open-ended one.
    df = spark.createDataFrame([(0, 5, 1.0), (*row, 1.0)], "t long, e long, v double")
    assert_beyond_tick_range(ws.events(df, time="t", end="e"), window, "arrow-intervals")


@pytest.mark.parametrize("window", [ws.Snapshot(), ws.CountByStartTime(1)], ids=repr)
def test_snapshot_and_count_point_at_the_last_tick_fails_the_query(
        spark: SparkSession, window: Window) -> None:
    df = spark.createDataFrame([(0, 1.0), (LONG_MAX, 1.0)], "t long, v double")
    assert_beyond_tick_range(ws.events(df, time="t"), window, "arrow-intervals")


def test_snapshot_lifetimes_just_below_the_last_tick(spark: SparkSession) -> None:
    # an event ending one tick before the last, and an open-ended one from there
    df = spark.createDataFrame([(LONG_MAX - 3, LONG_MAX - 1, 1.0), (LONG_MAX - 1, None, 2.0)],
                               "t long, e long, v double")
    result = ws.events(df, time="t", end="e").window(ws.Snapshot()).agg(ws.count(),
                                                                         ws.sum("v"))
    assert sorted(tuple(r) for r in result.collect()) == [
        (9223372036854775804, 9223372036854775806, 9223372036854775804, 1, 1.0),
        (9223372036854775806, None, 9223372036854775806, 1, 2.0)]


TUMBLING_STRATEGIES = ["native-buckets", "panes", "arrow-intervals"]


@pytest.mark.parametrize("strategy", TUMBLING_STRATEGIES)
@pytest.mark.parametrize("t", [LONG_MIN, LONG_MIN + 7, LONG_MAX - 7, LONG_MAX])
def test_tumbling_point_windows_beyond_the_tick_range_fail_the_query(
        spark: SparkSession, strategy: str, t: int) -> None:
    # Tumbling(10) from 0: the window of -2^63 .. -2^63 + 7 begins at -2^63 - 2, the
    # window of 2^63 - 8 .. 2^63 - 1 ends at 2^63 + 2. Spark's own aggregation
    # (native-buckets) used to fail here with its bare "long overflow".
    df = spark.createDataFrame([(t, 1.0)], "t long, v double")
    assert_beyond_tick_range(ws.events(df, time="t"), ws.Tumbling(10), strategy)


@pytest.mark.parametrize("strategy", TUMBLING_STRATEGIES)
def test_tumbling_point_windows_at_the_top_of_the_tick_range(
        spark: SparkSession, strategy: str) -> None:
    # the last window of Tumbling(10) that fits in 64-bit ticks
    df = spark.createDataFrame([(LONG_MAX - 17, 4.0), (LONG_MAX - 8, 8.0)], "t long, v double")
    result = run(ws.events(df, time="t"), ws.Tumbling(10), [ws.count(), ws.sum("v")],
                 strategy=strategy)
    assert [tuple(r) for r in result.collect()] == [
        (9223372036854775790, 9223372036854775800, 9223372036854775800, 2, 12.0)]


@pytest.mark.parametrize("strategy", TUMBLING_STRATEGIES)
def test_tumbling_point_windows_at_the_bottom_of_the_tick_range(
        spark: SparkSession, strategy: str) -> None:
    # the first window of Tumbling(10) that fits in 64-bit ticks, [-2^63 + 8, -2^63 + 18).
    # The kernel (and panes, which feed it) used to fail the query here: it computed a
    # window index from `time - size`, which leaves 64 bits within a window's size of -2^63
    df = spark.createDataFrame([(LONG_MIN + 8, 1.0), (LONG_MIN + 17, 2.0)], "t long, v double")
    result = run(ws.events(df, time="t"), ws.Tumbling(10), [ws.count(), ws.sum("v")],
                 strategy=strategy)
    assert [tuple(r) for r in result.collect()] == [
        (-9223372036854775800, -9223372036854775790, -9223372036854775790, 2, 3.0)]


@pytest.mark.parametrize("strategy", ["panes", "arrow-intervals"])
@pytest.mark.parametrize(("rows", "window", "expected"), [
    # Hopping(10, 5) from 0: the windows on the grid nearest -2^63 begin at -2^63 - 2
    # (below the range: it ends at -2^63 + 8, before both events) and -2^63 + 3
    ([(LONG_MIN + 10, None, 1.0), (LONG_MIN + 12, None, 2.0)], ws.Hopping(10, 5),
     [(-9223372036854775805, -9223372036854775795, 2, 3.0),
      (-9223372036854775800, -9223372036854775790, 2, 3.0)]),
    # the same windows over intervals [-2^63 + 10, + 12) and [-2^63 + 12, + 30)
    ([(LONG_MIN + 10, LONG_MIN + 12, 1.0), (LONG_MIN + 12, LONG_MIN + 30, 2.0)],
     ws.Hopping(10, 5),
     [(-9223372036854775805, -9223372036854775795, 2, 3.0),
      (-9223372036854775800, -9223372036854775790, 2, 3.0),
      (-9223372036854775795, -9223372036854775785, 1, 2.0),
      (-9223372036854775790, -9223372036854775780, 1, 2.0),
      (-9223372036854775785, -9223372036854775775, 1, 2.0),
      (-9223372036854775780, -9223372036854775770, 1, 2.0)]),
    # aligned at 2^63 - 2 (a multiple of 3): the grid holds -2^63 - 1, so the windows
    # of 6 ticks holding -2^63 + 6 begin at -2^63 + 2 and -2^63 + 5 (the index of a
    # window counted from the align itself would not fit in 64 bits)
    ([(LONG_MIN + 6, None, 4.0)], ws.Hopping(6, 3, align=LONG_MAX - 1),
     [(-9223372036854775806, -9223372036854775800, 1, 4.0),
      (-9223372036854775803, -9223372036854775797, 1, 4.0)]),
], ids=["points", "intervals", "far-align"])
def test_hopping_windows_at_the_bottom_of_the_tick_range(
        spark: SparkSession, strategy: str, rows: list[tuple[int, int | None, float]],
        window: Window, expected: list[tuple[int, int, int, float]]) -> None:
    # windows that fit in 64-bit ticks although `time - size` does not (these used to
    # fail the query, like the tumbling windows above)
    df = spark.createDataFrame(rows, "t long, e long, v double")
    points = all(e is None for _, e, _ in rows)
    ev = ws.events(df.drop("e"), time="t") if points else ws.events(df, time="t", end="e")
    result = run(ev, window, [ws.count(), ws.sum("v")], strategy=strategy)
    assert sorted((r.window_start, r.window_end, r["count"], r.sum_v)
                  for r in result.collect()) == expected


@pytest.mark.parametrize("strategy", ["panes", "arrow-intervals"])
@pytest.mark.parametrize(("t", "align", "expected"), [
    # 2^63 - 2 is a multiple of 3: windows of 6 ticks holding -10^15 (2 above a
    # multiple of 3) begin 5 and 2 ticks before it. This gave one window open to the
    # end of time: `time - size - align` wrapped around
    (-10**15, LONG_MAX - 1, [(-10**15 - 5, -10**15 + 1), (-10**15 - 2, -10**15 + 4)]),
    (10**15, LONG_MAX - 1, [(10**15 - 4, 10**15 + 2), (10**15 - 1, 10**15 + 5)]),
    # -2^63 + 1 is 2 above a multiple of 3 (this one failed the query)
    (6, LONG_MIN + 1, [(2, 8), (5, 11)]),
], ids=["before-zero", "after-zero", "align-at-the-bottom"])
def test_hopping_windows_aligned_far_from_the_events(
        spark: SparkSession, strategy: str, t: int, align: int,
        expected: list[tuple[int, int]]) -> None:
    df = spark.createDataFrame([(t, 1.0)], "t long, v double")
    result = run(ws.events(df, time="t"), ws.Hopping(6, 3, align=align), [ws.count()],
                 strategy=strategy)
    assert sorted((r.window_start, r.window_end) for r in result.collect()) == expected


def test_snapped_lifetimes_at_the_limits_of_the_tick_range(spark: SparkSession) -> None:
    # Hopping(6, 3) aligned at 1: the earliest window holding -2^63 is [-2^63 - 3,
    # -2^63 + 3) (it begins below the range, its result holds from its end), the latest
    # is [-2^63, -2^63 + 6), valid to -2^63 + 9. Both bounds used to come out a tick
    # short, from a subtraction that wrapped around.
    df = spark.createDataFrame([(LONG_MIN, LONG_MIN + 1, 1.0)], "t long, e long, v double")
    snapped = snap_to_hops(ws.events(df, time="t", end="e"), 6, 3, align=1)
    assert [tuple(r) for r in snapped.df.collect()] == [
        (-9223372036854775805, -9223372036854775799, 1.0)]


@pytest.mark.parametrize("row", [
    (LONG_MAX - 10, LONG_MAX - 5),  # the snapped end lies beyond 2^63 - 1 (it wrapped)
    (LONG_MAX - 20, LONG_MAX - 12),  # it is 2^63 - 1 (it read as the end of time)
    (LONG_MAX, LONG_MAX),  # one tick at the last tick
])
def test_snapped_lifetimes_beyond_the_tick_range_fail_the_query(
        spark: SparkSession, row: tuple[int, int]) -> None:
    df = spark.createDataFrame([(0, 5, 1.0), (*row, 1.0)], "t long, e long, v double")
    snapped = snap_to_hops(ws.events(df, time="t", end="e"), 11, 4)
    with pytest.raises(Exception) as caught:
        snapped.df.collect()
    assert "`time` column 't' must keep every window bound within the 64-bit tick range" in str(
        caught.value)


def assert_beyond_tick_range(ev: ws.Events, window: Window, strategy: str) -> None:
    """Counting and summing `v` over `window` fails the query with wisp's tick-range
    error on `strategy`."""
    result = run(ev, window, [ws.count(), ws.sum("v")], strategy=strategy)
    with pytest.raises(Exception) as caught:
        result.collect()
    assert "`time` column 't' must keep every window bound within the 64-bit tick range" in str(
        caught.value)


# ------------------------------------------------ decimal time at a fine scale

def test_decimal_time_with_eighteen_decimal_places(spark: SparkSession) -> None:
    # decimal(38, 18), the type Spark infers for Python Decimals: ticks of 10^-18 fit 64
    # bits up to about 9.22
    df = spark.createDataFrame([(Decimal(1), Decimal("4.5"), 1.0), (Decimal(2), None, 2.0)],
                               "t decimal(38,18), e decimal(38,18), v double")
    ev = ws.events(df, time="t", end="e")
    result = ev.window(ws.Tumbling(1)).agg(ws.count(), ws.sum("v"))
    assert result.schema["time"].dataType == T.DecimalType(38, 18)
    # windows [n, n + 1); the horizon is the finite end 4.5, so [5, ...) is the tail
    assert sorted(tuple(r) for r in result.collect()) == [
        (Decimal(1), Decimal(2), Decimal(2), 1, 1.0),
        (Decimal(2), Decimal(3), Decimal(3), 2, 3.0),
        (Decimal(3), Decimal(4), Decimal(4), 2, 3.0),
        (Decimal(4), Decimal(5), Decimal(5), 2, 3.0),
        (Decimal(5), None, Decimal(6), 1, 2.0)]
    # an open-ended event from 8: the tail row, for windows from [9, 10) on, would have
    # its time (10) beyond 64-bit ticks
    near = spark.createDataFrame([(Decimal(8), None)],
                                 "t decimal(38,18), e decimal(38,18)")
    with pytest.raises(Exception) as caught:
        ws.events(near, time="t", end="e").window(ws.Tumbling(1)).agg(ws.count()).collect()
    assert "`time` column 't' must keep every window bound within the 64-bit tick range" in str(
        caught.value)


def test_decimal_time_beyond_64_bit_ticks_fails_the_query(spark: SparkSession) -> None:
    df = spark.createDataFrame([(Decimal(10), Decimal("12.5"), 1.0)],
                               "t decimal(38,18), e decimal(38,18), v double")
    result = ws.events(df, time="t", end="e").window(ws.Snapshot()).agg(ws.count())
    with pytest.raises(Exception) as caught:  # Spark wraps the worker's error
        result.collect()
    assert ("a decimal(38, 18) time or attribute holds a value whose ticks (units of "
            "10^-18) leave 64 bits" in str(caught.value))
    assert "cast the column to a decimal with fewer decimal places, e.g. decimal(38, 6)" \
        in str(caught.value)


def test_wide_decimal_values(spark: SparkSession) -> None:
    # decimal(38,2) values far beyond 64-bit unscaled integers, decimal(38,18) values
    # whose unscaled integers (10.5 -> 1.05e19) leave 64 bits too; lifetimes [0, 3),
    # [1, 3) and [2, open) under Tumbling(2): windows [0, 2), [2, 4), then the tail
    # from 4 (the horizon is the finite end 3)
    big = Decimal("123456789012345678901234567.89")
    df = spark.createDataFrame(
        [(0, 3, big, Decimal("10.5")), (1, 3, big, Decimal("11.25")),
         (2, None, Decimal("-0.01"), None)],
        "t long, e long, d decimal(38,2), x decimal(38,18)")
    result = ws.events(df, time="t", end="e").window(ws.Tumbling(2)).agg(
        ws.sum("d"), ws.min("d"), ws.sum("x"), ws.max("x"), ws.time_weighted_mean("x"),
        ws.time_weighted_mean("d"))
    assert result.schema["sum_d"].dataType == T.DecimalType(38, 2)
    assert result.schema["sum_x"].dataType == T.DecimalType(38, 18)
    got = [tuple(r) for r in result.orderBy("time").collect()]
    expected = [
        # weights 2 and 1 in [0, 2); 1, 1 and 2 in [2, 4) (x is null for the third)
        (0, 2, 2, Decimal("246913578024691357802469135.78"), big, Decimal("21.75"),
         Decimal("11.25"), (10.5 * 2 + 11.25) / 3, float(big)),
        (2, 4, 4, Decimal("246913578024691357802469135.77"), Decimal("-0.01"), Decimal("21.75"),
         Decimal("11.25"), (10.5 + 11.25) / 2, (2 * float(big) - 0.02) / 4),
        (4, None, 6, Decimal("-0.01"), Decimal("-0.01"), Decimal(0), None, None, -0.01),
    ]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert same(row, want), (row, want)
