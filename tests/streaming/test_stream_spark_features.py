"""A feature set on a Spark stream (files, one micro-batch each): run once, and
restarted from its checkpoint after every micro-batch, it writes the batch query's rows
over the accepted events whose every window is final at the last watermark, with the
late rows counted."""

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
