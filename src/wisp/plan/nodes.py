"""Physical plan nodes: what runs, resolved against the schema."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pyspark.sql import types as T

from ..events import Events
from ..spec.aggregates import Aggregation
from ..spec.windows import Window

Strategy = str
"""A strategy's name, e.g. "native-running" or "arrow-frames"; `explain` prints it."""
ValueClass = Literal["none", "integer", "float", "boolean", "decimal", "ordered", "other"]


@dataclass(frozen=True)
class ResolvedAggregation:
    """One aggregation with its input column's type and its output type."""

    aggregation: Aggregation
    input_type: T.DataType | None
    output_type: T.DataType
    value_class: ValueClass

    @property
    def name(self) -> str:
        return self.aggregation.output_name


@dataclass(frozen=True)
class RowsFrame:
    """Positions `i + first .. i + last` around anchor `i`."""

    first: int
    last: int
    partial: bool


@dataclass(frozen=True)
class RangeFrame:
    """Times `[t + start, t + end]` around anchor time `t`, sides per `closed`."""

    start: int | float
    end: int | float
    closed: str


@dataclass(frozen=True)
class RunningFrame:
    """Everything of the key up to and including the anchor."""


Frame = RowsFrame | RangeFrame | RunningFrame


@dataclass(frozen=True)
class Plan:
    """A window over events with its aggregations, and how it will run.

    `builder` names the engine function that builds the Spark plan, as
    "module:function" under `wisp.engine` (it takes the plan and an Observation and
    returns the result DataFrame); `details` carries what that builder needs (a `Frame`
    for the frame strategies); `how` says in words what runs.
    """

    events: Events
    window: Window | None
    aggregations: tuple[ResolvedAggregation, ...]
    strategy: Strategy
    reason: str
    how: str
    builder: str
    tie_break: tuple[str, ...]
    details: Any = None
