"""The rule of feature sets (`Events.features`): several frames over the same sorted
events, every frame's aggregations in one walk of each key's run."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import WispUnsupportedError, bad_value
from ..spec.features import FeatureSet, column_names
from ..spec.windows import Range, Rows
from .aggregations import refuse_interval_events, refuse_lifetimes
from .durations import resolve_bound
from .frames import Frame, RangeFrame, RowsFrame, RunningFrame
from .nodes import Plan, ResolvedAggregation
from .registry import rule
from .source import Inputs, kernel_shape, tie_break_columns

STRATEGY = "arrow-features"


@dataclass(frozen=True, kw_only=True)
class FeaturesPlan(Plan):
    """`arrow-features`: the frames of every window of the set, over each key's sorted
    events, in one kernel walk."""

    frames: tuple[tuple[str, Frame], ...]

    strategy = STRATEGY

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.frames)

    @property
    def suffixes(self) -> tuple[str, ...]:
        """`_<label>` of each window: its columns are `<aggregation's name>_<label>`."""
        return tuple(f"_{label}" for label in self.labels)

    def how(self) -> str:
        folds = ("; the cumulative window carried as one partial state where every "
                 "aggregation has one" if any(isinstance(f, RunningFrame)
                                              for _, f in self.frames) else "")
        return (kernel_shape("key, time and tie-break") +
                f" walks each key's events once for the {len(self.frames)} windows of the "
                f"set ({', '.join(self.labels)}): one shuffle and one sort of the events "
                "whatever the number of windows; each window's bounds found in the sorted "
                "times or by index arithmetic, and its aggregations by the frame kernels "
                "(prefix differences, blocked scans), each column converted once for all "
                "the windows; a long key streamed in chunks that keep the events the "
                f"widest bounded window still needs{folds}.")


def refuse_on_stream(window: object) -> None:
    """Feature sets run on batch tables only, for now."""
    if isinstance(window, FeatureSet):
        raise WispUnsupportedError(
            "`events` must be a batch table for a feature set (feature sets do not run "
            "on a stream yet), found a streaming DataFrame; run each window as its own "
            "stream query")


@rule(FeatureSet)
def plan_features(inputs: Inputs, window: FeatureSet,
                  resolved: tuple[ResolvedAggregation, ...], strategy: str | None) -> Plan:
    source = inputs.source
    refuse_interval_events(source, "a feature set")
    refuse_lifetimes(resolved, "a feature set")
    if strategy is not None and strategy != STRATEGY:
        raise bad_value("strategy", f"{STRATEGY!r} for a feature set or None", strategy)
    names = column_names(tuple(r.name for r in resolved), window.labels)
    taken = {*source.key, "time"}
    for name in names:
        if name in taken:
            raise bad_value("windows", "labels whose feature columns are unique and "
                            "differ from the key columns and `time`", name)
        taken.add(name)
    frames: list[tuple[str, Frame]] = []
    for label, spec in window.windows:
        frame: Frame
        if isinstance(spec, Range):
            frame = RangeFrame(resolve_bound(spec.start, source.time, "start"),
                               resolve_bound(spec.end, source.time, "end"), spec.closed)
        elif isinstance(spec, Rows):
            frame = RowsFrame(spec.first_index, spec.last_index, True)
        else:
            frame = RunningFrame()
        frames.append((label, frame))
    return FeaturesPlan(source=source, window=repr(window), aggregations=resolved,
                        tie_break=tie_break_columns(source), frames=tuple(frames),
                        reason="a feature set's windows share one shuffle and sort of the "
                        "events, and one kernel walk computes them all")
