"""Rules of the sliding and policy-tumbling family (eviction and trigger policies).

Both resolve their policies against the schema (durations in ticks of the time column,
delta attributes and their thresholds, punctuation flags) and run the `arrow-spl`
strategy: per key, the tuples in arrival order through the policy kernel of
`wisp.kernels.policies`. Two shapes run on Spark alone: the last n tuples at every arrival
(n <= 32) as `native-frames`, and count-sized tumbling windows in time order with
order-free aggregations as `native-batches`. Arrival order: `order`, then time, then
every other atomic column (nulls first) when `order` is given; else time, then the
other columns.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import types as T

from ..errors import WispUnsupportedError, bad_value
from ..events import Events, TimeColumn, time_kind
from ..spec.policies import Count, Delta, Punctuation, Time
from ..spec.time import instant_to_micros
from ..spec.windows import Sliding, Tumbling
from .aggregations import grouped_blocker, refuse_lifetimes
from .durations import DAY, resolve_duration
from .frames import native_frames_plan, native_rows
from .nodes import Plan, ResolvedAggregation, RowsFrame
from .planner import kernel_shape, tie_break_columns

STRATEGY = "arrow-spl"
BATCHES = "native-batches"


@dataclass(frozen=True)
class ResolvedPolicy:
    """A policy in ticks: `kind` count/time/delta/punctuation; `n`; `t` and `align`
    (ticks of the time column); `attr`, its kind (a time kind, for `to_ticks`) and `d`
    (ticks of the attribute) for delta; `col` for punctuation."""

    kind: str
    n: int = 0
    t: int | float = 0
    align: int | float = 0
    attr: str | None = None
    attr_kind: str | None = None
    d: int | float = 0
    col: str | None = None


@dataclass(frozen=True)
class SplDetails:
    """What the `spl:policy_windows` builder needs."""

    mode: str  # "sliding" or "tumbling"
    evict: ResolvedPolicy
    trigger: ResolvedPolicy | None
    partial: bool
    arrival: tuple[str, ...]


def arrival_columns(events: Events) -> tuple[str, ...]:
    """The sort columns after the key: `order` (if any), time, then every other atomic
    column in schema order, so that the arrival order never depends on partitioning."""
    leading = [events.order] if events.order is not None else []
    leading.append(events.time.name)
    skip = {*events.key, *leading}
    if events.end is not None:
        skip.add(events.end)
    rest = [f.name for f in events.df.schema.fields
            if f.name not in skip and isinstance(f.dataType, T.AtomicType)]
    return tuple([*leading, *rest])


def resolve_align(align: object, time: TimeColumn) -> int | float:
    """A time trigger's phase in ticks: an instant (datetime or date) for timestamp and
    date time (midnight for date time), a number for numeric time; None = the epoch/0."""
    if align is None:
        return 0
    column = f"{time.kind} time column {time.name!r}"
    if time.uses_time_units:
        if not isinstance(align, (dt.datetime, dt.date)):
            raise bad_value("align", f"a datetime or a date for {column}", align)
        micros = instant_to_micros(align, "align")
        if time.kind == "date" and micros % DAY:
            raise bad_value("align", f"a date or a midnight for {column}", align)
        return micros
    if isinstance(align, (dt.datetime, dt.date, bool)) or \
            not isinstance(align, (int, float, Decimal)):
        raise bad_value("align", f"a number for {column}", align)
    if time.kind == "integer":
        if align != int(align):
            raise bad_value("align", f"a whole number for {column}", align)
        return int(align)
    if time.kind == "decimal":
        scaled = Decimal(str(align)) * (Decimal(10) ** time.scale)
        if scaled != scaled.to_integral_value():
            raise bad_value("align", f"a number with at most {time.scale} decimal places "
                            f"for {column}", align)
        return int(scaled)
    return float(align)


def _attribute(events: Events, attr: str, role: str) -> TimeColumn:
    fields = {f.name: f.dataType for f in events.df.schema.fields}
    if attr not in fields:
        raise bad_value("attr", f"a column of the DataFrame for the {role} Delta policy "
                        f"(columns: {', '.join(fields)})", attr)
    kind = time_kind(fields[attr])
    if kind is None:
        raise bad_value("attr", f"a numeric, timestamp or date column for the {role} "
                        "Delta policy", f"{fields[attr].simpleString()} column {attr!r}")
    return TimeColumn(attr, kind, fields[attr])


def resolve_policy(policy: Any, events: Events, role: str) -> ResolvedPolicy:
    """`policy` against the schema; `role` ("eviction", "trigger" or "tumbling")
    names it in errors."""
    if isinstance(policy, Count):
        return ResolvedPolicy("count", n=policy.n)
    if isinstance(policy, Time):
        ticks = resolve_duration(policy.t, events.time, "t")
        if events.time.kind == "date" and ticks % DAY:
            raise bad_value("t", "a whole number of days for date time", policy.t)
        return ResolvedPolicy("time", t=ticks, align=resolve_align(policy.align, events.time))
    if isinstance(policy, Delta):
        column = _attribute(events, policy.attr, role)
        d = resolve_duration(policy.d, column, "d")
        return ResolvedPolicy("delta", attr=policy.attr, attr_kind=column.kind, d=d)
    if isinstance(policy, Punctuation):
        fields = {f.name: f.dataType for f in events.df.schema.fields}
        if policy.col not in fields:
            raise bad_value("col", "a boolean column of the DataFrame for Punctuation "
                            f"(columns: {', '.join(fields)})", policy.col)
        if not isinstance(fields[policy.col], T.BooleanType):
            raise bad_value("col", "a boolean column for Punctuation",
                            f"{fields[policy.col].simpleString()} column {policy.col!r}")
        return ResolvedPolicy("punctuation", col=policy.col)
    raise bad_value(role, "wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)", policy)


def _check(events: Events, resolved: tuple[ResolvedAggregation, ...],
           strategy: str | None, kind: str) -> None:
    if strategy is not None and strategy != STRATEGY:
        raise bad_value("strategy", f"{STRATEGY!r} or None", strategy)
    if events.end is not None:
        raise WispUnsupportedError(f"{kind} windows take point events (tuples): bind the "
                                   "events without `end`")
    refuse_lifetimes(resolved)


HOW = (kernel_shape("key and arrival order") + " walks "
       "each key's tuples: the clock is the newest time seen; {policies}. Windows that "
       "stay contiguous in arrival order are aggregated as frames [lo, hi) (prefix "
       "differences and a disjoint sparse table, O(n log n)); windows that lose tuples "
       "from the middle (out-of-order time or delta eviction) by a segment tree over the "
       "firings, O((n + m) log m) for n tuples and m firings.")


def _words(p: ResolvedPolicy) -> str:
    if p.kind == "count":
        return f"count({p.n})"
    if p.kind == "time":
        return f"time({p.t} ticks, phase {p.align})"
    if p.kind == "delta":
        return f"delta({p.attr}, {p.d})"
    return f"punctuation({p.col})"


def _ties(events: Events, details: SplDetails) -> tuple[str, ...]:
    """The arrival columns other than time (what `explain` reports as tie-breaks)."""
    return tuple(c for c in details.arrival if c != events.time.name)


def plan_sliding(events: Events, window: Sliding, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    _check(events, resolved, strategy, "Sliding")
    evict = resolve_policy(window.evict, events, "eviction")
    trigger = resolve_policy(window.trigger, events, "trigger")
    if strategy is None and events.order is None and evict.kind == "count" and (
            trigger.kind == "count" and trigger.n == 1):
        # the last n tuples at every arrival, in time order: the Rows window (-(n-1), 0)
        frame = RowsFrame(-(evict.n - 1), 0, window.partial)
        if native_rows(events, frame, resolved):
            return native_frames_plan(events, window, frame, resolved)
    details = SplDetails("sliding", evict, trigger, window.partial, arrival_columns(events))
    words = (f"sliding window, eviction {_words(evict)}, trigger {_words(trigger)}"
             f"{', partial windows emitted' if window.partial else ''}")
    return Plan(events, window, resolved, STRATEGY,
                "eviction and trigger policies are sequential per key: a kernel replays "
                "them exactly in one pass over each key's sorted tuples",
                HOW.format(policies=words), "policies:policy_windows", _ties(events, details),
                details)


def plan_policy_tumbling(events: Events, window: Tumbling,
                         resolved: tuple[ResolvedAggregation, ...],
                         strategy: str | None) -> Plan:
    _check(events, resolved, strategy, "Tumbling")
    if window.align is not None:
        raise bad_value("align", "None for a policy-sized Tumbling window (give the phase "
                        "as Time(t, align=...))", window.align)
    policy = resolve_policy(window.size, events, "size")
    if strategy is None and events.order is None and policy.kind == "count" and (
            grouped_blocker(resolved) is None):
        return _batches_plan(events, window, policy.n, resolved)
    details = SplDetails("tumbling", policy, None, window.partial, arrival_columns(events))
    words = (f"tumbling window, {_words(policy)}"
             f"{', the unfired tail flushed' if window.partial else ''}")
    return Plan(events, window, resolved, STRATEGY,
                "a policy-sized tumbling window is sequential per key: a kernel replays "
                "it exactly in one pass over each key's sorted tuples",
                HOW.format(policies=words), "policies:policy_windows", _ties(events, details),
                details)


def _batches_plan(events: Events, window: Tumbling, n: int,
                  resolved: tuple[ResolvedAggregation, ...]) -> Plan:
    """`Tumbling(Count(n))` in time order as numbered batches: `native:batches`."""
    how = ("Spark numbers each key's tuples in arrival order (row_number over a window "
           "partitioned by key and ordered by time and the tie-break columns: one shuffle "
           f"and sort), then aggregates by (key, (number - 1) div {n}) with its own hash "
           "aggregation on the same partitioning (no second shuffle); window_start = the "
           "batch's first time, window_end = time = its last"
           f"{'' if window.partial else f'; batches of fewer than {n} tuples dropped'}.")
    return Plan(events, window, resolved, BATCHES,
                "count-sized tumbling windows in time order are batches of consecutive "
                "tuples and every aggregation has an exact order-free Spark form: one "
                "numbering and one groupBy compute them, whatever n", how,
                "native:batches", tie_break_columns(events), n)
