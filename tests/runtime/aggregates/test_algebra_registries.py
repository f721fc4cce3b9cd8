"""The registries that dispatch on an aggregation's algebra (`Definition.algebra`), never
its name, agree with the definitions: every algebra a strategy may be given has its
entry there, and the arguments a query file may give (`Definition.arguments`,
`Definition.required`) are the constructors' own. No Spark session: the engine's
registries are only read."""

from __future__ import annotations

import inspect
import pickle

import pyarrow as pa
import pytest
from aggregators import Spread

from wisp.engine.native import NATIVE_FORMS
from wisp.engine.panes import PARTIALS, RESULTS
from wisp.query import AGG_FNS, CALL_ARGUMENTS, build_aggregation
from wisp.runtime.aggregates.aggregate import FRAME_KERNELS, AggregateJob
from wisp.runtime.aggregates.alive import ALIVE_KERNELS
from wisp.runtime.windows.scans import SCANS
from wisp.spec import aggregates as ws
from wisp.spec.aggregates import DEFINITIONS, USER_DEFINITION, Definition

BUILT_INS = sorted(DEFINITIONS)
EVERY = [*DEFINITIONS.items(), ("aggregate", USER_DEFINITION)]


@pytest.mark.parametrize(("fn", "definition"), EVERY, ids=[fn for fn, _ in EVERY])
def test_every_algebra_has_its_kernels(fn: str, definition: Definition) -> None:
    """Frame kernels for all but the time-weighted mean (the interval kernels clip
    lifetimes for it), alive kernels for all but the running-only ones, running scans
    exactly for those a few accumulators hold."""
    algebra = definition.algebra
    assert algebra, fn
    assert (algebra in FRAME_KERNELS) is not definition.lifetimes
    assert (algebra in ALIVE_KERNELS) is not definition.running_only
    assert (algebra in SCANS) is definition.accumulators


@pytest.mark.parametrize("fn", BUILT_INS)
def test_native_forms_and_pane_results_cover_the_capabilities(fn: str) -> None:
    """Spark's own forms for every aggregation a native strategy may get (an order-free
    grouped aggregate, a sliding or running frame), pane results for those with
    panes, each from the partial kinds there are."""
    definition = DEFINITIONS[fn]
    if definition.spark_grouped or definition.spark_sliding:
        assert definition.algebra in NATIVE_FORMS
    if definition.panes:
        assert definition.algebra in RESULTS
    assert set(PARTIALS) <= set(RESULTS)


def test_the_algebras_of_the_registries_are_the_definitions() -> None:
    algebras = {d.algebra for _, d in EVERY}
    for registry in (FRAME_KERNELS, ALIVE_KERNELS, SCANS, NATIVE_FORMS, RESULTS):
        assert set(registry) <= algebras


@pytest.mark.parametrize(("fn", "definition"), EVERY, ids=[fn for fn, _ in EVERY])
def test_the_arguments_are_the_constructors(fn: str, definition: Definition) -> None:
    parameters = [p for p in inspect.signature(getattr(ws, fn)).parameters.values()
                  if p.name != "min_count"]
    assert definition.arguments == tuple(p.name for p in parameters)
    assert definition.required == tuple(p.name for p in parameters
                                        if p.default is inspect.Parameter.empty)


def test_a_query_file_names_the_built_ins_without_user_code() -> None:
    assert set(AGG_FNS) == {fn for fn, d in DEFINITIONS.items() if not d.user_code}
    assert "udaf" not in AGG_FNS
    assert CALL_ARGUMENTS["quantile"] == ("q", "interpolation")
    assert CALL_ARGUMENTS["max_by"] == CALL_ARGUMENTS["min_by"] == ("by",)
    assert CALL_ARGUMENTS["ewm_mean"] == ("half_life",)
    assert CALL_ARGUMENTS["median"] == CALL_ARGUMENTS["count"] == ()
    assert build_aggregation("median(v)", "a") == ws.median("v")
    assert build_aggregation("quantile(v, 0.9, lower)", "a") == ws.quantile("v", 0.9, "lower")
    assert build_aggregation({"fn": "count"}, "a") == ws.count()


def test_a_median_job_carries_its_interpolation() -> None:
    """No name decides a median's interpolation: its aggregation carries "linear", as
    the job built from it (`engine.layout.aggregate_jobs`) does."""
    median = ws.median("v")
    assert (median.q, median.interpolation) == (0.5, "linear")
    assert DEFINITIONS["median"].algebra == DEFINITIONS["quantile"].algebra


def test_a_job_is_labelled_as_its_aggregation() -> None:
    spread = ws.aggregate(Spread(), "v")
    job = AggregateJob(spread.definition, "v", "float", pa.float64(), None,
                       aggregator=spread.aggregator)
    assert job.label == spread.label == "spread(v)"
    assert AggregateJob(ws.sum("v").definition, "v", "float", pa.float64(),
                        None).label == "sum(v)"
    assert AggregateJob(ws.count().definition, None, "none", pa.int64(),
                        None).label == "count()"


@pytest.mark.parametrize(("fn", "definition"), EVERY, ids=[fn for fn, _ in EVERY])
def test_a_definition_is_named_as_its_constructor(fn: str, definition: Definition) -> None:
    """`Definition.name` is what labels show (the key of `DEFINITIONS`, "aggregate" for
    a user's aggregator), and a job pickled to an executor keeps its definition."""
    assert definition.name == fn
    job = AggregateJob(definition, "v", "float", pa.float64(), None)
    assert pickle.loads(pickle.dumps(job)) == job
