"""Feature sets planned without Spark: each label's window becomes its frame (a `Rows`
window over the indices that exist), the output names follow `<aggregation>_<label>`,
and a stream is refused by name."""

from __future__ import annotations

import dataclasses

import pytest
from schema import source

import wisp.spec.aggregates as A
import wisp.spec.windows as W
from wisp.errors import WispInputError, WispUnsupportedError
from wisp.plan.features import FeaturesPlan
from wisp.plan.frames import RangeFrame, RowsFrame, RunningFrame
from wisp.plan.planner import plan
from wisp.plan.source import Inputs
from wisp.plan.streaming import StreamPlan
from wisp.spec.features import FeatureSet, column_names, feature_set

POINTS = "k string, t bigint, v double"


def test_each_window_becomes_its_frame() -> None:
    spec = feature_set({"r": W.Range(-10, 2, closed="left"), "w": W.Rows(-3, 0),
                        "all": None})
    found = plan(Inputs(source(POINTS, "t", key="k")), spec, (A.sum("v"), A.count()))
    assert isinstance(found, FeaturesPlan)
    assert found.frames == (("r", RangeFrame(-10, 2, "left")), ("w", RowsFrame(-3, 0, True)),
                            ("all", RunningFrame()))
    assert found.suffixes == ("_r", "_w", "_all")


def test_columns_are_aggregation_major() -> None:
    assert column_names(("sum_v", "count"), ("1h", "all")) == [
        "sum_v_1h", "sum_v_all", "count_1h", "count_all"]


def test_labels_keep_their_order() -> None:
    assert feature_set({"b": None, "a": W.Rows(-1, 0)}).labels == ("b", "a")


def test_a_stream_runs_the_feature_kernel_with_label_rows_from_a_stream() -> None:
    streaming = dataclasses.replace(source(POINTS, "t", key="k"), lateness=10)
    found = plan(Inputs(streaming), feature_set({"r": W.Range(-5, 0), "x": None}),
                 (A.sum("v"),))
    assert isinstance(found, StreamPlan) and isinstance(found.inner, FeaturesPlan)
    labels = source(POINTS, "t", key="k")
    with pytest.raises(WispUnsupportedError, match=r"^`at` must be a streaming event "
                       r"table \(wisp.events over a streaming DataFrame, with its lateness\) "
                       r"when the events are a stream"):
        plan(Inputs(streaming, tables={"at": labels}),
             FeatureSet((("x", None),), at=object()), (A.sum("v"),))
    with pytest.raises(WispUnsupportedError, match=r"^`at` must be a batch table when the "
                       r"events are a batch table, found a streaming event table"):
        plan(Inputs(labels, tables={"at": dataclasses.replace(labels, lateness=10)}),
             FeatureSet((("x", None),), at=object()), (A.sum("v"),))
    found = plan(Inputs(streaming, tables={"at": dataclasses.replace(labels, lateness=4)}),
                 FeatureSet((("x", None),), at=object()), (A.sum("v"),))
    assert isinstance(found, StreamPlan) and isinstance(found.inner, FeaturesPlan)
    assert found.inner.labels_table is not None
    assert "a label row's features once the watermark" in found.emits
    with pytest.raises(WispUnsupportedError, match=r"^`aggregations` must each have a "
                       r"partial state for a feature set with a cumulative window \(None\) "
                       r"over a stream, found collect_v"):
        plan(Inputs(streaming), feature_set({"x": None}), (A.collect("v"),))


def test_a_spec_checks_its_windows_without_spark() -> None:
    with pytest.raises(WispInputError, match="found 'an empty mapping'"):
        FeatureSet(())
    with pytest.raises(WispUnsupportedError, match="found Session for 's'"):
        FeatureSet((("s", W.Session(5)),))


def test_label_rows_are_planned_with_their_other_columns() -> None:
    labels = source("k string, t bigint, outcome boolean, note string", "t", key="k")
    inputs = Inputs(source(POINTS, "t", key="k"), tables={"at": labels})
    found = plan(inputs, FeatureSet((("1d", W.Range(-86_400, 0)), ("all", None)),
                                    at=object(), include_current=True), (A.sum("v"),))
    assert isinstance(found, FeaturesPlan)
    assert found.labels_table == labels and found.include_current
    assert found.carried == ("outcome", "note")
    assert "each label row's 2 windows (1d, all) over the key's events at or before its " \
        "time" in found.how()


def test_include_current_needs_label_rows() -> None:
    with pytest.raises(WispInputError, match=r"^`include_current` must be False without "
                       r"`at`"):
        feature_set({"x": None}, include_current=True)
