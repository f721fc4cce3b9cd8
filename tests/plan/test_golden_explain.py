"""`explain` for each strategy, compared whole with a golden file, without Spark.

The golden files were first recorded from the engine-coupled planner that preceded
this one (through Spark, on empty DataFrames of the same schemas), so they also prove
that the typed planner chose the same strategies and says the same words.
`pytest tests/plan --save-golden` rewrites them from the current code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from scenarios import SCENARIOS, STREAMS, Scenario
from schema import source

from wisp.plan.explain import describe
from wisp.plan.planner import plan
from wisp.plan.source import Inputs, Settings
from wisp.plan.streaming import (
    BucketedRowsStream,
    CarriedPanesStream,
    CarriedRowsStream,
    KeyBucketsStream,
    PanePartialsStream,
    RevisedRowsStream,
    StreamPlan,
)

GOLDEN = Path(__file__).parent / "golden"


def inputs_of(scenario: Scenario) -> Inputs:
    described = source(scenario.ddl, **scenario.roles)
    if scenario.lateness is not None:
        described = dataclasses.replace(
            described, lateness=scenario.lateness, on_late=scenario.on_late,  # type: ignore[arg-type]
            allowed_lateness=scenario.allowed_lateness, emit=scenario.emit)
    return Inputs(described, settings=Settings(arrow_batches_measured=scenario.measured))


def planned_text(scenario: Scenario) -> str:
    return describe(plan(inputs_of(scenario), scenario.window(), scenario.aggregations(),
                         scenario.strategy)) + "\n"


@pytest.mark.parametrize("scenario", SCENARIOS + STREAMS, ids=lambda s: s.name)
def test_explain_matches_its_golden_file(scenario: Scenario,
                                         request: pytest.FixtureRequest) -> None:
    path = GOLDEN / f"{scenario.name}.txt"
    text = planned_text(scenario)
    if request.config.getoption("--save-golden"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_every_strategy_has_a_golden_file() -> None:
    strategies = {describe_strategy(s) for s in SCENARIOS}
    assert strategies == {"native-running", "arrow-frames", "native-frames", "native-batches",
                          "native-buckets", "panes", "arrow-intervals", "arrow-spl",
                          "arrow-ticks", "native-periods", "arrow-dynamic", "arrow-sessions",
                          "arrow-running", "arrow-features"}
    assert {describe_strategy(s) for s in STREAMS} == {"stream"}
    assert {p.stem for p in GOLDEN.glob("*.txt")} == {s.name for s in SCENARIOS + STREAMS}


def test_every_stream_shape_has_a_golden_file() -> None:
    """Every shape of the stream operator (the rows carried in one group or per bucket
    of keys, with revisions too, pane partials reduced where read, keys sharing a value
    per bucket, panes in one group),
    and the row-carrying
    operator over each inner strategy that streams."""
    planned = [plan(inputs_of(s), s.window(), s.aggregations(), s.strategy) for s in STREAMS]
    assert all(isinstance(p, StreamPlan) for p in planned)
    assert {type(p) for p in planned} == {CarriedRowsStream, BucketedRowsStream,
                                          CarriedPanesStream, KeyBucketsStream,
                                          PanePartialsStream, RevisedRowsStream}
    inner = {p.inner.strategy for p in planned if isinstance(p, StreamPlan)}
    assert inner == {"stream-panes", "arrow-intervals", "arrow-frames", "arrow-running",
                     "arrow-ticks", "arrow-sessions", "arrow-spl", "arrow-dynamic",
                     "arrow-features"}


def describe_strategy(scenario: Scenario) -> str:
    return plan(inputs_of(scenario), scenario.window(), scenario.aggregations(),
                scenario.strategy).strategy
