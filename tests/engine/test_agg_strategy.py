"""`agg(..., strategy=...)`: forcing a physical strategy by the name `explain` prints.

Every strategy a window kind can be forced onto gives the rows the planner's own choice
gives (written out below by hand), and `explain` names it; a strategy the query cannot
run on is a `WispInputError` naming `strategy`, the ones it can, and the value found.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp import WispInputError
from wisp.spec.windows import Window

pytestmark = pytest.mark.spark

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def ev(spark: SparkSession) -> ws.Events:
    """Values 1..4 at 0, 1, 2 and 3 s, one key."""
    df = spark.createDataFrame([("a", s, s + 1) for s in range(4)], "k string, s long, v long")
    return ws.events(df.select("k", F.timestamp_seconds("s").alias("ts"), "v"), time="ts",
                     key="k")


def outputs(result: DataFrame) -> list[tuple[Any, ...]]:
    """(time in seconds, last column) of each output row, in time order."""
    last = result.columns[-1]
    rows = result.select((F.unix_micros("time") / 1e6).alias("t"), last).orderBy("t")
    return [tuple(r) for r in rows.collect()]


SUMS_OF_TWO = [(1.0, 3), (2.0, 5), (3.0, 7)]
FORCED: list[tuple[Window | None, str, list[tuple[Any, ...]]]] = [
    (None, "native-running", [(0.0, 1), (1.0, 3), (2.0, 6), (3.0, 10)]),
    (None, "arrow-frames", [(0.0, 1), (1.0, 3), (2.0, 6), (3.0, 10)]),
    (ws.Rows(-1, 0), "arrow-frames", SUMS_OF_TWO),
    (ws.Range.past("1s"), "arrow-frames", [(0.0, 1), *SUMS_OF_TWO]),
    (ws.Tumbling("2s"), "native-buckets", [(2.0, 3), (4.0, 7)]),
    (ws.Tumbling("2s"), "panes", [(2.0, 3), (4.0, 7)]),
    (ws.Tumbling("2s"), "arrow-intervals", [(2.0, 3), (4.0, 7)]),
    (ws.Hopping("2s", "1s"), "panes", [(1.0, 1), (2.0, 3), (3.0, 5), (4.0, 7), (5.0, 4)]),
    (ws.Hopping("2s", "1s"), "arrow-intervals",
     [(1.0, 1), (2.0, 3), (3.0, 5), (4.0, 7), (5.0, 4)]),
    (ws.Snapshot(), "arrow-intervals", [(0.0, 1), (1.0, 2), (2.0, 3), (3.0, 4)]),
    # periods are (previous tick, tick]: the event at midnight closes the first one
    (ws.Since(ws.daily()), "native-periods", [(0.0, 1), (86_400.0, 9)]),
    (ws.Since(ws.daily()), "arrow-ticks", [(0.0, 1), (86_400.0, 9)]),
    (ws.Sliding(ws.Count(2)), "arrow-spl", SUMS_OF_TWO),
    (ws.Session("5s"), "arrow-sessions", [(8.0, 10)]),
    (ws.Dynamic(ws.clock("2s", start=EPOCH), start="-1s", end="0s"), "arrow-dynamic",
     [(0.0, 1), (2.0, 5)]),
]


@pytest.mark.parametrize("window, strategy, expected", FORCED,
                         ids=[f"{w!r}-{s}" for w, s, _ in FORCED])
def test_a_forced_strategy_runs_and_explain_names_it(
        ev: ws.Events, window: Window | None, strategy: str,
        expected: list[tuple[Any, ...]]) -> None:
    windowed: Any = ev if window is None else ev.window(window)
    result = windowed.agg(ws.sum("v"), strategy=strategy)
    assert f"\nStrategy {strategy}: " in ws.explain(result)
    assert outputs(result) == expected
    assert outputs(windowed.agg(ws.sum("v"))) == expected  # the planner's own choice


REFUSED: list[tuple[Window | None, Any, str]] = [
    (ws.Rows(-1, 0), "fast", "'arrow-frames' for Rows windows or None"),
    (ws.Rows(-1, 0), "native-running", "'arrow-frames' for Rows windows or None"),
    (ws.Range.past("1s"), "native-frames", "'arrow-frames' for Range windows or None"),
    (None, "panes", "one of native-running, arrow-frames or None"),
    (ws.Tumbling("2s"), "fast",
     "'arrow-intervals', 'native-buckets', 'panes' for Tumbling windows or None"),
    (ws.Hopping("2s", "1s"), "native-buckets",
     "'arrow-intervals', 'panes' for Hopping windows or None"),
    (ws.Since(ws.daily()), "arrow-frames",
     "one of arrow-ticks, native-periods for Since windows or None"),
    (ws.Sliding(ws.Count(2)), "native-batches", "'arrow-spl' or None"),
    (ws.Session("5s"), "panes", "'arrow-sessions' for Session windows or None"),
    (ws.Rows(-1, 0), 3, "'arrow-frames' for Rows windows or None"),
]


@pytest.mark.parametrize("window, strategy, expected", REFUSED,
                         ids=[f"{w!r}-{s}" for w, s, _ in REFUSED])
def test_a_strategy_the_kind_does_not_run_on_is_refused(
        ev: ws.Events, window: Window | None, strategy: Any, expected: str) -> None:
    windowed: Any = ev if window is None else ev.window(window)
    with pytest.raises(WispInputError) as caught:
        windowed.agg(ws.sum("v"), strategy=strategy)
    assert str(caught.value) == f"`strategy` must be {expected}, found {strategy!r}"


def test_a_strategy_these_aggregations_cannot_run_on_is_refused_saying_why(
        ev: ws.Events) -> None:
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-intervals' or None here (collect_v ")) as caught:
        ev.window(ws.Tumbling("2s")).agg(ws.collect("v"), strategy="native-buckets")
    assert str(caught.value).endswith(", found 'native-buckets'")
    with pytest.raises(WispInputError, match=re.escape(
            "`strategy` must be 'arrow-frames' for a user-defined aggregate, found "
            "'native-running'")):
        ev.agg(ws.udaf(lambda v, t: 0.0, "v"), strategy="native-running")


def test_strategy_is_keyword_only(ev: ws.Events) -> None:
    """A strategy name passed by position is taken for an aggregation, and refused."""
    with pytest.raises(WispInputError, match="found 'arrow-frames'"):
        ev.window(ws.Rows(-1, 0)).agg(ws.sum("v"), "arrow-frames")  # type: ignore[arg-type]
