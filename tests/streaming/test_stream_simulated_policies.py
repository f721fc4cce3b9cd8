"""Sliding and policy-tumbling windows on a stream, without Spark: random events in random
micro-batches, with disorder, late rows and a restart after every batch (each key's
state through its stored bytes), through the simulator of Spark's rules
(`simulator.py`). Tuples enter in time order (then the other columns) once the
watermark passes them. The rows emitted equal the independent SPL oracle's
(`oracle_spl.py`) over the accepted events at or below the last watermark, at the
stream's horizon (time firings at every period below it, no flush at the end); late
rows are counted exactly; no row is emitted twice. Also: a watermark jump over many
periods emits every firing once, and the hand-written transcripts replayed as streams."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle_policies import spl_window
from simulator import Simulation, simulate
from test_stream_simulated import AGGS, JOBS, OUTPUT, SECOND, assert_same, check_late

import wisp as ws
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.streaming.operator import StreamKernel
from wisp.runtime.windows.policies import SplKernel
from wisp.spec.policies import Count, Delta, Policy, Punctuation, Time

INPUT = pa.schema([pa.field("k", pa.string()), pa.field("t", pa.int64()),
                   pa.field("v", pa.float64()), pa.field("a", pa.int64()),
                   pa.field("p", pa.bool_())])
COLUMNS = ["k", "t", "v", "a", "p"]
ORDER = ("t", "v", "a", "p")  # time, then the other columns: the batch arrival order

values = st.one_of(st.none(), st.just(float("nan")),
                   st.integers(-40, 40).map(lambda x: x * 0.25))
event = st.tuples(st.sampled_from(["a", "b", None]),
                  st.integers(1, 60).map(lambda s: s * SECOND // 2), values,
                  st.integers(-6, 6), st.one_of(st.none(), st.booleans()))

Stream = tuple[list[pa.Table], int, bool]


def table(events: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({name: pa.array([e[i] for e in events], INPUT.field(name).type)
                     for i, name in enumerate(COLUMNS)})


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    """Events in micro-batches (then the final batch without data), a lateness, and
    whether late rows are emitted (Spark's late filter off) or dropped and counted."""
    events = draw(st.lists(event, min_size=3, max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(events)), max_size=8)))
    bounds = [0, *cuts, len(events)]
    batches = [table(events[a:b]) for a, b in itertools.pairwise(bounds)]
    lateness = draw(st.integers(0, 12)) * SECOND // 2 + 1000
    return [*batches, table([])], lateness, draw(st.booleans())


HALF = SECOND // 2
counts = st.integers(1, 4).map(Count)
times = st.builds(lambda t, a: Time(t * HALF, a * HALF), st.integers(1, 6),
                  st.integers(-3, 3))
deltas = st.integers(0, 3).map(lambda d: Delta("a", d))


def kernel(window: ws.Sliding | ws.Tumbling, jobs: tuple[AggregateJob, ...] = JOBS,
           output: pa.Schema = OUTPUT) -> SplKernel:
    """The policy kernel of `window` (its policies already in ticks)."""
    if isinstance(window, ws.Sliding):
        mode, evict, trigger = "sliding", window.evict, window.trigger
    else:
        assert isinstance(window.size, (Count, Time, Delta, Punctuation))
        mode, evict, trigger = "tumbling", window.size, None
    policies: list[Policy] = [evict, *([trigger] if trigger is not None else [])]
    attrs = tuple(dict.fromkeys((p.attr, "integer") for p in policies
                                if isinstance(p, Delta)))
    return SplKernel(keys=("k",), time="t", time_kind="integer", time_scale=0, mode=mode,
                     evict=evict, trigger=trigger, partial=window.partial, attrs=attrs,
                     aggregates=jobs, schema=output)


def run(window: ws.Sliding | ws.Tumbling, data: Stream) -> Simulation:
    batches, lateness, emit_late = data
    stream = StreamKernel(kernel(window), INPUT, "t", "integer", ORDER, "spec")
    result = simulate(stream, batches, "k", lateness, emit_late)
    check_late(result, batches, lateness, emit_late)
    return result


def final_oracle_rows(result: Simulation, window: ws.Sliding | ws.Tumbling
                      ) -> list[dict[str, Any]]:
    """The oracle's rows over the accepted events at or below the last watermark (the
    tuples that have entered), at the horizon the watermark promises."""
    bound = result.watermarks[-1] * 1000
    rows = [r for r in pa.concat_tables(result.accepted).to_pylist() if r["t"] <= bound]
    return spl_window(rows, time="t", key=["k"], order=None, columns=COLUMNS,
                      window=window, aggs=AGGS, until=bound + 1)


def emitted(result: Simulation) -> list[dict[str, Any]]:
    return [r for b in result.emitted for r in b.to_pylist()]


@settings(max_examples=120, deadline=None)
@given(data=streams(), evict=st.one_of(counts, times, deltas),
       trigger=st.one_of(counts, times, deltas), partial=st.booleans())
def test_sliding_windows_on_a_stream_emit_the_final_rows(
        data: Stream, evict: Policy, trigger: Policy, partial: bool) -> None:
    """All nine eviction x trigger combinations (drawn at random): count and delta
    firings once their tuple has entered, time firings once the horizon passes them."""
    window = ws.Sliding(evict, trigger, partial=partial)
    result = run(window, data)
    assert_same(emitted(result), final_oracle_rows(result, window))


COMBINATIONS = [(e, t) for e in (Count(2), Time(2 * HALF), Delta("a", 1))
                for t in (Count(2), Time(3 * HALF, HALF), Delta("a", 2))]


@settings(max_examples=25, deadline=None)
@given(data=streams())
def test_each_of_the_nine_sliding_combinations_on_a_stream(data: Stream) -> None:
    """Every combination on the same random stream (none left to chance)."""
    for evict, trigger in COMBINATIONS:
        window = ws.Sliding(evict, trigger)
        result = run(window, data)
        assert_same(emitted(result), final_oracle_rows(result, window))


@settings(max_examples=120, deadline=None)
@given(data=streams(), size=st.one_of(counts, times, deltas, st.just(Punctuation("p"))),
       partial=st.booleans())
def test_policy_tumbling_windows_on_a_stream_emit_the_final_rows(
        data: Stream, size: Policy, partial: bool) -> None:
    """Count, time, delta and punctuation: a window once the tuple that fires it has
    entered (time: once the horizon passes its firing, empty windows too); the unfired
    tail stays in state whatever `partial` (a stream has no end)."""
    window = ws.Tumbling(size, partial=partial)
    result = run(window, data)
    assert_same(emitted(result), final_oracle_rows(result, window))


def test_each_policy_tumbling_kind_runs_on_a_stream() -> None:
    data: Stream = ([table([("a", s * HALF, 1.0, s, s % 4 == 0) for s in (1, 2, 5)]),
                     table([("a", s * HALF, 2.0, s, s % 4 == 0) for s in (8, 9)]),
                     table([("a", 30 * HALF, 3.0, 0, False)]), table([])], 1000, False)
    for size in (Count(2), Time(2 * HALF), Delta("a", 1), Punctuation("p")):
        window = ws.Tumbling(size)
        result = run(window, data)
        want = final_oracle_rows(result, window)
        assert want, size
        assert_same(emitted(result), want)


def test_a_watermark_jump_over_fifty_periods_emits_every_firing_once() -> None:
    """One batch moves the watermark across 50 periods of a time trigger: the key's one
    timer fires once, and that one step emits all 50 firings (and the data step the
    firings up to its tuple)."""
    period = 2 * HALF
    first = table([("a", 1 * period, 1.0, 0, False)])
    jump = table([("b", 60 * period, 5.0, 0, False)])  # another key moves the watermark
    for window in (ws.Sliding(Count(3), Time(period)), ws.Sliding(Time(3 * period),
                                                                  Time(period)),
                   ws.Tumbling(Time(period))):
        result = run(window, ([first, table([]), jump, table([])], 1000, False))
        steps = [b for b in result.emitted if "a" in b.column("k").to_pylist()]
        assert len(steps) == 1  # one step (the timer's, in the last batch) emits them all
        taus = steps[0].column("time").to_pylist()
        assert taus == [k * period for k in range(1, 60)]  # below the horizon 60 s - 1 ms
        assert result.watermarks == [0, 999, 999, 59_999]
        assert_same(emitted(result), final_oracle_rows(result, window))


TRANSCRIPTS = Path(__file__).parents[1] / "acceptance" / "spl_transcripts.json"
NAMES = pa.schema([*INPUT, pa.field("name", pa.string())])
COLLECT = (built_in_job("collect", "name", "string", pa.list_(pa.string()), None),)
COLLECTED = pa.schema([pa.field("k", pa.string()),
                       *[pa.field(f, pa.int64()) for f in ("window_start", "window_end",
                                                           "time")],
                       pa.field("collect_name", pa.list_(pa.string()))])


def policy(spec: dict[str, Any]) -> Policy:
    """A transcript's policy (times in seconds) in ticks of microseconds."""
    if spec["kind"] == "count":
        return Count(spec["n"])
    if spec["kind"] == "time":
        return Time(round(spec["t"] * SECOND), round(spec.get("align", 0) * SECOND))
    if spec["kind"] == "delta":
        return Delta("a", spec["d"])
    return Punctuation("p")


def transcript_window(case: dict[str, Any]) -> ws.Sliding | ws.Tumbling:
    partial = case.get("partial", False)
    if "tumbling" in case:
        return ws.Tumbling(policy(case["tumbling"]), partial=partial)
    trigger = policy(case["trigger"]) if "trigger" in case else Count(1)
    return ws.Sliding(policy(case["evict"]), trigger, partial=partial)


def in_time_order(case: dict[str, Any]) -> bool:
    times = [s for _, s, _, _ in case["tuples"]]
    return times == sorted(times)


CASES = [c for c in json.loads(TRANSCRIPTS.read_text())["cases"] if in_time_order(c)]


def test_the_transcripts_in_time_order_are_replayed() -> None:
    """A stream's tuples enter in time order: the two transcripts whose arrival order
    goes back in time (count-time, time-count) describe a batch with `order`, which a
    stream refuses; the twelve others (the seven other combinations, the four
    tumbling kinds) are replayed. Those two combinations run in the property tests."""
    assert len(CASES) == 12
    sliding = {(c["evict"]["kind"], c["trigger"]["kind"]) for c in CASES if "evict" in c}
    assert len(sliding) == 7 and ("count", "time") not in sliding \
        and ("time", "count") not in sliding
    assert {c["tumbling"]["kind"] for c in CASES if "tumbling" in c} == \
        {"count", "time", "delta", "punctuation"}


def test_transcripts_replayed_as_streams_emit_their_firings() -> None:
    """Each transcript's tuples one per micro-batch (lateness 1 ms): the rows emitted are
    the transcript's emitted firings at or below the last watermark (the newest tuple
    minus 1 ms), as (time in seconds, names in the window)."""
    for case in CASES:
        window = transcript_window(case)
        # the attribute `a` holds the transcript's value (whole numbers and halves, in
        # tenths: a delta d becomes 10 d)
        rows = [("x", round(s * SECOND), 0.0, round(v * 10), bool(p), name)
                for name, s, v, p in case["tuples"]]
        scaled = dict(case)
        for role in ("evict", "trigger", "tumbling"):
            if role in case and case[role]["kind"] == "delta":
                scaled[role] = {**case[role], "d": case[role]["d"] * 10}
        spl = kernel(transcript_window(scaled), COLLECT, COLLECTED)
        batches = [pa.table({n: pa.array([r[i]], NAMES.field(n).type)
                             for i, n in enumerate(NAMES.names)}) for r in rows]
        stream = StreamKernel(spl, NAMES, "t", "integer", ("t", "v", "a", "p", "name"),
                              "spec")
        result = simulate(stream, [*batches, NAMES.empty_table()], "k", 1000)
        assert result.late == 0
        bound = result.watermarks[-1] * 1000
        assert bound == rows[-1][1] - 1000
        got = [(r["time"] / SECOND, r["collect_name"])
               for b in result.emitted for r in b.to_pylist()]
        want = [(s[1], s[2]) for s in case["steps"]
                if s[0] == "fire" and s[3] and s[1] * SECOND <= bound]
        assert got == want, (case["name"], window)


FLOAT_INPUT = pa.schema([INPUT.field("k"), pa.field("t", pa.float64()),
                         *[INPUT.field(c) for c in ("v", "a", "p")]])


@settings(max_examples=60, deadline=None)
@given(data=streams(), evict=st.one_of(counts, times, deltas),
       t=st.integers(1, 6), align=st.integers(-3, 3), tumbling=st.booleans())
def test_time_firings_over_float_time_on_a_stream(
        data: Stream, evict: Policy, t: int, align: int, tumbling: bool) -> None:
    """Float time (whole ticks, as Spark's watermark reads a float's floor): the next
    firing's timer (`wake`) is found for float firing times too."""
    batches, lateness, emit_late = data
    batches = [b.cast(FLOAT_INPUT) for b in batches]
    trigger = Time(float(t * HALF), float(align * HALF))
    window = ws.Tumbling(trigger) if tumbling else ws.Sliding(evict, trigger)
    spl = kernel(window)
    spl = SplKernel(**{**spl.__dict__, "time_kind": "float"})
    stream = StreamKernel(spl, FLOAT_INPUT, "t", "float", ORDER, "spec")
    result = simulate(stream, batches, "k", lateness, emit_late)
    check_late(result, batches, lateness, emit_late)
    got = [{**r, **{c: None if r[c] is None else int(r[c])
                    for c in ("window_start", "window_end", "time")}}
           for r in emitted(result)]
    assert_same(got, final_oracle_rows(result, window))


def test_a_jump_over_more_than_max_ticks_periods_fails_naming_t() -> None:
    """The firings of one key in one step count against `max_ticks` (a stream's key has
    no end, so its whole span does not): 10 are allowed, the jump makes 59 (1 s to 59 s)."""
    period = 2 * HALF
    first = table([("a", 1 * period, 1.0, 0, False)])
    jump = table([("b", 60 * period, 5.0, 0, False)])
    window = ws.Sliding(Count(3), Time(period, max_ticks=10))
    with pytest.raises(ws.WispInputError) as caught:
        run(window, ([first, table([]), jump, table([])], 1000, False))
    assert str(caught.value) == (
        "`t` must make at most max_ticks=10 time trigger firings per key, found about 59 "
        "for one key; pass Time(..., max_ticks=...) to allow more, or a larger `t` or a "
        "shorter span")
