"""`Since` and `Trailing` over calendar ticks on a stream, without Spark: random events
in random micro-batches, disorder within and beyond the lateness, a restart after every
batch (each key's state through its stored bytes), through the simulator of Spark's
rules (`simulator.py`). The rows emitted equal the independent oracle's
(`oracle_fenl.py`) rows over the accepted events that are final at the last watermark:
an event row once the watermark reaches its time, a tick row `T` (the period
`(previous tick, T]`) once the watermark reaches `T`; a key gets every tick from its
first event's period on up to the watermark. Late rows are counted exactly; no row is
emitted twice. Then hand-written tables across the daylight-saving changes of
Europe/Berlin and America/New_York, and a watermark that jumps over 100 hourly ticks."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import re
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match, sort_output
from oracle_periods import since_calendar, trailing_calendar, trailing_predicate
from simulator import Simulation, simulate
from test_stream_simulated import check_late, flagged

import wisp as ws
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.periods import TickKernel
from wisp.spec.windows import CalendarTick

MINUTE = 60_000_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
BASES = {
    # days around a clock change: New York springs forward on 2024-03-10 07:00Z and
    # falls back on 2024-11-03 06:00Z, Berlin on 2024-03-31 01:00Z and 2024-10-27 01:00Z
    "ny-spring": dt.datetime(2024, 3, 9, tzinfo=dt.UTC),
    "ny-autumn": dt.datetime(2024, 11, 2, tzinfo=dt.UTC),
    "berlin-spring": dt.datetime(2024, 3, 30, tzinfo=dt.UTC),
    "berlin-autumn": dt.datetime(2024, 10, 26, tzinfo=dt.UTC),
}
TICKS = [ws.hourly(), ws.hourly("America/New_York"), ws.daily(), ws.daily("Europe/Berlin"),
         ws.daily("America/New_York"), ws.cron("30 */5 * * *", "America/New_York"),
         ws.cron("0 2 * * *", "America/New_York")]
INPUT = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("v", pa.float64())])
FLAGGED = pa.schema([*INPUT, pa.field("p", pa.bool_())])
AGGS = [ws.count(), ws.sum("v"), ws.max("v"), ws.mean("v")]
JOBS = (built_in_job("count", None, "none", pa.int64(), None),
        built_in_job("sum", "v", "float", pa.float64(), None),
        built_in_job("max", "v", "float", pa.float64(), None),
        built_in_job("mean", "v", "float", pa.float64(), None))
TIMES = ("window_start", "window_end", "time")
OUTPUT = pa.schema([pa.field("k", pa.string()),
                    *[pa.field(f, pa.timestamp("us", tz="UTC")) for f in TIMES],
                    pa.field("count", pa.int64()), pa.field("sum_v", pa.float64()),
                    pa.field("max_v", pa.float64()), pa.field("mean_v", pa.float64())])

values = st.one_of(st.none(), st.just(float("nan")),
                   st.integers(-40, 40).map(lambda x: x * 0.25))

Stream = tuple[list[pa.Table], int, bool]


def micros(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(microseconds=1)


@st.composite
def streams(draw: st.DrawFn, step: int = 20 * MINUTE) -> Stream:
    """Events over about three days from a day before a clock change, on a grid of
    `step`, in micro-batches (then the final batch without data); a lateness of up to
    four hours; whether late rows are emitted (Spark's filter off) or counted."""
    base = micros(BASES[draw(st.sampled_from(sorted(BASES)))])
    event = st.tuples(st.sampled_from(["a", "b", None]),
                      st.integers(0, 3 * DAY // step).map(lambda i: base + i * step),
                      values)
    events = draw(st.lists(event, min_size=1, max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(events)), max_size=8)))
    bounds = [0, *cuts, len(events)]
    batches = [table(events[a:b]) for a, b in itertools.pairwise(bounds)]
    lateness = draw(st.integers(0, 12)) * step + 1000
    return [*batches, table([])], lateness, draw(st.booleans())


def table(events: list[tuple[str | None, int, float | None]]) -> pa.Table:
    return pa.table({"k": pa.array([e[0] for e in events], pa.string()),
                     "t": pa.array([e[1] for e in events], pa.int64()),
                     "v": pa.array([e[2] for e in events], pa.float64())})


def tick_kernel(tick: CalendarTick | None, *, n: int = 1, partial: bool = False,
                emit: str = "ticks", trailing: bool = False) -> TickKernel:
    return TickKernel(keys=("k",), time="t", time_kind="timestamp", time_scale=0,
                      calendar=tick, n=n, partial=partial, emit=emit, trailing=trailing,
                      aggregates=JOBS, schema=OUTPUT, tick_column="p")


def stream_of(kernel: TickKernel, schema: pa.Schema = INPUT) -> StreamKernel:
    return StreamKernel(kernel, schema, "t", "timestamp", tuple(schema.names[1:]), "spec")


def accepted(result: Simulation) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pa.concat_tables(result.accepted).to_pylist()
    return rows


def emitted(result: Simulation) -> list[dict[str, Any]]:
    """The rows emitted, times as microseconds (a row emitted twice fails the
    comparison with the oracle: the row counts differ)."""
    return [{**r, **{f: micros(r[f]) for f in TIMES}}
            for b in result.emitted for r in b.to_pylist()]


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Equal rows (the oracle's sum of no values is the integer 0: a double 0.0 here)."""
    want = [{**r, "sum_v": float(r["sum_v"])} if isinstance(r["sum_v"], int) else r
            for r in want]
    assert_rows_match(sort_output(got, ["k"]), sort_output(want, ["k"]), rel=1e-9,
                      scales={"sum_v": 10.0, "mean_v": 10.0})


def reach_back(tick: CalendarTick, n: int) -> int:
    """How far before an event the oracle must list ticks: past `n` periods."""
    return (n + 2) * DAY if tick.unit in ("daily", "cron") else DAY


@settings(max_examples=120, deadline=None)
@given(data=streams(), tick=st.sampled_from(TICKS),
       emit=st.sampled_from(["ticks", "events", "both"]))
def test_since_calendar_on_a_stream_emits_the_final_rows(
        data: Stream, tick: CalendarTick, emit: str) -> None:
    """`Since(tick, emit)`: event rows once the watermark reaches their time, tick rows
    once it reaches the tick (every tick of the key from its first event's on)."""
    batches, lateness, emit_late = data
    result = simulate(stream_of(tick_kernel(tick, emit=emit)), batches, "k", lateness,
                      emit_late)
    check_late(result, batches, lateness, emit_late)
    bound = result.watermarks[-1] * 1000
    want = [r for r in since_calendar(accepted(result), time="t", key=["k"], order=None,
                                      columns=["k", "t", "v"], tick=tick, emit=emit,
                                      aggs=AGGS, span_before=reach_back(tick, 1))
            if r["time"] <= bound]
    assert_same(emitted(result), want)


@settings(max_examples=120, deadline=None)
@given(data=streams(), tick=st.sampled_from(TICKS), n=st.integers(1, 3),
       partial=st.booleans())
def test_trailing_calendar_on_a_stream_emits_the_final_rows(
        data: Stream, tick: CalendarTick, n: int, partial: bool) -> None:
    """`Trailing(n, tick, partial)`: each row once the watermark reaches its time."""
    batches, lateness, emit_late = data
    kernel = tick_kernel(tick, n=n, partial=partial, emit="events", trailing=True)
    result = simulate(stream_of(kernel), batches, "k", lateness, emit_late)
    check_late(result, batches, lateness, emit_late)
    bound = result.watermarks[-1] * 1000
    want = [r for r in trailing_calendar(accepted(result), time="t", key=["k"],
                                         order=None, columns=["k", "t", "v"], tick=tick,
                                         n=n, partial=partial, aggs=AGGS,
                                         span_before=reach_back(tick, n))
            if r["time"] <= bound]
    assert_same(emitted(result), want)


@settings(max_examples=100, deadline=None)
@given(data=streams(), n=st.integers(1, 3), partial=st.booleans(),
       flags=st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=5))
def test_trailing_predicate_on_a_stream_emits_the_final_rows(
        data: Stream, n: int, partial: bool, flags: list[bool | None]) -> None:
    """`Trailing(n, predicate)`: each row once the watermark reaches its time."""
    batches, lateness, emit_late = data
    kernel = tick_kernel(None, n=n, partial=partial, emit="events", trailing=True)
    result = simulate(stream_of(kernel, FLAGGED), flagged(batches, flags), "k", lateness,
                      emit_late)
    bound = result.watermarks[-1] * 1000
    want = [r for r in trailing_predicate(accepted(result), time="t", key=["k"],
                                          order=None, columns=["k", "t", "v", "p"],
                                          flag="p", n=n, partial=partial, aggs=AGGS)
            if r["time"] <= bound]
    assert_same(emitted(result), want)


# ------------------------------------------------------------ hand-written tables


def at(text: str) -> int:
    """An instant written as UTC text."""
    return micros(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC))


def shown(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    """The rows as tuples, times as UTC text, in order of key and time."""
    def text(value: Any) -> Any:
        if isinstance(value, int) and value > 10**15:
            return (EPOCH + dt.timedelta(microseconds=value)).strftime("%m-%d %H:%M")
        return value
    ordered = sorted(rows, key=lambda r: (r["k"], r["time"]))
    return [tuple(text(r[c]) for c in columns) for r in ordered]


def one_batch_each(events: list[tuple[str, str, float]]) -> list[pa.Table]:
    return [table([(k, at(t), v)]) for k, t, v in events] + [table([])]


# New York: 2024-03-10 springs forward at 02:00 EST (07:00Z), 2024-11-03 falls back at
# 02:00 EDT (06:00Z). Local midnight is 05:00Z in winter, 04:00Z in summer.
NEW_YORK_DAYS = [("a", "2024-03-09T12:00", 1.0), ("a", "2024-03-10T05:00", 2.0),
                 ("a", "2024-03-10T20:00", 4.0), ("a", "2024-03-12T10:00", 8.0),
                 ("a", "2024-03-13T12:00", 0.0)]


def test_daily_in_new_york_across_the_spring_change() -> None:
    """The day of the change lasts 23 hours: (03-10 05:00Z, 03-11 04:00Z]. An event at
    local midnight (03-10 05:00Z) closes the day before. The last watermark (one hour
    of lateness) is 03-13 11:00Z: the ticks up to 03-13 04:00Z are written."""
    result = simulate(stream_of(tick_kernel(ws.daily("America/New_York"))),
                      one_batch_each(NEW_YORK_DAYS), "k", HOUR)
    assert result.watermarks[-1] * 1000 == at("2024-03-13T11:00")
    assert shown(emitted(result), "window_start", "time", "count", "sum_v") == [
        ("03-09 05:00", "03-10 05:00", 2, 3.0),  # 24 h, two events, one on the tick
        ("03-10 05:00", "03-11 04:00", 1, 4.0),  # 23 h
        ("03-11 04:00", "03-12 04:00", 0, 0.0),  # empty
        ("03-12 04:00", "03-13 04:00", 1, 8.0),
    ]


NEW_YORK_AUTUMN = [("a", "2024-11-02T23:00", 1.0), ("a", "2024-11-03T04:30", 2.0),
                   ("a", "2024-11-04T04:30", 4.0), ("a", "2024-11-04T05:00", 8.0),
                   ("a", "2024-11-05T12:00", 0.0)]


def test_daily_in_new_york_across_the_autumn_change() -> None:
    """The day of the change lasts 25 hours: (11-03 04:00Z, 11-04 05:00Z]; 11-04
    04:30Z is 23:30 EST on the 3rd, in it."""
    result = simulate(stream_of(tick_kernel(ws.daily("America/New_York"), emit="both")),
                      one_batch_each(NEW_YORK_AUTUMN), "k", HOUR)
    assert shown(emitted(result), "window_start", "time", "count", "sum_v") == [
        ("11-02 04:00", "11-02 23:00", 1, 1.0),  # event rows, and tick rows
        ("11-02 04:00", "11-03 04:00", 1, 1.0),
        ("11-03 04:00", "11-03 04:30", 1, 2.0),
        ("11-03 04:00", "11-04 04:30", 2, 6.0),
        ("11-03 04:00", "11-04 05:00", 3, 14.0),  # the event on the tick
        ("11-03 04:00", "11-04 05:00", 3, 14.0),  # 25 h: 04:30Z and 05:00Z are the 3rd
        ("11-04 05:00", "11-05 05:00", 0, 0.0),
    ]  # the event at 11-05 12:00Z is above the last watermark (11:00Z)


BERLIN = [("a", "2024-03-30T12:00", 1.0), ("a", "2024-03-31T02:00", 2.0),
          ("a", "2024-04-01T20:00", 4.0), ("b", "2024-10-26T21:00", 8.0),
          ("b", "2024-10-26T23:30", 16.0), ("b", "2024-10-27T22:30", 32.0),
          ("b", "2024-10-28T12:00", 0.0)]


def test_daily_in_berlin_across_both_changes() -> None:
    """Berlin's local midnight is 23:00Z in winter, 22:00Z in summer; 03-31 lasts 23
    hours, 10-27 25 hours. Key a's ticks stop at the watermark of its last batch
    (04-01 18:00Z) until the later rows of key b move it on: a gets every tick up to
    the last watermark (10-28 10:00Z), its empty days included."""
    result = simulate(stream_of(tick_kernel(ws.daily("Europe/Berlin"))),
                      one_batch_each(BERLIN), "k", 2 * HOUR)
    rows = emitted(result)
    a = sorted((r for r in rows if r["k"] == "a"), key=lambda r: r["time"])
    assert shown(a[:3], "window_start", "time", "count", "sum_v") == [
        ("03-29 23:00", "03-30 23:00", 1, 1.0),
        ("03-30 23:00", "03-31 22:00", 1, 2.0),  # 23 h
        ("03-31 22:00", "04-01 22:00", 1, 4.0),
    ]
    assert len(a) == 3 + (at("2024-10-27T23:00") - at("2024-04-01T22:00")) // DAY
    assert all(r["count"] == 0 for r in a[3:])
    b = [r for r in rows if r["k"] == "b"]
    assert shown(b, "window_start", "time", "count", "sum_v") == [
        ("10-25 22:00", "10-26 22:00", 1, 8.0),
        ("10-26 22:00", "10-27 23:00", 2, 48.0),  # 25 h
    ]


def test_cron_on_the_spring_day_ticks_at_the_jump() -> None:
    """cron("30 2 * * *") in New York: 02:30 does not exist on 03-10, the tick is at
    the jump (03:00 EDT = 07:00Z); other days 02:30 local."""
    events = [("a", "2024-03-09T08:00", 1.0), ("a", "2024-03-10T06:59", 2.0),
              ("a", "2024-03-10T07:00", 4.0), ("a", "2024-03-10T07:01", 8.0),
              ("a", "2024-03-12T00:00", 0.0)]
    kernel = tick_kernel(ws.cron("30 2 * * *", "America/New_York"))
    result = simulate(stream_of(kernel), one_batch_each(events), "k", HOUR)
    assert shown(emitted(result), "window_start", "time", "count", "sum_v") == [
        ("03-09 07:30", "03-10 07:00", 3, 7.0),  # the key's first tick: its first event's
        ("03-10 07:00", "03-11 06:30", 1, 8.0),
    ]  # the last watermark is 03-11 23:00Z


def test_trailing_hourly_in_new_york_across_the_spring_change() -> None:
    """Trailing(2, hourly("America/New_York")): the hour 02:00-03:00 local does not
    exist on 03-10, so 01:00 EST (06:00Z) and 03:00 EDT (07:00Z) are ticks an hour
    apart; a row's window reaches back to the tick two before its period's."""
    events = [("a", "2024-03-10T05:30", 1.0), ("a", "2024-03-10T06:30", 2.0),
              ("a", "2024-03-10T07:30", 4.0), ("a", "2024-03-10T09:00", 8.0),
              ("b", "2024-03-10T12:00", 0.0)]  # moves the watermark past a's rows
    kernel = tick_kernel(ws.hourly("America/New_York"), n=2, emit="events", trailing=True)
    result = simulate(stream_of(kernel), one_batch_each(events), "k", MINUTE)
    assert shown(emitted(result), "window_start", "time", "count", "sum_v") == [
        ("03-10 04:00", "03-10 05:30", None, None),  # no tick of a's before it
        ("03-10 05:00", "03-10 06:30", 2, 3.0),
        ("03-10 06:00", "03-10 07:30", 2, 6.0),
        ("03-10 07:00", "03-10 09:00", 2, 12.0),  # (07:00Z, 09:00Z]: 07:30 and 09:00
    ]


# ---------------------------------------------------------------- watermark jumps


@dataclasses.dataclass(frozen=True)
class CountedStream(StreamKernel):
    """The stream logic, counting the timer handler's calls."""

    timers: list[int] = dataclasses.field(default_factory=list)

    def on_timer(self, state: Any, watermark_ms: int) -> Any:
        self.timers.append(watermark_ms)
        return super().on_timer(state, watermark_ms)


@pytest.mark.parametrize("emit", ["ticks", "both"])
def test_a_watermark_jump_over_100_hours_emits_every_tick_once_in_order(emit: str) -> None:
    """Key a's one event, then a row of key b 100 hours later: the next batch's
    watermark jumps 100 hours, and a's one timer call emits its 100 hourly tick rows
    in one step, in order (no loop in the handler; New York's spring change on 03-10
    keeps the ticks on whole UTC hours); b's row is not yet final."""
    start = at("2024-03-09T00:30")
    batches = [table([("a", start, 1.0)]), table([("a", start + 10 * MINUTE, 2.0)]),
               table([("b", start + 100 * HOUR + MINUTE, 4.0)]), table([])]
    kernel = tick_kernel(ws.hourly("America/New_York"), emit=emit)
    stream = CountedStream(kernel, INPUT, "t", "timestamp", ("t", "v"), "spec")
    result = simulate(stream, batches, "k", MINUTE)
    def ticks_of(batch: pa.RecordBatch) -> list[dict[str, Any]]:
        return [r for r in batch.to_pylist() if micros(r["time"]) % HOUR == 0]

    ticks = [r for b in result.emitted for r in ticks_of(b)]
    assert [micros(r["time"]) for r in ticks] == \
        [at("2024-03-09T01:00") + i * HOUR for i in range(100)]
    assert [r["count"] for r in ticks] == [2] + [0] * 99
    assert len(stream.timers) == 2  # a's first row, then one call for the jump
    assert [len(ticks_of(b)) for b in result.emitted if ticks_of(b)] == [100]  # one step
    assert result.pending == 1  # b's row, above the watermark


def test_a_key_gets_no_ticks_before_its_first_event_is_final() -> None:
    """A key's first row waits above the watermark: no tick row of it yet, and its
    timer waits for the row, not for the ticks before it."""
    batches = [table([("a", at("2024-03-09T00:30"), 1.0)]),
               table([("b", at("2024-03-09T05:10"), 2.0)]), table([])]
    result = simulate(stream_of(tick_kernel(ws.hourly())), batches, "k", 2 * HOUR)
    assert shown(emitted(result), "k", "time", "count") == [
        ("a", "03-09 01:00", 1), ("a", "03-09 02:00", 0), ("a", "03-09 03:00", 0)]
    assert result.pending == 1


# ------------------------------------------------------------- the kernel's horizon


def step(kernel: TickKernel, state: Any, rows: list[tuple[str, int, float]],
         horizon: int) -> tuple[list[dict[str, Any]], Any]:
    """One stream step of `kernel`, the state through its bytes first."""
    from wisp.runtime.windows.resumable import KernelState

    if state is not None:
        state = KernelState.from_bytes(state.to_bytes())
    out, state = kernel.step(state, table(rows), horizon)
    return [{**r, **{f: micros(r[f]) for f in TIMES}} for r in out.to_pylist()], state


def test_a_tick_row_is_final_only_once_the_horizon_passes_the_tick() -> None:
    """Periods are (previous tick, tick]: with the horizon at the tick (a row exactly on
    it may still come) the tick's row waits; the row on the tick joins its period; one
    tick past it the row is written. `wake` is that least horizon."""
    kernel = tick_kernel(ws.hourly())
    one = at("2024-03-09T01:00")
    out, state = step(kernel, None, [("a", one - 30 * MINUTE, 1.0)], one)
    assert out == [] and kernel.wake(state) == one + 1
    out, state = step(kernel, state, [("a", one, 2.0)], one + 1)
    assert [(r["time"], r["count"], r["sum_v"]) for r in out] == [(one, 2, 3.0)]
    assert kernel.wake(state) == one + HOUR + 1
    out, _ = step(kernel, state, [], one + HOUR)
    assert out == []
    out, state = step(kernel, state, [], one + 3 * HOUR + 1)
    assert [(r["time"], r["count"]) for r in out] == [(one + HOUR, 0), (one + 2 * HOUR, 0),
                                                      (one + 3 * HOUR, 0)]
    assert state.rows.num_rows == 1  # the key's values only: its periods were written
    assert kernel.wake(state) == one + 4 * HOUR + 1


def test_trailing_keeps_only_the_periods_a_later_row_can_reach() -> None:
    """Trailing(2, hourly()): once the horizon is in a later hour, the rows before the
    tick two periods back go; the next row's window reads what stays."""
    kernel = tick_kernel(ws.hourly(), n=2, emit="events", trailing=True)
    one = at("2024-03-09T01:00")
    rows = [("a", one - 40 * MINUTE, 1.0), ("a", one + 10 * MINUTE, 2.0),
            ("a", one + 70 * MINUTE, 4.0)]
    out, state = step(kernel, None, rows, one + 71 * MINUTE)
    assert [r["sum_v"] for r in out] == [None, 3.0, 6.0]
    assert state.rows.num_rows == 2 and kernel.wake(state) is None
    out, state = step(kernel, state, [], one + 3 * HOUR)
    assert state.rows.num_rows == 1  # a row exactly at 04:00 reaches back to 02:00
    out, state = step(kernel, state, [], one + 3 * HOUR + 1)
    assert state.rows.num_rows == 0  # a row after 04:00 reaches back to 03:00
    out, state = step(kernel, state, [("a", one + 3 * HOUR + MINUTE, 8.0)], one + 4 * HOUR)
    assert [(r["window_start"], r["count"], r["sum_v"]) for r in out] == \
        [(one + 2 * HOUR, 1, 8.0)]


def test_a_horizon_past_the_calendar_years_fails_as_an_event_there_does() -> None:
    """Only an event past the year 9998 carries the watermark there; the query fails
    with the calendar's message, as the batch query does on that event."""
    kernel = tick_kernel(ws.daily())
    end = micros(dt.datetime(9998, 12, 31, 1, tzinfo=dt.UTC))
    out, state = step(kernel, None, [("a", end, 1.0)], end + 1)
    assert out == []
    with pytest.raises(ws.WispInputError, match=re.escape(
            "`time` must lie in the years 0002..9998 for calendar ticks, found 9999-01-0")):
        step(kernel, state, [], end + 2 * DAY)
