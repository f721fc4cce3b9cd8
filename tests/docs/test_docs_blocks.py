"""Every Python block of README.md and docs/**/*.md runs as written.

A page's ```python blocks run in order in one namespace, so a later block may use what
an earlier one defines, with the test run's SparkSession active: a block's
`ws.session()` returns it. Each page makes its own data (or reads what the repository
ships); nothing is given to it. A failure names the page, the block and its line on the
page. The blocks run in a fresh working directory, and `tempfile` makes its
directories there; a page that writes files writes them under `tempfile.mkdtemp()`,
since Spark resolves a relative path against its JVM's directory (here the
repository's), not the Python process's.

A block that cannot run here by its nature (a spark-submit job reading a cluster's
paths) says so in its info string, ```python no-run: it is compiled, not run, and must
be listed in `NOT_RUN`, so no block goes unrun without this file saying so.
docs/streaming.md's blocks, which start a streaming query and print its report, run in
tests/streaming/test_docs_example.py, which also checks what they print.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

RUN_ELSEWHERE = {"docs/streaming.md": "tests/streaming/test_docs_example.py"}
"""Pages whose blocks another test runs (and checks the output of), by page."""

NOT_RUN = {("docs/cluster.md", "# job.py"): "a spark-submit job: reads and writes hdfs://",
           ("docs/streaming.md", "def upsert(batch, batch_id):"):
           "a MERGE into a Delta table, which this environment does not install",
           ("docs/sql.md", "# thrift_wisp.py: a Thrift JDBC server whose sessions have "
            "wisp_window"): "serves until stopped: tests/sql/test_sql_thrift.py runs it"}
"""The ```python no-run blocks, by page and first line, with why they cannot run here."""

FENCE = re.compile(r"^(```|~~~)\s*(\S*)\s*(.*?)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its page, its position among the page's Python blocks
    (from 1), the line of its first code line on the page, its code, and whether it
    runs (False for ```python no-run)."""

    page: str
    number: int
    line: int
    code: str
    run: bool

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0] if self.code.strip() else ""


def python_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The ```python blocks of a page (at any indentation), in page order. Any other
    info string naming Python (```py, ```python3, ```python skip, ...) is an error, so
    no Python block escapes the test by its spelling."""
    page = path.relative_to(root).as_posix()
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i].strip())
        if opened is None:
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        fence, language, rest = opened.groups()
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][indent:])
            i += 1
        start = i - len(body) + 1  # 1-based line of the first code line
        i += 1
        if not language.lower().startswith("py"):
            continue
        if (language, rest) not in (("python", ""), ("python", "no-run")):
            raise AssertionError(f"{page}:{start - 1}: a Python block's info string must "
                                 f"be 'python' or 'python no-run', found "
                                 f"{(language + ' ' + rest).strip()!r}")
        blocks.append(Block(page, len(blocks) + 1, start, "\n".join(body) + "\n",
                            run=rest != "no-run"))
    return blocks


def page_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


RUN_HERE = [p for p in PAGES if page_id(p) not in RUN_ELSEWHERE
            and any(b.run for b in python_blocks(p))]


def run_page(blocks: list[Block]) -> int:
    """Run `blocks` in order in one namespace, each followed by the check of what the
    page shows for it (`SHOWN`), if any; return how many checks ran. A block's lines
    keep their numbers on the page, so a traceback points into the markdown."""
    namespace: dict[str, Any] = {"__name__": "docs_page"}
    printed = io.StringIO()
    checked = 0
    for block in blocks:
        code = compile("\n" * (block.line - 1) + block.code, str(ROOT / block.page), "exec")
        try:
            with contextlib.redirect_stdout(printed):
                exec(code, namespace)
        except Exception as error:
            raise AssertionError(
                f"{block.page}, Python block {block.number} (line {block.line}, "
                f"{block.first_line!r}) fails as written: {type(error).__name__}: "
                f"{error}") from error
        shown = SHOWN.get((block.page, block.number))
        if shown is not None:
            shown(namespace, printed.getvalue())
            checked += 1
    return checked


# ------------------------------------------------------- what the pages show, checked
# The tables and printed lines a page shows for its example, written out here from the
# page (never from a run), checked against the page's own data after the block.

Check = Callable[[dict[str, Any], str], None]
SHOWN: dict[tuple[str, int], Check] = {}
TIMES = ("window_start", "window_end", "time", "start", "end")


def shows(page: str, block: int) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        SHOWN[(page, block)] = check
        return check
    return register


def seconds(df: DataFrame, *columns: str, after: str = "1970-01-01") -> list[tuple[Any, ...]]:
    """`columns` of `df`'s rows, sorted by them, time columns as seconds after the UTC
    instant `after` (exact: from Spark's microseconds)."""
    origin = int(dt.datetime.fromisoformat(after).replace(tzinfo=dt.UTC).timestamp())
    picked = [((F.unix_micros(c) - origin * 1_000_000) / 1e6).alias(c) if c in TIMES
              else F.col(c) for c in columns]
    return [tuple(r) for r in df.select(*picked).orderBy(*columns).collect()]


def days(df: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """`columns` of `df`'s rows, sorted by them, time columns as UTC dates."""
    picked = [F.date_format(c, "yyyy-MM-dd").alias(c) if c in TIMES else F.col(c)
              for c in columns]
    return [tuple(r) for r in df.select(*picked).orderBy(*columns).collect()]


@shows("README.md", 2)
def _readme(ns: dict[str, Any], printed: str) -> None:
    assert "Strategy " in printed  # ws.explain(rolling) printed the strategy
    assert "{'rows_in': 1000, 'late': 0, 'rejected_null_time': 0, " in printed


@shows("docs/from-spark.md", 6)
def _sessions_join_at_exactly_the_gap(ns: dict[str, Any], printed: str) -> None:
    df, ev, after = ns["df"], ns["ev"], "2024-01-01"
    expected = [("s1", 0.0, 604.0, 3), ("s1", 1200.0, 1500.0, 1), ("s2", 2.0, 302.0, 1)]
    spark_sessions = df.groupBy("sensor", F.session_window("ts", "5 minutes")).agg(
        F.count("*").alias("count")).select(
        "sensor", F.col("session_window.start").alias("window_start"),
        F.col("session_window.end").alias("window_end"), "count")
    assert seconds(spark_sessions, "sensor", "window_start", "window_end", "count",
                   after=after) == expected
    wisp_sessions = ev.window(ws.Session("5m")).agg(ws.count())
    assert seconds(wisp_sessions, "sensor", "window_start", "window_end", "count",
                   after=after) == expected


CLOCK_PAGE = "docs/windows/dynamic-clock-session.md"


@shows(CLOCK_PAGE, 1)
def _clock(ns: dict[str, Any], printed: str) -> None:
    assert seconds(ns["out"], "time", "window_start", "window_end", "collect_v",
                   "mean_v") == [
        (0.0, -0.5, 0.5, [1, 2], 1.5), (0.5, 0.0, 1.0, [1, 2, 3, 4, 5], 3.0),
        (1.0, 0.5, 1.5, [3, 4, 5], 4.0), (1.5, 1.0, 2.0, [5, 6], 5.5),
        (2.0, 1.5, 2.5, [6, 7], 6.5)]


@shows(CLOCK_PAGE, 2)
def _periods(ns: dict[str, Any], printed: str) -> None:
    assert seconds(ns["out"], "time", "window_start", "window_end", "collect_v") == [
        (1.0, 0.3, 1.0, [2, 3, 4, 5]), (2.5, 1.6, 2.5, [6, 7])]


@shows(CLOCK_PAGE, 3)
def _periods_stream(ns: dict[str, Any], printed: str) -> None:
    out = ns["out"]
    assert out.isStreaming
    assert out.columns == ["sensor", "window_start", "window_end", "time", "collect_v"]
    assert "the smaller of the anchors' and the events' watermarks" in ws.explain(out)


@shows(CLOCK_PAGE, 4)
def _sessions(ns: dict[str, Any], printed: str) -> None:
    ev = ws.events(ns["clicks"], time="ts", key="user")
    assert seconds(ev.window(ws.Session("10s")).agg(ws.count()),
                   "window_start", "window_end", "time", "count") == [
        (0.0, 30.0, 30.0, 3), (31.0, 41.0, 41.0, 2), (45.0, 55.0, 55.0, 1)]
    assert seconds(ev.window(ws.Session("10s", max_duration="25s")).agg(ws.count()),
                   "window_start", "window_end", "count")[0] == (0.0, 25.0, 3)


HOPPING_PAGE = "docs/windows/hopping-snapshot-count.md"


@shows(HOPPING_PAGE, 1)
def _hopping_example(ns: dict[str, Any], printed: str) -> None:
    ev, after = ns["ev"], "2012-06-28"
    align = dt.datetime(2012, 3, 15, 12, tzinfo=dt.UTC)
    snapped = ws.snap_to_hops(ev, "5s", "2s", align).df  # e0..e3 told apart by load
    assert seconds(snapped, "start", "end", "load", after=after) == [
        (1.0, None, 0.5), (3.0, 7.0, 0.8), (5.0, 15.0, 0.2), (11.0, 15.0, 0.9)]
    changes = ev.window(ws.Hopping("5s", "2s", align=align, output="changes")).agg(
        ws.count())
    assert seconds(changes, "window_start", "window_end", "count", after=after) == [
        (1.0, 3.0, 1), (3.0, 5.0, 2), (5.0, 7.0, 3), (7.0, 11.0, 2), (11.0, 15.0, 3),
        (15.0, None, 1)]
    windows = ev.window(ws.Hopping("5s", "2s", align=align)).agg(ws.count())
    assert seconds(windows, "window_start", "window_end", "count", after=after) == [
        (-4.0, 1.0, 1), (-2.0, 3.0, 2), (0.0, 5.0, 3), (2.0, 7.0, 2), (4.0, 9.0, 2),
        (6.0, 11.0, 3), (8.0, 13.0, 3), (10.0, None, 1)]


@shows(HOPPING_PAGE, 2)
def _count_by_start_time(ns: dict[str, Any], printed: str) -> None:
    out = ns["ev"].window(ws.CountByStartTime(2)).agg(
        ws.count(), ws.time_weighted_mean("v"),
        ws.udaf(ns["integral"], "v", lifetimes=True).alias("integral"))
    assert [tuple(r) for r in out.orderBy("time").collect()] == [
        (1, 4, 3, 2, 12.5, 10.0 * 3 + 20.0 * 1),
        (3, 5, 4, 2, pytest.approx(80 / 3), 20.0 * 2 + 40.0 * 1)]


INDEX_PAGE = "docs/windows/index-time-running.md"


@shows(INDEX_PAGE, 1)
def _rows(ns: dict[str, Any], printed: str) -> None:
    out = ns["ev"].window(ws.Rows(-2, 0)).agg(ws.collect("v"))
    assert seconds(out, "time", "collect_v") == [
        (float(t), [t - 1, t, t + 1]) for t in range(2, 8)]


@shows(INDEX_PAGE, 2)
def _cumulative(ns: dict[str, Any], printed: str) -> None:
    out = ns["ev"].agg(ws.sum("v"))
    assert [s for _, s in seconds(out, "time", "sum_v")] == [1, 3, 6, 10, 15, 21, 28, 36]


CALENDAR_PAGE = "docs/windows/since-trailing-calendar.md"


@shows(CALENDAR_PAGE, 1)
def _purchases(ns: dict[str, Any], printed: str) -> None:
    ev = ns["ev"]
    dates = ["2012-02-23", "2012-05-10", "2018-11-03", "2019-10-26"]
    assert days(ev.agg(ws.sum("amount")), "time", "sum_amount") == list(
        zip(dates, [5, 7, 20, 24], strict=True))
    assert days(ev.window(ws.Trailing(2, "is_valid")).agg(ws.sum("amount")), "time",
                "sum_amount") == list(zip(dates, [None, 7, 15, 17], strict=True))
    assert days(ev.window(ws.Since(ws.yearly())).agg(ws.sum("amount")), "time",
                "sum_amount") == [(f"{y}-01-01", s) for y, s in zip(
                    range(2013, 2021), [7, 0, 0, 0, 0, 0, 13, 4], strict=True)]


@shows(CALENDAR_PAGE, 2)
def _repeated(ns: dict[str, Any], printed: str) -> None:
    assert [m for _, m in days(ns["means"], "time", "mean_sum_amount")] == [
        5.0, 6.0, pytest.approx(32 / 3), 14.0]


@shows("docs/strategies.md", 1)
def _forced(ns: dict[str, Any], printed: str) -> None:
    assert "\nStrategy arrow-intervals: " in printed
    with contextlib.redirect_stdout(io.StringIO()):
        assert "\nStrategy native-buckets: " in ws.explain(ns["chosen"])
    assert sorted(ns["forced"].collect()) == sorted(ns["chosen"].collect())


@shows("docs/windows/sliding.md", 2)
def _delta(ns: dict[str, Any], printed: str) -> None:
    shown = re.findall(r"\|(\[[\d., ]*\])\s*\|", printed)  # the collect column of show()
    assert shown == ["[16.0]", "[16.0, 16.4]", "[16.0, 16.4, 17.1]", "[16.4, 17.1, 17.6]"]


@pytest.mark.parametrize("path", RUN_HERE, ids=page_id)
def test_page_blocks_run_in_order(path: Path, spark: SparkSession, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    checked = run_page([b for b in python_blocks(path) if b.run])
    assert checked == sum(page == page_id(path) for page, _ in SHOWN)
    assert SparkSession.getActiveSession() is spark  # no page started a session of its own


def test_every_check_of_what_a_page_shows_follows_a_block_that_runs() -> None:
    blocks = {(b.page, b.number) for p in RUN_HERE for b in python_blocks(p) if b.run}
    assert set(SHOWN) <= blocks


def test_every_page_with_python_is_run_here_or_elsewhere() -> None:
    with_python = {page_id(p) for p in PAGES if any(b.run for b in python_blocks(p))}
    assert with_python == {page_id(p) for p in RUN_HERE} | set(RUN_ELSEWHERE)
    for page, test in RUN_ELSEWHERE.items():
        assert page in (ROOT / "tests" / test.removeprefix("tests/")).read_text()


def test_blocks_not_run_are_the_listed_ones_and_compile() -> None:
    """Every ```python no-run block is in `NOT_RUN` (and the other way round), and is at
    least valid Python."""
    skipped = [b for p in PAGES for b in python_blocks(p) if not b.run]
    assert {(b.page, b.first_line) for b in skipped} == set(NOT_RUN)
    assert len(skipped) == len(NOT_RUN) == 3  # few: each is a block no reader can check
    for block in skipped:
        compile(block.code, f"{block.page}:{block.line}", "exec")


def test_the_block_finder_reads_fences_and_refuses_other_python_spellings(
        tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n```python\na = 1\n```\n\n- item\n\n  ```python no-run\n"
                    "  b = 2\n  ```\n```\nnot python\n```\n")
    found = python_blocks(page, tmp_path)
    page.write_text("```py\nx = 1\n```\n")
    with pytest.raises(AssertionError, match="must be 'python' or 'python no-run', "
                       "found 'py'"):
        python_blocks(page, tmp_path)
    assert [(b.number, b.line, b.code, b.run) for b in found] == [
        (1, 3, "a = 1\n", True), (2, 9, "b = 2\n", False)]
