"""Aggregations resolved against the input's description: input checks and output types."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import WispUnsupportedError, bad_value, did_you_mean
from ..spec.aggregates import Aggregation, count
from ..spec.windows import Since
from .durations import DAY, resolve_duration
from .nodes import OutputType, ResolvedAggregation
from .registry import NoWindow
from .source import ColumnType, Source, value_class

RESERVED = ("window_start", "window_end", "time")
TAKES: dict[str, tuple[str, ...]] = {
    "numeric": ("integer", "float", "decimal"),
    "orderable": ("integer", "float", "boolean", "decimal", "ordered"),
    "atomic": ("integer", "float", "boolean", "decimal", "ordered"),
    "hashable": ("integer", "float", "ordered"),
}
"""The value classes each `Definition.takes` accepts (absent: any)."""
TAKES_WORDS = {"numeric": "a numeric column", "orderable": "an orderable column",
               "atomic": "a column of atomic values",
               "hashable": "an integer, floating-point or string column"}
HASHED_FAMILIES = ("integer", "float", "string")
"""The column families a hashing sketch reads (`Definition.takes` "hashable"): those
the sketch library hashes as Spark's sketch functions do, and doubles."""
MIN_COUNT_PREFIX = "__wisp_min_count_"
"""The hidden count columns `min_count` reads (`with_min_counts`), dropped from the
result."""


def output_type(agg: Aggregation, input_type: ColumnType | None) -> OutputType:
    """The output type of `agg` over a column of `input_type` (None: no column), by its
    definition's `output` rule."""
    rule = agg.definition.output
    if rule == "sum":
        if input_type is not None and input_type.family == "decimal":
            return OutputType("decimal", min(38, input_type.precision + 10), input_type.scale)
        return OutputType("long" if value_class(input_type) == "integer" else "double")
    if rule == "long":
        return OutputType("long")
    if rule == "double":
        return OutputType("double")
    if rule == "declared":
        assert agg.returns is not None
        return OutputType("declared", declared=agg.returns)
    if rule == "binary":
        return OutputType("binary")
    if rule == "quantiles":
        return OutputType("double" if agg.qs is None else "doubles")
    assert input_type is not None
    if rule == "map":
        return OutputType("map")
    return OutputType("array" if rule == "array" else "input")


def spark_blocker(resolved: Sequence[ResolvedAggregation]) -> ResolvedAggregation | None:
    """The first aggregation that no Spark window function computes exactly and
    incrementally (`Definition.spark_running`: a user's code, exact quantiles, ...), or
    None: every strategy that runs Spark's own aggregates sends those to a kernel."""
    return next((r for r in resolved if not r.aggregation.definition.spark_running), None)


def resolve(source: Source, aggregations: Sequence[Aggregation]) -> tuple[
        ResolvedAggregation, ...]:
    """Check every aggregation against the events' columns and give its output type."""
    if not aggregations:
        raise bad_value("aggregations", "at least one aggregation such as wisp.count()",
                        "none")
    fields = source.types()
    resolved: list[ResolvedAggregation] = []
    taken = set(source.key) | set(RESERVED)
    for agg in aggregations:
        if not isinstance(agg, Aggregation):
            raise bad_value("aggregations", "wisp aggregations such as wisp.sum('v')", agg)
        input_type: ColumnType | None = None
        if agg.col is not None:
            if agg.col not in fields:
                hint = did_you_mean(agg.col, fields).strip(" ()")
                raise bad_value("col", f"a column of the DataFrame for {agg.fn}() "
                                f"(columns: {', '.join(fields)})", agg.col, hint=hint)
            input_type = fields[agg.col]
        kind = value_class(input_type)
        if agg.by is not None:
            _check_by(agg, fields)
        takes = agg.definition.takes
        if takes in TAKES and (kind not in TAKES[takes] or (
                takes == "hashable" and input_type is not None
                and input_type.family not in HASHED_FAMILIES)):
            assert input_type is not None
            raise bad_value("col", f"{TAKES_WORDS[takes]} for {agg.fn}()",
                            f"{input_type.text} column {agg.col!r}")
        name = agg.output_name
        if name in taken:
            raise bad_value("alias", "output names distinct from the key columns, "
                            "window_start, window_end, time and each other", name)
        taken.add(name)
        half_life = None
        if agg.half_life is not None:
            half_life = resolve_duration(agg.half_life, source.time, "half_life")
            if not half_life > 0:
                raise bad_value("half_life", "a duration > 0 such as '10s'", agg.half_life)
            if source.time.kind == "date":
                half_life = half_life / DAY  # date time runs in whole days
        resolved.append(ResolvedAggregation(agg, input_type, output_type(agg, input_type),
                                            kind, half_life=half_life))
    return tuple(resolved) + with_min_counts(source, tuple(resolved))


def _check_by(agg: Aggregation, fields: dict[str, ColumnType]) -> None:
    """max_by/min_by: `by` names an orderable column."""
    assert agg.by is not None
    if agg.by not in fields:
        hint = did_you_mean(agg.by, fields).strip(" ()")
        raise bad_value("by", f"a column of the DataFrame for {agg.fn}() "
                        f"(columns: {', '.join(fields)})", agg.by, hint=hint)
    if value_class(fields[agg.by]) not in TAKES["orderable"]:
        raise bad_value("by", f"an orderable column for {agg.fn}()",
                        f"{fields[agg.by].text} column {agg.by!r}")


def with_min_counts(source: Source, resolved: tuple[ResolvedAggregation, ...]
                    ) -> tuple[ResolvedAggregation, ...]:
    """One hidden `count(column)` per aggregation with a `min_count` (rows for
    `count()`), named `MIN_COUNT_PREFIX<i>`: every strategy computes counts, and the
    engine nulls the aggregation's result where its count is below `min_count`
    (`engine.build`), then drops the hidden column."""
    fields = source.types()
    hidden: list[ResolvedAggregation] = []
    for i, r in enumerate(resolved):
        if r.aggregation.min_count <= 0:
            continue
        counted = r.aggregation.counted
        column = None if counted is None else fields[counted]
        hidden.append(ResolvedAggregation(
            count(counted).alias(f"{MIN_COUNT_PREFIX}{i}"), column,
            OutputType("long"), value_class(column)))
    return tuple(hidden)


def is_hidden(resolved: ResolvedAggregation) -> bool:
    """Whether the aggregation is a hidden count of `min_count` (not in the result)."""
    return resolved.name.startswith(MIN_COUNT_PREFIX)


def grouped_blocker(resolved: Sequence[ResolvedAggregation]) -> str | None:
    """The first aggregation without an exact order-free Spark aggregate over a group
    of events (`Definition.spark_grouped`: first/last and collect depend on order, which
    a hash aggregation does not keep), in words, or None when every one has one."""
    for r in resolved:
        if r.value_class not in r.aggregation.definition.spark_grouped:
            return (f"{r.aggregation.output_name} has no order-free Spark aggregate giving "
                    "wisp's result")
    return None


INTERVAL_WINDOWS = "Hopping, Tumbling, Snapshot, CountByStartTime"
POINT_AND_INTERVAL_WINDOWS = ("Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
                              "Session")
"""The window kinds that read interval events (a lifetime `[time, end)` per event)."""


def uses_lifetimes(aggregation: Aggregation) -> bool:
    """Whether the aggregation reads each value's lifetime clipped to the window."""
    return aggregation.definition.lifetimes or aggregation.lifetimes


def refuse_lifetimes(resolved: Sequence[ResolvedAggregation], kind: str) -> None:
    """Windows other than the interval-event ones give values no clipped lifetime:
    `kind` (the window's name, as the user wrote it) refuses such aggregations."""
    for r in resolved:
        if uses_lifetimes(r.aggregation):
            label = ("udaf(..., lifetimes=True)" if r.aggregation.lifetimes
                     else r.aggregation.fn)
            raise WispUnsupportedError(
                f"`window` must be one of {INTERVAL_WINDOWS} for {label} (it weighs each "
                f"value by its lifetime within the window), found {kind}")


def refuse_interval_events(source: Source, kind: str) -> None:
    """Window kinds that read point events only refuse interval events (events bound
    with `end`) rather than ignore their ends: `kind` is the window's name."""
    if source.end is not None:
        raise WispUnsupportedError(
            f"`window` must be {POINT_AND_INTERVAL_WINDOWS} for interval events (bound "
            f"with `end`: column {source.end!r}), found {kind}, which reads point events; "
            "bind the events without `end` to window their start times")


def check_strategy(resolved: tuple[ResolvedAggregation, ...], strategy: str | None,
                   name: str, kind: str) -> None:
    """The checks every kernel-only window kind shares: no clipped lifetimes, and no
    strategy other than its own."""
    refuse_lifetimes(resolved, kind)
    if strategy is not None and strategy != name:
        raise bad_value("strategy", f"{name!r} for {kind} windows or None", strategy)


def refuse_ewm(window: object, resolved: Sequence[ResolvedAggregation]) -> None:
    """`ewm_mean` is defined over running windows only: the cumulative one and `Since`
    periods (a row's window holds every row of its period up to it)."""
    if isinstance(window, (NoWindow, Since)):
        return
    for r in resolved:
        if r.aggregation.definition.running_only:
            raise WispUnsupportedError(
                f"`aggregations` over {type(window).__name__} windows must be defined "
                f"there, found {r.aggregation.fn} ({r.name}), which is defined over the "
                "cumulative "
                "window (ev.agg) and Since periods only")


def refuse_min_count_on_changes(window: object,
                                resolved: Sequence[ResolvedAggregation]) -> None:
    """`Hopping(output="changes")` coalesces consecutive rows with equal results in its
    kernel, before `min_count` (applied after any strategy) could null them: refused."""
    if getattr(window, "output", None) != "changes":
        return
    for r in resolved:
        if r.aggregation.min_count > 0:
            raise WispUnsupportedError(
                "`aggregations` over Hopping(output='changes') must not set min_count "
                f"(its rows coalesce by their results before min_count applies), found "
                f"{r.name} with min_count={r.aggregation.min_count}")


def accumulated(resolved: Sequence[ResolvedAggregation]) -> bool:
    """Whether a few accumulators per key hold every aggregation
    (`Definition.accumulators`, lifetimes aside): a running window, a session, a
    calendar period or a delta- or punctuation-sized window then carries them, never
    rows (`runtime.windows.running.held_by_accumulators` is the executors' side of this rule)."""
    return all(r.aggregation.definition.accumulators and not r.aggregation.lifetimes
               for r in resolved)
