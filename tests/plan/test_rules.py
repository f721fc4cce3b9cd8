"""Every planning rule, without Spark: the input is described by hand (`schema.source`)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from schema import column_type, source

import wisp.spec.aggregates as A
import wisp.spec.policies as P
import wisp.spec.windows as W
from wisp.errors import WispError, WispUnsupportedError
from wisp.plan.dynamic import Bound, ClockTicks, DynamicPlan
from wisp.plan.frames import (
    FramesPlan,
    NativeFramesPlan,
    RangeFrame,
    RowsFrame,
    RunningFrame,
    RunningPlan,
)
from wisp.plan.intervals import (
    BucketsPlan,
    CountWindows,
    HoppingWindows,
    IntervalsPlan,
    PanesPlan,
    SnapshotWindows,
)
from wisp.plan.nodes import OutputType, Plan, ResolvedAggregation
from wisp.plan.periods import AccumulatorsPlan, PeriodsPlan, TicksPlan
from wisp.plan.planner import plan
from wisp.plan.policies import BatchesPlan, PoliciesPlan
from wisp.plan.registry import rule
from wisp.plan.sessions import SessionsPlan
from wisp.plan.source import ExpressionInfo, ExprRef, Inputs, Settings, Source

POINTS = source("k string, ts timestamp, v double, n bigint, flag boolean", "ts", key="k")
INTERVALS = source("k string, ts timestamp, e timestamp, v double", "ts", end="e", key="k")
INTEGERS = source("k string, t bigint, v double", "t", key="k")
SECOND = 1_000_000


def planned(window: object | None, *aggregations: A.Aggregation, src: Source = POINTS,
            strategy: str | None = None, measured: bool = False, **inputs: Any) -> Plan:
    return plan(Inputs(src, settings=Settings(measured), **inputs), window,
                aggregations or (A.count(),), strategy)


def test_plans_are_plain_frozen_data_equal_for_equal_inputs() -> None:
    first = planned(W.Hopping("10m", "5m"), A.sum("v"))
    second = planned(W.Hopping("10m", "5m"), A.sum("v"))
    assert first == second
    assert dataclasses.is_dataclass(first)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.reason = "x"  # type: ignore[misc]


# ----------------------------------------------------------------- registry


class Unplanned(W.Window):
    pass


class Custom(W.Window):
    pass


def test_a_window_class_without_a_rule_is_refused_by_name() -> None:
    with pytest.raises(WispUnsupportedError) as caught:
        planned(Unplanned())
    assert str(caught.value) == ("`window` must be a window kind this version of wisp "
                                 "executes, found Unplanned")


def test_a_new_kind_is_planned_by_registering_its_rule_alone() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class CustomPlan(Plan):
        strategy = "custom"

        def how(self) -> str:
            return "custom"

    @rule(Custom)
    def plan_custom(inputs: Inputs, window: Custom,
                    resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
        return CustomPlan(source=inputs.source, window=repr(window), aggregations=resolved,
                          tie_break=(), reason="test")

    assert isinstance(planned(Custom()), CustomPlan)
    assert isinstance(planned(W.Rows(-2, 0)), FramesPlan)  # the other kinds are untouched


def test_tumbling_is_planned_by_the_policy_rule_only_when_sized_by_a_policy() -> None:
    assert isinstance(planned(W.Tumbling("1m"), A.sum("v")), BucketsPlan)
    assert isinstance(planned(W.Tumbling(P.Count(3)), A.sum("v")), BatchesPlan)
    assert isinstance(planned(W.Tumbling(P.Time("5s")), A.sum("v")), PoliciesPlan)


# --------------------------------------------------------------- aggregations


def test_output_types_follow_the_input_type() -> None:
    src = source("k string, ts timestamp, d decimal(10,2), i int, v double, s string", "ts")
    resolved = planned(None, A.sum("d"), A.sum("i"), A.sum("v"), A.mean("i"), A.min("s"),
                       A.collect("s"), A.count(), src=src).aggregations
    assert [r.output for r in resolved] == [
        OutputType("decimal", 20, 2), OutputType("long"), OutputType("double"),
        OutputType("double"), OutputType("input"), OutputType("array"), OutputType("long")]
    assert [r.value_class for r in resolved] == [
        "decimal", "integer", "float", "integer", "ordered", "ordered", "none"]


def test_aggregations_are_checked_against_the_columns() -> None:
    with pytest.raises(WispError, match=r"`col` must be a column of the DataFrame for sum\(\)"
                       r" \(columns: k, ts, v, n, flag\), found 'w'"):
        planned(None, A.sum("w"))
    with pytest.raises(WispError, match=r"`col` must be a numeric column for mean\(\), found "
                       "\"string column 'k'\""):
        planned(None, A.mean("k"))
    src = source("k string, ts timestamp, a array<int>", "ts")
    with pytest.raises(WispError, match="an orderable column for max"):
        planned(None, A.max("a"), src=src)
    with pytest.raises(WispError, match="`alias` must be output names distinct"):
        planned(None, A.sum("v").alias("time"))


# --------------------------------------------------------------------- frames


def test_cumulative_runs_natively_unless_a_udaf_needs_the_values() -> None:
    assert isinstance(planned(None, A.sum("v")), RunningPlan)
    udaf = A.udaf(lambda v: v.sum(), "v", returns="double")
    chosen = planned(None, udaf)
    assert isinstance(chosen, FramesPlan) and chosen.frame == RunningFrame()
    with pytest.raises(WispError, match="'arrow-frames' for a user-defined aggregate"):
        planned(None, udaf, strategy="native-running")


def test_narrow_rows_run_natively_only_where_the_session_measures_arrow_batches() -> None:
    assert isinstance(planned(W.Rows(-2, 0), A.sum("v"), measured=True), NativeFramesPlan)
    kernel = planned(W.Rows(-2, 0), A.sum("v"))
    assert isinstance(kernel, FramesPlan) and kernel.frame == RowsFrame(-2, 0, False)
    wide = planned(W.Rows(-40, 0), A.sum("v"), measured=True)
    assert isinstance(wide, FramesPlan) and "O(n*w)" in wide.reason
    outside = planned(W.Rows(-3, -1), A.sum("v"), measured=True)
    assert isinstance(outside, FramesPlan)  # the window does not hold its anchor
    integer_sum = planned(W.Rows(-2, 0), A.sum("n"), measured=True)
    assert isinstance(integer_sum, FramesPlan)  # no exact native sliding form


def test_range_bounds_are_ticks_of_the_time_column() -> None:
    chosen = planned(W.Range("-10s", "2s", closed="left"))
    assert isinstance(chosen, FramesPlan)
    assert chosen.frame == RangeFrame(-10 * SECOND, 2 * SECOND, "left")
    numeric = planned(W.Range(-5, 0), src=INTEGERS)
    assert isinstance(numeric, FramesPlan) and numeric.frame == RangeFrame(-5, 0, "both")
    with pytest.raises(WispError, match="`start` must be a number"):
        planned(W.Range("-5s", "0s"), src=INTEGERS)


def test_frame_strategies_are_checked() -> None:
    with pytest.raises(WispError, match="`strategy` must be 'arrow-frames' for Rows "
                       "windows or None, found 'panes'"):
        planned(W.Rows(-2, 0), strategy="panes")
    with pytest.raises(WispError, match="'arrow-frames' for Range windows"):
        planned(W.Range.past("1s"), strategy="native-running")


def test_frames_refuse_clipped_lifetimes() -> None:
    with pytest.raises(WispUnsupportedError) as caught:
        planned(W.Rows(-2, 0), A.time_weighted_mean("v"))
    assert str(caught.value) == (
        "`window` must be one of Hopping, Tumbling, Snapshot, CountByStartTime for "
        "time_weighted_mean (it weighs each value by its lifetime within the window), "
        "found Rows")


# ------------------------------------------------------------------ intervals


def test_tumbling_buckets_panes_or_kernel() -> None:
    buckets = planned(W.Tumbling("1m", align=None), A.sum("v"))
    assert isinstance(buckets, BucketsPlan) and (buckets.size, buckets.align) == (60 * SECOND, 0)
    panes = planned(W.Tumbling("1m"), A.sum("v"), src=INTERVALS)
    assert isinstance(panes, PanesPlan)
    assert panes.windows == HoppingWindows(60 * SECOND, 60 * SECOND, 0, "windows")
    kernel = planned(W.Tumbling("1m"), A.collect("v"))
    assert isinstance(kernel, IntervalsPlan)
    with pytest.raises(WispError, match=r"'arrow-intervals' or None here \(interval events"):
        planned(W.Tumbling("1m"), A.sum("v"), src=INTERVALS, strategy="native-buckets")


def test_hopping_panes_are_the_gcd_of_size_and_hop() -> None:
    panes = planned(W.Hopping("10m", "4m"), A.sum("v"))
    assert isinstance(panes, PanesPlan) and panes.width == 2 * 60 * SECOND
    forced = planned(W.Hopping("10m", "4m"), A.sum("v"), strategy="arrow-intervals")
    assert isinstance(forced, IntervalsPlan)
    with pytest.raises(WispError, match="`hop` must be at most `size`"):
        planned(W.Hopping("1m", "2m", output="changes"))


def test_date_time_runs_in_days() -> None:
    src = source("k string, d date, v double", "d", key="k")
    chosen = planned(W.Hopping("2d", "1d"), A.collect("v"), src=src)
    assert isinstance(chosen, IntervalsPlan)
    assert chosen.windows == HoppingWindows(2, 1, 0, "windows")
    with pytest.raises(WispError, match="`size` must be a whole number of days"):
        planned(W.Hopping("36h", "1d"), src=src)


def test_snapshot_and_count_windows_run_on_the_interval_kernel() -> None:
    snapshot = planned(W.Snapshot(), src=INTERVALS)
    assert isinstance(snapshot, IntervalsPlan) and snapshot.windows == SnapshotWindows()
    count = planned(W.CountByStartTime(3), src=INTERVALS)
    assert isinstance(count, IntervalsPlan) and count.windows == CountWindows(3)


def test_interval_windows_need_exact_ticks() -> None:
    src = source("k string, t double, v double", "t")
    with pytest.raises(WispUnsupportedError) as caught:
        planned(W.Snapshot(), src=src)
    assert str(caught.value) == ("`time` must be a timestamp, date, integer or decimal "
                                 "column for Snapshot windows (they need exact ticks), "
                                 "found float column 't'")


# ------------------------------------------------------------------- policies


def test_policies_are_the_spec_classes_resolved_to_ticks() -> None:
    chosen = planned(W.Sliding(P.Time("5s"), P.Delta("n", 2)), A.mean("v"))
    assert isinstance(chosen, PoliciesPlan)
    assert chosen.evict == P.Time(5 * SECOND, 0)
    assert chosen.trigger == P.Delta("n", 2)
    assert chosen.attributes == (("n", "integer"),)
    assert chosen.arrival == ("ts", "v", "n", "flag")
    tumbling = planned(W.Tumbling(P.Time("1m")), A.mean("v"))
    assert isinstance(tumbling, PoliciesPlan) and tumbling.trigger is None


def test_the_last_n_tuples_run_as_a_native_frame_where_that_pays() -> None:
    assert isinstance(planned(W.Sliding(P.Count(3)), A.sum("v"), measured=True),
                      NativeFramesPlan)
    assert isinstance(planned(W.Sliding(P.Count(3)), A.sum("v")), PoliciesPlan)


def test_policy_columns_are_checked() -> None:
    with pytest.raises(WispError, match="`col` must be a boolean column for Punctuation, "
                       "found \"double column 'v'\""):
        planned(W.Tumbling(P.Punctuation("v")))
    with pytest.raises(WispError, match="`attr` must be a numeric, timestamp or date column "
                       "for the eviction Delta policy, found \"string column 'k'\""):
        planned(W.Sliding(P.Delta("k", 1)))
    with pytest.raises(WispUnsupportedError, match=re.escape(
            "`window` must be Hopping, Tumbling by duration, Snapshot, CountByStartTime or "
            "Session for interval events (bound with `end`: column ")) as caught:
        planned(W.Sliding(P.Count(2)), src=INTERVALS)
    assert str(caught.value).endswith(", found Sliding, which reads point events; bind the "
                                      "events without `end` to window their start times")


# -------------------------------------------------------------------- periods


def test_since_a_column_refers_to_it_by_parameter() -> None:
    chosen = planned(W.Since("flag"))
    assert isinstance(chosen, AccumulatorsPlan)  # sum and count: accumulators hold them
    assert chosen.ticks is not None
    assert chosen.ticks.predicate == ExprRef("tick") and chosen.ticks.emit == "events"
    with pytest.raises(WispError, match="`tick` must be a boolean column or expression, "
                       "found \"double column 'v'\""):
        planned(W.Since("v"))


def test_since_an_expression_reads_the_type_the_engine_gave_it() -> None:
    boolean = {"tick": ExpressionInfo("Column<'(v > 1)'>", column_type("boolean"))}
    chosen = planned(W.Since(object()), expressions=boolean)
    assert isinstance(chosen, AccumulatorsPlan) and chosen.ticks is not None
    assert chosen.ticks.predicate == ExprRef("tick")
    unresolved = {"tick": ExpressionInfo("Column<'w'>", None)}
    with pytest.raises(WispError, match="`tick` must be a boolean Column expression over the "
                       "DataFrame's columns, found \"Column<'w'>\""):
        planned(W.Since(object()), expressions=unresolved)
    with pytest.raises(WispError, match=r"`tick` must be a boolean column .* or a calendar tick"):
        planned(W.Since(object()))


def test_fixed_utc_periods_run_as_one_group_by() -> None:
    daily = planned(W.Since(W.daily()), A.sum("v"))
    assert isinstance(daily, PeriodsPlan) and daily.length == 86_400 * SECOND
    assert isinstance(planned(W.Since(W.monthly()), A.sum("v")), TicksPlan)
    assert isinstance(planned(W.Since(W.daily(tz="Europe/Paris")), A.sum("v")), TicksPlan)
    trailing = planned(W.Trailing(3, W.daily(), partial=True), A.sum("v"))
    assert isinstance(trailing, TicksPlan)
    assert (trailing.ticks.n, trailing.ticks.partial, trailing.ticks.trailing) == (3, True, True)


# -------------------------------------------------------------------- dynamic


ANCHORS = source("k string, ts timestamp, lo timestamp, hi timestamp, n bigint", "ts", key="k")


def test_dynamic_over_a_clock() -> None:
    chosen = planned(W.Dynamic(W.clock("1m"), start="-5m", obsolete="-5m"))
    assert isinstance(chosen, DynamicPlan)
    assert chosen.clock == ClockTicks(60 * SECOND, None, None, None)
    assert chosen.start == Bound("offset", -300 * SECOND)
    assert not chosen.check_obsolete


def test_dynamic_over_an_anchor_table() -> None:
    chosen = planned(W.Dynamic(object(), start="lo", end="hi", obsolete="lo"),
                     tables={"anchors": ANCHORS})
    assert isinstance(chosen, DynamicPlan)
    assert chosen.anchors == ANCHORS and chosen.start == Bound("column", expression=ExprRef(
        "start"))
    assert chosen.check_obsolete
    assert chosen.anchor_tie_break == ("lo", "hi", "n")
    with pytest.raises(WispError, match=r"`start` must be a time of the same type as the "
                       r"source's `time` \(timestamp\), found 'bigint n'"):
        planned(W.Dynamic(object(), start="n"), tables={"anchors": ANCHORS})
    with pytest.raises(WispError, match="`anchors` must be an event table"):
        planned(W.Dynamic(object()))
    other_key = source("j string, ts timestamp", "ts", key="j")
    with pytest.raises(WispError, match="`anchors` must be an event table with the source's "
                       "key columns"):
        planned(W.Dynamic(object()), tables={"anchors": other_key})


# ------------------------------------------------------------------- sessions


def test_sessions_resolve_gap_and_cap_in_ticks() -> None:
    chosen = planned(W.Session("5m", max_duration="1h"))
    assert isinstance(chosen, SessionsPlan)
    assert (chosen.gap, chosen.max_duration) == (300 * SECOND, 3600 * SECOND)
    numeric = planned(W.Session(10), src=INTEGERS)
    assert isinstance(numeric, SessionsPlan) and numeric.gap == 10
    with pytest.raises(WispError, match="`strategy` must be 'arrow-sessions' for Session"):
        planned(W.Session("5m"), strategy="panes")


# ------------------------------------------------------------- timestamp_ntz

NTZ = source("k string, ts timestamp_ntz, e timestamp_ntz, v double", "ts", key="k")
NTZ_INTERVALS = source("k string, ts timestamp_ntz, e timestamp_ntz, v double", "ts",
                       end="e", key="k")


def test_timestamp_ntz_runs_natively_as_timestamp_does() -> None:
    # in every session time zone: its ticks are read and written without one
    assert isinstance(planned(W.Tumbling("10s"), A.sum("v"), src=NTZ), BucketsPlan)
    assert isinstance(planned(W.Hopping("10s", "5s"), A.sum("v"), src=NTZ), PanesPlan)
    assert isinstance(planned(W.Hopping("10s", "5s"), A.sum("v"), src=NTZ_INTERVALS),
                      PanesPlan)
    assert isinstance(planned(W.Since(W.daily()), A.sum("v"), src=NTZ), PeriodsPlan)
