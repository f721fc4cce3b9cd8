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

from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value
from ..spec.policies import Count, Delta, Policy, Punctuation, Time
from ..spec.windows import Sliding, Tumbling
from .aggregations import accumulated, grouped_blocker, refuse_interval_events, refuse_lifetimes
from .durations import DAY, resolve_duration, resolve_instant
from .frames import RowsFrame, native_frames_plan, native_rows
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import Inputs, Source, TimeColumn, kernel_shape, tie_break_columns, time_kind
from .streaming import Streamed, stream_rule

STRATEGY = "arrow-spl"
BATCHES = "native-batches"
POLICIES = (Count, Time, Delta, Punctuation)

HOW = (kernel_shape("key and arrival order") + " walks "
       "each key's tuples: the clock is the newest time seen; {policies}. Windows that "
       "stay contiguous in arrival order are aggregated as frames [lo, hi) (prefix "
       "differences and a disjoint sparse table, O(n log n)); windows that lose tuples "
       "from the middle (out-of-order time or delta eviction) by a segment tree over the "
       "firings, O((n + m) log m) for n tuples and m firings.")


def policy_words(policy: Policy) -> str:
    """A resolved policy in words."""
    if isinstance(policy, Count):
        return f"count({policy.n})"
    if isinstance(policy, Time):
        return f"time({policy.t} ticks, phase {policy.align})"
    if isinstance(policy, Delta):
        return f"delta({policy.attr}, {policy.d})"
    return f"punctuation({policy.col})"


@dataclass(frozen=True, kw_only=True)
class PoliciesPlan(Plan):
    """`arrow-spl`: the policy kernel over each key's tuples in arrival order.

    `mode` "sliding" (`evict` and `trigger`) or "tumbling" (`evict` is the window's size
    policy, `trigger` None). Policies are the spec's own classes, resolved: `Time.t` and
    `Time.align` in ticks of the time column, `Delta.d` in ticks of its attribute.
    `attributes`: each delta attribute with its time kind (how its values become ticks).
    `arrival`: the sort columns after the key."""

    mode: str
    evict: Policy
    trigger: Policy | None
    partial: bool
    arrival: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]

    strategy = STRATEGY

    def how(self) -> str:
        if self.trigger is not None:
            words = (f"sliding window, eviction {policy_words(self.evict)}, trigger "
                     f"{policy_words(self.trigger)}"
                     f"{', partial windows emitted' if self.partial else ''}")
        else:
            words = (f"tumbling window, {policy_words(self.evict)}"
                     f"{', the unfired tail flushed' if self.partial else ''}")
        if self.accumulated:
            return (HOW.split(" Windows that stay")[0].format(policies=words) + " Each "
                    "window's aggregates are running scans (accumulators: counts, sums, "
                    "extremes, first/last, moments, max_by/min_by, a user aggregator's "
                    "state) restarting at each window and read at its last tuple, so a "
                    "long key's open window is carried from one piece to the next as its "
                    "accumulators, its first tuple's time and attributes and its last "
                    "tuple's time, not its tuples.")
        return HOW.format(policies=words)

    @property
    def accumulated(self) -> bool:
        """Whether a delta- or punctuation-sized tumbling window keeps its open window
        as accumulators (every aggregation held by them;
        `runtime.windows.policies.SplKernel.accumulates` applies the same rule)."""
        return (self.trigger is None and isinstance(self.evict, (Delta, Punctuation))
                and accumulated(self.aggregations))


@dataclass(frozen=True, kw_only=True)
class BatchesPlan(Plan):
    """`native-batches`: `Tumbling(Count(n))` in time order as numbered batches."""

    n: int
    partial: bool

    strategy = BATCHES
    python = False

    def how(self) -> str:
        n = self.n
        return ("Spark numbers each key's tuples in arrival order (row_number over a window "
                "partitioned by key and ordered by time and the tie-break columns: one "
                f"shuffle and sort), then aggregates by (key, (number - 1) div {n}) with its "
                "own hash aggregation on the same partitioning (no second shuffle); "
                "window_start = the batch's first time, window_end = time = its last"
                f"{'' if self.partial else f'; batches of fewer than {n} tuples dropped'}.")


def arrival_columns(source: Source) -> tuple[str, ...]:
    """The sort columns after the key: `order` (if any), time, then every other atomic
    column in schema order, so that the arrival order never depends on partitioning."""
    leading = [source.order] if source.order is not None else []
    leading.append(source.time.name)
    skip = {*source.key, *leading}
    if source.end is not None:
        skip.add(source.end)
    rest = [c.name for c in source.columns if c.name not in skip and c.type.atomic]
    return tuple([*leading, *rest])


def resolve_align(align: object, time: TimeColumn) -> int | float:
    """A time trigger's phase in ticks (`resolve_instant`); None = the epoch/0."""
    return 0 if align is None else resolve_instant(align, time, "align")


def _attribute(source: Source, attr: str, role: str) -> TimeColumn:
    fields = source.types()
    if attr not in fields:
        raise bad_value("attr", f"a column of the DataFrame for the {role} Delta policy "
                        f"(columns: {', '.join(fields)})", attr)
    kind = time_kind(fields[attr])
    if kind is None:
        raise bad_value("attr", f"a numeric, timestamp or date column for the {role} "
                        "Delta policy", f"{fields[attr].text} column {attr!r}")
    return TimeColumn(attr, kind, fields[attr])


def resolve_policy(policy: object, source: Source, role: str) -> tuple[Policy, str | None]:
    """`policy` against the source's columns, with its durations in ticks, and the time
    kind of its attribute for a delta policy (else None); `role` ("eviction", "trigger"
    or "tumbling") names it in errors."""
    if isinstance(policy, Count):
        return policy, None
    if isinstance(policy, Time):
        ticks = resolve_duration(policy.t, source.time, "t")
        if source.time.kind == "date" and ticks % DAY:
            raise bad_value("t", "a whole number of days for date time", policy.t)
        return Time(ticks, resolve_align(policy.align, source.time), policy.max_ticks), None
    if isinstance(policy, Delta):
        column = _attribute(source, policy.attr, role)
        return Delta(policy.attr, resolve_duration(policy.d, column, "d")), column.kind
    if isinstance(policy, Punctuation):
        fields = source.types()
        if policy.col not in fields:
            raise bad_value("col", "a boolean column of the DataFrame for Punctuation "
                            f"(columns: {', '.join(fields)})", policy.col)
        if fields[policy.col].family != "boolean":
            raise bad_value("col", "a boolean column for Punctuation",
                            f"{fields[policy.col].text} column {policy.col!r}")
        return policy, None
    raise bad_value(role, "wisp.Count(n), wisp.Time(t) or wisp.Delta(attr, d)", policy)


def _check(source: Source, resolved: tuple[ResolvedAggregation, ...],
           strategy: str | None, kind: str) -> None:
    if strategy is not None and strategy != STRATEGY:
        raise bad_value("strategy", f"{STRATEGY!r} or None", strategy)
    refuse_interval_events(source, kind)
    refuse_lifetimes(resolved, kind)


def _policies_plan(source: Source, window: object, resolved: tuple[ResolvedAggregation, ...],
                   mode: str, evict: tuple[Policy, str | None],
                   trigger: tuple[Policy, str | None] | None, partial: bool,
                   reason: str) -> PoliciesPlan:
    arrival = arrival_columns(source)
    attributes = dict.fromkeys(
        (p.attr, kind) for p, kind in (evict, *([trigger] if trigger else []))
        if isinstance(p, Delta) and kind is not None)
    return PoliciesPlan(
        source=source, window=repr(window), aggregations=resolved,
        tie_break=tuple(c for c in arrival if c != source.time.name), reason=reason,
        mode=mode, evict=evict[0], trigger=None if trigger is None else trigger[0],
        partial=partial, arrival=arrival, attributes=tuple(attributes))


@rule(Sliding)
def plan_sliding(inputs: Inputs, window: Sliding, resolved: tuple[ResolvedAggregation, ...],
                 strategy: str | None) -> Plan:
    source = inputs.source
    _check(source, resolved, strategy, "Sliding")
    evict = resolve_policy(window.evict, source, "eviction")
    trigger = resolve_policy(window.trigger, source, "trigger")
    if strategy is None and source.order is None and isinstance(evict[0], Count) and (
            isinstance(trigger[0], Count) and trigger[0].n == 1):
        # the last n tuples at every arrival, in time order: the Rows window (-(n-1), 0)
        frame = RowsFrame(-(evict[0].n - 1), 0, window.partial)
        if native_rows(inputs, frame, resolved):
            return native_frames_plan(source, window, frame, resolved)
    return _policies_plan(source, window, resolved, "sliding", evict, trigger,
                          window.partial,
                          "eviction and trigger policies are sequential per key: a kernel "
                          "replays them exactly in one pass over each key's sorted tuples")


def _policy_sized(window: Tumbling) -> bool:
    return isinstance(window.size, POLICIES)


@rule(Tumbling, when=_policy_sized)
def plan_policy_tumbling(inputs: Inputs, window: Tumbling,
                         resolved: tuple[ResolvedAggregation, ...],
                         strategy: str | None) -> Plan:
    source = inputs.source
    _check(source, resolved, strategy, "Tumbling by policy")
    if window.align is not None:
        raise bad_value("align", "None for a policy-sized Tumbling window (give the phase "
                        "as Time(t, align=...))", window.align)
    policy = resolve_policy(window.size, source, "size")
    if strategy is None and source.order is None and isinstance(policy[0], Count) and (
            grouped_blocker(resolved) is None):
        return BatchesPlan(source=source, window=repr(window), aggregations=resolved,
                           tie_break=tie_break_columns(source), n=policy[0].n,
                           partial=window.partial,
                           reason="count-sized tumbling windows in time order are batches "
                           "of consecutive tuples and every aggregation has an exact "
                           "order-free Spark form: one numbering and one groupBy compute "
                           "them, whatever n")
    return _policies_plan(source, window, resolved, "tumbling", policy, None, window.partial,
                          "a policy-sized tumbling window is sequential per key: a kernel "
                          "replays it exactly in one pass over each key's sorted tuples")


@stream_rule(Sliding)
def stream_sliding(inputs: Inputs, window: Sliding,
                   resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    _refuse_order_on_stream(inputs.source, "Sliding")
    inner = plan_sliding(inputs, window, resolved, STRATEGY)
    return Streamed(inner, "the window's contents (count eviction: the last n tuples; time: "
                    "the tuples within t of the newest; delta: the tuples no later one "
                    "exceeded by more than d, not bounded for falling values)",
                    _firings(isinstance(window.trigger, Time)))


@stream_rule(Tumbling, when=_policy_sized, label="Tumbling by policy")
def stream_policy_tumbling(inputs: Inputs, window: Tumbling,
                           resolved: tuple[ResolvedAggregation, ...]) -> Streamed:
    _refuse_order_on_stream(inputs.source, "Tumbling")
    inner = plan_policy_tumbling(inputs, window, resolved, STRATEGY)
    assert isinstance(inner, PoliciesPlan)
    state = ("the open window's accumulators, its first tuple's time and attributes and "
             "its last tuple's time (one row, however long the window)" if inner.accumulated
             else "the tuples since the last firing (a delta- or punctuation-sized window: "
             "not bounded while it does not fire)")
    return Streamed(inner, state, _firings(isinstance(window.size, Time)))


def _refuse_order_on_stream(source: Source, name: str) -> None:
    """On a stream tuples enter in time order (then the tie-break columns) once the
    watermark passes them, so `order` (an arrival order other than time) is refused: a
    stream could not know that no tuple earlier in it is still to come."""
    if source.order is not None:
        raise WispUnsupportedError(
            f"`order` must be None for {name} on a stream (tuples enter in time order once "
            "the watermark passes them; an arrival order other than time has no watermark "
            f"to wait for), found {source.order!r}")


def _firings(timed: bool) -> str:
    """When a policy window's firings are emitted on a stream, in words."""
    emits = ("every time firing once the watermark passes it, also with no new tuple "
             "and after the key's newest tuple (one per period; a jump over many "
             "periods emits them all at once)" if timed else
             "a firing once the tuple that fires it has entered (the watermark passed "
             "its time)")
    return emits + "; a stream has no end: no flushed tail (partial)"
