"""Run the benchmarks and write BENCHMARKS.md: `python -m benchmarks.run [--quick]`.

Every timing is the median of `--runs` (default 3) runs of the action
`df.write.format("noop").mode("overwrite").save()` in one local[2] session; wisp and
the native PySpark equivalent run in the same session on the same Parquet data, and
their results are compared before anything is timed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp
from wisp.session import ARROW_BATCH_BYTES

from .cases import CASES, STRATEGIES
from .data import Data, generate

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Item:
    """One benchmark row to run: a case at a parameter `w` over a data set."""

    case: str
    data: str
    w: int
    native: bool = True
    native_runs: int | None = None  # fewer timed native runs where each takes long
    runs: int | None = None  # more timed runs than --runs where each is short
    why_not: str = "native not run here (O(n*w)); compared at 1M"


@dataclass
class Row:
    item: Item
    events: int
    wisp_s: float
    native_s: float | None
    strategy: str
    agreement: str


NOT_EQUIVALENT = "not an equivalent (same rows on this data only)"
NOT_AT_10M = "native not run at 10M; compared at 1M"
NO_NATIVE = "no native counterpart (see the case's docstring); checked by the test suite"
EXPLODES = ("native not run (each event exploded into ~1,000 windows); compared at "
            "size/hop 10")
EXPANDS = ("native not run (F.window copies every event into size/hop windows: "
           "~10x the size/hop 100 row); compared on 100K events")
SLIDING = ("sliding_count", "sliding_time", "sliding_delta")


MANY = "1M over 100K keys"
"""1M events over 100,000 keys (about 10 events a key): the cost per key."""


SHORT_RUNS = 9
"""Timed runs of each side of the full benchmark's rows on 1M events or fewer."""


def plan(quick: bool) -> tuple[dict[str, tuple[int, float, int]], list[Item]]:
    """Data sets (events, hot-key share, keys) and the rows to run."""
    data = {"1M": (1_000_000, 0.0, 100)}
    widths = (10, 1_000) if quick else (10, 100, 1_000, 10_000)
    items = [Item("shuffle_sort", "1M", 0), Item("identity_arrow", "1M", 0),
             Item("worker_sort_arrow", "1M", 0)]
    # Spark's own frames at w = 1000 (quick) or 10 000 (full) run once for the check and
    # once timed: they take minutes
    slow = 1_000 if quick else 10_000
    items += [Item(c, "1M", w, native_runs=1 if w >= slow else None)
              for c in ("rows", "range_") for w in widths]
    items.append(Item("cumulative", "1M", 0))
    if quick:  # one row per family beside the relative-time windows
        items += [Item("hopping", "1M", 10), Item("hopping_ntz", "1M", 1),
                  Item("sliding_count", "1M", 10),
                  Item("since", "1M", 0), Item("session", "1M", 60)]
        return data, items
    data["100K"] = (100_000, 0.0, 100)
    data["10M"] = (10_000_000, 0.0, 100)
    data["10M skew"] = (10_000_000, 0.5, 100)
    data[MANY] = (1_000_000, 0.0, 100_000)
    # F.window at size/hop 100 takes minutes on 1M events: one timed run
    items += [Item("hopping", "1M", r, native_runs=1 if r >= 100 else None)
              for r in (1, 10, 100)]
    items += [Item("hopping", "1M", 1_000, native=False, why_not=EXPANDS),
              Item("hopping", "100K", 1_000, native_runs=1)]
    items += [Item("hopping_ntz", "1M", r) for r in (1, 10)]
    # Spark's frames at w = 1000 are timed three times in the rows and range_ rows above
    items += [Item(c, "1M", w, native_runs=1 if w >= 1_000 else None)
              for c in SLIDING for w in (10, 1_000)]
    items += [Item("since", "1M", 0), Item("since_groupby", "1M", 0), Item("trailing", "1M", 24),
              Item("session", "1M", 60), Item("session", "1M", 600)]
    # the other window kinds, narrow and wide: flat cost, and native where there is one
    items += [Item("count_windows", "1M", 10), Item("count_windows", "1M", 1_000,
                                                     native_runs=1),
              Item("policy_tumbling", "1M", 10), Item("policy_tumbling", "1M", 1_000),
              Item("interval_hopping", "1M", 10), Item("interval_hopping_finite", "1M", 10),
              Item("interval_hopping", "1M", 1_000, native=False, why_not=EXPLODES)]
    items += [Item(c, "1M", w, native=False, why_not=NO_NATIVE)
              for c, widths in (("snapshot", (10, 1_000)), ("dynamic_clock", (10, 1_000)),
                                ("capped_session", (600, 6_000))) for w in widths]
    items += [Item("shuffle_sort", "10M", 0), Item("identity_arrow", "10M", 0),
              Item("worker_sort_arrow", "10M", 0)]
    items += [Item(c, "10M", w, native=w <= 100) for c in ("rows", "range_")
              for w in (10, 1_000, 10_000)]
    items += [Item("hopping", "10M", r, native=r <= 10, native_runs=1,
                   why_not=NOT_AT_10M if r < 1_000 else NOT_AT_10M.replace("1M", "100K"))
              for r in (1, 10, 100, 1_000)]
    items += [Item(c, "10M", w, native=w <= 10, native_runs=1, why_not=NOT_AT_10M)
              for c in SLIDING for w in (10, 1_000)]
    items += [Item("since", "10M", 0, native_runs=1),
              Item("since_groupby", "10M", 0, native_runs=1),
              Item("trailing", "10M", 24, native_runs=1),
              Item("session", "10M", 60, native_runs=1), Item("session", "10M", 600, native_runs=1)]
    # at 1M the interval rows' fixed costs (the horizon's scan, the Arrow round trip)
    # weigh most: the same row at 10M
    items += [Item("interval_hopping", "10M", 10, native_runs=1),
              Item("interval_hopping_finite", "10M", 10, native_runs=1)]
    # many short keys: Since is left out, as each key's empty periods up to the newest
    # event make 27.8M rows here
    items += [Item(c, MANY, w) for c in ("rows", "range_") for w in (10, 1_000)]
    items += [Item("sliding_time", MANY, 10), Item("hopping", MANY, 10),
              Item("session", MANY, 60), Item("trailing", MANY, 24)]
    items += [Item(c, "10M skew", w, native=False) for c in ("rows", "range_")
              for w in (10, 1_000)]
    # the rows of about a second move by up to 20 % from run to run: their medians
    # are taken over SHORT_RUNS runs (each side), the 10M rows over --runs
    return data, [dataclasses.replace(i, runs=SHORT_RUNS)
                  if not i.data.startswith("10M") and i.native_runs is None else i
                  for i in items]


def session(spark_defaults: bool = False) -> SparkSession:
    """A local[2] session as `wisp.session()` starts one; with `spark_defaults`, Spark's
    own cap on an Arrow batch's bytes stays (measured against every row sent)."""
    spark = wisp.session("local[2]", app_name="wisp-bench")
    spark.sparkContext.setLogLevel("ERROR")
    if spark_defaults:
        spark.conf.unset(ARROW_BATCH_BYTES)
    return spark


def once(df: DataFrame) -> float:
    """Seconds for one run of the whole query (a noop write: nothing is stored)."""
    begin = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - begin


def timed(df: DataFrame, runs: int) -> float:
    return statistics.median(once(df) for _ in range(runs))


def timed_pair(ours: DataFrame, theirs: DataFrame | None, runs: int,
               their_runs: int) -> tuple[float, float | None]:
    """Medians of wisp's and native's runs, taken in turn (wisp, native, wisp, ...), so
    that a drift of the machine or the JVM's warm-up favours neither side. Where native
    runs fewer times because it takes minutes, wisp's runs come first, after one
    untimed run: Spark stops Python workers idle for a minute, so a wisp run right
    after a minutes-long native query (or comparison) would also time the workers'
    restart (about 1 s: measured 2.0 s against 1.0-1.25 s for `Range` w = 10 at 1M
    after 75 s idle)."""
    if theirs is not None and their_runs < runs:
        once(ours)
        mine = [once(ours) for _ in range(runs)]
        others = [once(theirs) for _ in range(their_runs)]
        return statistics.median(mine), statistics.median(others)
    mine = []
    others = []
    for turn in range(max(runs, their_runs if theirs is not None else 0)):
        if turn < runs:
            mine.append(once(ours))
        if theirs is not None and turn < their_runs:
            others.append(once(theirs))
    return statistics.median(mine), statistics.median(others) if others else None


def agreement(ours: DataFrame, theirs: DataFrame, on: tuple[str, ...],
              columns: tuple[str, ...]) -> str:
    """Join on the columns `on` (e.g. (k, t), or (k, window_start, window_end)): rows in
    all, rows on one side only, values null on one side only, and the largest difference
    per column relative to max(|native|, 1)."""
    a = ours.select(*on, F.lit(True).alias("a_row"),
                    *[F.col(c).alias(f"a_{c}") for c in columns])
    b = theirs.select(*on, F.lit(True).alias("b_row"),
                      *[F.col(c).alias(f"b_{c}") for c in columns])
    joined = a.join(b, list(on), "full_outer")
    one_side = F.col("a_row").isNull() != F.col("b_row").isNull()
    one_null = F.lit(False)
    for c in columns:
        one_null = one_null | (F.col(f"a_{c}").isNull() != F.col(f"b_{c}").isNull())
    stats = [F.count("*").alias("rows"), F.count_if(one_side).alias("unmatched"),
             F.count_if(~one_side & one_null).alias("nulls")]
    for c in columns:
        diff = F.abs(F.col(f"a_{c}") - F.col(f"b_{c}"))
        stats.append(F.max(diff / F.greatest(F.abs(F.col(f"b_{c}")), F.lit(1.0))).alias(c))
    row = joined.agg(*stats).first()
    assert row is not None
    worst = max(float(row[c] or 0.0) for c in columns)
    bad = row["unmatched"] or row["nulls"] or worst > 1e-9
    nulls = f", {row['nulls']} null on one side" if row["nulls"] else ""
    return (f"{'DISAGREE' if bad else 'agree'} ({row['rows']:,} rows, {row['unmatched']} "
            f"unmatched{nulls}, max rel diff {worst:.1e})")


def machine(spark: SparkSession) -> list[str]:
    memory = "unknown"
    if Path("/proc/meminfo").exists():
        total = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
        memory = f"{int(total) / 2**20:.1f} GiB"
    conf = spark.conf
    return [
        f"- CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"memory {memory}; {platform.system()} {platform.release()}",
        f"- Spark {pyspark.__version__} (master local[2], driver memory default), Python "
        f"{platform.python_version()}, numpy {np.__version__}, pyarrow {pa.__version__}",
        f"- load average (1, 5, 15 min) at the end of the run: "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (on an idle machine it is "
        "below the core count; far above it, every time here is inflated)",
        f"- spark.sql.shuffle.partitions = {conf.get('spark.sql.shuffle.partitions')}, "
        f"adaptive execution = {conf.get('spark.sql.adaptive.enabled')}, "
        "spark.sql.execution.arrow.maxRecordsPerBatch = "
        f"{conf.get('spark.sql.execution.arrow.maxRecordsPerBatch')}, "
        f"{ARROW_BATCH_BYTES} = {conf.get(ARROW_BATCH_BYTES)}",
    ]


def run_item(item: Item, data: Data, runs: int) -> Row:
    case = CASES[item.case]
    ours, theirs = case.build(data, item.w)
    strategy = STRATEGIES.get(id(ours), "-")
    verdict = "-"
    if theirs is not None and case.compare and item.native:
        verdict = agreement(ours, theirs, case.on, case.compare)
        if not case.equivalent:
            verdict = f"{NOT_EQUIVALENT}: {verdict}"
    elif theirs is not None or not item.native:
        verdict = item.why_not
    wisp_s, native_s = timed_pair(ours, theirs if item.native else None, runs,
                                  item.native_runs or runs)
    return Row(item, data.events, wisp_s, native_s, strategy, verdict)


def _rate(events: int, seconds: float) -> str:
    """Events per second: `1.05 M`, or `1.6 K` below 0.01 M."""
    per_second = events / seconds
    return f"{per_second / 1e6:.2f} M" if per_second >= 1e4 else f"{per_second / 1e3:.1f} K"


def table(rows: list[Row]) -> list[str]:
    lines = ["| case | events | w | wisp s | native s | wisp/native | wisp events/s | "
             "native events/s | wisp strategy | check |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w = CASES[r.item.case].label(r.item.w)
        native = f"{r.native_s:.2f}" if r.native_s is not None else "-"
        ratio = f"{r.wisp_s / r.native_s:.2f}" if r.native_s else "-"
        if r.native_s and not CASES[r.item.case].equivalent:
            ratio = f"({ratio})"
        native_rate = _rate(r.events, r.native_s) if r.native_s else "-"
        lines.append(f"| {r.item.case.rstrip('_')} | {r.item.data} | {w} | {r.wisp_s:.2f} | "
                     f"{native} | {ratio} | {_rate(r.events, r.wisp_s)} | "
                     f"{native_rate} | {r.strategy} | {r.agreement} |")
    return lines


HAND_KEPT = ("additional.md", "findings.md")
"""Sections maintained by hand in benchmarks/, copied after the results on every run."""


def write(rows: list[Row], facts: list[str], quick: bool, seconds: float,
          output: str) -> None:
    head = (ROOT / "benchmarks" / "intro.md").read_text()
    kept = [(ROOT / "benchmarks" / name).read_text().rstrip() for name in HAND_KEPT]
    mode = "make bench-quick" if quick else "make bench"
    out = [head.rstrip(), "", "## Machine", "", *facts, "",
           f"## Results (`{mode}`, {seconds / 60:.1f} min in all)", "", *table(rows), ""]
    for section in kept:
        out += [section, ""]
    (ROOT / output).write_text("\n".join(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="1M events, w = 10 and 1000, one row per other family")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--data", default=None,
                        help="comma-separated data sets (1M, 100K, 10M, 10M skew)")
    parser.add_argument("--widths", default=None,
                        help="comma-separated parameters w (widths, size/hop ratios, gaps)")
    parser.add_argument("--skip-native", action="store_true",
                        help="time wisp only (no native runs, no comparison)")
    parser.add_argument("--spark-defaults", action="store_true",
                        help=f"keep Spark's default {ARROW_BATCH_BYTES} (wisp.session() "
                             "lifts it)")
    parser.add_argument("--output", default="BENCHMARKS.md", help="the report to write")
    args = parser.parse_args()
    begin = time.perf_counter()
    spark = session(args.spark_defaults)
    datasets, items = plan(args.quick)
    if args.only:
        items = [i for i in items if i.case in args.only.split(",")]
    if args.data:
        items = [i for i in items if i.data in args.data.split(",")]
    if args.skip_native:
        items = [dataclasses.replace(i, native=False, why_not="native not run (--skip-native)")
                 for i in items]
    if args.widths:
        items = [i for i in items if i.w == 0 or str(i.w) in args.widths.split(",")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="wisp-bench-") as directory:
        loaded = {name: generate(spark, directory, n, keys=keys, hot_share=hot)
                  for name, (n, hot, keys) in datasets.items()
                  if any(i.data == name for i in items)}
        warm = next(iter(loaded.values()))
        timed(CASES["shuffle_sort"].build(warm, 0)[0], 1)  # warm up the JVM
        for item in items:
            started = time.perf_counter()
            row = run_item(item, loaded[item.data], max(args.runs, item.runs or 0))
            rows.append(row)
            print(f"{table([row])[-1]} ({time.perf_counter() - started:.0f} s)", flush=True)
        facts = machine(spark)
    write(rows, facts, args.quick, time.perf_counter() - begin, args.output)
    print(f"wrote {args.output} in {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
