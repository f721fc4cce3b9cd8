"""Aggregation specs: output names, algebraic traits, argument checks."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest
from plan.schema import source

from wisp.errors import WispError, WispInputError
from wisp.plan.aggregations import resolve
from wisp.spec import aggregates as agg
from wisp.spec.aggregates import DEFINITIONS, Aggregation, Definition

BUILTINS = ["sum", "mean", "min", "max", "first", "last", "stddev", "variance", "collect",
            "time_weighted_mean"]


SKETCHES_AND_LISTS = [
    agg.hll_sketch("v"), agg.theta_sketch("v"), agg.kll_sketch("v"),
    agg.approx_count_distinct("v"), agg.approx_quantile("v", 0.5), agg.first_k("v", 2),
    agg.last_k("v", 2), agg.top_k("v", 2), agg.bottom_k("v", 2), agg.histogram("v")]


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
        agg.ewm_mean("v", half_life="1s"), *SKETCHES_AND_LISTS]
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


# ------------------------------------------- sketches, k-collections, histograms


def test_sketch_and_k_list_names_and_defaults() -> None:
    assert [a.output_name for a in SKETCHES_AND_LISTS] == [
        "hll_sketch_v", "theta_sketch_v", "kll_sketch_v", "approx_count_distinct_v",
        "approx_q50_v", "first_2_v", "last_2_v", "top_2_v", "bottom_2_v", "histogram_v"]
    assert (agg.hll_sketch("v").lg_k, agg.theta_sketch("v").lg_k) == (12, 12)
    assert (agg.kll_sketch("v").k, agg.approx_quantile("v", 0.1).k) == (200, 200)
    listed = agg.approx_quantile("v", [0.25, 0.75], k=400)
    assert (listed.q, listed.qs, listed.k, listed.output_name) == (
        None, (0.25, 0.75), 400, "approx_quantiles_v")
    assert agg.approx_quantile("v", 0.999).output_name == "approx_q99_9_v"
    # a sketch's state is bounded, a histogram's grows with the distinct values
    assert not any(a.definition.needs_values for a in SKETCHES_AND_LISTS[:-1])
    assert agg.histogram("v").definition.needs_values


@pytest.mark.parametrize(("make", "param", "found", "words"), [
    (lambda: agg.hll_sketch("v", 3), "lg_k", 3,
     "a whole number between 4 and 21 (log2 of the HLL buckets)"),
    (lambda: agg.hll_sketch("v", 22), "lg_k", 22,
     "a whole number between 4 and 21 (log2 of the HLL buckets)"),
    (lambda: agg.approx_count_distinct("v", lg_k=12.0), "lg_k", 12.0,
     "a whole number between 4 and 21 (log2 of the HLL buckets)"),
    (lambda: agg.theta_sketch("v", 27), "lg_k", 27,
     "a whole number between 5 and 26 (log2 of the nominal entries)"),
    (lambda: agg.kll_sketch("v", 7), "k", 7,
     "a whole number between 8 and 65535 (the KLL sketch's accuracy)"),
    (lambda: agg.approx_quantile("v", 0.5, k=65536), "k", 65536,
     "a whole number between 8 and 65535 (the KLL sketch's accuracy)"),
    (lambda: agg.approx_quantile("v", 1.5), "q", 1.5,
     "a number in [0, 1] or a non-empty list of them"),
    (lambda: agg.approx_quantile("v", []), "q", [],
     "a number in [0, 1] or a non-empty list of them"),
    (lambda: agg.approx_quantile("v", [0.5, True]), "q", [0.5, True],
     "a number in [0, 1] or a non-empty list of them"),
    (lambda: agg.top_k("v", 0), "k", 0, "a whole number >= 1 (how many values)"),
    (lambda: agg.first_k("v", -1), "k", -1, "a whole number >= 1 (how many values)"),
    (lambda: agg.last_k("v", 1.5), "k", 1.5, "a whole number >= 1 (how many values)"),
    (lambda: agg.bottom_k("v", True), "k", True, "a whole number >= 1 (how many values)"),
])
def test_bad_sketch_and_k_arguments_name_the_parameter(
        make: Callable[[], Aggregation], param: str, found: object, words: str) -> None:
    with pytest.raises(WispInputError) as info:
        make()
    assert str(info.value) == f"`{param}` must be {words}, found {found!r}"


@pytest.mark.parametrize(("aggregation", "found", "words"), [
    (agg.kll_sketch("s"), "string column 's'", "a numeric column for kll_sketch()"),
    (agg.approx_quantile("s", 0.5), "string column 's'",
     "a numeric column for approx_quantile()"),
    (agg.hll_sketch("d"), "date column 'd'",
     "an integer, floating-point or string column for hll_sketch()"),
    (agg.approx_count_distinct("m"), "decimal(10,2) column 'm'",
     "an integer, floating-point or string column for approx_count_distinct()"),
    (agg.theta_sketch("b"), "binary column 'b'",
     "an integer, floating-point or string column for theta_sketch()"),
    (agg.top_k("a", 2), "array<int> column 'a'", "an orderable column for top_k()"),
    (agg.histogram("a"), "array<int> column 'a'",
     "a column of atomic values for histogram()"),
])
def test_columns_a_sketch_or_list_cannot_read_are_refused_when_planned(
        aggregation: Aggregation, found: str, words: str) -> None:
    events = source("t bigint, s string, d date, m decimal(10,2), b binary, a array<int>, "
                    "v double", "t")
    with pytest.raises(WispInputError) as info:
        resolve(events, [aggregation])
    assert str(info.value) == f"`col` must be {words}, found {found!r}"
