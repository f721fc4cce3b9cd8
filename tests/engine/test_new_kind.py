"""A window kind added from outside the package: its spec, rule, plan and compiler are
all defined here, and nothing of wisp changes. This is the footprint the architecture
promises (docs/architecture.md, "Adding a window kind"), checked end to end on Spark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.engine.columns import col, guarded
from wisp.engine.compiler import Query, compiles
from wisp.plan.nodes import Plan, ResolvedAggregation
from wisp.plan.registry import rule
from wisp.plan.source import Inputs, tie_break_columns
from wisp.spec.windows import Window

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class EveryOther(Window):
    """A toy kind: one window per event whose time is even, holding that event alone."""


@dataclass(frozen=True, kw_only=True)
class EveryOtherPlan(Plan):
    strategy = "every-other"
    python = False

    def how(self) -> str:
        return "a filter on even times"


@rule(EveryOther)
def plan_every_other(inputs: Inputs, window: EveryOther,
                     resolved: tuple[ResolvedAggregation, ...],
                     strategy: str | None) -> Plan:
    return EveryOtherPlan(source=inputs.source, window=repr(window), aggregations=resolved,
                          tie_break=tie_break_columns(inputs.source), reason="a test kind")


@compiles(EveryOtherPlan)
def every_other(plan: EveryOtherPlan, query: Query) -> DataFrame:
    events = query.events
    time = col(events.time.name)
    return guarded(events, query.observation).filter(time % 2 == 0).select(
        *[col(k) for k in events.key], time.alias("window_start"), time.alias("window_end"),
        time.alias("time"), F.lit(1).cast("long").alias("count"))


def test_a_kind_defined_outside_wisp_plans_builds_and_explains(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1), ("a", 2), ("b", 4), ("b", 5)], "k string, t long")
    out = ws.events(df, time="t", key="k").window(EveryOther()).agg(ws.count())
    assert sorted(tuple(r) for r in out.collect()) == [("a", 2, 2, 2, 1), ("b", 4, 4, 4, 1)]
    text = ws.explain(out)
    assert "Strategy every-other: a filter on even times" in text
    assert "Why: a test kind." in text


def test_a_kind_without_a_stream_rule_is_refused_on_a_stream(spark: SparkSession,
                                                              tmp_path: Path) -> None:
    """No stream rule registered for the kind: the query is refused when it is built,
    naming the kinds that run on a stream (each registered with its stream rule)."""
    stream = spark.readStream.schema("k string, t long").json(str(tmp_path))
    ev = ws.events(stream, time="t", key="k", lateness=5)
    with pytest.raises(ws.WispUnsupportedError) as caught:
        ev.window(EveryOther()).agg(ws.count())
    text = str(caught.value)
    assert text.startswith("`window` must be one of CountByStartTime, cumulative (ev.agg), ")
    assert text.endswith("on a stream (the other kinds do not run on a stream yet), found "
                         "EveryOther")
