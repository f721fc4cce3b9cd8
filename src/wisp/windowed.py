"""Events seen through a window, and the one function that runs every query."""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Observation

from .binding import Events
from .engine.build import build
from .engine.columns import LATE_COUNTED, LATE_COUNTER, STREAM_COUNTERS
from .engine.compiler import Query
from .engine.describe import describe_query, event_tables
from .engine.revisions import latest_rows
from .errors import WispInputError, bad_value
from .plan.explain import describe
from .plan.nodes import Plan
from .plan.planner import plan as make_plan
from .plan.source import Emit
from .session import arrow_batch_advice
from .spec.aggregates import Aggregation
from .spec.windows import Window
from .workers import check_workers


class WindowedEvents:
    """`Events` seen through a window. Call `.agg(...)`."""

    def __init__(self, events: Events, window: Window) -> None:
        self.events = events
        self.spec = window

    def __repr__(self) -> str:
        return f"{self.events!r}.window({self.spec!r})"

    def agg(self, *aggregations: Aggregation, strategy: str | None = None,
            emit: Emit = "final") -> DataFrame:
        """One output row per window (as the window kind defines): key columns,
        `window_start`, `window_end`, `time`, then one column per aggregation.

        `strategy` (default None: the planner chooses) forces one of the physical
        strategies the window kind runs on, by the name `explain` prints (e.g.
        "arrow-frames" for `Rows`, "arrow-intervals" for `Tumbling`); the results are
        the same rows. A strategy the query cannot run on is a `WispInputError` naming
        `strategy` and the ones it can (docs/strategies.md).

        `emit` (streams): "final" (default: each window once, when no later row can
        change it) or "changes" (also, in each micro-batch, the current row of every open
        window whose result changed, with `final` false; the row written when the
        watermark passes it has `final` true). With it, or with `on_late="update"`, the
        rows carry `revision` (0, 1, ... per window) and `final` after `time`
        (docs/streaming.md, "Revisions")."""
        if emit not in ("final", "changes"):
            raise bad_value("emit", "'final' or 'changes'", emit)
        if emit != "final" and not self.events.streaming:
            raise bad_value("emit", "'final' for a batch DataFrame (early rows of open "
                            "windows are a stream's)", emit)
        return run(self.events, self.spec, aggregations, strategy, emit)


@dataclass
class Run:
    """A query wisp built: its plan, the events it reads, and the observation its scan
    counts rows in (only under on_null_time="drop"; see `report`)."""

    plan: Plan
    events: Events
    observation: Observation
    input_rows: int | None = None  # counted on demand under on_null_time="error"

    def rejected(self) -> dict[str, int]:
        """Rows rejected, by reason: no job (none can be under "error")."""
        if self.events.on_null_time == "drop":
            return {"rejected_null_time": int(self.observed()["rejected_null_time"])}
        return {"rejected_null_time": 0}

    def rows_in(self) -> int:
        """Input rows: observed under "drop"; counted by one job, once, under "error"."""
        if self.events.on_null_time == "drop":
            return int(self.observed()["rows_in"])
        if self.input_rows is None:
            self.input_rows = self.events.df.count()
        return self.input_rows


    def observed(self) -> dict[str, Any]:
        """The counters the query's scan observed, once an action has run on the result.
        Before that, classic Spark's observation would wait for ever for an action and
        Spark Connect's holds no counter yet: a `WispInputError` says to run one."""
        future = getattr(getattr(self.observation, "_jo", None), "future", None)
        if future is not None and not future().isCompleted():  # classic: not yet run
            raise _no_action_yet()
        counters = self.observation.get
        if "rows_in" not in counters:  # Spark Connect: not yet run
            raise _no_action_yet()
        return counters


def _no_action_yet() -> WispInputError:
    return WispInputError(
        "`result` must have been computed by an action (collect, count, show, write, ...) "
        "before its report under on_null_time='drop' (the query counts its rows as it "
        "reads them), found a result no action has finished on yet; run an action first")


_RUNS: weakref.WeakKeyDictionary[DataFrame, Run] = weakref.WeakKeyDictionary()
_COUNTER = itertools.count()


def run(events: Events, window: Window | None, aggregations: Sequence[Aggregation],
        strategy: str | None = None, emit: Emit = "final") -> DataFrame:
    """Describe the query to the planner, plan it, and build its Spark plan (lazily:
    nothing runs until an action)."""
    inputs = describe_query(events, window)
    if emit != "final":
        inputs = dataclasses.replace(inputs, source=dataclasses.replace(inputs.source,
                                                                        emit=emit))
    chosen = make_plan(inputs, window, aggregations, strategy)
    if chosen.python:
        check_workers(events.df.sparkSession)
    observation = Observation(f"wisp_{next(_COUNTER)}")
    query = Query(events, window, observation, event_tables(window))
    for resolved in chosen.aggregations:
        query.output_type(resolved)  # a udaf's declared type must parse
    result = build(chosen, query)
    _RUNS[result] = Run(chosen, events, observation)
    return result


def _run_of(result: object) -> Run:
    try:
        return _RUNS[result]  # type: ignore[index]
    except (KeyError, TypeError):
        raise bad_value("result", "a DataFrame returned by wisp's agg()",
                        type(result).__name__) from None


_JOINS: weakref.WeakKeyDictionary[DataFrame, str] = weakref.WeakKeyDictionary()
"""What runs for each result of `asof_join`, in words (`explain`)."""


def explained_join(result: DataFrame, how: str) -> DataFrame:
    """Record what runs for an as-of join's `result`, for `explain`; returns it."""
    _JOINS[result] = how
    return result


def explain(result: DataFrame) -> str:
    """Print and return, in words, the strategy chosen for `result` and why; for a
    strategy that runs a Python worker, also a session setting that would speed it up.
    `result` is a DataFrame of wisp's `agg()` or of `asof_join`."""
    how = _JOINS.get(result) if isinstance(result, DataFrame) else None
    if how is not None:
        print(how)
        return how
    plan = _run_of(result).plan
    text = describe(plan)
    advice = None if not plan.python else arrow_batch_advice(
        result.sparkSession)
    if advice is not None:
        text += f"\nTuning: {advice}"
    print(text)
    return text


def report(result: DataFrame) -> dict[str, Any]:
    """Row accounting of `result`'s query: `rows_in` (input rows) and
    `rejected_null_time` (rows dropped for a null time).

    With `on_null_time="drop"` the query counts its rows as it reads them (a Spark
    observation: no extra job), and the report is available once an action has run on
    `result` (before, a `WispInputError` says to run one). With "error" (the default)
    no row can be dropped: `rejected_null_time` is 0 and `rows_in` is the input's row
    count, counted by one Spark job the first time it is asked for (the query itself
    carries no counter). For an input that changes between reads (a table appended
    to), that count is of the input as it is when asked."""
    run = _run_of(result)
    return {"rows_in": run.rows_in(), **run.rejected()}


def rejected(result: DataFrame) -> dict[str, int]:
    """`report`'s rejected rows by reason, without counting the input."""
    return _run_of(result).rejected()


def latest(df: DataFrame) -> DataFrame:
    """Each window's row of the highest `revision` in `df`, a batch DataFrame of a
    result with revisions (a table a stream with `on_late="update"` or `emit="changes"`
    wrote, or a micro-batch inside `foreachBatch`): a window is its key columns,
    `window_start` and `window_end`. With a `replaces` column (sessions, snapshots,
    count windows, whose bounds a late row can change), a window that a row of a higher
    revision lists there is left out."""
    return latest_rows(df)


def stream_report(query: Any) -> dict[str, Any]:
    """Row accounting of a running or finished streaming query (a `StreamingQuery` of a
    wisp result), read from its progress reports: `rows_in` (rows read, over the
    batches Spark still reports), `late` (rows Spark dropped at or below the watermark
    before wisp's operator, its `numRowsDroppedByWatermark`; for `Tumbling`/`Hopping`
    on pane partials, the rows wisp's operator dropped because the earliest window
    holding them was already closed for their key; under `on_late="update"`, the rows
    wisp's operator dropped as later than the allowed lateness; plus, under
    `on_late="emit"`, the late rows the result emitted), `late_emitted` (the latter
    alone), `late_applied` (under `on_late="update"`, late rows applied to windows
    already written, which were written again; not in `late`),
    `rejected_null_time` (rows dropped for a null time under on_null_time="drop"),
    `rejected_future` (rows timed more than `max_future` ahead of their micro-batch's
    processing time), `watermark` (the newest watermark, as Spark reports it, or
    None), `batches` (micro-batches reported) and `state_keys` (the values the
    operator stores now: one per key holding state; for `Tumbling`/`Hopping` on pane
    partials, one per bucket of keys, at most 16). Spark keeps the last
    `spark.sql.streaming.numRecentProgressUpdates` reports (100 by default)."""
    return progress_report(list(getattr(query, "recentProgress", None) or []))


def progress_report(progress: Sequence[Any]) -> dict[str, Any]:
    """`stream_report`'s accounting over these progress reports (one micro-batch's, or
    all a query keeps)."""
    rows_in = sum(int(progress_field(p, "numInputRows") or 0) for p in progress)
    dropped = sum(int(progress_field(op, "numRowsDroppedByWatermark") or 0)
                  for p in progress for op in (progress_field(p, "stateOperators") or []))
    emitted = sum(observed_count(progress_field(p, "observedMetrics"), "late", LATE_COUNTER)
                  for p in progress)
    counted = sum(observed_count(progress_field(p, "observedMetrics"), "late", LATE_COUNTED)
                  for p in progress)
    applied = sum(observed_count(progress_field(p, "observedMetrics"), "late_applied",
                                 LATE_COUNTED) for p in progress)
    rejected = sum(observed_count(progress_field(p, "observedMetrics"), "rejected_null_time")
                   for p in progress)
    future = sum(observed_count(progress_field(p, "observedMetrics"), "rejected_future")
                 for p in progress)
    last = progress[-1] if progress else {}
    watermark = next((w for p in reversed(progress)
                      if (w := (progress_field(p, "eventTime") or {}).get("watermark"))), None)
    state_keys = sum(int(progress_field(op, "numRowsTotal") or 0)
                     for op in (progress_field(last, "stateOperators") or []))
    return {"rows_in": rows_in, "late": dropped + counted + emitted,
            "rejected_null_time": rejected, "rejected_future": future,
            "watermark": watermark, "batches": len(progress), "state_keys": state_keys,
            "late_emitted": emitted, "late_applied": applied}


def observed_count(metrics: Any, name: str, observation: str = STREAM_COUNTERS
                   ) -> int:
    """A counter of one of wisp's named observations in one progress report (0 if
    absent)."""
    found = (metrics or {}).get(observation)
    if found is None:
        return 0
    values = found.asDict() if hasattr(found, "asDict") else dict(found)
    if set(values) == {"values", "schema"}:
        # Over Spark Connect the row comes as its progress JSON has it: the values in a
        # list, their names in the schema beside them.
        schema = values["schema"]
        fields = (schema.asDict(recursive=True) if hasattr(schema, "asDict")
                  else dict(schema)).get("fields") or []
        observed = values["values"]
        names = [field["name"] for field in fields]
        values = {} if observed is None else dict(zip(names, observed, strict=True))
    return int(values.get(name) or 0)


def progress_field(progress: Any, name: str) -> Any:
    """A field of a progress report: a property of Spark's progress classes (over
    Connect `numInputRows` is summed from the sources there), else a dict entry."""
    value = getattr(progress, name, None)
    if value is None and isinstance(progress, dict):
        value = progress.get(name)
    return value
