"""wisp: temporal windowing and windowed aggregation over event data on Apache Spark.

    import wisp as ws
    ev = ws.events(df, time="ts", key="sensor")
    out = ev.window(ws.Range.past("10s")).agg(ws.mean("v"), ws.max("v").alias("peak"))
"""

import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from .errors import (
    WispError,
    WispInputError,
    WispMemoryError,
    WispUnsupportedError,
    wisp_error,
)
from .spec.aggregates import (
    Aggregator,
    aggregate,
    approx_count_distinct,
    approx_quantile,
    bottom_k,
    collect,
    count,
    count_distinct,
    ewm_mean,
    first,
    first_k,
    histogram,
    hll_sketch,
    kll_sketch,
    last,
    last_k,
    max,
    max_by,
    mean,
    median,
    min,
    min_by,
    quantile,
    stddev,
    sum,
    theta_sketch,
    time_weighted_mean,
    top_k,
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

if _TYPE_CHECKING:
    from .events import Events, events, from_edges
    from .joins import asof_join
    from .session import session
    from .snap import snap_to_hops
    from .sql import register_sql
    from .windowed import explain, latest, report, stream_report

__all__ = [
    "Aggregator",
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
    "WispMemoryError",
    "WispUnsupportedError",
    "aggregate",
    "approx_count_distinct",
    "approx_quantile",
    "asof_join",
    "bottom_k",
    "clock",
    "collect",
    "count",
    "count_distinct",
    "cron",
    "daily",
    "events",
    "ewm_mean",
    "explain",
    "first",
    "first_k",
    "from_edges",
    "histogram",
    "hll_sketch",
    "hourly",
    "kll_sketch",
    "last",
    "last_k",
    "latest",
    "max",
    "max_by",
    "mean",
    "median",
    "min",
    "min_by",
    "monthly",
    "quantile",
    "register_sql",
    "report",
    "session",
    "snap_to_hops",
    "stddev",
    "stream_report",
    "sum",
    "theta_sketch",
    "time_weighted_mean",
    "top_k",
    "udaf",
    "variance",
    "weekly",
    "wisp_error",
    "yearly",
]

# The names that need Spark load their module on first use (PEP 562), so that importing
# a pure-Python part of wisp (`wisp.spec`, `wisp.plan`, `wisp.kernels`) does not import
# pyspark through this package's `__init__`.
_LAZY = {
    "Events": "events",
    "events": "events",
    "from_edges": "events",
    "asof_join": "joins",
    "session": "session",
    "snap_to_hops": "snap",
    "register_sql": "sql",
    "explain": "windowed",
    "latest": "windowed",
    "report": "windowed",
    "stream_report": "windowed",
}


def __getattr__(name: str) -> _Any:
    value = _load(name)
    globals()[name] = value
    return value


def _load(name: str) -> _Any:
    """The public name `name` from the module that defines it (see `_LAZY`)."""
    module = _LAZY.get(name)
    if module == "events":
        from .events import Events, events, from_edges

        return {"Events": Events, "events": events, "from_edges": from_edges}[name]
    if module == "joins":
        from .joins import asof_join

        return asof_join
    if module == "session":
        from .session import session

        return session
    if module == "snap":
        from .snap import snap_to_hops

        return snap_to_hops
    if module == "sql":
        from .sql import register_sql

        return register_sql
    if module == "windowed":
        from .windowed import explain, latest, report, stream_report

        return {"explain": explain, "latest": latest, "report": report,
                "stream_report": stream_report}[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(_types.ModuleType):
    """This package's module type. Importing the submodule `wisp.events` or
    `wisp.session` binds it as an attribute of the package, where it would hide the
    public function of the same name (`wisp.events(...)`, `wisp.session(...)`): the
    package keeps the function instead (as the eager imports of old did)."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if isinstance(value, _types.ModuleType) and _LAZY.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
