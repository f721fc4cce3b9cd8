"""A session whose Python workers cannot import wisp: on a local master the query is
refused when it is built, naming `PYSPARK_PYTHON`; elsewhere the failure found when it
runs is turned into the same advice by `wisp_error`."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispInputError
from wisp.workers import import_failure

OTHER_PYTHON = shutil.which("python3.11", path="/usr/bin") or shutil.which(
    "python3", path="/usr/bin")
"""The machine's own Python: no wisp there (this suite runs from a virtualenv)."""


def test_this_interpreter_imports_wisp_and_a_missing_command_does_not() -> None:
    assert import_failure(sys.executable) is None
    assert import_failure("/nonexistent/python3") == "no such command runs"


@pytest.mark.skipif(OTHER_PYTHON is None or import_failure(OTHER_PYTHON) is None,
                    reason="needs a Python on this machine without wisp")
def test_a_python_without_wisp_says_why() -> None:
    assert OTHER_PYTHON is not None
    failure = import_failure(OTHER_PYTHON)
    assert failure == "`import wisp` fails (ModuleNotFoundError: No module named 'wisp')"


@pytest.fixture
def workers_on_another_python(spark: SparkSession) -> Iterator[str]:
    """The session's workers set to run the machine's own Python, as a session built by
    hand in a virtualenv leaves them (`python3` from the PATH)."""
    if OTHER_PYTHON is None or import_failure(OTHER_PYTHON) is None:
        pytest.skip("needs a Python on this machine without wisp")
    context = spark.sparkContext
    before = context.pythonExec
    context.pythonExec = OTHER_PYTHON
    try:
        yield OTHER_PYTHON
    finally:
        context.pythonExec = before


@pytest.mark.spark
def test_a_local_session_whose_workers_cannot_import_wisp_is_refused_when_built(
        spark: SparkSession, workers_on_another_python: str) -> None:
    df = spark.range(5).select(F.col("id").alias("t"), F.col("id").cast("double").alias("v"))
    ev = ws.events(df, time="t")
    with pytest.raises(WispInputError, match=re.escape(
            f"`PYSPARK_PYTHON` must name a Python that can import wisp (on a local master "
            f"Spark's Python workers run it), found {workers_on_another_python!r}, where "
            "`import wisp` fails (ModuleNotFoundError: No module named 'wisp'); set "
            f"PYSPARK_PYTHON (or spark.pyspark.python) to {sys.executable!r} before the "
            "session starts, or start it with wisp.session() (docs/cluster.md)")):
        ev.window(ws.Rows(-1, 0)).agg(ws.median("v"))
    # a query on Spark's own operators needs no Python worker: it runs
    assert ev.window(ws.Rows(-1, 0)).agg(ws.sum("v")).count() == 4  # complete windows


def test_a_worker_that_cannot_import_wisp_names_the_setting() -> None:
    """The end of the trace a Python worker without wisp leaves in Spark's exception."""
    trace = ("org.apache.spark.api.python.PythonException: Traceback (most recent call "
             "last):\n  File \"/usr/lib/python3.11/pickle.py\", line 1, in load\n"
             "ModuleNotFoundError: No module named 'wisp'\n\tat org.apache.spark...")
    found = ws.wisp_error(RuntimeError(trace))
    assert isinstance(found, WispInputError)
    assert str(found).startswith("`PYSPARK_PYTHON` must name a Python that can import "
                                 "wisp on every executor")
    assert "docs/cluster.md" in str(found)
    assert ws.wisp_error(RuntimeError("ModuleNotFoundError: No module named 'wispy'")) \
        is None
