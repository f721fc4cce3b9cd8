"""Sketches, approximate aggregations, k-collections and histograms on a real stream (the
files and checks of `test_stream_spark`): the rows written equal the batch query's final
rows, in one run and restarted twice between micro-batches. `Tumbling` keeps sketches as
pane partials; the running windows (cumulative, `Since`) keep one sketch or k-list per
key, where the exact distinct count is refused; `histogram` keeps every distinct value,
so those windows refuse it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from test_stream_spark import (
    FILES,
    FOUR_FILES,
    LATE,
    PANE_LATE,
    RESTARTED_TWICE,
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

SKETCHES = (ws.approx_count_distinct("v"), ws.hll_sketch("v"), ws.theta_sketch("v"),
            ws.kll_sketch("v"), ws.approx_quantile("v", 0.5))
LISTS = (ws.top_k("v", 2), ws.bottom_k("v", 2), ws.first_k("v", 2), ws.last_k("v", 2),
         ws.histogram("v"), ws.approx_quantile("v", [0.1, 0.9]))
RUNNING = (ws.approx_count_distinct("v"), ws.top_k("v", 2), ws.last_k("v", 3),
           ws.hll_sketch("v"))
KINDS: dict[str, tuple[Query, str]] = {
    "tumbling-panes": (lambda ev: ev.window(ws.Tumbling("10s")).agg(*SKETCHES),
                       "window_end"),
    "tumbling-rows": (lambda ev: ev.window(ws.Tumbling("10s")).agg(*LISTS), "window_end"),
    "rows": (lambda ev: ev.window(ws.Rows(-2, 1)).agg(*SKETCHES, *LISTS), "window_end"),
    "session": (lambda ev: ev.window(ws.Session("5s")).agg(*SKETCHES, *LISTS),
                "window_end"),
    "cumulative": (lambda ev: ev.agg(*RUNNING), "time"),
    "since": (lambda ev: ev.window(ws.Since(F.col("v") > 3)).agg(*RUNNING), "time"),
}
LATE_BY_KIND = {"tumbling-panes": PANE_LATE}
"""The late rows each kind counts (`test_stream_spark`: a pane query's late row of FILES
still reaches an open pane)."""
RESTARTED = ("tumbling-panes", "cumulative", "rows")


@pytest.fixture(scope="module")
def one_run(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Written]:
    """Each kind's stream in one run over FOUR_FILES (FILES in four micro-batches), three
    side by side at a time (more cold Python workers at once miss their connect-back
    under load)."""
    names = list(KINDS)
    found: dict[str, Written] = {}
    for first in range(0, len(names), 3):
        group = names[first:first + 3]
        found.update(run_streams(streaming, tmp_path_factory.mktemp("one-run"),
                                 {kind: keyed(KINDS[kind][0]) for kind in group},
                                 FOUR_FILES))
    return found


@pytest.fixture(scope="module")
def restarted(streaming: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, Written]:
    """Some kinds' streams over FILES, restarted twice (`RESTARTED_TWICE`): a key's
    sketches are read from the state store by each micro-batch, whether the query
    restarted before it or not; every window kind is restarted after every micro-batch
    in `test_stream_user_aggregator`."""
    return run_streams(streaming, tmp_path_factory.mktemp("restarted"),
                       {kind: keyed(KINDS[kind][0]) for kind in RESTARTED}, FILES,
                       dict.fromkeys(RESTARTED, RESTARTED_TWICE))


@pytest.mark.parametrize("kind", list(KINDS))
def test_sketches_and_lists_on_a_stream_equal_the_final_batch_rows(
        streaming: SparkSession, one_run: dict[str, Written], kind: str) -> None:
    check_final_rows(streaming, one_run[kind], *KINDS[kind], LATE_BY_KIND.get(kind, LATE))


@pytest.mark.parametrize("kind", RESTARTED)
def test_restarted_they_still_equal_the_batch(
        streaming: SparkSession, restarted: dict[str, Written], kind: str) -> None:
    check_final_rows(streaming, restarted[kind], *KINDS[kind], LATE_BY_KIND.get(kind, LATE))


def test_sketches_ride_on_panes_and_lists_on_the_rows(streaming: SparkSession,
                                                      tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    panes: DataFrame = ev.window(ws.Tumbling("10s")).agg(*SKETCHES)
    assert "Structured Streaming on stream-panes" in ws.explain(panes)
    rows: DataFrame = ev.window(ws.Tumbling("10s")).agg(ws.top_k("v", 2))
    assert ("Strategy stream: Structured Streaming: rows grouped by a hash of the key"
            in ws.explain(rows))


def test_running_windows_refuse_a_histogram_on_a_stream(streaming: SparkSession,
                                                        tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    ev = ws.events(source(streaming, tmp_path / "in"), time="ts", key="k", lateness="5s")
    with pytest.raises(WispUnsupportedError, match=re.escape(
            "`aggregations` must not read every value of a window that never closes "
            "(cumulative aggregation) on a stream, found histogram_v")):
        ev.agg(ws.histogram("v"))
