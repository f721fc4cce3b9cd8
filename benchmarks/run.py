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
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .cases import CASES, STRATEGIES
from .data import Data, generate

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Item:
    """One benchmark row to run: a case at a width over a data set."""

    case: str
    data: str
    w: int
    native: bool = True
    native_runs: int | None = None  # fewer timed native runs where each takes long


@dataclass
class Row:
    item: Item
    events: int
    wisp_s: float
    native_s: float | None
    strategy: str
    agreement: str


def plan(quick: bool) -> tuple[dict[str, tuple[int, float]], list[Item]]:
    """Data sets (events, hot-key share) and the rows to run."""
    data = {"1M": (1_000_000, 0.0)}
    widths = (10, 1_000) if quick else (10, 100, 1_000, 10_000)
    items = [Item("shuffle_sort", "1M", 0), Item("identity_arrow", "1M", 0)]
    # quick: Spark's own frames at w = 1000 run once for the check and once timed
    items += [Item(c, "1M", w, native_runs=1 if quick and w >= 1_000 else None)
              for c in ("rows", "range_") for w in widths]
    items.append(Item("cumulative", "1M", 0))
    if not quick:
        data["10M"] = (10_000_000, 0.0)
        data["10M skew"] = (10_000_000, 0.5)
        items += [Item("shuffle_sort", "10M", 0), Item("identity_arrow", "10M", 0)]
        items += [Item(c, "10M", w, native=w <= 100) for c in ("rows", "range_")
                  for w in (10, 1_000, 10_000)]
        items += [Item(c, "10M skew", w, native=False) for c in ("rows", "range_")
                  for w in (10, 1_000)]
    return data, items


def session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("wisp-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(df: DataFrame, runs: int) -> float:
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def agreement(ours: DataFrame, theirs: DataFrame, columns: tuple[str, ...]) -> str:
    """Join on (k, t): rows on one side only, and the largest difference per column
    relative to max(|native|, 1)."""
    a = ours.select("k", "t", *[F.col(c).alias(f"a_{c}") for c in columns])
    b = theirs.select("k", "t", *[F.col(c).alias(f"b_{c}") for c in columns])
    joined = a.join(b, ["k", "t"], "full_outer")
    one_side = F.col(f"a_{columns[0]}").isNull() != F.col(f"b_{columns[0]}").isNull()
    stats = [F.count_if(one_side).alias("unmatched")]
    for c in columns:
        diff = F.abs(F.col(f"a_{c}") - F.col(f"b_{c}"))
        stats.append(F.max(diff / F.greatest(F.abs(F.col(f"b_{c}")), F.lit(1.0))).alias(c))
    row = joined.agg(*stats).first()
    assert row is not None
    worst = max(float(row[c] or 0.0) for c in columns)
    verdict = "agree" if row["unmatched"] == 0 and worst <= 1e-9 else "DISAGREE"
    return f"{verdict} ({row['unmatched']} unmatched, max rel diff {worst:.1e})"


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
        f"{conf.get('spark.sql.execution.arrow.maxRecordsPerBatch')}",
    ]


def run_item(item: Item, data: Data, runs: int) -> Row:
    case = CASES[item.case]
    ours, theirs = case.build(data, item.w)
    strategy = STRATEGIES.get(id(ours), "-")
    verdict = "-"
    if theirs is not None and case.compare and item.native:
        verdict = agreement(ours, theirs, case.compare)
    elif theirs is not None:
        verdict = "native not run here (O(n*w)); compared at 1M, w <= 1000"
    wisp_s = timed(ours, runs)
    native_s = (timed(theirs, item.native_runs or runs)
                if theirs is not None and item.native else None)
    return Row(item, data.events, wisp_s, native_s, strategy, verdict)


def table(rows: list[Row]) -> list[str]:
    lines = ["| case | events | w | wisp s | native s | wisp/native | wisp events/s | "
             "native events/s | wisp strategy | check |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w = f"{r.item.w:,}" if r.item.w else "-"
        native = f"{r.native_s:.2f}" if r.native_s is not None else "-"
        ratio = f"{r.wisp_s / r.native_s:.2f}" if r.native_s else "-"
        native_rate = f"{r.events / r.native_s / 1e6:.2f} M" if r.native_s else "-"
        lines.append(f"| {r.item.case.rstrip('_')} | {r.item.data} | {w} | {r.wisp_s:.2f} | "
                     f"{native} | {ratio} | {r.events / r.wisp_s / 1e6:.2f} M | "
                     f"{native_rate} | {r.strategy} | {r.agreement} |")
    return lines


def write(rows: list[Row], facts: list[str], quick: bool, seconds: float,
          output: str) -> None:
    head = (ROOT / "benchmarks" / "intro.md").read_text()
    findings = (ROOT / "benchmarks" / "findings.md").read_text()
    mode = "make bench-quick" if quick else "make bench"
    out = [head.rstrip(), "", "## Machine", "", *facts, "",
           f"## Results (`{mode}`, {seconds / 60:.1f} min in all)", "", *table(rows), "",
           findings.rstrip(), ""]
    (ROOT / output).write_text("\n".join(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1M events, w = 10 and 1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--data", default=None,
                        help="comma-separated data sets (1M, 10M, 10M skew)")
    parser.add_argument("--widths", default=None, help="comma-separated widths w")
    parser.add_argument("--skip-native", action="store_true",
                        help="time wisp only (no native runs, no comparison)")
    parser.add_argument("--output", default="BENCHMARKS.md", help="the report to write")
    args = parser.parse_args()
    begin = time.perf_counter()
    spark = session()
    datasets, items = plan(args.quick)
    if args.only:
        items = [i for i in items if i.case in args.only.split(",")]
    if args.data:
        items = [i for i in items if i.data in args.data.split(",")]
    if args.skip_native:
        items = [dataclasses.replace(i, native=False) for i in items]
    if args.widths:
        items = [i for i in items if i.w == 0 or str(i.w) in args.widths.split(",")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="wisp-bench-") as directory:
        loaded = {name: generate(spark, directory, n, hot_share=hot)
                  for name, (n, hot) in datasets.items()
                  if any(i.data == name for i in items)}
        warm = next(iter(loaded.values()))
        timed(CASES["shuffle_sort"].build(warm, 0)[0], 1)  # warm up the JVM
        for item in items:
            row = run_item(item, loaded[item.data], args.runs)
            rows.append(row)
            print(table([row])[-1], flush=True)
        facts = machine(spark)
    write(rows, facts, args.quick, time.perf_counter() - begin, args.output)
    print(f"wrote {args.output} in {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
