"""The latest revision of each window of a stream's result with revisions
(`on_late="update"`, `emit="changes"`): one hash aggregation by the window's identity."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import bad_value
from ..runtime.streaming.pane_buckets import FINAL, REVISION
from .columns import col

LATEST = "__wisp_latest"


def latest_rows(df: DataFrame) -> DataFrame:
    """Each window's row of the highest `revision`: a window is its key columns (those
    before `window_start`), `window_start` and `window_end`; the columns keep their
    order. A batch DataFrame (a table the stream wrote, or a micro-batch inside
    `foreachBatch`)."""
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
    return picked.select(*[col(n) if n in identity else col(LATEST).getField(n).alias(n)
                           for n in names])
