"""The benchmark cases. Adding one is one small function registered with `@case`: it
takes the data and the window width `w` and returns the wisp DataFrame and, when there
is one, the hand-written native PySpark equivalent (same columns: k, t, then values)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

import wisp as ws
import wisp.windowed

from .data import Data

Build = Callable[[Data, int], tuple[DataFrame, DataFrame | None]]


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    build: Build
    widths: tuple[int, ...]
    compare: tuple[str, ...]


CASES: dict[str, Case] = {}
WIDTHS = (10, 100, 1_000, 10_000)


def case(family: str, widths: tuple[int, ...] = WIDTHS,
         compare: tuple[str, ...] = ("sum_v", "mean_v", "max_v")) -> Callable[[Build], Build]:
    """Register a benchmark (`family` names the window family it belongs to)."""
    def register(build: Build) -> Build:
        name = build.__name__
        CASES[name] = Case(name, family, build, widths, compare)
        return build
    return register


STRATEGIES: dict[int, str] = {}
"""The strategy wisp chose, by id() of the benchmark's wisp DataFrame."""


def _selected(out: DataFrame) -> DataFrame:
    """wisp's output as (k, t, sum_v, mean_v, max_v), remembering its strategy."""
    selected = out.select("k", F.col("time").alias("t"), "sum_v", "mean_v", "max_v")
    run = wisp.windowed._RUNS.get(out)
    STRATEGIES[id(selected)] = run.plan.strategy if run is not None else "-"
    return selected


def _wisp(data: Data, window: object) -> DataFrame:
    ev = ws.events(data.df, time="t", key="k")
    return _selected(ev.window(window).agg(  # type: ignore[arg-type]
        ws.sum("v"), ws.mean("v"), ws.max("v")))


def _native(data: Data, frame: Callable[[object], object]) -> DataFrame:
    spec = frame(Window.partitionBy("k").orderBy("t"))
    v = F.col("v")
    return data.df.select("k", "t", F.sum(v).over(spec).alias("sum_v"),  # type: ignore[arg-type]
                          F.avg(v).over(spec).alias("mean_v"),  # type: ignore[arg-type]
                          F.max(v).over(spec).alias("max_v"))  # type: ignore[arg-type]


@case("psi")
def rows(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Rows(-(w-1), 0, partial=True): the last w events, as rowsBetween(-(w-1), 0)."""
    return (_wisp(data, ws.Rows(-(w - 1), 0, partial=True)),
            _native(data, lambda s: s.rowsBetween(-(w - 1), 0)))  # type: ignore[attr-defined]


@case("psi")
def range_(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Range(-(w*gap-1), 0): ~w events on average, as rangeBetween(-(w*gap-1), 0)."""
    span = w * data.gap - 1
    return (_wisp(data, ws.Range(-span, 0)),
            _native(data, lambda s: s.rangeBetween(-span, 0)))  # type: ignore[attr-defined]


@case("psi", widths=(0,))
def cumulative(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Running sum, mean, max per key (no window): rowsBetween(unboundedPreceding, 0)."""
    ev = ws.events(data.df, time="t", key="k")
    out = _selected(ev.agg(ws.sum("v"), ws.mean("v"), ws.max("v")))
    return out, _native(data, lambda s: s.rowsBetween(  # type: ignore[attr-defined]
        Window.unboundedPreceding, 0))


@case("floor", widths=(0,), compare=())
def shuffle_sort(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """repartition(k) + sortWithinPartitions(k, t): the floor of any per-key ordered job."""
    return data.df.repartition("k").sortWithinPartitions("k", "t"), None


@case("floor", widths=(0,), compare=())
def identity_arrow(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """The floor plus an identity mapInArrow round trip (Arrow to Python and back)."""
    sorted_ = data.df.repartition("k").sortWithinPartitions("k", "t")

    def identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from batches

    return sorted_.mapInArrow(identity, sorted_.schema), None
