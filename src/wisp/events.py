"""Events: a DataFrame's columns bound to the roles time, end, key and order.

Binding validates the schema at once (a missing column, a wrong type, an unknown option
or two columns of one name is a `WispError` naming the parameter). Data checks (null
time, `end < time`) run inside the query, whose failure `wisp.wisp_error` turns back into
the `WispError`; `Events.validate()` runs them eagerly.

The roles' data and their validation live in `wisp.binding`, which every layer imports;
this module, above `windowed`, `plot` and `engine/` (none of which imports it), adds the
public `Events` with its query methods, `events` and `from_edges` (whose pairing query
`wisp.engine.edges` builds), and re-exports `TimeColumn`, `time_kind` and
`EDGE_END_COLUMN`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from . import binding
from .binding import (
    EDGE_END_COLUMN,
    TIME_TYPES,
    LatePolicy,
    NullTimePolicy,
    TimeColumn,
    TimeKind,
    bind_events,
    column_field,
    time_kind,
)
from .engine.checks import validate_events
from .engine.edges import paired_edges, unpaired_edges
from .errors import bad_value
from .plot import plot_events
from .spec.aggregates import Aggregation
from .spec.features import feature_set
from .spec.time import Duration
from .spec.windows import Window
from .windowed import WindowedEvents, run

__all__ = ["EDGE_END_COLUMN", "TIME_TYPES", "Events", "LatePolicy", "NullTimePolicy",
           "TimeColumn", "TimeKind", "events", "from_edges", "time_kind"]


class Events(binding.Events):
    """A DataFrame bound to event roles. Build it with `wisp.events(...)`."""

    def window(self, window: Window) -> WindowedEvents:
        """These events seen through `window`; call `.agg(...)` on the result."""
        if not isinstance(window, Window):
            raise bad_value("window", "a wisp window such as wisp.Rows(-2, 0) or "
                            "wisp.Range.past('10s')", window)
        return WindowedEvents(self, window)

    def agg(self, *aggregations: Aggregation, strategy: str | None = None) -> DataFrame:
        """Cumulative aggregation: one output per input event, over every event of its key
        up to and including it (ties in time in tie-break order).

        Output: `window_start` = the key's first time, `window_end` = `time` = the event's
        time (both inclusive). `strategy` (default None: the planner chooses) forces
        "native-running" or "arrow-frames", as `WindowedEvents.agg` does."""
        return run(self, None, aggregations, strategy)

    def features(self, windows: Mapping[str, Window | None], *aggregations: Aggregation,
                 at: Events | DataFrame | None = None, include_current: bool = False,
                 strategy: str | None = None) -> DataFrame:
        """A feature set: the same aggregations over several windows, evaluated at every
        event, in one pass (one shuffle and one sort of the events, one kernel walk of
        each key's events for all the windows).

        `windows` maps a label to `Range(start, end)` (times `[t + start, t + end]`
        around the event's time `t`, sides per its `closed`), `Rows(start, end)` (the
        events at those relative indices, 0 the event itself; near a key's first and
        last events, the indices that exist, as `partial=True`: one row per event) or
        None (every event of the key up to and including the event). Output: one row
        per event: the key columns, `time` (the event's time), then for each
        aggregation, for each window in the order given, a column `<aggregation's
        name>_<label>` (`sum_amount_1h`).

        `at`: label rows, point-in-time (an event table with the events' key columns,
        or a DataFrame with the events' key and time column names): one row per label
        row, each window evaluated as of the label's time `T` over the key's events
        strictly before `T` (at or before it with `include_current=True`): `Range`
        clipped at `T`, `Rows` around the last such event (index 0), the cumulative
        window all of them. Output: the key columns, `time` (the label's), the label
        table's other columns, then the feature columns. `strategy`: None or
        "arrow-features"."""
        if isinstance(at, DataFrame):
            missing = [c for c in (*self.key, self.time.name) if c not in at.columns]
            if missing:
                raise bad_value("at", f"an event table (wisp.events) or a DataFrame with "
                                f"the events' key and time columns "
                                f"{[*self.key, self.time.name]!r}", f"a DataFrame without "
                                f"{missing!r}")
            at = events(at, time=self.time.name, key=list(self.key) or None)
        return run(self, feature_set(windows, at, include_current), aggregations, strategy)

    def plot(self, window: Window | None = None, *aggregations: Aggregation, out: str,
             **options: Any) -> None:
        """Draw these events and `window`'s outputs on a timeline (PNG or SVG at `out`);
        needs the `plot` extra (matplotlib). See `wisp.plot.plot_events`."""
        plot_events(self, window, *aggregations, out=out, **options)

    def validate(self) -> None:
        """Run the data checks now (one Spark job): raises `WispError` on a null time."""
        validate_events(self)


def events(df: DataFrame, time: str, *, end: str | None = None,
           key: str | Sequence[str] | None = None, order: str | None = None,
           on_null_time: NullTimePolicy = "error", lateness: Duration | None = None,
           on_late: LatePolicy = "count", max_future: Duration | None = None,
           allowed_lateness: Duration | None = None) -> Events:
    """Bind `df`'s columns to event roles.

    `time`: a timestamp, timestamp_ntz, date, integer, decimal or float column.
    `end`: interval events live on `[time, end)`; a null end is open to the end of time.
    `key`: a column or a list of columns; every window is computed per key (a null key
    is a key of its own). `None` or an empty list: one global stream.
    `order`: breaks ties in `time` (and is the arrival order of the sliding family).
    `on_null_time`: "error" (default: the query fails naming the column) or "drop" (rows
    with a null time are dropped on purpose and counted in `wisp.report`).
    `lateness` (streaming DataFrames only, and required there unless the time column
    carries a watermark): how late a row may arrive, a positive duration ('30s', a
    timedelta; whole days for date time; a number of ticks for integer time, which the
    watermark reads as microseconds). Rows later than that are late.
    `on_late` (streams only): "count" (default: Spark drops late rows before wisp's
    operator and counts them, `wisp.stream_report`) or "emit" (late rows come out as
    rows of the result with `late_reason` and `late_row` set; window rows have them
    null) or "update" (a late row within `allowed_lateness` of its windows' finality
    updates them, and each is written again with the next `revision`; later rows are
    counted); see docs/streaming.md.
    `allowed_lateness` (with `on_late="update"`, required there): how long past its
    finality a window still takes late rows (a duration as `lateness`).
    `max_future` (streams with timestamp, timestamp_ntz or date time): a row timed more
    than this duration after its micro-batch's processing time is rejected and counted
    (`wisp.stream_report`'s `rejected_future`), so one bad clock cannot move the
    watermark ahead and make every later row late. None (default): no row is.
    """
    return bind_events(Events, df, time, end=end, key=key, order=order,
                       on_null_time=on_null_time, lateness=lateness, on_late=on_late,
                       max_future=max_future, allowed_lateness=allowed_lateness)


def from_edges(df: DataFrame, time: str, *, edge: str, id: str,
               key: str | Sequence[str] | None = None, lateness: Duration | None = None,
               on_late: LatePolicy = "count") -> Events:
    """Interval events from start/end edge rows.

    `edge` is a string column holding "start" or "end"; `id` (with `key`) names the event
    an edge belongs to. Per (key, id), edges are taken in time order (a start before an
    end at the same time): each start edge opens an interval that the next edge closes
    when it is an end edge; a start edge without such an end edge is open-ended (null
    end, the end of time). The result has one row per start edge: the start row's columns
    without `edge`, plus a column `end` (the end edge's time).

    An end edge that closes nothing (no start edge of its id right before it), a null or
    unknown edge value: the query fails with a `WispError` naming the column and the id,
    as a null time does: no edge is dropped silently.

    On a streaming DataFrame (`lateness` and `on_late` as in `wisp.events`), edges are
    paired as they pass the watermark: a start edge whose end edge has not come yet is
    alive up to the watermark for certain, and its end is set when its end edge passes
    it; a window is written once the watermark passes its end, with the batch's rows.
    Tumbling and Hopping by duration (output='windows'), Snapshot and CountByStartTime
    run there; the rows stay edges (with `edge`, and `end` null until paired) inside the
    query. A late start edge (dropped or emitted as late) leaves its end edge without a
    start: the query fails as the batch over the accepted edges would.
    """
    if not isinstance(df, DataFrame):
        raise bad_value("df", "a PySpark DataFrame", type(df).__name__)
    edge_field = column_field(df, "edge", edge)
    if not isinstance(edge_field.dataType, T.StringType):
        raise bad_value("edge", "a string column holding 'start' or 'end'",
                        f"{edge_field.dataType.simpleString()} column {edge!r}")
    id_field = column_field(df, "id", id)
    if isinstance(id_field.dataType, T.MapType):
        raise bad_value("id", "a column that Spark can group by (not a map)",
                        f"map column {id!r}")
    if EDGE_END_COLUMN in df.columns:
        raise bad_value("df", f"a DataFrame without a column named {EDGE_END_COLUMN!r} "
                        "(from_edges writes the end time there)", EDGE_END_COLUMN)
    probe = events(df, time, key=key, lateness=lateness, on_late=on_late)  # validates
    if edge in (time, id) or edge in probe.key or id == time:
        raise bad_value("edge", "a column other than `time`, `id` and `key`", edge)
    if df.isStreaming:
        out = events(unpaired_edges(df, probe.time.data_type), time, end=EDGE_END_COLUMN,
                     key=key, lateness=lateness, on_late=on_late)
        out.edges = (edge, id)
        return out
    paired = paired_edges(df, time, edge, id, probe.key)
    return events(paired, time, end=EDGE_END_COLUMN, key=key, lateness=lateness,
                  on_late=on_late)
