"""The `wisp` command: run, explain and plot declarative queries; run the demo.

    wisp run QUERY.yaml --input events.csv --output out/ [--format csv] [--explain]
    wisp explain QUERY.yaml --input events.parquet
    wisp plot QUERY.yaml --input events.json --out timeline.png
    wisp demo

Exit codes: 0 success; 2 bad input (a bad query file, bad arguments, a missing input, an
existing output without --overwrite, malformed or null-time rows the query refuses);
1 any other failure (including a window kind this version cannot execute yet).
The query file's schema is in docs/cli.md and `wisp.query`.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .errors import WispError, WispInputError, WispUnsupportedError
from .query import Query, load_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

    from .query import Input

_RUNS = itertools.count()
BAD_INPUT = 2
FAILURE = 1
F = TypeVar("F", bound=Callable[..., Any])


class BadInput(WispInputError):
    """A bad argument of the command line (exit code 2)."""


# ----------------------------------------------------------------------- errors


# Spark error conditions that the query file, the arguments or the input caused.
INPUT_CONDITIONS = ("PATH_NOT_FOUND", "PATH_ALREADY_EXISTS", "PARSE_SYNTAX_ERROR",
                    "PARSE_DATATYPE", "UNABLE_TO_INFER_SCHEMA", "UNRESOLVED_COLUMN",
                    "UNRESOLVED_ROUTINE", "DATATYPE_MISMATCH", "CAST_INVALID_INPUT",
                    "MALFORMED_RECORD_IN_PARSING")


def _condition(error: BaseException) -> str:
    for getter in ("getCondition", "getErrorClass"):
        method = getattr(error, getter, None)
        if method is not None:
            try:
                return str(method() or "")
            except Exception:  # pragma: no cover - depends on the PySpark flavour
                continue
    return ""


def _spark_message(error: BaseException) -> tuple[int, str] | None:
    """Exit code and message of a Spark error that the input caused, if it is one: a
    data check of wisp's raised inside the query (a null time, a malformed row), or an
    analysis error of a known input condition. Other Spark errors are failures."""
    text = str(error)
    condition = _condition(error)
    found = re.search(r"\[USER_RAISED_EXCEPTION\] WispError: ([^\n]*)", text)
    if found:  # raised by a data check inside the query (not a plan that merely holds one)
        return BAD_INPUT, re.sub(r"\s*SQLSTATE: \w+\s*$", "", found.group(1)).strip()
    if condition.startswith(INPUT_CONDITIONS):
        return BAD_INPUT, text.strip().splitlines()[0]
    return None


def exit_codes(command: F) -> F:
    """Run `command`, turning errors into a message on stderr and an exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except click.ClickException:
            raise
        except (WispInputError, FileExistsError, FileNotFoundError) as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(BAD_INPUT)
        except WispUnsupportedError as error:
            click.echo(f"error: not supported yet: {error}", err=True)
            sys.exit(FAILURE)
        except WispError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(FAILURE)
        except Exception as error:
            known = _spark_message(error)
            if known is not None:
                click.echo(f"error: {known[1]}", err=True)
                sys.exit(known[0])
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            click.echo(f"error: {type(error).__name__}: {first}", err=True)
            sys.exit(FAILURE)

    return wrapper  # type: ignore[return-value]


# ---------------------------------------------------------------------- session


def cli_session(master: str | None) -> SparkSession:
    """The active SparkSession (inside a Python process that has one), else a new one
    like `wisp.session(master)` but with Spark's console progress bar on, so that long
    jobs show progress on stderr. `sc://...` masters connect over Spark Connect.
    Spark's own log is off (wisp reports errors itself); set WISP_SPARK_LOG_LEVEL
    (e.g. WARN) to see it."""
    from .session import session

    return session(master, progress=True,
                   log_level=os.environ.get("WISP_SPARK_LOG_LEVEL", "OFF"))


# ------------------------------------------------------------------------ paths


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def local_path(path: str) -> str:
    return path[len("file:"):].removeprefix("//") if path.startswith("file:") else path


def input_path(query: Query, given: str | None) -> str:
    path = given or query.input.path
    if not path:
        raise BadInput("`--input` must be given (or input.path in the query), found nothing")
    if is_local(path) and not os.path.exists(local_path(path)):
        raise FileNotFoundError(f"`--input` must be an existing file or directory, "
                                f"found {path!r}")
    return path


# ------------------------------------------------------------------ query runs


@dataclass
class Built:
    """A query built over its input: the result and the row accounting."""

    query: Query
    input: Input
    result: DataFrame


def build(query: Query, path: str, master: str | None) -> Built:
    """Start (or reuse) Spark, read the input and build the (lazy) result."""
    from .query import bind, read_input

    spark = cli_session(master)
    inp = read_input(spark, query, path)
    events = bind(query, inp.df)
    window = query.window()
    source = events if window is None else events.window(window)
    return Built(query, inp, source.agg(*query.aggregations))


def summary(built: Built, rows_out: Observation, output: str, fmt: str,
            seconds: float) -> str:
    """The end-of-run summary: rows in, rows rejected and why, rows out, wall time."""
    from .windowed import rejected as rejected_by_query

    read = built.input.observation.get
    rows_in = int(read["rows_read"])
    reasons = ({"malformed": int(read["rejected_malformed"])}
               if "rejected_malformed" in read else {})
    reasons.update({name.removeprefix("rejected_").replace("_", " "): count
                    for name, count in rejected_by_query(built.result).items()})
    rejected = sum(reasons.values())
    why = ", ".join(f"{reason}: {count:,}" for reason, count in reasons.items())
    out = int(rows_out.get.get("rows_out", 0))
    return "\n".join([
        f"rows in       {rows_in:>12,}",
        f"rows rejected {rejected:>12,}  ({why})",
        f"rows out      {out:>12,}  -> {output} ({fmt})",
        f"wall time     {seconds:>12.1f} s",
    ])


# --------------------------------------------------------------------- commands


@click.group(name="wisp", context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """wisp: temporal windows and windowed aggregation on Apache Spark."""


QUERY_ARG = click.argument("query_file", metavar="QUERY.yaml",
                           type=click.Path(dir_okay=False))
INPUT_OPT = click.option("--input", "input_", metavar="PATH",
                         help="Input file or directory (Parquet, CSV or JSON; format from "
                         "input.format or the extension). Overrides input.path.")
MASTER_OPT = click.option("--master", metavar="URL", help="Spark master, e.g. local[4], "
                          "spark://host:7077, yarn, or sc://host for Spark Connect "
                          "(default: the active session, else local[*]).")


@main.command()
@QUERY_ARG
@INPUT_OPT
@click.option("--output", "output", metavar="PATH",
              help="Output directory (Spark writes part files). Overrides output.path.")
@MASTER_OPT
@click.option("--explain", "explain", is_flag=True,
              help="Print the chosen strategy before running.")
@click.option("--overwrite", is_flag=True, help="Replace an existing output.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]),
              help="Output format (default: output.format, else csv for a path ending "
              "in .csv, else parquet).")
@exit_codes
def run(query_file: str, input_: str | None, output: str | None, master: str | None,
        explain: bool, overwrite: bool, fmt: str | None) -> None:
    """Run the query of QUERY.yaml over --input and write the result to --output.

    Ends with a summary: rows in, rows rejected and why, rows out, wall time."""
    from .engine.writing import counted_rows, write_result

    started = time.perf_counter()
    query = load_query(query_file)
    source = input_path(query, input_)
    target = output or query.output_path
    if not target:
        raise BadInput("`--output` must be given (or output.path in the query), "
                       "found nothing")
    fmt = fmt or query.output_format or \
        ("csv" if target.rstrip("/").lower().endswith(".csv") else "parquet")
    existed = is_local(target) and os.path.exists(local_path(target))
    if existed and not overwrite:
        raise FileExistsError(f"`--output` must not exist (pass --overwrite to replace "
                              f"it), found an existing {target!r}")
    if is_local(target) and is_local(source) and os.path.abspath(local_path(target)) == \
            os.path.abspath(local_path(source)):
        raise BadInput(f"`--output` must differ from `--input`, found {target!r} for both")
    built = build(query, source, master)
    if explain:
        from .windowed import explain as explain_result

        explain_result(built.result)
    out, rows_out = counted_rows(built.result, f"wisp_rows_out_{next(_RUNS)}")
    try:
        write_result(out, target, fmt, overwrite=overwrite)
    except BaseException:
        if is_local(target) and not existed and os.path.isdir(local_path(target)):
            shutil.rmtree(local_path(target))  # our own partial output, nothing else
        raise
    click.echo(summary(built, rows_out, target, fmt, time.perf_counter() - started))


@main.command("explain")
@QUERY_ARG
@INPUT_OPT
@MASTER_OPT
@exit_codes
def explain_command(query_file: str, input_: str | None, master: str | None) -> None:
    """Print the strategy wisp chooses for QUERY.yaml over --input, and why."""
    from .windowed import explain

    query = load_query(query_file)
    built = build(query, input_path(query, input_), master)
    explain(built.result)


@main.command()
@QUERY_ARG
@INPUT_OPT
@click.option("--out", "out", required=True, metavar="FILE.png|FILE.svg",
              help="The picture to write; its extension picks PNG or SVG.")
@click.option("--width", type=click.IntRange(100, 10_000), default=None, metavar="PX",
              help="Width in pixels (default 1000).")
@click.option("--height", type=click.IntRange(100, 10_000), default=None, metavar="PX",
              help="Height in pixels (default: from the number of lanes and windows).")
@click.option("--max-keys", type=click.IntRange(1), default=8, show_default=True,
              help="Draw at most this many keys (the first in key order).")
@click.option("--max-events", type=click.IntRange(1), default=60, show_default=True,
              help="Draw the time slice holding at most this many of their events.")
@click.option("--overwrite", is_flag=True, help="Replace an existing picture.")
@MASTER_OPT
@exit_codes
def plot(query_file: str, input_: str | None, out: str, width: int | None,
         height: int | None, max_keys: int, max_events: int, overwrite: bool,
         master: str | None) -> None:
    """Draw the events of --input and the query's windows on a timeline (PNG or SVG):
    one lane per key, events as marks (intervals as bars), windows as boxes, outputs as
    marks at their output time. Large inputs are cut to --max-keys keys and a time
    slice of at most --max-events events, chosen inside Spark (noted in the title)."""
    from .plot import picture_format, plot_events

    picture_format(out)
    if os.path.exists(out) and not overwrite:
        raise FileExistsError(f"`--out` must not exist (pass --overwrite to replace it), "
                              f"found an existing {out!r}")
    query = load_query(query_file)
    source = input_path(query, input_)
    from .query import bind, read_input

    spark = cli_session(master)
    events = bind(query, read_input(spark, query, source).df)
    plot_events(events, query.window(), *query.aggregations, out=out, width=width,
                height=height, max_keys=max_keys, max_events=max_events)
    click.echo(f"wrote {out}")


@main.command()
@click.option("--events", "n_events", type=click.IntRange(1), default=200_000,
              show_default=True, help="Number of synthetic readings.")
@click.option("--keys", "n_keys", type=click.IntRange(1), default=20, show_default=True,
              help="Number of sensors.")
@click.option("--output", default="out/demo", show_default=True, metavar="DIR",
              help="Directory for the Parquet results.")
@MASTER_OPT
@exit_codes
def demo(n_events: int, n_keys: int, output: str, master: str | None) -> None:
    """Run the bundled example: rolling, last-three and running statistics over
    synthetic sensor readings, written as Parquet under --output."""
    from .demo import run_demo

    run_demo(cli_session(master), output_dir=output, n_events=n_events, n_keys=n_keys)


if __name__ == "__main__":  # pragma: no cover
    main()
