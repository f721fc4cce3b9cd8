"""Dynamic windows and clock anchors on Spark against the brute-force oracle
(tests/oracle_dynamic.py), on random data: several keys (a null key and an empty-string
key among them), ties, nulls, NaN, pre-1970 and far-future times, bounds from offsets,
columns and expressions, null bounds, every `closed` value, obsolete violations."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_rows_match, sort_output
from oracle_dynamic import ObsoleteViolation, clock_anchors, dynamic_window
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.spec.aggregates import Aggregation

pytestmark = pytest.mark.spark

SECOND = 1_000_000
Q = SECOND // 4  # one step of the random times: 250 ms
BASES = [0, -2_208_988_800 * SECOND, 253_402_214_400 * SECOND, -SECOND // 2]
COLUMNS = ["k", "ts", "v", "i", "s", "seq"]
ANCHOR_COLUMNS = ["k", "at", "lo", "hi", "ob", "w", "aseq"]
FLOAT_COLUMNS = ("sum_v", "mean_v")

AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.stddev("v"), ws.collect("v"), ws.sum("i"),
    ws.max("s"), ws.collect("s"),
    ws.udaf(lambda v, t: int(max(t) - min(t)) if len(t) else None, "v",
            returns="long").alias("span_v"),
]
SCALE = ws.udaf(lambda v, t: math.fsum(abs(x) for x in v if x == x), "v").alias("__scale")

values = st.one_of(st.none(), st.just(math.nan),
                   st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
                   st.sampled_from([1e12, -1e12, 0.0, -0.0, 1.5]))
keys = st.sampled_from(["a", "b", "", None])
jitter = st.sampled_from([0, 0, 0, 1, -1])


@st.composite
def source_rows(draw: st.DrawFn, base: int) -> list[dict[str, Any]]:
    return [{"k": draw(keys), "ts": base + draw(st.integers(-12, 12)) * Q + draw(jitter),
             "v": draw(values), "i": draw(st.one_of(st.none(), st.integers(-10**15, 10**15))),
             "s": draw(st.one_of(st.none(), st.sampled_from(["x", "y", "Z", "é", ""]))),
             "seq": draw(st.integers(0, 3))}
            for _ in range(draw(st.integers(0, 24)))]


@st.composite
def anchor_rows(draw: st.DrawFn, base: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        at = base + draw(st.integers(-12, 12)) * Q + draw(jitter)

        def near(at: int = at) -> int | None:
            return None if draw(st.integers(0, 6)) == 0 else \
                at + draw(st.integers(-8, 8)) * Q + draw(jitter)

        rows.append({"k": draw(keys), "at": at, "lo": near(), "hi": near(), "ob": near(),
                     "w": draw(st.integers(0, 8)) * Q, "aseq": draw(st.integers(0, 2))})
    return rows


def source_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    df = spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows],
                               "k string, ts long, v double, i long, s string, seq int")
    return df.withColumn("ts", F.timestamp_micros("ts"))


def anchor_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    df = spark.createDataFrame([tuple(r[c] for c in ANCHOR_COLUMNS) for r in rows],
                               "k string, at long, lo long, hi long, ob long, w long, "
                               "aseq int")
    return df.withColumns({c: F.timestamp_micros(c) for c in ("at", "lo", "hi", "ob")})


def collect(result: DataFrame, key: list[str]) -> list[dict[str, Any]]:
    converted = result.withColumns({c: F.unix_micros(c)
                                    for c in ("window_start", "window_end", "time")})
    return sort_output([r.asDict() for r in converted.collect()], key)


def check(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected), (len(actual), len(expected))
    for got, want in zip(actual, expected, strict=True):
        scale = want.pop("__scale")
        assert_rows_match([got], [want], scales=dict.fromkeys(FLOAT_COLUMNS, scale))


def spec(bound: Any) -> Any:
    return bound() if callable(bound) else bound


def shown(micros: int) -> str:
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC"


# How a bound is given: (spec value, or a function making it once Spark runs; the
# oracle's function of the anchor row).
BOUNDS: dict[str, tuple[Any, Any]] = {
    "offset-": ("-750ms", lambda a: a["at"] - 3 * Q),
    "offset+": ("500ms", lambda a: a["at"] + 2 * Q),
    "zero": ("0s", lambda a: a["at"]),
    "default": (None, lambda a: a["at"]),
    "lo": ("lo", lambda a: a["lo"]),
    "hi": ("hi", lambda a: a["hi"]),
    # a window whose size depends on the anchor's content: at - w
    "expr": (lambda: F.timestamp_micros(F.unix_micros("at") - F.col("w")),
             lambda a: a["at"] - a["w"]),
}
OBSOLETE: dict[str, tuple[Any, Any]] = {
    "none": (None, None),
    "offset": ("-1s", lambda a: a["at"] - 4 * Q),
    "ob": ("ob", lambda a: a["ob"]),
}


@settings(max_examples=10)
@given(data=st.data(), base=st.sampled_from(BASES), start=st.sampled_from(sorted(BOUNDS)),
       end=st.sampled_from(sorted(BOUNDS)), obsolete=st.sampled_from(sorted(OBSOLETE)),
       closed=st.sampled_from(["both", "left", "right", "neither"]), keyed=st.booleans(),
       use_order=st.booleans())
def test_dynamic_matches_oracle(spark: SparkSession, data: st.DataObject, base: int,
                                start: str, end: str, obsolete: str, closed: str,
                                keyed: bool, use_order: bool) -> None:
    rows = data.draw(source_rows(base))
    anchors = data.draw(anchor_rows(base))
    key = ["k"] if keyed else []
    order = "seq" if use_order else None
    source = ws.events(source_frame(spark, rows), time="ts", key=key, order=order)
    anchor_events = ws.events(anchor_frame(spark, anchors), time="at", key=key)
    window = ws.Dynamic(anchor_events, start=spec(BOUNDS[start][0]),
                        end=spec(BOUNDS[end][0]),
                        obsolete=OBSOLETE[obsolete][0], closed=closed)  # type: ignore[arg-type]
    result = source.window(window).agg(*AGGREGATIONS)
    try:
        expected = dynamic_window(
            rows, anchors, time="ts", key=key, order=order, columns=COLUMNS,
            anchor_time="at", anchor_order=None, anchor_columns=ANCHOR_COLUMNS,
            start=BOUNDS[start][1], end=BOUNDS[end][1], obsolete=OBSOLETE[obsolete][1],
            closed=closed, aggs=[*AGGREGATIONS, SCALE])
    except ObsoleteViolation as violation:
        with pytest.raises(Exception) as caught:
            result.collect()
        text = str(caught.value)
        assert "WispError:" in text
        assert any(f"at the anchor at time {shown(t)}" in text and
                   ("must not decrease" if rule == "decrease" else "must not be before")
                   in text for rule, t in violation.found), (text, violation.found)
        return
    check(collect(result, key), sort_output(expected, key))


@settings(max_examples=10)
@given(data=st.data(), base=st.sampled_from(BASES), every=st.integers(1, 6),
       align=st.integers(-3, 3), span=st.sampled_from(["data", "given"]),
       start=st.sampled_from(["offset-", "zero", "default"]),
       end=st.sampled_from(["offset+", "zero"]),
       closed=st.sampled_from(["both", "left", "right", "neither"]), keyed=st.booleans())
def test_clock_matches_oracle(spark: SparkSession, data: st.DataObject, base: int,
                              every: int, align: int, span: str, start: str, end: str,
                              closed: str, keyed: bool) -> None:
    rows = data.draw(source_rows(base))
    key = ["k"] if keyed else []
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    align_us = base + align * Q + 1
    first, last = (None, None) if span == "data" else (base - 5 * Q, base + 3 * Q)
    clock = ws.clock(dt.timedelta(microseconds=every * Q),
                     start=None if first is None else epoch + dt.timedelta(microseconds=first),
                     end=None if last is None else epoch + dt.timedelta(microseconds=last),
                     align=epoch + dt.timedelta(microseconds=align_us))
    source = ws.events(source_frame(spark, rows), time="ts", key=key)
    window = ws.Dynamic(clock, start=BOUNDS[start][0], end=BOUNDS[end][0],
                        closed=closed)  # type: ignore[arg-type]
    actual = collect(source.window(window).agg(*AGGREGATIONS), key)
    ticks = clock_anchors(rows, time="ts", key=key, every=every * Q, align=align_us,
                          start=first, end=last)
    ticks = [{**t, "at": t["ts"]} for t in ticks]
    expected = dynamic_window(
        rows, ticks, time="ts", key=key, order=None, columns=COLUMNS, anchor_time="at",
        anchor_order=None, anchor_columns=[*key, "ts", "at"], start=BOUNDS[start][1],
        end=BOUNDS[end][1], obsolete=None, closed=closed, aggs=[*AGGREGATIONS, SCALE])
    check(actual, sort_output(expected, key))


def test_clock_aligned_far_from_the_events(spark: SparkSession) -> None:
    # integer time: a tick every 1 aligned at 2^63 - 1 is a tick at every integer; its
    # index counted from the align would not fit in 64 bits (this failed the query)
    df = spark.createDataFrame([(-10**15, 1.0), (-10**15 + 7, 2.0)], "t long, v double")
    window = ws.Dynamic(ws.clock(1, align=2**63 - 1), start=-5, end=0)
    result = ws.events(df, time="t").window(window).agg(ws.sum("v"))
    assert sorted((r.time - -10**15, r.sum_v) for r in result.collect()) == [
        (0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (5, 1.0), (6, 0.0), (7, 2.0)]


def test_explain_names_the_sweep(spark: SparkSession) -> None:
    rows = [{"k": "a", "ts": q * Q, "v": 1.0, "i": 1, "s": "x", "seq": 0} for q in range(4)]
    ev = ws.events(source_frame(spark, rows), time="ts", key="k")
    anchors = ws.events(anchor_frame(spark, [{"k": "a", "at": 0, "lo": 0, "hi": Q, "ob": 0,
                                              "w": 0, "aseq": 0}]), time="at", key="k")
    text = ws.explain(ev.window(ws.Dynamic(anchors, start="lo", end="hi", obsolete="ob"))
                      .agg(ws.count()))
    assert "Strategy arrow-dynamic" in text
    assert "binary search" in text and "no join" in text
    assert "raise_error naming the anchor's time" in text
    clock = ws.explain(ev.window(ws.Dynamic(ws.clock("1s"), start="-1s")).agg(ws.count()))
    assert "clock ticks generated in the kernel" in clock
    assert "hold by construction" in clock
    sessions = ws.explain(ev.window(ws.Session("1s", max_duration="1m")).agg(ws.count()))
    assert "Strategy arrow-sessions" in sessions and "split at max_duration" in sessions
