"""Aggregations resolved against the schema: input checks and output types."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from ..errors import WispUnsupportedError, bad_value, did_you_mean
from ..events import Events
from ..spec.aggregates import Aggregation
from .nodes import ResolvedAggregation, ValueClass

RESERVED = ("window_start", "window_end", "time")
INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
NUMERIC_FNS = ("sum", "mean", "variance", "stddev", "time_weighted_mean")


def value_class(data_type: T.DataType | None) -> ValueClass:
    if data_type is None:
        return "none"
    if isinstance(data_type, INTEGRAL):
        return "integer"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "float"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, T.DecimalType):
        return "decimal"
    if isinstance(data_type, T.AtomicType):
        return "ordered"
    return "other"


def output_type(agg: Aggregation, data_type: T.DataType | None) -> T.DataType:
    fn = agg.fn
    if fn == "count":
        return T.LongType()
    if fn == "sum":
        if isinstance(data_type, T.DecimalType):
            return T.DecimalType(min(38, data_type.precision + 10), data_type.scale)
        return T.LongType() if isinstance(data_type, INTEGRAL) else T.DoubleType()
    if fn in ("mean", "variance", "stddev", "time_weighted_mean"):
        return T.DoubleType()
    if fn == "collect":
        assert data_type is not None
        return T.ArrayType(data_type, containsNull=False)
    if fn == "udaf":
        assert agg.returns is not None
        try:
            return T._parse_datatype_string(agg.returns)
        except Exception as error:
            raise bad_value("returns", "a Spark type as a DDL string such as 'double'",
                            agg.returns) from error
    assert data_type is not None
    return data_type


def resolve(events: Events, aggregations: Sequence[Aggregation]) -> tuple[
        ResolvedAggregation, ...]:
    """Check every aggregation against the events' schema and give its output type."""
    if not aggregations:
        raise bad_value("aggregations", "at least one aggregation such as wisp.count()",
                        "none")
    fields = {f.name: f.dataType for f in events.df.schema.fields}
    resolved: list[ResolvedAggregation] = []
    taken = set(events.key) | set(RESERVED)
    for agg in aggregations:
        if not isinstance(agg, Aggregation):
            raise bad_value("aggregations", "wisp aggregations such as wisp.sum('v')", agg)
        data_type: T.DataType | None = None
        if agg.col is not None:
            if agg.col not in fields:
                hint = did_you_mean(agg.col, fields).strip(" ()")
                raise bad_value("col", f"a column of the DataFrame for {agg.fn}() "
                                f"(columns: {', '.join(fields)})", agg.col, hint=hint)
            data_type = fields[agg.col]
        kind = value_class(data_type)
        if agg.fn in NUMERIC_FNS and kind not in ("integer", "float", "decimal"):
            assert data_type is not None
            raise bad_value("col", f"a numeric column for {agg.fn}()",
                            f"{data_type.simpleString()} column {agg.col!r}")
        if agg.fn in ("min", "max") and kind == "other":
            assert data_type is not None
            raise bad_value("col", f"an orderable column for {agg.fn}()",
                            f"{data_type.simpleString()} column {agg.col!r}")
        name = agg.output_name
        if name in taken:
            raise bad_value("alias", "output names distinct from the key columns, "
                            "window_start, window_end, time and each other", name)
        taken.add(name)
        resolved.append(ResolvedAggregation(agg, data_type, output_type(agg, data_type),
                                            kind))
    return tuple(resolved)


GROUPED_FNS = {"count": ("none", "integer", "float", "boolean", "decimal", "ordered", "other"),
               "sum": ("integer", "float", "decimal"), "mean": ("integer", "float", "decimal"),
               "min": ("integer", "float", "decimal", "ordered"),
               "max": ("integer", "float", "decimal", "ordered"),
               "variance": ("integer", "float"), "stddev": ("integer", "float")}
"""Aggregations whose Spark aggregate over a group of events gives wisp's result (null
and NaN handling included); first/last and collect depend on order, which a hash
aggregation does not keep."""


def grouped_blocker(resolved: Sequence[ResolvedAggregation]) -> str | None:
    """The first aggregation without an exact order-free Spark aggregate, in words, or
    None when every one has one."""
    for r in resolved:
        if r.value_class not in GROUPED_FNS.get(r.aggregation.fn, ()):
            return (f"{r.aggregation.output_name} has no order-free Spark aggregate giving "
                    "wisp's result")
    return None


INTERVAL_WINDOWS = "Hopping, Tumbling, Snapshot, CountByStartTime"


def uses_lifetimes(aggregation: Aggregation) -> bool:
    """Whether the aggregation reads each value's lifetime clipped to the window."""
    return aggregation.fn == "time_weighted_mean" or aggregation.lifetimes


def refuse_lifetimes(resolved: Sequence[ResolvedAggregation]) -> None:
    """Windows other than the interval-event ones give values no clipped lifetime."""
    for r in resolved:
        if uses_lifetimes(r.aggregation):
            label = ("time_weighted_mean" if r.aggregation.fn == "time_weighted_mean"
                     else "udaf(..., lifetimes=True)")
            raise WispUnsupportedError(f"{label} needs interval-event windows "
                                       f"({INTERVAL_WINDOWS})")
