"""The parts of the `wisp` command that its batch runs and its streams share: errors
and exit codes, the Spark session and the master, paths, a batch query's build and
summary (`cli.py` has the commands, `cli_stream.py` the stream runner)."""

from __future__ import annotations

import functools
import itertools
import os
import posixpath
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .errors import WispError, WispInputError, WispUnsupportedError, wisp_error
from .query import Query, load_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation, SparkSession

    from .query import Input


RUNS = itertools.count()
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


UNREADABLE_FILE = re.compile(r"\[FAILED_READ_FILE\.(\w+)\] Encountered error while reading "
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
    unreadable = UNREADABLE_FILE.search(text)
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
    if query.features is not None:
        from .features_query import featured

        return Built(query, inp, featured(spark, query.features, query.feature_windows(),
                                          events, query.aggregations))
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

def query_and_paths(query_file: str, input_: str | None, output: str | None
                    ) -> tuple[Query, str, str]:
    """The query file's query, the input path and the output path (the options or the
    query's own); the label table's path checked (`label_path`)."""
    query = load_query(query_file)
    source = input_path(query, input_)
    target = output or query.output_path
    if not target:
        raise BadInput("`--output` must be given (or output.path in the query), "
                       "found nothing")
    label_path(query)
    return query, source, target


LABELS = "features.at.path"


def label_path(query: Query) -> str | None:
    """The path of the label table (`features.at.path`) of a point-in-time feature set,
    checked as the input's: a local one must exist (None: no label table)."""
    if query.features is None or query.features.at is None:
        return None
    path = query.features.at.path
    if is_local(path) and not os.path.exists(local_path(path)):
        raise FileNotFoundError(f"`{LABELS}` must be an existing file or directory, "
                                f"found {path!r}")
    return path
