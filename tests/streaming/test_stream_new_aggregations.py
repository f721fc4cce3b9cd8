"""The new aggregations on a real stream (the files and checks of `test_stream_spark`):
max_by/min_by and ewm_mean as accumulators over the cumulative window and `Since`,
quantiles and distinct counts over bounded windows, `min_count` everywhere: the rows
written equal the batch query's final rows. Windows that never close refuse the
aggregations whose state would keep every row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import (
    FOUR_FILES,
    Query,
    Written,
    check_final_rows,
    keyed,
    run_streams,
    source,
)

import wisp as ws
from wisp.errors import WispUnsupportedError

pytestmark = pytest.mark.spark

RUNNING = (ws.max_by("v", "ts"), ws.min_by("k", "v"), ws.ewm_mean("v", half_life="5s"),
           ws.sum("v", min_count=2), ws.count(min_count=3).alias("n3"))
BOUNDED = (ws.median("v"), ws.quantile("v", 0.9, "higher"), ws.count_distinct("v"),
           ws.max_by("ts", "v"), ws.mean("v", min_count=2))
KINDS: dict[str, tuple[Query, str]] = {
    "cumulative": (lambda ev: ev.agg(*RUNNING), "time"),
    "since": (lambda ev: ev.window(ws.Since(F.col("v") > 3)).agg(*RUNNING), "time"),
    "rows": (lambda ev: ev.window(ws.Rows(-2, 1)).agg(*BOUNDED), "window_end"),
    "tumbling": (lambda ev: ev.window(ws.Tumbling("10s")).agg(*BOUNDED), "window_end"),
}


@pytest.fixture(scope="module")
def one_run(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Written]:
    """Each kind's stream in one run over FOUR_FILES (FILES in four micro-batches), the
    four side by side."""
    return run_streams(streaming, tmp_path_factory.mktemp("one-run"),
                       {kind: keyed(query) for kind, (query, _) in KINDS.items()},
                       FOUR_FILES)


@pytest.mark.parametrize("kind", list(KINDS))
def test_new_aggregations_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, one_run: dict[str, Written], kind: str) -> None:
    check_final_rows(streaming, one_run[kind], *KINDS[kind])


def test_windows_that_never_close_refuse_order_statistics(streaming: SparkSession,
                                                          tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    for agg in (ws.median("v"), ws.count_distinct("v")):
        with pytest.raises(WispUnsupportedError, match=re.escape(
                "`aggregations` must not read every value of a window that never closes "
                f"(cumulative aggregation) on a stream, found {agg.output_name}")):
            ev.agg(agg)
    result: DataFrame = ev.window(ws.Rows(-3, 0)).agg(ws.median("v"))
    assert "Strategy stream" in ws.explain(result)
