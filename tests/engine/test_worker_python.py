"""A session whose Python workers cannot import wisp: on a local master the query is
refused when it is built, naming `PYSPARK_PYTHON`; elsewhere the failure found when it
runs is turned into the same advice by `wisp_error`."""

from __future__ import annotations

import re
import sys
import venv
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.errors import WispInputError
from wisp.workers import import_failure


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python without wisp: a fresh virtualenv of this interpreter, without its
    packages, as a session built by hand leaves its workers on another Python."""
    home = tmp_path_factory.mktemp("bare-python")
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(home)
    return str(home / "bin" / "python")


@pytest.fixture
def no_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers' Python sees this process's environment: none naming wisp's source."""
    monkeypatch.delenv("PYTHONPATH", raising=False)


def test_this_interpreter_imports_wisp_and_a_missing_command_does_not() -> None:
    assert import_failure(sys.executable) is None
    assert import_failure("/nonexistent/python3") == "no such command runs"


def test_a_python_without_wisp_says_why(bare_python: str, no_pythonpath: None) -> None:
    failure = import_failure(bare_python)
    assert failure == "`import wisp` fails (ModuleNotFoundError: No module named 'wisp')"


@pytest.fixture
def workers_on_another_python(spark: SparkSession, bare_python: str,
                              no_pythonpath: None) -> Iterator[str]:
    """The session's workers set to run a Python without wisp, as a session built by
    hand in a virtualenv leaves them (`python3` from the PATH)."""
    context = spark.sparkContext
    before = context.pythonExec
    context.pythonExec = bare_python
    try:
        yield bare_python
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
