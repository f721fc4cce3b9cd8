"""`ws.Aggregator` and `ws.aggregate` without Spark: what a bad aggregator is told (each a
`WispInputError` naming the aggregator's class and the method or parameter at fault),
output names, and the capabilities the planner reads (`definition`)."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from aggregators import Spread, Total, Trajectory

import wisp as ws
from wisp.errors import WispError, WispInputError
from wisp.spec.aggregates import USER_DEFINITION, Aggregation


def fails(*fragments: str) -> Any:
    """`pytest.raises(WispInputError)` whose message holds every fragment, in order."""
    return pytest.raises(WispInputError, match=".*".join(re.escape(f) for f in fragments))


class MaxMinusMin(Spread):
    """The same as `Spread`, under a name of several words."""


# ------------------------------------------------------------------ bad aggregators


METHODS = {"zero": "zero() (the state of no values)", "add": "add(state, values, times)",
           "merge": "merge(a, b)", "finish": "finish(state)"}


def without(method: str) -> type[ws.Aggregator]:
    """An aggregator class defining every method but `method` (named `No<Method>`)."""
    body: dict[str, Any] = {
        "returns": "bigint",
        "zero": lambda self: 0,
        "add": lambda self, state, values, times: state + len(values),
        "merge": lambda self, a, b: a + b,
        "finish": lambda self, state: state,
    }
    del body[method]
    return type(f"No{method.title()}", (ws.Aggregator,), body)


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_must_be_defined(method: str) -> None:
    cls = without(method)
    with fails(f"`{method}` of aggregator No{method.title()} must be defined as "
               f"{METHODS[method]}, found none"):
        ws.aggregate(cls(), "v")
    with fails(f"`{method}` of aggregator No{method.title()} must be defined"):
        ws.aggregate(cls, "v")  # the class itself: the same check


def test_a_complete_aggregator_needs_nothing_else() -> None:
    complete = type("Complete", (ws.Aggregator,), {
        "returns": "bigint", "zero": lambda self: 0,
        "add": lambda self, state, values, times: state + len(values),
        "merge": lambda self, a, b: a + b, "finish": lambda self, state: state})
    assert ws.aggregate(complete(), "v").output_name == "complete_v"


def test_a_method_set_to_none_is_not_defined() -> None:
    class Unmergeable(Spread):
        merge = None  # type: ignore[assignment]

    with fails("`merge` of aggregator Unmergeable must be defined as merge(a, b), "
               "found none"):
        ws.aggregate(Unmergeable(), "v")


@pytest.mark.parametrize("returns", [5, None, b"double", "", "   "])
def test_returns_must_be_a_type_name(returns: Any) -> None:
    class Untyped(Spread):
        pass

    Untyped.returns = returns
    with fails("`returns` of aggregator Untyped must be a Spark type as a DDL string such "
               f"as 'double', found {returns!r}") as info:
        ws.aggregate(Untyped(), "v")
    assert isinstance(info.value, WispError) and isinstance(info.value, ValueError)


def test_zero_that_raises_is_named() -> None:
    class Fragile(Spread):
        def zero(self) -> Any:
            raise RuntimeError("no state today")

    with fails("`zero` of aggregator Fragile must return the state of no values, found "
               "RuntimeError: no state today") as info:
        ws.aggregate(Fragile(), "v")
    assert isinstance(info.value.__cause__, RuntimeError)


@pytest.mark.parametrize("state, shown", [
    (lambda: 0, ("found function (", "Can't pickle <function <lambda>")),
    (threading.Lock(), ("found lock (TypeError: cannot pickle '_thread.lock' object)",)),
], ids=["lambda", "lock"])
def test_zero_must_give_a_picklable_state(state: Any, shown: tuple[str, ...]) -> None:
    class Locked(Spread):
        def zero(self) -> Any:
            return state

    with fails("`zero` of aggregator Locked must return a picklable state, ", *shown):
        ws.aggregate(Locked(), "v")


def test_a_class_is_built_without_arguments() -> None:
    spec = ws.aggregate(Spread, "v")
    assert isinstance(spec.aggregator, Spread)
    assert (spec.fn, spec.col, spec.returns) == ("aggregate", "v", "double")
    assert spec.output_name == "spread_v"


def test_a_class_that_needs_arguments_is_refused() -> None:
    class Scaled(Spread):
        def __init__(self, factor: float) -> None:
            self.factor = factor

    with fails("`aggregator` must be an instance of a wisp.Aggregator subclass (its class "
               "could not be built without arguments), found <class ",
               "Scaled'>") as info:
        ws.aggregate(Scaled, "v")
    assert isinstance(info.value.__cause__, TypeError)
    assert ws.aggregate(Scaled(2.0), "v").output_name == "scaled_v"  # an instance is fine


class Duck:
    """Every method of an aggregator, but not a `ws.Aggregator`."""

    returns = "double"

    def zero(self) -> Any:
        return None

    def add(self, state: Any, values: Any, times: Any) -> Any:
        return state

    def merge(self, a: Any, b: Any) -> Any:
        return a

    def finish(self, state: Any) -> Any:
        return state


@pytest.mark.parametrize("thing, shown", [
    (Duck(), "Duck object at 0x"),
    (Duck, "Duck'>"),
    (max, "<built-in function max>"),
    ("spread", "'spread'"),
    (None, "None"),
], ids=["duck", "duck-class", "function", "string", "none"])
def test_only_an_aggregator_is_taken(thing: Any, shown: str) -> None:
    with fails("`aggregator` must be an instance of a wisp.Aggregator subclass, found ",
               shown):
        ws.aggregate(thing, "v")


def test_column_and_min_count_are_checked() -> None:
    with fails("`col` must be a column name for aggregate(), found ''"):
        ws.aggregate(Spread(), "")
    with fails("`col` must be a column name for aggregate(), found None"):
        ws.aggregate(Spread(), None)  # type: ignore[arg-type]
    with fails("`min_count` must be a whole number >= 0 or None, found -1"):
        ws.aggregate(Spread(), "v", min_count=-1)
    with fails("`min_count` must be a whole number >= 0 or None, found True"):
        ws.aggregate(Spread(), "v", min_count=True)
    assert ws.aggregate(Total(), "i", min_count=2).min_count == 2
    assert ws.aggregate(Total(), "i", min_count=None).min_count == 0


# ------------------------------------------------------------------ names, traits


@pytest.mark.parametrize("aggregator, name", [
    (Spread(), "spread_v"), (MaxMinusMin(), "max_minus_min_v"),
    (Trajectory(), "trajectory_v"), (Total, "total_v"),
    (type("HTTPLatency", (Spread,), {})(), "http_latency_v"),
    (type("P90", (Spread,), {})(), "p90_v"),
])
def test_output_name_is_the_class_in_snake_case(aggregator: Any, name: str) -> None:
    spec = ws.aggregate(aggregator, "v")
    assert spec.output_name == name
    assert spec.alias("width").output_name == "width"
    assert spec.output_name == name  # alias gives a new spec
    assert spec.label == name.removesuffix("_v") + "(v)"


def test_aggregate_spec_fields() -> None:
    spread = Spread()
    spec = ws.aggregate(spread, "v", min_count=3)
    assert isinstance(spec, Aggregation)
    assert (spec.fn, spec.col, spec.returns, spec.min_count) == ("aggregate", "v", "double", 3)
    assert spec.aggregator is spread
    assert spec.user and spec.columns == ("v",) and spec.counted == "v"
    assert ws.aggregate(Trajectory(), "v").returns == "struct<change:double,span:bigint>"
    assert not ws.sum("v").user


def test_definition_mergeable_and_invertible_only_with_remove() -> None:
    spread = ws.aggregate(Spread(), "v").definition
    total = ws.aggregate(Total(), "v").definition
    assert spread.mergeable and total.mergeable
    assert not spread.invertible and total.invertible  # Total defines remove
    assert not ws.aggregate(Trajectory(), "v").definition.invertible

    class Subtotal(Total):  # remove inherited from Total
        pass

    class Irreversible(Total):
        remove = None  # type: ignore[assignment]

    assert ws.aggregate(Subtotal(), "v").definition.invertible
    assert not ws.aggregate(Irreversible(), "v").definition.invertible
    for definition in (spread, total):
        assert definition.user_code and definition.reads_times
        assert definition.output == "declared"
        assert not definition.idempotent and not definition.spark_running
    # commutative (Spread, Total): pane partials on streams; order-sensitive: none
    assert spread.stream_panes and total.stream_panes
    trajectory = ws.aggregate(Trajectory(), "v").definition
    assert trajectory == USER_DEFINITION and not trajectory.stream_panes
