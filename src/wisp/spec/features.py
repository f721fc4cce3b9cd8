"""A feature set: several windows over the same events, the same aggregations in each,
evaluated at every event (`Events.features`). Validated here, without Spark."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import WispUnsupportedError, bad_value
from .windows import (
    CalendarTick,
    EventTable,
    Range,
    Rows,
    Since,
    Trailing,
    Window,
    check_flag,
)

LABEL = re.compile(r"[A-Za-z0-9_]+")
FEATURE_WINDOWS = "Range, Rows, Since, Trailing or None (the cumulative window)"
TICKED = (Since, Trailing)


@dataclass(frozen=True)
class FeatureSet(Window):
    """Windows by label, each of them evaluated at every event of its key: `Range(start,
    end)` (times `[t + start, t + end]` around the event's time `t`, sides per its
    `closed`), `Rows(start, end)` (the events at those relative indices, 0 the event
    itself; near the key's first and last events, the indices that exist, as with
    `partial=True`: a feature set has one row per event), `Since(tick)` (the events
    after the key's last tick row before the event, through the event: a tick row
    closes its period), `Trailing(n, tick)` (the event's period and the `n - 1` before
    it; near the key's first ticks, the periods that exist, as `partial=True`), `tick`
    a boolean column or expression, or a calendar tick (`ws.hourly()`, ...: periods
    `(previous tick, tick]`), or None (every event of the key up to and including the
    event: the cumulative window).

    Output: one row per event: the key columns, `time` (the event's time), then for each
    aggregation, for each window in the order given, a column `<aggregation's
    name>_<label>` (`sum_amount_1h`).

    Point-in-time (`at`, an event table of label rows with the events' key columns):
    one row per label row instead, each window evaluated as of the label's time `T`
    over the key's events strictly before `T` (at or before it with
    `include_current`): `Range` the events in `[T + start, T + end]` among those,
    `Rows` the positions around the last of those (index 0; `Rows(-2, 0)` the last
    three), the cumulative window all of them; no window reaches past `T`, so nothing
    after a label leaks into it. A key without such events gets the empty window's
    values (counts and sums 0, the rest null). Output: the key columns, `time` (the
    label's time), the label table's other columns, then the feature columns."""

    windows: tuple[tuple[str, Window | None], ...]
    at: EventTable | None = None
    include_current: bool = False

    def __post_init__(self) -> None:
        if not self.windows:
            raise bad_value("windows", f"a mapping of at least one label to {FEATURE_WINDOWS}",
                            "an empty mapping")
        for label, window in self.windows:
            if not isinstance(label, str) or not LABEL.fullmatch(label):
                raise bad_value("windows", "labels made of letters, digits and underscores "
                                "(each names its columns: sum_v_<label>)", label)
            if isinstance(window, TICKED):
                _check_ticked(label, window)
            elif window is not None and not isinstance(window, (Range, Rows)):
                if isinstance(window, Window):
                    raise WispUnsupportedError(
                        f"`windows` must map each label to {FEATURE_WINDOWS} in a feature "
                        f"set, found {type(window).__name__} for {label!r}; run it as its "
                        "own query (events.window(...).agg(...))")
                raise bad_value("windows", f"{FEATURE_WINDOWS} for each label", window)
        check_flag("include_current", self.include_current)
        if self.include_current and self.at is None:
            raise bad_value("include_current", "False without `at` (every event's windows "
                            "include the event itself, as its own windows define)",
                            self.include_current)

    def tables(self) -> dict[str, object]:
        return {} if self.at is None else {"at": self.at}

    def parameters(self) -> dict[str, object]:
        """The ticks of its `Since` and `Trailing` windows, as `windows.<label>.tick`."""
        return {f"windows.{label}.tick": window.tick for label, window in self.windows
                if isinstance(window, TICKED) and not isinstance(window.tick, CalendarTick)}

    def __repr__(self) -> str:
        inner = ", ".join(f"{label!r}: {window!r}" for label, window in self.windows)
        return f"features({{{inner}}})"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.windows)


def _check_ticked(label: str, window: Since | Trailing) -> None:
    if isinstance(window, Since) and window.emit not in (None, "events"):
        raise bad_value("windows", f"Since without `emit` (a feature set has one row per "
                        f"event) for {label!r}", window.emit)


def feature_set(windows: object, at: object = None, include_current: object = False
                ) -> FeatureSet:
    """The feature set `Events.features` describes, its arguments checked (`at`, when
    given, an event table; the planner checks it against the events)."""
    if not isinstance(windows, Mapping):
        raise bad_value("windows", f"a mapping (dict) of labels to {FEATURE_WINDOWS}",
                        type(windows).__name__)
    pairs: tuple[tuple[Any, Any], ...] = tuple(windows.items())
    return FeatureSet(pairs, at, include_current)  # type: ignore[arg-type]


def column_names(aggregations: tuple[str, ...], labels: tuple[str, ...]) -> list[str]:
    """The feature columns: for each aggregation's name, for each label,
    `<name>_<label>`."""
    return [f"{name}_{label}" for name in aggregations for label in labels]
