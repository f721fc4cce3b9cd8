"""A user's mergeable aggregator (`ws.Aggregator`) over sliding frames: its cost as the
frame widens, against the same result as a `ws.udaf` and from the built-ins.

    python -m benchmarks.user_aggregator [--quick] [--events 1000000,10000000]
                                         [--keys 100] [--runs 3] [--widths 10,1000]
                                         [--frames rows,range]
                                         [--run-budget 180] [--fallback-events 3000000]
                                         [--udaf-budget 180] [--output out/user_aggregator.md]

Data: `benchmarks.data.generate` (`k`, `t`, `v`; 100 keys, a key's events ~100 ticks
apart), written to Parquet once per size. The aggregation is max(v) - min(v) over each
event's frame, by key in time order, for two frames at each width w:

- `ws.Rows(-(w - 1), 0, partial=True)`: the last w events (partial: one row per event,
  the key's first w - 1 events over the events there are, so every width emits the
  same 1 row per event and their times compare);
- `ws.Range.past(w * 100 - 1)`: the events of the last w * 100 - 1 ticks, about w
  events (the `range` rows of `benchmarks.run`).

Three ways to the same column `r`, each as (k, time, r):

- `aggregator`: `ws.aggregate(MaxMinusMin(), "v")`, the user aggregator below (a tuple
  state (min, max)); wisp merges states over the frames (two stacks,
  `wisp.kernels.merging`), so its cost should not grow with w;
- `udaf`: `ws.udaf(spread, "v")` (`spread(v, t)` is `v.max() - v.min()`), one Python
  call per window over the window's values: O(n * w) work. At a size beyond the first,
  it is skipped where the previous size's time scaled by the events would pass
  `--udaf-budget` seconds a run (the table says so);
- `built-ins`: `ws.max("v"), ws.min("v")` on the same frames, `max_v - min_v`.

Before timing, the three results' sums of `r` (and row counts) are compared, each
query's first run; that aggregate over every output row is also its warm-up. Then
each query's time is the median of `--runs` noop writes
(`df.write.format("noop")`: every row computed, none stored), all the queries of one
size (both frames, both widths, the three ways) taking turns run after run, so that
a change in the machine's load between runs touches each alike and every ratio
(between ways, between widths) comes from the same runs; in one local[2] session
started by `wisp.session()`.

`--quick`: the first size only (1M events). The full run adds 10M events, unless the
1M run says a 10M run of the aggregator would take over `--run-budget` seconds (its
slowest 1M median times 10): then 3M events (`--fallback-events`), and the output says
so.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
import wisp.windowed

from .data import Data, generate

ROOT = Path(__file__).resolve().parent.parent

# Spark's Python workers unpickle the aggregator by reference to this module (see
# `main`), as they would a user's own module: the repository root goes on their path
# (PYTHONPATH, read when the JVM starts them), as tests/conftest.py does for tests/.
_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if str(ROOT) not in _PATH:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *_PATH])


class MaxMinusMin(ws.Aggregator):
    """max - min of the values; the state is a tuple (min, max), None for no values."""

    returns = "double"

    def zero(self) -> Any:
        return None

    def add(self, state: Any, values: Any, times: Any) -> Any:
        if len(values) == 0:
            return state
        return self.merge(state, (float(values.min()), float(values.max())))

    def merge(self, a: Any, b: Any) -> Any:
        if a is None:
            return b
        if b is None:
            return a
        return (min(a[0], b[0]), max(a[1], b[1]))

    def finish(self, state: Any) -> Any:
        return None if state is None else state[1] - state[0]


def spread(values: Any, times: Any) -> float | None:
    """The udaf: max - min of one window's values."""
    return float(values.max() - values.min()) if len(values) else None


WAYS = ("aggregator", "udaf", "built-ins")


@dataclass(frozen=True)
class Frame:
    kind: str  # "rows" or "range"
    w: int

    def window(self, data: Data) -> Any:
        if self.kind == "rows":
            return ws.Rows(-(self.w - 1), 0, partial=True)
        return ws.Range.past(self.w * data.gap - 1)

    def label(self, data: Data) -> str:
        if self.kind == "rows":
            return f"Rows(-{self.w - 1:,}, 0), w = {self.w:,}"
        return f"Range.past({self.w * data.gap - 1:,}), ~{self.w:,} events"


@dataclass
class Row:
    events: int
    frame: str
    w: int
    kind: str
    seconds: dict[str, float | None]
    """Each way's median run."""
    fastest: dict[str, float | None]
    """Each way's fastest run: other programs on the machine only ever slow a run, so
    under a varying load the fastest runs are the steadier measure (shown beside the
    medians in the widening table)."""
    strategy: str
    check: str
    note: str = ""


def queries(data: Data, frame: Frame, aggregator: ws.Aggregator,
            with_udaf: bool) -> tuple[dict[str, DataFrame], str]:
    """The three queries as (k, time, r), and the strategy wisp chose for the
    aggregator's."""
    windowed = ws.events(data.df, time="t", key="k").window(frame.window(data))
    mine = windowed.agg(ws.aggregate(aggregator, "v").alias("r"))
    run = wisp.windowed._RUNS.get(mine)
    strategy = run.plan.strategy if run is not None else "-"
    found = {"aggregator": mine.select("k", "time", "r")}
    if with_udaf:
        found["udaf"] = windowed.agg(ws.udaf(spread, "v", returns="double").alias("r")).select(
            "k", "time", "r")
    found["built-ins"] = windowed.agg(ws.max("v"), ws.min("v")).select(
        "k", "time", (F.col("max_v") - F.col("min_v")).alias("r"))
    return found, strategy


def fingerprint(df: DataFrame) -> tuple[int, float]:
    """Rows and the sum of `r` (an aggregate over every output row)."""
    row = df.agg(F.count(F.lit(1)), F.sum("r")).first()
    assert row is not None
    return int(row[0]), float(row[1] or 0.0)


def agree(ours: tuple[int, float], theirs: tuple[int, float]) -> bool:
    a, b = ours[1], theirs[1]
    return ours[0] == theirs[0] and abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def once(df: DataFrame) -> float:
    begin = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - begin


def timed_in_turn(found: dict[str, DataFrame], runs: int) -> dict[str, list[float]]:
    """Each query's times of `runs` noop writes, the queries taking turns (so that a
    change in the machine's load between runs touches every query alike)."""
    times: dict[str, list[float]] = {name: [] for name in found}
    for turn in range(runs):
        for name, df in found.items():
            times[name].append(once(df))
        print(f"  run {turn + 1} of {runs} (load average {os.getloadavg()[0]:.1f}): "
              + ", ".join(f"{name} {taken[-1]:.1f} s" for name, taken in times.items()),
              flush=True)
    return times


def run_size(data: Data, frames: list[Frame], aggregator: ws.Aggregator, runs: int,
             skips: dict[Frame, str]) -> list[Row]:
    """Every frame's queries at one size: each checked (its warm-up), then all of them
    timed in turn, run after run, so that the ratios between widths come from the
    same runs as those between the ways."""
    checked: dict[Frame, tuple[str, str]] = {}
    timing: dict[str, DataFrame] = {}
    for frame in frames:
        found, strategy = queries(data, frame, aggregator, with_udaf=not skips[frame])
        prints = {name: fingerprint(df) for name, df in found.items()}  # also the warm-up
        reference = prints["aggregator"]
        bad = [name for name, p in prints.items() if not agree(reference, p)]
        checked[frame] = strategy, (
            f"agree ({reference[0]:,} rows)" if not bad else
            "DISAGREE: " + ", ".join(f"{n} {prints[n]}" for n in bad) + f" against {reference}")
        timing.update({f"{frame.kind} {frame.w} {way}": df for way, df in found.items()})
    times = timed_in_turn(timing, runs)
    rows = []
    for frame in frames:
        taken = {way: times.get(f"{frame.kind} {frame.w} {way}") for way in WAYS}
        seconds = {way: None if t is None else statistics.median(t) for way, t in taken.items()}
        fastest = {way: None if t is None else min(t) for way, t in taken.items()}
        strategy, check = checked[frame]
        rows.append(Row(data.events, frame.label(data), frame.w, frame.kind, seconds,
                        fastest, strategy, check, skips[frame]))
    return rows


def udaf_skip(rows: list[Row], frame: Frame, events: int, budget: float) -> str:
    """Why the udaf is not run on this frame at `events`, or "": where the same frame's
    udaf at a smaller size, scaled by the events, would take over `budget` seconds."""
    earlier = [r for r in rows if r.kind == frame.kind and r.w == frame.w
               and r.seconds["udaf"] is not None and r.events < events]
    if not earlier:
        return ""
    last = max(earlier, key=lambda r: r.events)
    seconds = last.seconds["udaf"]
    assert seconds is not None
    estimate = seconds * events / last.events
    if estimate <= budget:
        return ""
    return (f"udaf not run: ~{estimate:.0f} s a run (its {last.events / 1e6:g}M time "
            f"{seconds:.1f} s, scaled by the events) over the {budget:.0f} s budget; O(n*w)")


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(rows: list[Row]) -> list[str]:
    lines = ["| events | frame | aggregator s | udaf s | built-ins s | aggregator / udaf | "
             "aggregator / built-ins | wisp strategy (aggregator) | check |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        s = r.seconds
        check = r.check + (f"; {r.note}" if r.note else "")
        lines.append(f"| {r.events / 1e6:g}M | {r.frame} | {seconds_text(s['aggregator'])} | "
                     f"{seconds_text(s['udaf'])} | {seconds_text(s['built-ins'])} | "
                     f"{ratio(s['aggregator'], s['udaf'])} | "
                     f"{ratio(s['aggregator'], s['built-ins'])} | {r.strategy} | {check} |")
    return lines


def widening(rows: list[Row], widths: list[int]) -> list[str]:
    """Each way's time at the widest w over its time at the narrowest (target for the
    aggregator: within 1.5)."""
    narrow, wide = min(widths), max(widths)
    lines = [f"Time at w = {wide:,} / time at w = {narrow:,} (the aggregator's target: "
             "within 1.5x), of the medians and of the fastest runs:", "",
             "| events | frame | aggregator | udaf | built-ins | aggregator, fastest runs |",
             "|---|---|---:|---:|---:|---:|"]
    for events in sorted({r.events for r in rows}):
        for kind in ("rows", "range"):
            found = {r.w: r for r in rows if r.events == events and r.kind == kind}
            if narrow not in found or wide not in found:
                continue
            cells = [ratio(found[wide].seconds[way], found[narrow].seconds[way])
                     for way in WAYS]
            cells.append(ratio(found[wide].fastest["aggregator"],
                               found[narrow].fastest["aggregator"]))
            lines.append(f"| {events / 1e6:g}M | {kind} | " + " | ".join(cells) + " |")
    return lines


def machine(spark: SparkSession) -> list[str]:
    memory = "unknown"
    if Path("/proc/meminfo").exists():
        total = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
        memory = f"{int(total) / 2**20:.1f} GiB"
    return [
        f"- CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"memory {memory}; {platform.system()} {platform.release()}",
        f"- Spark {pyspark.__version__} (local[2], `wisp.session()`), Python "
        f"{platform.python_version()}, numpy {np.__version__}; "
        f"spark.sql.shuffle.partitions = {spark.conf.get('spark.sql.shuffle.partitions')}",
        "- load average (1, 5, 15 min) at the end: "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}",
    ]


def size_plan(rows: list[Row], events: int, budget: float, fallback: int) -> tuple[int, str]:
    """The size to run in place of `events` and why: `events` itself, unless the
    slowest aggregator run of the largest size so far, scaled by the events, would take
    over `budget` seconds (then `fallback`, if it is larger than that size)."""
    if not rows:
        return events, ""
    last = max(r.events for r in rows)
    slowest = max(r.seconds["aggregator"] or 0.0 for r in rows if r.events == last)
    estimate = slowest * events / last
    if estimate <= budget or fallback <= last:
        return events, ""
    return fallback, (f"{events / 1e6:g}M not run: its slowest aggregator run would take "
                      f"~{estimate:.0f} s (the {last / 1e6:g}M one, {slowest:.1f} s, "
                      f"scaled by the events), over the {budget:.0f} s budget; "
                      f"{fallback / 1e6:g}M instead")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first size only (1M)")
    parser.add_argument("--events", default="1000000,10000000",
                        help="comma-separated sizes, smallest first")
    parser.add_argument("--fallback-events", type=int, default=3_000_000,
                        help="the size run in place of one over --run-budget")
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--widths", default="10,1000")
    parser.add_argument("--frames", default="rows,range", help="rows, range or both")
    parser.add_argument("--run-budget", type=float, default=180.0,
                        help="seconds a run of the aggregator may take at a size beyond "
                             "the first, estimated from the size before")
    parser.add_argument("--udaf-budget", type=float, default=180.0,
                        help="skip a udaf whose run would take longer (s), estimated "
                             "from the previous size")
    parser.add_argument("--output", default=None, help="write the tables here too")
    args = parser.parse_args()
    sizes = sorted(int(e) for e in args.events.split(","))
    if args.quick:
        sizes = sizes[:1]
    widths = sorted(int(w) for w in args.widths.split(","))
    # Run as `python -m`, this file is `__main__`, whose classes cloudpickle copies by
    # value into every task; the class from the module itself travels by reference, as
    # a user's aggregator from their own module would (importable on the workers: see
    # PYTHONPATH above).
    from benchmarks.user_aggregator import MaxMinusMin as Imported

    aggregator = Imported()
    begin = time.perf_counter()
    load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    spark = ws.session("local[2]", app_name="wisp-bench-user-aggregator")
    spark.sparkContext.setLogLevel("ERROR")
    rows: list[Row] = []
    notes: list[str] = []
    head = (f"max(v) - min(v) over {args.keys:,} keys, median of {args.runs} runs (noop "
            f"write) after a warm-up, local[2], {time.strftime('%Y-%m-%d')}.")
    print(head, flush=True)
    with tempfile.TemporaryDirectory(prefix="wisp-bench-agg-") as directory:
        for wanted in sizes:
            events, note = size_plan(rows, wanted, args.run_budget, args.fallback_events)
            if note:
                notes.append(f"- {note}")
                print(note, flush=True)
            if any(r.events == events for r in rows):
                continue
            data = generate(spark, directory, events, args.keys)
            frames = [Frame(kind, w) for kind in ("rows", "range") for w in widths
                      if kind in args.frames.split(",")]
            skips = {f: udaf_skip(rows, f, events, args.udaf_budget) for f in frames}
            started = time.perf_counter()
            found = run_size(data, frames, aggregator, args.runs, skips)
            rows += found
            print("\n".join(table(found)[2:]), flush=True)
            print(f"({events / 1e6:g}M: {time.perf_counter() - started:.0f} s)", flush=True)
    lines = [head, "", *table(rows), "", *widening(rows, widths), "", *notes,
             *machine(spark), f"- load average (1, 5, 15 min) at the start: {load_before}",
             f"- {(time.perf_counter() - begin) / 60:.1f} min in all"]
    print("\n".join(lines), flush=True)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text("\n".join(lines) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
