"""A feature set on a Spark stream (files, one micro-batch each): run once, and
restarted from its checkpoint after every micro-batch, it writes the batch query's rows
over the accepted events whose every window is final at the last watermark, with the
late rows counted; with label rows from a second stream, the batch's row of every label
row the watermark has reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from test_stream_spark import (
    FILES,
    LATE,
    WATERMARK,
    assert_same,
    final_batch_rows,
    keyed,
    run_streams,
    seconds,
)
from test_stream_spark_dynamic import WATERMARK as DYNAMIC_WATERMARK
from test_stream_spark_dynamic import batch_rows as dynamic_batch_rows
from test_stream_spark_dynamic import run_stream as run_dynamic_stream

import wisp as ws

pytestmark = pytest.mark.spark


def features_query(ev: ws.Events) -> DataFrame:
    return ev.features({"r": ws.Range("-10s", "2s"), "w": ws.Rows(-1, 0), "all": None},
                       ws.count(), ws.sum("v"), ws.max("v"))


def test_a_feature_set_on_a_stream_equals_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path) -> None:
    written = run_streams(streaming, tmp_path, {"once": keyed(features_query),
                                                "every": keyed(features_query)},
                          FILES, {"once": [len(FILES) - 1], "every": range(len(FILES))})

    def is_final(row: Any) -> bool:  # the Range window's end (+2 s) passed
        return seconds(row["time"]) + 2 <= WATERMARK

    want = final_batch_rows(streaming, features_query, is_final)
    assert len(want) == 10  # every accepted event but the two at 60 s
    for name in ("once", "every"):
        got, report = written[name]
        assert_same(got, want)
        assert report["late"] == len(LATE)


def labelled(ev: ws.Events, labels: ws.Events | None) -> DataFrame:
    assert labels is not None
    return ev.features({"r": ws.Range("-5s", "0s"), "w": ws.Rows(-1, 0), "all": None},
                       ws.count(), ws.sum("v"), at=labels)


def test_label_rows_from_a_second_stream_equal_the_final_batch_rows(
        streaming: SparkSession, tmp_path: Path) -> None:
    """Label rows (the anchors of the Dynamic stream tests: their `began` and `ended`
    carried through) from a second stream, restarted between every micro-batch: one row
    per label row the last watermark has reached, the batch's."""
    got, late = run_dynamic_stream(streaming, tmp_path, labelled, True)
    want = [r for r in dynamic_batch_rows(streaming, labelled)
            if r["time"].timestamp() <= DYNAMIC_WATERMARK]
    assert late == 0
    assert len(want) == 8  # every label row but the two at 60 s
    assert [c for c in got[0]][:5] == ["k", "time", "began", "ended", "count_r"]
    assert_same(got, want)
