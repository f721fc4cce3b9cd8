"""`wisp run --stream`: a query file over the Parquet files that arrive in a directory,
written with Spark's Parquet sink, one line per micro-batch, resumed from its checkpoint
(docs/cli.md, "Streams")."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .cli_support import (
    UNREADABLE_FILE,
    BadInput,
    check_apart,
    cli_session,
    is_local,
    local_path,
    location,
    query_and_paths,
    unreadable_input,
)
from .errors import WispInputError, wisp_error
from .query import Query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .binding import LatePolicy

STREAM_RECORD = "wisp-stream.json"
"""The file in a stream's checkpoint directory that records the input and the output
the checkpoint belongs to (a restart must name the same)."""
POLL_SECONDS = 0.5
"""How often a running stream's progress reports are read."""
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)")


@dataclass
class StreamArgs:
    """`run --stream`'s own arguments."""

    checkpoint: str | None
    lateness: str | None
    on_late: str | None
    once: bool


def refuse_stream_flags(args: StreamArgs) -> None:
    """A batch run refuses the flags that only a stream reads."""
    given = [(flag, repr(value)) for flag, value in (
        ("--checkpoint", args.checkpoint), ("--lateness", args.lateness),
        ("--on-late", args.on_late)) if value is not None]
    if args.once:
        given.append(("--once", "--once"))
    if given:
        flag, found = given[0]
        raise BadInput(f"`{flag}` must be given only with --stream, found {found}")


def lateness_value(text: str) -> str | int | Decimal:
    """`--lateness` as `ws.events` takes it: a number for numeric time (an integer, or a
    decimal for float and decimal time), else the duration text ("30s")."""
    if _NUMBER.fullmatch(text.strip()) is None:
        return text
    return int(text) if re.fullmatch(r"\s*-?\d+\s*", text) else Decimal(text.strip())


def stream_input(query: Query, source: str) -> None:
    """Refuse an input a stream cannot read: a format other than Parquet, a local path
    that is not a directory, or (without input.schema) a local directory with no file
    to read the schema from."""
    if query.input.format not in (None, "parquet"):
        raise BadInput(f"`input.format` must be parquet with --stream (a stream reads "
                       f"the Parquet files that arrive in --input), found "
                       f"{query.input.format!r}")
    if not is_local(source):
        return
    path = local_path(source)
    if not os.path.isdir(path):
        raise BadInput(f"`--input` must be a directory with --stream (the stream reads "
                       f"the files that arrive in it), found the file {source!r}")
    if query.input.schema is None and not has_files(path):
        raise BadInput(f"`--input` must hold a Parquet file when --stream starts (its "
                       f"schema is the stream's), found no file in {source!r}; add one, "
                       f"or give input.schema in the query")


def has_files(path: str) -> bool:
    """Whether a local directory holds a file Spark reads (hidden ones, named "." or
    "_" first, and those in hidden directories left out)."""
    for _, inner, files in os.walk(path):
        inner[:] = [name for name in inner if not name.startswith((".", "_"))]
        if any(not name.startswith((".", "_")) for name in files):
            return True
    return False


def _entries(path: str) -> list[str]:
    """The names in a local directory, hidden ones (".", "_") left out; [] if none."""
    try:
        return [n for n in os.listdir(path) if not n.startswith((".", "_"))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _inside(directory: str, name: str) -> str:
    return str(Path(directory, name))


def _record(source: str, output: str) -> dict[str, str]:
    return {"input": "".join(location(source)), "output": "".join(location(output))}


def committed(checkpoint: str) -> bool:
    """Whether a (local) checkpoint records a finished micro-batch."""
    return bool(_entries(_inside(local_path(checkpoint), "commits")))


def stream_dirs(source: str, output: str, checkpoint: str) -> bool:
    """Check a stream's (local) output and checkpoint, and tell whether the run resumes
    a stream (True) or starts one. A new stream needs a new or empty --output (an
    existing one is refused as in batch); an existing --checkpoint must be one that
    wisp wrote for this input and output (its `STREAM_RECORD`), and once it records a
    finished micro-batch, its --output must exist."""
    if not (is_local(output) and is_local(checkpoint)):
        return False
    chk, out = local_path(checkpoint), local_path(output)
    if os.path.lexists(chk) and not os.path.isdir(chk):
        raise BadInput(f"`--checkpoint` must be a directory, found the file {checkpoint!r}")
    if not os.path.isdir(chk) or not os.listdir(chk):
        if os.path.lexists(out) and (not os.path.isdir(out) or os.listdir(out)):
            raise FileExistsError(
                f"`--output` must not exist when a stream starts (a stream resumes only "
                f"with the --checkpoint it wrote), found an existing {output!r}")
        return False
    try:
        with open(_inside(chk, STREAM_RECORD), encoding="utf-8") as file:
            recorded = json.load(file)
    except (OSError, ValueError):
        raise BadInput(f"`--checkpoint` must be new, empty or the checkpoint of a wisp "
                       f"stream, found {checkpoint!r}, which holds other files (no "
                       f"{STREAM_RECORD})") from None
    expected = _record(source, output)
    for role, flag, way in (("output", "--output", "into"), ("input", "--input", "from")):
        if recorded.get(role) != expected[role]:
            raise BadInput(f"`--checkpoint` must be the checkpoint of the stream {way} "
                           f"this {flag} ({expected[role]!r}), found the checkpoint of the "
                           f"stream {way} {recorded.get(role)!r} in {checkpoint!r}")
    if committed(checkpoint) and not os.path.isdir(out):
        raise BadInput(f"`--output` must hold what the stream of --checkpoint wrote so "
                       f"far (a checkpoint belongs to its output), found no {output!r}; "
                       f"to start over, delete the checkpoint too")
    return True


@dataclass
class Progress:
    """A stream's counts, micro-batch by micro-batch (`line`) and in total."""

    drops_null_time: bool
    batches: int = 0
    rows_in: int = 0
    rows_out: int = 0
    late: int = 0
    late_emitted: int = 0
    rejected: int = 0
    state_keys: int = 0
    watermark: str | None = None

    def line(self, progress: Any) -> str:
        """Add one micro-batch's progress report; its line."""
        from .engine.file_stream import ROWS_OUT
        from .windowed import observed_count, progress_field, progress_report

        batch = progress_report([progress])
        rows_out = observed_count(progress_field(progress, "observedMetrics"),
                                  "rows_out", ROWS_OUT)
        self.batches += 1
        self.rows_in += batch["rows_in"]
        self.rows_out += rows_out
        self.late += batch["late"]
        self.late_emitted += batch["late_emitted"]
        self.rejected += batch["rejected_null_time"]
        self.state_keys = batch["state_keys"]
        self.watermark = batch["watermark"] or self.watermark
        text = (f"batch {progress_field(progress, 'batchId')}: {batch['rows_in']:,} rows in, "
                f"{rows_out:,} rows out, {batch['late']:,} late, watermark "
                f"{instant(batch['watermark'])}")
        if self.drops_null_time:
            text += f", {batch['rejected_null_time']:,} rejected (null time)"
        return text

    def summary(self, output: str, seconds: float) -> str:
        """The end-of-run summary, as a batch run's with the stream's counts ("-" for
        the keys in state and the watermark when no micro-batch ran)."""
        late = f"  (emitted: {self.late_emitted:,})" if self.late_emitted else ""
        ran = self.batches > 0  # else no report tells the state or the watermark
        keys = f"{self.state_keys:,}" if ran else "-"
        return "\n".join([
            f"batches       {self.batches:>12,}",
            f"rows in       {self.rows_in:>12,}",
            f"rows late     {self.late:>12,}{late}",
            f"rows rejected {self.rejected:>12,}  (null time: {self.rejected:,})",
            f"rows out      {self.rows_out:>12,}  -> {output} (parquet)",
            f"keys in state {keys:>12}",
            f"watermark     {instant(self.watermark) if ran else '-':>12}",
            f"wall time     {seconds:>12.1f} s",
        ])


def instant(watermark: str | None) -> str:
    """A watermark as Spark reports it, without zero milliseconds; "none" before any."""
    if not watermark:
        return "none"
    return watermark[:-5] + "Z" if watermark.endswith(".000Z") else watermark


def executed(progress: Any) -> bool:
    """Whether a progress report is of a micro-batch that ran (a stream waiting for
    files reports now and then too, under the id of its next batch)."""
    from .windowed import progress_field

    return "addBatch" in (progress_field(progress, "durationMs") or {})


class Stop:
    """SIGINT and SIGTERM ask a running stream to stop (cleanly, between polls) instead
    of ending the process; the former handlers come back on exit."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> Stop:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self.previous[number] = signal.signal(number, self.ask)
        return self

    def ask(self, number: int, _frame: Any) -> None:
        self.signal = signal.Signals(number).name

    def __exit__(self, *_: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def follow(running: Any, progress: Progress, stop: Stop) -> None:
    """Print a line per micro-batch of the running query until it ends (or a signal
    stops it); a query that fails raises its error here, after the lines of the
    batches it finished. The reports Spark keeps are read only when the last one is
    new (a waiting stream reports every 10 s or so)."""
    from .windowed import progress_field

    last_printed = -1
    last_seen: tuple[Any, Any] | None = None

    def report() -> None:
        nonlocal last_printed, last_seen
        last = running.lastProgress
        seen = None if last is None else (progress_field(last, "batchId"),
                                          progress_field(last, "timestamp"))
        if seen == last_seen:
            return
        last_seen = seen
        for each in list(running.recentProgress or []):
            batch = int(progress_field(each, "batchId"))
            if executed(each) and batch > last_printed:
                last_printed = batch
                click.echo(progress.line(each))

    try:
        while True:
            if stop.signal is not None:
                running.stop()
            try:
                done = running.awaitTermination(POLL_SECONDS)
            except Exception:
                with contextlib.suppress(Exception):
                    report()  # the batches it finished before it failed
                raise
            report()
            if done:
                return
    finally:
        if running.isActive:  # an error of wisp's own while following: stop the query
            running.stop()


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def stream_session(master: str | None) -> SparkSession:
    """`cli_session` without the console progress bar. A local session started here
    runs a stream's state in one partition per core instead of Spark's default 200
    (each partition of each micro-batch opens its state store, a cost per partition),
    unless `spark.sql.shuffle.partitions` was set; a stream keeps the number it
    started with in its checkpoint."""
    from pyspark.sql import SparkSession

    started_here = SparkSession.getActiveSession() is None
    spark = cli_session(master, progress=False)
    if started_here and not (master or "").startswith("sc://"):
        context = spark.sparkContext
        if (context.master or "").startswith("local") and \
                not context.getConf().contains(SHUFFLE_PARTITIONS):
            spark.conf.set(SHUFFLE_PARTITIONS, str(context.defaultParallelism))
    return spark




def run_stream(query_file: str, input_: str | None, output: str | None,
               master: str | None, explain: bool, overwrite: bool, fmt: str | None,
               args: StreamArgs) -> None:
    """`run --stream`: the query over the Parquet files arriving in --input, written by
    the Parquet sink to --output with its --checkpoint (see docs/cli.md#streams)."""
    from .engine.file_stream import start_parquet_sink

    started = time.perf_counter()
    if overwrite:
        raise BadInput("`--overwrite` must not be given with --stream (a stream appends "
                       "to its --output, to which its --checkpoint belongs; to start "
                       "over, delete both), found --overwrite")
    if args.lateness is None:
        raise BadInput("`--lateness` must be given with --stream (how late a row may "
                       "arrive: a duration such as 30s, or a number for numeric time), "
                       "found nothing")
    if args.checkpoint is None:
        raise BadInput("`--checkpoint` must be given with --stream (the directory where "
                       "the stream keeps its progress and state), found nothing")
    checkpoint = args.checkpoint
    query, source, target = query_and_paths(query_file, input_, output)
    written = fmt or query.output_format or "parquet"
    if written != "parquet":
        raise BadInput(f"`--format` must be parquet with --stream (the stream writes "
                       f"Parquet files), found {written!r}")
    stream_input(query, source)
    check_apart(target, source, why="")
    check_apart(checkpoint, source, "--checkpoint", why="")
    check_apart(checkpoint, target, "--checkpoint", "--output", why="")
    resumed = stream_dirs(source, target, checkpoint)
    new_dirs = [(local_path(path), os.path.lexists(local_path(path)))
                for path in (target, checkpoint) if is_local(path)]
    result = stream_result(query, source, master, args.lateness, args.on_late)
    if explain:
        from .windowed import explain as explain_result

        explain_result(result)
    if is_local(checkpoint) and not resumed:
        os.makedirs(local_path(checkpoint), exist_ok=True)
        with open(_inside(local_path(checkpoint), STREAM_RECORD), "w",
                  encoding="utf-8") as file:
            json.dump(_record(source, target), file)
    progress = Progress(drops_null_time=query.on_null_time == "drop")
    stop = Stop()
    try:
        with stop:
            follow(start_parquet_sink(result, target, checkpoint, once=args.once),
                   progress, stop)
    except BaseException as error:
        if not resumed and not (is_local(checkpoint) and committed(checkpoint)):
            for path, existed in new_dirs:  # our own new directories, nothing else
                remove_new(path, existed)
        unreadable = UNREADABLE_FILE.search(str(error))
        if unreadable and wisp_error(error) is None:
            raise BadInput(unreadable_input(unreadable.group(1), unreadable.group(2),
                                            str(error), parquet=True)) from None
        raise
    if stop.signal is not None:
        click.echo(f"stopped by {stop.signal}: run again with the same --checkpoint "
                   "to resume")
    click.echo(progress.summary(target, time.perf_counter() - started))


def stream_result(query: Query, source: str, master: str | None, lateness: str,
                  on_late: str | None) -> DataFrame:
    """The query's (streaming) result over the Parquet files arriving in `source`:
    their schema is input.schema, else that of the files there now."""
    from .engine.file_stream import parquet_schema, parquet_stream
    from .events import events as bind_events
    from .events import from_edges

    spark = stream_session(master)
    schema = query.input.schema or parquet_schema(spark, source)
    df = parquet_stream(spark, source, schema, query.input.options)
    late_policy: LatePolicy = "emit" if on_late == "emit" else "count"
    try:
        if query.edge is not None and query.id is not None:  # paired in the operator
            events = from_edges(df, query.time, edge=query.edge, id=query.id,
                                key=list(query.key), lateness=lateness_value(lateness),
                                on_late=late_policy)
        else:
            events = bind_events(df, query.time, end=query.end, key=list(query.key),
                                 order=query.order, on_null_time="drop"
                                 if query.on_null_time == "drop" else "error",
                                 lateness=lateness_value(lateness), on_late=late_policy)
    except WispInputError as error:
        text = str(error)
        if text.startswith("`lateness`"):  # the flag's name, as the user wrote it
            raise BadInput("`--lateness`" + text.removeprefix("`lateness`")) from None
        raise
    window = query.window()
    return (events if window is None else events.window(window)).agg(*query.aggregations)


def remove_new(path: str, existed: bool) -> None:
    """Remove a directory this run made (or filled, when it was empty before)."""
    if not os.path.isdir(path):
        return
    if not existed:
        shutil.rmtree(path)
        return
    for name in os.listdir(path):
        inner = _inside(path, name)
        if os.path.isdir(inner) and not os.path.islink(inner):
            shutil.rmtree(inner)
        else:
            os.remove(inner)
