"""wisp: temporal windowing and windowed aggregation over event data on Apache Spark.

    import wisp as ws
    ev = ws.events(df, time="ts", key="sensor")
    out = ev.window(ws.Range.past("10s")).agg(ws.mean("v"), ws.max("v").alias("peak"))
"""

from .errors import WispError, WispInputError, WispUnsupportedError
from .events import Events, events, from_edges
from .session import session
from .snap import snap_to_hops
from .spec.aggregates import (
    collect,
    count,
    first,
    last,
    max,
    mean,
    min,
    stddev,
    sum,
    time_weighted_mean,
    udaf,
    variance,
)
from .spec.policies import Count, Delta, Punctuation, Time
from .spec.windows import (
    CountByStartTime,
    Dynamic,
    Hopping,
    Range,
    Rows,
    Session,
    Since,
    Sliding,
    Snapshot,
    Trailing,
    Tumbling,
    clock,
    cron,
    daily,
    hourly,
    monthly,
    weekly,
    yearly,
)
from .windowed import explain, report

__all__ = [
    "Count",
    "CountByStartTime",
    "Delta",
    "Dynamic",
    "Events",
    "Hopping",
    "Punctuation",
    "Range",
    "Rows",
    "Session",
    "Since",
    "Sliding",
    "Snapshot",
    "Time",
    "Trailing",
    "Tumbling",
    "WispError",
    "WispInputError",
    "WispUnsupportedError",
    "clock",
    "collect",
    "count",
    "cron",
    "daily",
    "events",
    "explain",
    "first",
    "from_edges",
    "hourly",
    "last",
    "max",
    "mean",
    "min",
    "monthly",
    "report",
    "session",
    "snap_to_hops",
    "stddev",
    "sum",
    "time_weighted_mean",
    "udaf",
    "variance",
    "weekly",
    "yearly",
]
