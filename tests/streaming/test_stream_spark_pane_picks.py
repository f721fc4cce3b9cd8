"""`Tumbling` on a real Spark stream with the aggregations whose pane partials keep a
picked row, a set or an exact sum (`runtime.aggregates.partials`): `first`, `last`, `max_by`,
`min_by` (ties in time and in `by` broken by window order), `count_distinct`, the sum of
an integer column and a user's commutative aggregator, keyed and without a key, the
stream restarted from its checkpoint twice. `explain` says
`stream-panes`; the rows written equal the batch query's rows over the events that are
not late and are final at the last watermark; exactly the late rows are counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aggregators import Spread
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import RESTARTED_TWICE, assert_same, batch_frame, run_streams, source
from test_stream_spark_partials import FILES, LATE, WATERMARK, of_timestamp

import wisp as ws

pytestmark = pytest.mark.spark

AGGREGATIONS = (ws.count(), ws.first("v"), ws.last("v"), ws.max_by("v", "n"),
                ws.min_by("v", "n"), ws.count_distinct("v"), ws.sum("n"),
                ws.min("k"), ws.aggregate(Spread(), "v"))
"""`n` is the event's second where `v` is not null: the two events of key a at second 10
tie in time and in `n`, so window order (the tie-break columns) decides first, last and
the max_by/min_by ties."""
BINDINGS: dict[str, dict[str, Any]] = {"keyed": {"key": "k", "lateness": "5s"},
                                       "keyless": {"lateness": "5s"}}


def numbered(df: DataFrame) -> DataFrame:
    return df.withColumn("n", F.when(F.col("v").isNotNull(), F.unix_seconds("ts")))


def aggregated(df: DataFrame, binding: dict[str, Any]) -> DataFrame:
    return ws.events(numbered(df), time="ts", **binding).window(
        ws.Tumbling("10s")).agg(*AGGREGATIONS)


@pytest.fixture(scope="module")
def written(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """Both streams, restarted twice (`RESTARTED_TWICE`): each micro-batch reads a
    key's pane partials from the state store whether the query restarted before it or
    not; every window kind is restarted after every micro-batch in
    `test_stream_user_aggregator` (Tumbling on panes among them)."""
    return run_streams(streaming, tmp_path_factory.mktemp("picks"),
                       {name: (lambda df, b=binding: aggregated(df, b))
                        for name, binding in BINDINGS.items()}, FILES,
                       dict.fromkeys(BINDINGS, RESTARTED_TWICE))


def test_explain_says_the_picks_sets_and_user_states_ride_on_panes(
        streaming: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    stream = aggregated(source(streaming, tmp_path / "in"), BINDINGS["keyed"])
    text = ws.explain(stream)
    assert "stream-panes" in text
    assert "tie-break" in text


@pytest.mark.parametrize("name", list(BINDINGS))
def test_picks_sets_and_exact_sums_on_panes_equal_the_final_batch_rows(
        streaming: SparkSession, written: dict[str, Any], name: str) -> None:
    got, report = written[name]
    accepted = [e for f in FILES for e in f if e not in LATE]
    binding = {k: v for k, v in BINDINGS[name].items() if k == "key"}
    batch = aggregated(batch_frame(streaming, accepted), binding)
    want = [r.asDict() for r in batch.collect()
            if of_timestamp(r["window_end"]) <= WATERMARK]
    assert len(want) == (3 if name == "keyless" else 7)
    assert len(got) == len(want)
    assert_same(got, want)
    assert report["late"] == len(LATE)


def test_the_tie_at_second_ten_goes_by_window_order(written: dict[str, Any]) -> None:
    """Key a's window [10, 20) holds (10, 1.0) and (10, 0.5), tied in time and in `n`:
    window order breaks the tie by the other columns (k, then v: 0.5 before 1.0), so
    first is 0.5, and max_by/min_by of n (both 10 on these two, 16 and 17 later) pick
    17's 4.0 and the earliest 10's 0.5."""
    got, _ = written["keyed"]
    row = next(r for r in got if r["k"] == "a" and r["count"] == 4)
    assert (row["first_v"], row["last_v"], row["max_by_v"], row["min_by_v"]) == (
        0.5, 4.0, 4.0, 0.5)
    assert row["count_distinct_v"] == 4  # 1.0, 0.5, NaN, 4.0
