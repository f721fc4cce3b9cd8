"""The public names of `wisp` are pinned: adding or removing one is a deliberate act."""

from __future__ import annotations

import types

import wisp


def test_public_names_are_pinned() -> None:
    # submodules appear as attributes once imported (by wisp itself or by other tests),
    # so they are not part of the pinned names
    public = sorted(name for name in dir(wisp) if not name.startswith("_")
                    and not isinstance(getattr(wisp, name), types.ModuleType))
    assert public == sorted(wisp.__all__)
    assert sorted(wisp.__all__) == sorted([
        "Aggregator", "Count", "CountByStartTime", "Delta", "Dynamic", "Events", "Hopping",
        "Punctuation",
        "Range", "Rows", "Session", "Since", "Sliding", "Snapshot", "Time", "Trailing",
        "Tumbling", "WispError", "WispInputError", "WispMemoryError", "WispUnsupportedError",
        "aggregate", "asof_join",
        "clock", "collect", "count", "count_distinct", "cron", "daily", "events",
        "ewm_mean", "explain", "first",
        "from_edges", "hourly", "last", "max", "max_by", "mean", "median", "min", "min_by",
        "monthly", "quantile", "register_sql", "report", "session",
        "snap_to_hops", "stddev", "stream_report", "sum", "time_weighted_mean", "udaf",
        "variance", "weekly", "wisp_error",
        "yearly", "approx_count_distinct", "approx_quantile", "bottom_k", "first_k",
        "histogram", "hll_sketch", "kll_sketch", "last_k", "theta_sketch", "top_k", "latest"])


def test_errors_are_value_errors_where_the_caller_passed_a_bad_value() -> None:
    assert issubclass(wisp.WispInputError, wisp.WispError)
    assert issubclass(wisp.WispInputError, ValueError)
    assert issubclass(wisp.WispUnsupportedError, wisp.WispError)
    assert issubclass(wisp.WispMemoryError, wisp.WispError)
    assert issubclass(wisp.WispMemoryError, MemoryError)
