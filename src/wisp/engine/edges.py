"""Interval events from start/end edge rows (`wisp.from_edges`): the pairing query.

The arguments are validated by `wisp.events.from_edges`; this module builds the Spark
plan that pairs each start edge with the end edge that closes it (a batch), or the
edge rows with a null end column that a stream's operator pairs (`runtime/windows/edges.py`).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import EDGE_END_COLUMN

AFTER_START = "__wisp_after_start"


def paired_edges(df: DataFrame, time: str, edge: str, id: str,
                 key: tuple[str, ...]) -> DataFrame:
    """One row per start edge of `df`: its columns without `edge`, plus `EDGE_END_COLUMN`
    (the time of the end edge that closes it, null when none does). Per (`key`, `id`),
    edges are taken in time order, a start before an end at the same time. A null or
    unknown edge value, or an end edge right after no start edge, fails the query with a
    `WispError` naming the column (and the id)."""

    def c(name: str) -> Column:
        return F.col("`" + name.replace("`", "``") + "`")

    kind = c(edge)
    is_start, is_end = kind == F.lit("start"), kind == F.lit("end")
    bad_kind = ~F.coalesce(is_start | is_end, F.lit(False))
    by_event = SparkWindow.partitionBy(*[c(k) for k in key], c(id)).orderBy(
        c(time).asc_nulls_first(), F.when(is_start, 0).otherwise(1))
    following_end = F.lead(kind).over(by_event) == F.lit("end")
    after_start = F.coalesce(F.lag(kind).over(by_event) == F.lit("start"), F.lit(False))
    paired = df.select("*", F.when(F.coalesce(following_end, F.lit(False)),
                                   F.lead(c(time)).over(by_event))
                       .alias(EDGE_END_COLUMN), after_start.alias(AFTER_START))
    bad_edge = (f"WispError: `edge` column {edge!r} must hold 'start' or 'end', found a "
                "null or another value")
    orphan = F.concat(F.lit(f"WispError: `edge` column {edge!r} must close an interval "
                            f"opened by a start edge of the same `id` ({id!r}), found an end "
                            "edge without a start for id "),
                      F.coalesce(c(id).cast("string"), F.lit("null")))
    checked = paired.filter(
        F.when(bad_kind, F.raise_error(F.lit(bad_edge)))
        .when(is_end & ~c(AFTER_START), F.raise_error(orphan))
        .otherwise(is_start))
    return checked.drop(edge, AFTER_START)


def unpaired_edges(df: DataFrame, time_type: T.DataType) -> DataFrame:
    """A stream's edge rows as they are, plus `EDGE_END_COLUMN` (null, of the time's
    type): its operator pairs them as they pass the watermark (`runtime/windows/edges.py`)."""
    return df.withColumn(EDGE_END_COLUMN, F.lit(None).cast(time_type))
