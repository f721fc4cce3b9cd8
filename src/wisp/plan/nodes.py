"""Physical plans: one frozen dataclass per strategy, holding plain data only.

A plan says what runs, resolved against the input's description (`source.Source`): no
DataFrame, Column or session is in it, so it is built, compared and explained without
Spark. Each strategy's class lives beside the rule that makes it; the engine compiles
each class with the compiler registered for it, and `explain` asks each plan `how()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ..spec.aggregates import Aggregation
from .source import ColumnType, Source, ValueClass

OutputKind = Literal["long", "double", "decimal", "input", "array", "map", "binary",
                     "doubles", "declared"]


@dataclass(frozen=True)
class OutputType:
    """An aggregation's output type: `long`, `double`, `decimal(precision, scale)`, the
    input column's own type (`input`), an array of the input's values without nulls
    (`array`), a map from the input's values to longs (`map`), a sketch's bytes
    (`binary`), an array of doubles (`doubles`), or the type a user-defined aggregate
    declares (`declared`, a DDL string the engine parses)."""

    kind: OutputKind
    precision: int = 0
    scale: int = 0
    declared: str = ""

    @property
    def text(self) -> str:
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "declared":
            return self.declared
        return {"long": "bigint", "double": "double", "input": "the input's type",
                "array": "an array of the input's values",
                "map": "a map from the input's values to bigint counts",
                "binary": "binary", "doubles": "array<double>"}[self.kind]


@dataclass(frozen=True)
class ResolvedAggregation:
    """One aggregation with its input column's type and its output type."""

    aggregation: Aggregation
    input_type: ColumnType | None
    output: OutputType
    value_class: ValueClass
    half_life: int | float | None = None
    """ewm_mean: the half-life in ticks of the time column (days for date time)."""

    @property
    def name(self) -> str:
        return self.aggregation.output_name


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What every plan holds: the input it reads, the window in words, the resolved
    aggregations, the columns that break ties in time, and why its strategy was chosen.

    Subclasses, one per strategy, add what their compiler needs and say in `how()` what
    runs. `strategy` is the name `explain` prints and `strategy=` accepts; `python` is
    False for strategies that run on Spark alone (no Python worker, no sort of ours)."""

    source: Source
    window: str
    aggregations: tuple[ResolvedAggregation, ...]
    tie_break: tuple[str, ...]
    reason: str

    strategy: ClassVar[str] = ""
    python: ClassVar[bool] = True

    def how(self) -> str:
        """What runs, in words."""
        raise NotImplementedError(type(self).__name__)

    @property
    def suffixes(self) -> tuple[str, ...]:
        """What follows an aggregation's name in its output columns: nothing (one
        column each), or one suffix per window of a feature set."""
        return ("",)

    @property
    def sorts(self) -> bool:
        """Whether wisp's Python worker sorts the rows it reads (`explain`'s Sorting
        line): every Python strategy but those that take rows in any order."""
        return self.python
