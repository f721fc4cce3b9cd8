"""The errors wisp raises.

Every message follows one formula: "`param` must be <expectation>, found <what was found>",
with a "did you mean" hint where one helps.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable


class WispError(Exception):
    """Base class of every error wisp raises on purpose."""


class WispInputError(WispError, ValueError):
    """A caller passed a bad value: a bad argument, a bad schema, or bad data."""


class WispUnsupportedError(WispError, NotImplementedError):
    """The request is valid but this version of wisp cannot execute it yet."""


def bad_value(param: str, expected: str, found: object, *, hint: str = "") -> WispInputError:
    """Build the standard error for a bad argument: "`param` must be ..., found ..."."""
    message = f"`{param}` must be {expected}, found {found!r}"
    if hint:
        message += f"; {hint}"
    return WispInputError(message)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" suffix when `word` is close to one of `choices`."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class WispMemoryError(WispError, MemoryError):
    """A window's state or output outgrew the Python worker's memory cap (raised in the
    worker, named by the message: the setting to raise and what grew)."""


# ------------------------------------------------------- errors raised in a running query

_CLASSES: dict[str, type[WispError]] = {cls.__name__: cls for cls in (
    WispError, WispInputError, WispUnsupportedError, WispMemoryError)}
_CHECK = re.compile(r"\[USER_RAISED_EXCEPTION\] WispError: (?P<message>[^\n]*?)"
                    r"(?:\s*SQLSTATE: \w+)*$", re.MULTILINE)
"""A data check of wisp's that failed the query in Spark (`raise_error` with a message
"WispError: ..."). Anchored on Spark's error condition: the text of a plan that merely
holds such a check (an analysis error printing the plan) is no data error."""
_WORKER = re.compile(r"^wisp\.errors\.(?P<cls>Wisp(?:Input|Unsupported|Memory)?Error): "
                     r"(?P<message>[^\n]*)$", re.MULTILINE)
"""The last line of a Python worker's traceback when a kernel raised a `WispError`."""
_WORKER_RANGE = re.compile(r"^(?:OverflowError|ArithmeticError): wisp: (?P<message>[^\n]*)$",
                           re.MULTILINE)
"""A kernel's value beyond the 64-bit range (a window bound, a decimal time, a long sum)."""
_NO_WISP = re.compile(r"ModuleNotFoundError: No module named '(?:wisp|wisp\.[\w.]+)'")
"""A Python worker that cannot import wisp: its Python is not the one wisp is installed
in (an executor without wisp, or a local session whose workers run another Python)."""
NO_WISP_ON_WORKERS = (
    "`PYSPARK_PYTHON` must name a Python that can import wisp on every executor (Spark's "
    "Python workers run it), found workers where `import wisp` fails (ModuleNotFoundError: "
    "No module named 'wisp'); set PYSPARK_PYTHON or spark.pyspark.python to a Python with "
    "wisp installed, ship wisp to the executors, or start a local session with "
    "wisp.session() (docs/cluster.md)")
_STATE_KEYS_DIFFER = re.compile(r"STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE")
"""Spark refusing a checkpoint whose stateful operator was grouped by other columns: a
checkpoint of another query, or of a keyed stream of a wisp version that grouped its
rows by key rather than by a bucket of keys."""
CHECKPOINT_OF_OTHER_GROUPING = (
    "`checkpointLocation` must belong to this query, found a checkpoint whose state is "
    "grouped by other columns (Spark: STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE): a "
    "checkpoint of another query, or of a keyed stream written before wisp grouped such "
    "streams by a bucket of keys; start this query on a new checkpoint "
    "(docs/streaming.md)")


def wisp_error(error: BaseException) -> WispError | None:
    """The `WispError` behind a failed Spark action, or None when `error` is not one.

    Bad data (a null time, an end before its time, a null delta attribute, a broken
    obsolete rule, an orphan edge, a window bound beyond the 64-bit tick range, a clock
    making too many ticks, a worker out of memory...) is found while the query runs, on
    the executors, and reaches the caller wrapped in Spark's own exception
    (`SparkRuntimeException`, `PythonException`, `Py4JJavaError`...). This rebuilds
    wisp's error from it: the same class (`WispInputError` for the data checks Spark
    runs, the class the Python worker raised otherwise) and the same message, naming
    the column. `error` itself when it is a `WispError` already; None for any other
    failure. The Spark exception stays available as the rebuilt error's `__cause__`.

        try:
            rows = result.collect()
        except Exception as error:
            found = ws.wisp_error(error)
            if found is None:
                raise
            raise found from error
    """
    if isinstance(error, WispError):
        return error
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _from_text(str(current))
        if found is not None:
            found.__cause__ = error
            return found
        current = current.__cause__ or current.__context__
    return None


def _from_text(text: str) -> WispError | None:
    """The `WispError` a Spark exception's text carries: the last worker error line
    (after a chain of exceptions, the last one raised), else the failed data check."""
    worker = list(_WORKER.finditer(text))
    if worker:
        last = worker[-1]
        return _CLASSES[last.group("cls")](last.group("message").strip())
    beyond = list(_WORKER_RANGE.finditer(text))
    if beyond:
        return WispInputError(beyond[-1].group("message").strip())
    check = _CHECK.search(text)
    if check is not None:
        return WispInputError(check.group("message").removeprefix("wisp: ").strip())
    if _NO_WISP.search(text):
        return WispInputError(NO_WISP_ON_WORKERS)
    if _STATE_KEYS_DIFFER.search(text):
        return WispInputError(CHECKPOINT_OF_OTHER_GROUPING)
    return None
