"""The `wisp` command: run, explain and plot declarative queries; run the demo.

    wisp run QUERY.yaml --input events.csv --output out/ [--format csv] [--explain]
    wisp run QUERY.yaml --stream --input in/ --output out/ --checkpoint chk/
             --lateness 30s [--on-late count|emit] [--once]
    wisp explain QUERY.yaml --input events.parquet
    wisp plot QUERY.yaml --input events.json --out timeline.png
    wisp demo

Exit codes: 0 success; 2 bad input (a bad query file, bad arguments, a missing input
(or label table) or one that is not of its format, an existing output without
--overwrite, an output that holds or lies inside the input or the label table, a master
that cannot be reached, malformed or null-time rows the query refuses; for a stream,
also a missing --lateness or --checkpoint, an input directory without a file to read
the schema from, a --checkpoint that is not this stream's); 1 any other failure
(including a window kind this version cannot execute yet, in a feature set, on a stream
or at all). A stream stopped by Ctrl-C or SIGTERM exits with
0. The query file's schema is in docs/cli.md and `wisp.query`.
"""

from __future__ import annotations

import os
import shutil
import time

import click

from .cli_stream import STREAM_RECORD, StreamArgs, lateness_value, refuse_stream_flags, run_stream
from .cli_support import (
    RUNS,
    BadInput,
    build,
    check_apart,
    cli_session,
    exit_codes,
    input_path,
    is_local,
    label_path,
    local_path,
    query_and_paths,
    refuse_existing,
    summary,
)
from .errors import WispUnsupportedError, bad_value
from .query import load_query

__all__ = ["STREAM_RECORD", "BadInput", "check_apart", "lateness_value", "main"]


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
@click.option("--stream", is_flag=True,
              help="Run on the Parquet files that arrive in the --input directory, as a "
              "stream written to --output (needs --checkpoint and --lateness).")
@click.option("--checkpoint", metavar="DIR",
              help="With --stream: where the stream keeps its progress and state; the "
              "same again resumes it.")
@click.option("--lateness", metavar="DURATION",
              help="With --stream: how late a row may arrive (30s, 5m; a number for "
              "numeric time).")
@click.option("--on-late", "on_late", type=click.Choice(["count", "emit"]),
              help="With --stream: count late rows (default), or emit them as rows "
              "with late_reason and late_row.")
@click.option("--once", is_flag=True,
              help="With --stream: process the files there now, then exit (else run "
              "until Ctrl-C or SIGTERM).")
@exit_codes
def run(query_file: str, input_: str | None, output: str | None, master: str | None,
        explain: bool, overwrite: bool, fmt: str | None, stream: bool,
        checkpoint: str | None, lateness: str | None, on_late: str | None,
        once: bool) -> None:
    """Run the query of QUERY.yaml over --input and write the result to --output.

    Ends with a summary: rows in, rows rejected and why, rows out, wall time. With
    --stream, a line per micro-batch first (docs/cli.md, "Streams")."""
    from .engine.writing import counted_rows, write_result

    stream_args = StreamArgs(checkpoint, lateness, on_late, once)
    if stream:
        if load_query(query_file).features is not None:
            raise WispUnsupportedError(
                "`--stream` must be left out for a query with features (feature sets do "
                "not run on a stream yet), found --stream; run each window as a stream "
                "query of its own, with `window:`")
        run_stream(query_file, input_, output, master, explain, overwrite, fmt, stream_args)
        return
    refuse_stream_flags(stream_args)
    started = time.perf_counter()
    query, source, target = query_and_paths(query_file, input_, output)
    fmt = fmt or query.output_format or \
        ("csv" if target.rstrip("/").lower().endswith(".csv") else "parquet")
    check_apart(target, source)
    labels = label_path(query)
    if labels is not None:
        check_apart(target, labels, other="the label table",
                    why=" (replacing it would delete the label table)")
    existed = refuse_existing(target, overwrite)
    built = build(query, source, master)
    if explain:
        from .windowed import explain as explain_result

        explain_result(built.result)
    out, rows_out = counted_rows(built.result, f"wisp_rows_out_{next(RUNS)}")
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
    source = input_path(query, input_)
    label_path(query)
    built = build(query, source, master)
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
    query = load_query(query_file)
    if query.join is not None:
        raise bad_value("QUERY", "a query with a window or aggregations for wisp plot (it "
                        "draws windows; a join query has none)", query_file)
    if query.features is not None:
        raise bad_value("QUERY", "a query with one window for wisp plot (it draws one "
                        "window's outputs; a feature set has several, under "
                        "features.windows)", query_file)
    source = input_path(query, input_)
    check_apart(out, source, "--out")
    if os.path.exists(out) and not overwrite:
        raise FileExistsError(f"`--out` must not exist (pass --overwrite to replace it), "
                              f"found an existing {out!r}")
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
@click.option("--overwrite", is_flag=True,
              help="Replace the results of an earlier run under an existing --output.")
@MASTER_OPT
@exit_codes
def demo(n_events: int, n_keys: int, output: str, overwrite: bool,
         master: str | None) -> None:
    """Run the bundled example: rolling, last-three and running statistics over
    synthetic sensor readings, written as Parquet under --output (which must not exist,
    unless --overwrite)."""
    from .demo import run_demo

    refuse_existing(output, overwrite)
    run_demo(cli_session(master), output_dir=output, n_events=n_events, n_keys=n_keys)


if __name__ == "__main__":  # pragma: no cover
    main()
