"""The sliding-window examples of the policy-window document, with expected outputs
worked out by hand from its text, and the transcripts of tests/acceptance/
spl_transcripts.json (window contents after every arrival and every firing, written by
hand) checked against both the engine and the literal simulation of tests/oracle_policies.py.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from oracle_policies import trace
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark
SECOND = 1_000_000
T0 = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
TRANSCRIPTS = Path(__file__).with_name("spl_transcripts.json")


def tuples(spark: SparkSession, rows: list[tuple[str, float, float]]) -> ws.Events:
    """Tuples (name, seconds after T0, temperature) arriving in the given order."""
    data = [(name, int(s * SECOND), temp, i) for i, (name, s, temp) in enumerate(rows)]
    df = spark.createDataFrame(data, "name string, t long, temperature double, seq int")
    df = df.select("name", F.timestamp_micros(F.col("t") + int(T0.timestamp()) * SECOND)
                   .alias("ts"), "temperature", "seq")
    return ws.events(df, time="ts", order="seq")


def fired(result: DataFrame) -> list[tuple[float, list[str]]]:
    """(trigger time in seconds after T0, names in the window) per output, in time
    order then window contents."""
    base = int(T0.timestamp()) * SECOND
    rows = result.select(((F.unix_micros("time") - base) / SECOND).alias("at"),
                         "collect_name").collect()
    return sorted((r["at"], r["collect_name"]) for r in rows)


# ------------------------------------------------------------------- count(4)


def test_count_eviction_keeps_the_last_four(spark: SparkSession) -> None:
    # sliding, count(4): full once four tuples have arrived; then every arrival evicts
    # the oldest. The default trigger count(1) fires on every arrival once full.
    ev = tuples(spark, [(str(i), float(i), 0.0) for i in range(1, 8)])
    result = ev.window(ws.Sliding(ws.Count(4))).agg(ws.collect("name"), ws.count())
    assert fired(result) == [
        (4.0, ["1", "2", "3", "4"]), (5.0, ["2", "3", "4", "5"]),
        (6.0, ["3", "4", "5", "6"]), (7.0, ["4", "5", "6", "7"])]
    assert [r["count"] for r in result.collect()] == [4, 4, 4, 4]


def test_count_eviction_is_count_eviction_with_count_one_trigger(
        spark: SparkSession) -> None:
    assert ws.Sliding(ws.Count(3)) == ws.Sliding(ws.Count(3), ws.Count(1))


# ------------------------------------------------------------------- time(5.0)


@pytest.fixture(scope="module")
def abcd(spark: SparkSession) -> ws.Events:
    # A at t, B at t+1, C at t+3.5, D at t+6
    return tuples(spark, [("A", 0.0, 0.0), ("B", 1.0, 0.0), ("C", 3.5, 0.0),
                          ("D", 6.0, 0.0)])


def test_time_eviction_at_t_plus_4_and_t_plus_7(abcd: ws.Events) -> None:
    # a time trigger every 3 s in phase with t+1 fires at t+1, t+4 and t+7 (the first
    # firing at or after the last tuple): at t+4 the window holds A, B and C; at t+7,
    # A (7 s old) and B (6 s old) have been evicted, C (3.5 s) and D (1 s) remain.
    window = ws.Sliding(ws.Time("5s"), ws.Time("3s", align=T0 + dt.timedelta(seconds=1)))
    assert fired(abcd.window(window).agg(ws.collect("name"))) == [
        (1.0, ["A", "B"]), (4.0, ["A", "B", "C"]), (7.0, ["C", "D"])]


def test_time_eviction_keeps_a_tuple_exactly_t_old(abcd: ws.Events) -> None:
    # C has 4.5 s left at t+4: at t+8.5 it is exactly 5 s old and still in the window.
    window = ws.Sliding(ws.Time("5s"), ws.Time("8500ms", align=T0))
    assert fired(abcd.window(window).agg(ws.collect("name"))) == [
        (0.0, ["A"]), (8.5, ["C", "D"])]


def test_time_eviction_with_count_trigger_is_full_from_the_start(abcd: ws.Events) -> None:
    assert fired(abcd.window(ws.Sliding(ws.Time("5s"))).agg(ws.collect("name"))) == [
        (0.0, ["A"]), (1.0, ["A", "B"]), (3.5, ["A", "B", "C"]), (6.0, ["B", "C", "D"])]


# -------------------------------------------------------- delta(temperature, 1.5)


def test_delta_eviction_evicts_the_coldest(spark: SparkSession) -> None:
    # the window holds [17.1, 16.4, 16.0] (newest first); 17.6 evicts 16.0 only, leaving
    # [17.6, 17.1, 16.4]. Nothing is emitted before the first eviction.
    ev = tuples(spark, [("w", 0.0, 16.0), ("x", 1.0, 16.4), ("y", 2.0, 17.1),
                        ("z", 3.0, 17.6)])
    window = ws.Sliding(ws.Delta("temperature", 1.5))
    result = ev.window(window).agg(ws.collect("temperature"))
    assert [r["collect_temperature"] for r in result.collect()] == [[16.4, 17.1, 17.6]]
    partial = ev.window(ws.Sliding(ws.Delta("temperature", 1.5), partial=True))
    assert [r["collect_temperature"] for r in
            partial.agg(ws.collect("temperature")).orderBy("time").collect()] == [
        [16.0], [16.0, 16.4], [16.0, 16.4, 17.1], [16.4, 17.1, 17.6]]


def test_out_of_order_delta_eviction_does_not_truly_slide(spark: SparkSession) -> None:
    # A 16.4, B 16.0, C 17.1 in the window; D (17.6) evicts B, which is not the oldest;
    # E (14.0) evicts nothing, so A stays and the window holds pairs more than 1.5 apart.
    ev = tuples(spark, [("A", 0.0, 16.4), ("B", 1.0, 16.0), ("C", 2.0, 17.1),
                        ("D", 3.0, 17.6), ("E", 4.0, 14.0)])
    window = ws.Sliding(ws.Delta("temperature", 1.5))
    result = ev.window(window).agg(ws.collect("name"), ws.max("temperature"),
                                   ws.min("temperature"))
    rows = sorted(result.collect(), key=lambda r: r["time"])
    assert [r["collect_name"] for r in rows] == [["A", "C", "D"], ["A", "C", "D", "E"]]
    assert [(r["min_temperature"], r["max_temperature"]) for r in rows] == [
        (16.4, 17.6), (14.0, 17.6)]
    base = int(T0.timestamp())
    assert [(r["window_start"].timestamp() - base, r["window_end"].timestamp() - base)
            for r in rows] == [(0.0, 3.0), (0.0, 4.0)]


def test_delta_trigger_fires_on_the_attribute(spark: SparkSession) -> None:
    # delta trigger on temperature 1.0: the first tuple sets the reference (16.0);
    # 17.1 fires (1.1 > 1.0) without itself in the window and becomes the reference;
    # 17.6 and 14.0 do not fire.
    ev = tuples(spark, [("A", 0.0, 16.0), ("B", 1.0, 16.4), ("C", 2.0, 17.1),
                        ("D", 3.0, 17.6), ("E", 4.0, 14.0)])
    window = ws.Sliding(ws.Count(10), ws.Delta("temperature", 1.0), partial=True)
    assert fired(ev.window(window).agg(ws.collect("name"))) == [(2.0, ["A", "B"])]


# ----------------------------------------------------------------- transcripts


def load_transcripts() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(TRANSCRIPTS.read_text())["cases"]
    return cases


def build(spec: dict[str, Any]) -> Any:
    """A policy or window from its transcript description (times in seconds)."""
    kind = spec["kind"]
    if kind == "count":
        return ws.Count(spec["n"])
    if kind == "time":
        align = T0 + dt.timedelta(seconds=spec.get("align", 0))
        return ws.Time(f"{int(spec['t'] * 1000)}ms", align=align)
    if kind == "delta":
        return ws.Delta("v", spec["d"])
    return ws.Punctuation("p")


def window_of(case: dict[str, Any]) -> Any:
    partial = case.get("partial", False)
    if "tumbling" in case:
        return ws.Tumbling(build(case["tumbling"]), partial=partial)
    trigger = build(case["trigger"]) if "trigger" in case else ws.Count(1)
    return ws.Sliding(build(case["evict"]), trigger, partial=partial)


def case_rows(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "t": round(s * SECOND), "v": float(v), "p": bool(p), "seq": i}
            for i, (name, s, v, p) in enumerate(case["tuples"])]


CASES = load_transcripts()


def test_transcripts_cover_every_combination() -> None:
    sliding = {(c["evict"]["kind"], c["trigger"]["kind"]) for c in CASES if "evict" in c}
    tumbling = {c["tumbling"]["kind"] for c in CASES if "tumbling" in c}
    assert sliding == {(e, t) for e in ("count", "time", "delta")
                       for t in ("count", "time", "delta")}
    assert tumbling == {"count", "time", "delta", "punctuation"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_transcript_matches_the_simulation(case: dict[str, Any]) -> None:
    steps = trace(case_rows(case), time="t", window=window_of(case), label="name",
                  order="seq", columns=["name", "t", "v", "p", "seq"])
    readable = [[s[0], s[1] / SECOND if s[0] == "fire" else s[1], *s[2:]] for s in steps]
    assert readable == case["steps"]


@pytest.fixture(scope="module")
def transcript_frame(spark: SparkSession) -> DataFrame:
    data = [(c["name"], r["name"], r["t"] + int(T0.timestamp()) * SECOND, r["v"], r["p"],
             r["seq"]) for c in CASES for r in case_rows(c)]
    df = spark.createDataFrame(data, "case string, name string, t long, v double, "
                               "p boolean, seq int")
    return df.select("case", "name", F.timestamp_micros("t").alias("ts"), "v", "p", "seq")


@pytest.fixture(scope="module")
def engine_firings(transcript_frame: DataFrame) -> dict[str, list[list[Any]]]:
    """Every case through the engine, as one union and one Spark job: case name ->
    sorted [time in seconds, names in the window] of each output."""
    base = int(T0.timestamp()) * SECOND
    results = []
    for case in CASES:
        ev = ws.events(transcript_frame.filter(F.col("case") == case["name"]), time="ts",
                       key="case", order="seq")
        results.append(ev.window(window_of(case)).agg(ws.collect("name")).select(
            "case", ((F.unix_micros("time") - base) / SECOND).alias("at"), "collect_name"))
    union = results[0]
    for result in results[1:]:
        union = union.unionByName(result)
    firings: dict[str, list[list[Any]]] = {c["name"]: [] for c in CASES}
    for row in union.collect():
        firings[row["case"]].append([row["at"], row["collect_name"]])
    return {name: sorted(rows) for name, rows in firings.items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_transcript_matches_the_engine(engine_firings: dict[str, list[list[Any]]],
                                       case: dict[str, Any]) -> None:
    expected = [[s[1], s[2]] for s in case["steps"] if s[0] == "fire" and s[3]]
    assert engine_firings[case["name"]] == sorted(expected)
