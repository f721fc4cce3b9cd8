"""The `wisp` command: run, explain and plot declarative queries; run the demo.

    wisp run QUERY.yaml --input events.csv --output out/ [--format csv] [--explain]
    wisp run QUERY.yaml --stream --input in/ --output out/ --checkpoint chk/
             --lateness 30s [--on-late count|emit] [--once]
    wisp explain QUERY.yaml --input events.parquet
    wisp plot QUERY.yaml --input events.json --out timeline.png
    wisp demo

Exit codes: 0 success; 2 bad input (a bad query file, bad arguments, a missing input or
one that is not of its format, an existing output without --overwrite, an output that
holds or lies inside the input, a master that cannot be reached, malformed or null-time
rows the query refuses; for a stream, also a missing --lateness or --checkpoint, an
input directory without a file to read the schema from, a --checkpoint that is not
this stream's); 1 any other failure (including a window kind this version cannot
execute yet, on a stream or at all). A stream stopped by Ctrl-C or SIGTERM exits with
0. The query file's schema is in docs/cli.md and `wisp.query`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import posixpath
import re
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .errors import WispError, WispInputError, WispUnsupportedError, bad_value, wisp_error
from .query import Query, load_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

    from .binding import LatePolicy
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


_UNREADABLE = re.compile(r"\[FAILED_READ_FILE\.(\w+)\] Encountered error while reading "
                         r"file (.+?)\.(?:\s|$)")
_CAUSE = re.compile(r"^Caused by: [\w.$]+: (.+)$", re.MULTILINE)


def _spark_message(error: BaseException) -> tuple[int, str] | None:
    """Exit code and message of a Spark error that the input caused, if it is one: a
    data check of wisp's raised inside the query (a null time, a malformed row), an
    input file Spark cannot read (not Parquet, say), or an analysis error of a known
    input condition. Other Spark errors are failures."""
    text = str(error)
    condition = _condition(error)
    found = wisp_error(error)
    if found is not None:  # raised inside the query by a data check or a kernel of wisp's
        return (BAD_INPUT if isinstance(found, WispInputError) else FAILURE), str(found)
    unreadable = _UNREADABLE.search(text)
    if unreadable:
        return BAD_INPUT, unreadable_input(unreadable.group(1), unreadable.group(2), text)
    if condition.startswith(INPUT_CONDITIONS):
        return BAD_INPUT, text.strip().splitlines()[0]
    return None


def unreadable_input(reason: str, path: str, text: str, parquet: bool = False) -> str:
    """The one line for an input file Spark failed to read (`FAILED_READ_FILE.reason`),
    naming the file. `parquet`: the input is Parquet, and a local file without
    Parquet's magic bytes is said not to be one (a stream's failure does not carry
    Spark's cause)."""
    file = local_path(path) if path.startswith("file:") else path
    cause = _CAUSE.search(text)
    if reason == "CANNOT_READ_FILE_FOOTER" or "is not a Parquet file" in text or \
            (parquet and is_local(path) and not parquet_magic(file)):
        return (f"`--input` must hold only Parquet files, found {file!r}, which is not "
                "one (it has no Parquet footer)")
    why = cause.group(1).strip()[:200] if cause else reason.lower().replace("_", " ")
    return f"`--input` must hold only files Spark can read, found {file!r} ({why})"


def parquet_magic(path: str) -> bool:
    """Whether a local file starts and ends with Parquet's magic bytes (True when it
    cannot be read: nothing is claimed about it then)."""
    try:
        with open(path, "rb") as file:
            if os.fstat(file.fileno()).st_size < 8:
                return False
            head = file.read(4)
            file.seek(-4, os.SEEK_END)
            return head == b"PAR1" and file.read(4) == b"PAR1"
    except OSError:
        return True


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


CONNECT_SECONDS = 10.0
"""How long wisp waits for a `spark://` or `sc://` master to answer (per address)."""
DEFAULT_PORTS = {"spark": 7077, "sc": 15002}
_HOST_PORT = re.compile(r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:\[\]/]+))(?::(?P<port>\d{1,5}))?")


def cli_session(master: str | None, progress: bool = True) -> SparkSession:
    """The active SparkSession (inside a Python process that has one), else a new one
    like `wisp.session(master)` but with Spark's console progress bar on (unless not
    `progress`: a stream prints a line per micro-batch instead), so that long jobs show
    progress on stderr. `sc://...` masters connect over Spark Connect.
    Spark's own log is off (wisp reports errors itself); set WISP_SPARK_LOG_LEVEL
    (e.g. WARN) to see it.

    A `spark://` or `sc://` master is first checked to answer within `CONNECT_SECONDS`
    (Spark itself would retry for a minute, Spark Connect for ten); a master that
    cannot be reached, or a session that fails to start for a given master, is a
    `BadInput` of one line."""
    from .session import session

    if master is not None:
        check_master_form(master)
        reach_master(master)
    try:
        return session(master, progress=progress,
                       log_level=os.environ.get("WISP_SPARK_LOG_LEVEL", "OFF"))
    except Exception as error:
        if master is None:
            raise
        cause = _first_cause(error)
        if master.startswith("spark://") and "stopped SparkContext" in cause:
            cause = "it accepts connections, but no Spark master registered the application"
        raise BadInput(f"`--master` must be a Spark master wisp can start a session on, "
                       f"found {master!r}; {cause}") from None


_MASTER_FORMS = re.compile(r"local|local\[(\*|[1-9]\d*)(,[1-9]\d*)?\]|"
                           r"local-cluster\[\d+, *\d+, *\d+\]|yarn|(spark|sc|k8s)://.+")
MASTER_FORMS = ("local", "local[N]", "local[*]", "local[N,F]", "local-cluster[N,C,M]",
                "yarn", "spark://host:port", "k8s://...", "sc://host:port")


def check_master_form(master: str) -> None:
    """Refuse a master Spark would not start with, before it starts (spark-submit would
    print a stack trace and exit)."""
    if _MASTER_FORMS.fullmatch(master) is None:
        raise BadInput(f"`--master` must be one of {', '.join(MASTER_FORMS)}, found "
                       f"{master!r}")


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a `spark://h1:p1,h2:p2` or `sc://host:port/;...` master
    (default ports 7077 and 15002); none for other masters (`local[*]`, `yarn`, ...)."""
    scheme, sep, rest = master.partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        return []
    addresses = []
    for part in rest.split("/")[0].split(","):
        found = _HOST_PORT.fullmatch(part.strip())
        if found is None or int(found.group("port") or 0) > 65535:
            raise BadInput(f"`--master` must be {scheme}://host[:port], found {master!r}")
        port = found.group("port")
        addresses.append((found.group("v6") or found.group("host"),
                          int(port) if port else DEFAULT_PORTS[scheme]))
    return addresses


def reach_master(master: str, seconds: float | None = None) -> None:
    """Refuse a `spark://` or `sc://` master when none of its addresses accepts a
    connection within `seconds` (default `CONNECT_SECONDS`) each (a refused connection
    fails at once), and an `sc://` master whose gRPC channel is not ready within
    `seconds`."""
    addresses = master_addresses(master)
    if not addresses:
        return
    seconds = CONNECT_SECONDS if seconds is None else seconds
    failures = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=seconds).close()
            break
        except OSError as error:
            reason = "no answer" if isinstance(error, TimeoutError) else \
                (error.strerror or type(error).__name__).lower()
            failures.append(f"{host}:{port}: {reason}")
    else:
        raise BadInput(f"`--master` must be a Spark master that answers within "
                       f"{seconds:g} s, found {master!r} ({'; '.join(failures)})")
    if master.startswith("sc://"):
        connect_channel(master, seconds)


def connect_channel(master: str, seconds: float) -> None:
    """Open the gRPC channel of an `sc://` master as Spark Connect would, and refuse the
    master when it is not ready within `seconds` (a port that answers but speaks no
    gRPC, a TLS mismatch)."""
    import grpc  # type: ignore[import-untyped]
    from pyspark.sql.connect.client import DefaultChannelBuilder

    channel = DefaultChannelBuilder(master).toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=seconds)
    except grpc.FutureTimeoutError:
        raise BadInput(f"`--master` must be a Spark Connect server that answers within "
                       f"{seconds:g} s, found {master!r} (no gRPC answer)") from None
    finally:
        channel.close()


def _first_cause(error: BaseException) -> str:
    """The Java exception's own message of a Py4J error (not "An error occurred while
    calling ..."), else the first line of the error."""
    text = str(error)
    java = re.search(r"^: [\w.$]+: (.+)$", text, re.MULTILINE)
    if java:
        return java.group(1).strip()[:300]
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return first[:300]


# ------------------------------------------------------------------------ paths


def is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file:")


def local_path(path: str) -> str:
    return path[len("file:"):].removeprefix("//") if path.startswith("file:") else path


def location(path: str) -> tuple[str, str]:
    """Where a path points, for comparing paths: a local path (or `file:` URI) as ("",
    its real path, symlinks resolved); another URI as (scheme://authority, its
    normalized path)."""
    if is_local(path):
        return "", os.path.realpath(local_path(path))
    scheme, _, rest = path.partition("://")
    authority, _, inner = rest.partition("/")
    return f"{scheme.lower()}://{authority.lower()}", posixpath.normpath("/" + inner)


def check_apart(output: str, source: str, option: str = "--output",
                other: str = "the input",
                why: str = " (replacing it would delete the input)") -> None:
    """Refuse an output that is the input, holds it (`why`: replacing the output would
    delete the input) or lies inside it, comparing real paths (symlinks resolved).
    `option` names the output's flag, `other` what `source` is (a stream keeps its
    `--output` and `--checkpoint` apart from the input and from each other)."""
    (out_root, out), (in_root, inp) = location(output), location(source)
    if out_root != in_root:
        return
    common = (posixpath if out_root else os.path).commonpath([out, inp])
    if out == inp:
        raise BadInput(f"`{option}` must differ from {other}, found {output!r}, which is "
                       f"{other} {source!r}")
    if common == out:
        raise BadInput(f"`{option}` must not hold {other}{why}, found {output!r}, which "
                       f"holds {other} {source!r}")
    if common == inp:
        raise BadInput(f"`{option}` must not lie inside {other}, found {output!r}, "
                       f"inside {other} {source!r}")


def input_path(query: Query, given: str | None) -> str:
    path = given or query.input.path
    if not path:
        raise BadInput("`--input` must be given (or input.path in the query), found nothing")
    if is_local(path) and not os.path.exists(local_path(path)):
        raise FileNotFoundError(f"`--input` must be an existing file or directory, "
                                f"found {path!r}")
    return path


def refuse_existing(output: str, overwrite: bool, option: str = "--output") -> bool:
    """Whether the (local) output exists; refused unless `overwrite`."""
    existed = is_local(output) and os.path.lexists(local_path(output))
    if existed and not overwrite:
        raise FileExistsError(f"`{option}` must not exist (pass --overwrite to replace "
                              f"it), found an existing {output!r}")
    return existed


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
    if query.join is not None:
        from .join_query import joined

        return Built(query, inp, joined(spark, query.join, events))
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
    out = int(rows_out.get.get("rows_out", 0))
    if built.query.join is None:
        reasons.update({name.removeprefix("rejected_").replace("_", " "): count
                        for name, count in rejected_by_query(built.result).items()})
    else:  # an as-of join gives one row per left row it keeps
        reasons["null time"] = rows_in - sum(reasons.values()) - out
    rejected = sum(reasons.values())
    why = ", ".join(f"{reason}: {count:,}" for reason, count in reasons.items())
    return "\n".join([
        f"rows in       {rows_in:>12,}",
        f"rows rejected {rejected:>12,}  ({why})",
        f"rows out      {out:>12,}  -> {output} ({fmt})",
        f"wall time     {seconds:>12.1f} s",
    ])


# ---------------------------------------------------------------------- streams


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


def lateness_value(text: str) -> object:
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
    (each partition of each micro-batch opens its state store: seconds per batch),
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


def query_and_paths(query_file: str, input_: str | None, output: str | None
                    ) -> tuple[Query, str, str]:
    """The query file's query, the input path and the output path (the options or the
    query's own)."""
    query = load_query(query_file)
    source = input_path(query, input_)
    target = output or query.output_path
    if not target:
        raise BadInput("`--output` must be given (or output.path in the query), "
                       "found nothing")
    return query, source, target


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
        unreadable = _UNREADABLE.search(str(error))
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
        run_stream(query_file, input_, output, master, explain, overwrite, fmt, stream_args)
        return
    refuse_stream_flags(stream_args)
    started = time.perf_counter()
    query, source, target = query_and_paths(query_file, input_, output)
    fmt = fmt or query.output_format or \
        ("csv" if target.rstrip("/").lower().endswith(".csv") else "parquet")
    check_apart(target, source)
    existed = refuse_existing(target, overwrite)
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
    query = load_query(query_file)
    if query.join is not None:
        raise bad_value("QUERY", "a query with a window or aggregations for wisp plot (it "
                        "draws windows; a join query has none)", query_file)
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
