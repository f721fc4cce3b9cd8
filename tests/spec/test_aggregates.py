"""Aggregation specs: output names, algebraic traits, argument checks."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest

from wisp.errors import WispError, WispInputError
from wisp.spec import aggregates as agg
from wisp.spec.aggregates import DEFINITIONS, Aggregation, Definition

BUILTINS = ["sum", "mean", "min", "max", "first", "last", "stddev", "variance", "collect",
            "time_weighted_mean"]


def p90(values: Any, times: Any) -> float:
    return 0.0


def assert_bad_value(info: pytest.ExceptionInfo[WispInputError], param: str,
                     found: object) -> str:
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, WispError)
    assert message.startswith(f"`{param}` must be "), message
    assert f"found {found!r}" in message, message
    return message


# ----------------------------------------------------------------- output names


@pytest.mark.parametrize("fn", BUILTINS)
def test_builtin_output_name_is_fn_underscore_col(fn: str) -> None:
    spec = getattr(agg, fn)("amount")
    assert (spec.fn, spec.col, spec.name) == (fn, "amount", None)
    assert spec.output_name == f"{fn}_amount"
    assert spec.alias("x").output_name == "x"


def test_count_names() -> None:
    assert agg.count().col is None
    assert agg.count().output_name == "count"
    assert agg.count(None).output_name == "count"
    assert agg.count("v").output_name == "count_v"
    assert agg.count().alias("n").output_name == "n"


def test_alias_returns_a_new_spec() -> None:
    base = agg.max("v")
    peak = base.alias("peak")
    assert peak is not base
    assert (peak.fn, peak.col, peak.name, peak.output_name) == ("max", "v", "peak", "peak")
    assert base.output_name == "max_v"  # unchanged
    assert peak.alias("top").output_name == "top"
    assert peak != base


def test_udaf_output_name_uses_the_function_name() -> None:
    spec = agg.udaf(p90, "latency")
    assert (spec.fn, spec.col, spec.func, spec.returns) == ("udaf", "latency", p90, "double")
    assert spec.output_name == "p90_latency"
    assert spec.alias("q").output_name == "q"
    typed = agg.udaf(p90, "latency", returns="array<long>")
    assert typed.returns == "array<long>"


def test_udaf_without_a_name_falls_back_to_udaf() -> None:
    unnamed = functools.partial(p90)
    assert not hasattr(unnamed, "__name__")
    assert agg.udaf(unnamed, "v").output_name == "udaf_v"


# ------------------------------------------------------------------ definitions


def test_definitions_state_the_capabilities() -> None:
    assert agg.sum("v").definition.invertible
    assert agg.sum("v").definition.mergeable
    assert not agg.sum("v").definition.idempotent
    assert agg.count().definition.invertible
    assert agg.max("v").definition.idempotent
    assert not agg.max("v").definition.invertible
    assert agg.min("v").definition.idempotent
    assert agg.collect("v").definition.needs_values
    assert not agg.collect("v").definition.invertible
    assert agg.udaf(p90, "v").definition.needs_values
    assert not agg.udaf(p90, "v").definition.mergeable
    assert agg.udaf(p90, "v").definition.user_code
    assert not agg.mean("v").definition.needs_values
    assert agg.ewm_mean("v", half_life="1s").definition.running_only
    assert agg.time_weighted_mean("v").definition.lifetimes


def test_every_factory_has_a_definition() -> None:
    specs = [getattr(agg, fn)("v") for fn in BUILTINS] + [
        agg.count(), agg.udaf(p90, "v"), agg.quantile("v", 0.9), agg.median("v"),
        agg.count_distinct("v"), agg.max_by("v", "w"), agg.min_by("v", "w"),
        agg.ewm_mean("v", half_life="1s"),
        *[getattr(agg, fn)("v", 3) for fn in agg.K_LISTS], agg.histogram("v")]
    assert {spec.fn for spec in specs} == set(DEFINITIONS)
    for spec in specs:
        assert spec.definition is DEFINITIONS[spec.fn]
        assert isinstance(spec.definition, Definition)


@pytest.mark.parametrize("fn", sorted(DEFINITIONS))
def test_definitions_are_consistent(fn: str) -> None:
    definition = DEFINITIONS[fn]
    # x + x = x and a group inverse together force every value to be the identity
    assert not (definition.invertible and definition.idempotent)
    # an aggregate that must see every value cannot drop one by inversion
    assert not (definition.needs_values and definition.invertible)
    # what Spark computes over a sliding frame it computes over a group
    assert set(definition.spark_sliding) <= set(definition.spark_grouped)
    with pytest.raises(dataclasses.FrozenInstanceError):
        definition.invertible = not definition.invertible  # type: ignore[misc]


# ------------------------------------------------------------------ bad values


@pytest.mark.parametrize("fn", [*BUILTINS, "count"])
@pytest.mark.parametrize("col", [5, "", b"v", ["v"]])
def test_bad_column(fn: str, col: object) -> None:
    with pytest.raises(WispInputError) as info:
        getattr(agg, fn)(col)
    message = assert_bad_value(info, "col", col)
    assert f"a column name for {fn}()" in message


@pytest.mark.parametrize("fn", BUILTINS)
def test_column_is_required_except_for_count(fn: str) -> None:
    with pytest.raises(WispInputError) as info:
        getattr(agg, fn)(None)
    assert_bad_value(info, "col", None)


@pytest.mark.parametrize("name", ["", None, 3, ["x"]])
def test_bad_alias(name: object) -> None:
    with pytest.raises(WispInputError) as info:
        agg.sum("v").alias(name)  # type: ignore[arg-type]
    message = assert_bad_value(info, "name", name)
    assert "non-empty column name" in message


@pytest.mark.parametrize("func", [42, "p90", None])
def test_udaf_needs_a_callable(func: object) -> None:
    with pytest.raises(WispInputError) as info:
        agg.udaf(func, "v")  # type: ignore[arg-type]
    message = assert_bad_value(info, "func", func)
    assert "callable" in message


@pytest.mark.parametrize("returns", ["", None, 5, float])
def test_udaf_bad_returns(returns: object) -> None:
    with pytest.raises(WispInputError) as info:
        agg.udaf(p90, "v", returns=returns)  # type: ignore[arg-type]
    message = assert_bad_value(info, "returns", returns)
    assert "DDL string" in message


def test_udaf_bad_column() -> None:
    with pytest.raises(WispInputError) as info:
        agg.udaf(p90, 7)  # type: ignore[arg-type]
    message = assert_bad_value(info, "col", 7)
    assert "udaf()" in message


def test_udaf_returns_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        agg.udaf(p90, "v", "double")  # type: ignore[misc]


# ------------------------------------------------------- frozen, equal, hashable

MAKERS: list[Callable[[], Aggregation]] = [
    lambda: agg.count(),
    lambda: agg.count("v"),
    lambda: agg.sum("v"),
    lambda: agg.mean("v").alias("avg"),
    lambda: agg.collect("v"),
    lambda: agg.udaf(p90, "v", returns="double"),
]


@pytest.mark.parametrize("make", MAKERS)
def test_aggregations_are_frozen_values(make: Callable[[], Aggregation]) -> None:
    one, two = make(), make()
    assert one == two
    assert hash(one) == hash(two)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.col = "w"  # type: ignore[misc]
    assert one.output_name == two.output_name


def test_different_aggregations_differ() -> None:
    assert len({make() for make in MAKERS}) == len(MAKERS)
    assert agg.sum("v") != agg.sum("w")
    assert agg.sum("v") != agg.mean("v")
