"""Whether Spark's Python workers can import wisp, checked when a query is built.

A session built by hand (not `wisp.session()`) in a virtualenv leaves Spark's Python
workers on `python3` from the PATH, which cannot import wisp: the first kernel would fail
with a Java trace ending in `ModuleNotFoundError`. On a local master the workers run on
this machine, so the Python they run (the context's `pythonExec`: `PYSPARK_PYTHON`, else
`python3`) is asked once, in a subprocess with this process's environment, whether it
imports wisp; a query that needs Python workers is refused when it cannot, naming
`PYSPARK_PYTHON`. Elsewhere (a cluster, Spark Connect) the failure is found when the
query runs, and `wisp_error` names the same setting.

Not checked, since their Python may get wisp another way: a session with Python files
shipped to its workers (`addPyFile`, `spark.submit.pyFiles`), and the Python of this
very process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import weakref

from pyspark import SparkContext
from pyspark.sql import SparkSession

from .errors import WispInputError

_ANSWERS: dict[tuple[str, str], str | None] = {}
"""Why each worker Python cannot import wisp (None: it can), by its command and the
PYTHONPATH it would see."""
_SUBMITTED_PY_FILES: weakref.WeakKeyDictionary[SparkContext, bool] = weakref.WeakKeyDictionary()
"""Whether each context was started with `spark.submit.pyFiles`, fixed once it runs (its
`getConf()` copies the whole configuration through Py4J: read once, not per query)."""


def check_workers(spark: SparkSession) -> None:
    """A `WispInputError` naming `PYSPARK_PYTHON` when the session runs on a local master
    whose Python workers cannot import wisp."""
    python = local_worker_python(spark)
    if python is None:
        return
    key = (python, os.environ.get("PYTHONPATH", ""))
    if key not in _ANSWERS:
        _ANSWERS[key] = import_failure(python)
    failure = _ANSWERS[key]
    if failure is not None:
        raise WispInputError(
            f"`PYSPARK_PYTHON` must name a Python that can import wisp (on a local master "
            f"Spark's Python workers run it), found {python!r}, where {failure}; set "
            f"PYSPARK_PYTHON (or spark.pyspark.python) to {sys.executable!r} before the "
            "session starts, or start it with wisp.session() (docs/cluster.md)")


def local_worker_python(spark: SparkSession) -> str | None:
    """The Python command a local master's workers run, or None where there is nothing
    to check (not a local master, Spark Connect, shipped Python files, this process's
    own Python)."""
    try:
        context = spark.sparkContext
    except Exception:  # Spark Connect: no context on the client
        return None
    master = str(context.master or "")
    if not master.startswith("local"):
        return None
    if getattr(context, "_python_includes", None) or submitted_py_files(context):
        return None
    python = str(getattr(context, "pythonExec", "") or "python3")
    found = shutil.which(python)
    # not resolving links: a virtualenv's python links to the Python it was made from
    if found is not None and os.path.abspath(found) == os.path.abspath(sys.executable):
        return None
    return python


def submitted_py_files(context: SparkContext) -> bool:
    """Whether `context` was started with Python files to ship (`spark.submit.pyFiles`)."""
    if context not in _SUBMITTED_PY_FILES:
        _SUBMITTED_PY_FILES[context] = bool(context.getConf().get("spark.submit.pyFiles", ""))
    return _SUBMITTED_PY_FILES[context]


def import_failure(python: str) -> str | None:
    """Why `python -c "import wisp"` fails, in a few words, or None when it succeeds."""
    try:
        done = subprocess.run([python, "-c", "import wisp"], capture_output=True,
                              text=True, timeout=120, env=os.environ.copy(), check=False)
    except FileNotFoundError:
        return "no such command runs"
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"it does not start ({type(error).__name__})"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return f"`import wisp` fails ({lines[-1] if lines else f'exit {done.returncode}'})"
