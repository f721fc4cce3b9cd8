"""The latest revision of each window of a stream's result with revisions
(`on_late="update"`, `emit="changes"`): one hash aggregation by the window's identity;
with a `replaces` column (sessions), less the windows a row of a higher revision
replaces."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import bad_value
from ..runtime.streaming.pane_buckets import FINAL, REVISION
from ..runtime.streaming.revised import REPLACES
from .columns import col

LATEST = "__wisp_latest"


def latest_rows(df: DataFrame) -> DataFrame:
    """Each window's row of the highest `revision`: a window is its key columns (those
    before `window_start`), `window_start` and `window_end`; the columns keep their
    order. With `replaces` (sessions), a window that a row of a higher revision lists
    there is left out: a late row merged it into another. A batch DataFrame (a table
    the stream wrote, or a micro-batch inside `foreachBatch`)."""
    names = df.columns
    if REVISION not in names or FINAL not in names or "window_start" not in names:
        raise bad_value("df", "a result with `revision` and `final` columns (a stream's "
                        "with on_late='update' or emit='changes')",
                        f"columns {', '.join(names)}")
    if df.isStreaming:
        raise bad_value("df", "a batch DataFrame (a table the stream wrote, or the "
                        "micro-batch of foreachBatch)", "a streaming DataFrame")
    identity = [*names[:names.index("window_start")], "window_start", "window_end"]
    rest = [n for n in names if n not in identity]
    picked = df.groupBy(*[col(n) for n in identity]).agg(
        F.max_by(F.struct(*[col(n) for n in rest]), col(REVISION)).alias(LATEST))
    rows = picked.select(*[col(n) if n in identity else col(LATEST).getField(n).alias(n)
                           for n in names])
    if REPLACES not in names:
        return rows
    return without_replaced(rows, df, identity)


def without_replaced(rows: DataFrame, df: DataFrame, identity: list[str]) -> DataFrame:
    """`rows` (one per window) less each window that a row of `df` with a higher
    revision lists in `replaces` (keys and bounds compared null-safe)."""
    keys = identity[:-2]
    named = [f"{LATEST}_{i}" for i in range(len(identity))]
    by = f"{LATEST}_by"
    listed = df.select(*[col(k).alias(named[i]) for i, k in enumerate(keys)],
                       F.explode(col(REPLACES)).alias(LATEST), col(REVISION).alias(by))
    listed = listed.select(*[col(n) for n in named[:len(keys)]],
                           col(LATEST).getField("window_start").alias(named[-2]),
                           col(LATEST).getField("window_end").alias(named[-1]), col(by))
    highest = listed.groupBy(*[col(n) for n in named]).agg(F.max(col(by)).alias(by))
    same = [rows[n].eqNullSafe(highest[m]) for n, m in zip(identity, named, strict=True)]
    condition = same[0]
    for more in same[1:]:
        condition = condition & more
    joined = rows.join(highest, condition, "left")
    kept = joined.where(col(by).isNull() | (col(by) <= col(REVISION)))
    return kept.select(*[rows[n] for n in rows.columns])
