"""One local SparkSession for the whole test run (JVM start costs seconds)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Python workers import this folder's modules that tests send them by reference (the
# user aggregators of `aggregators.py`), as a user's own modules must be importable there.
_TESTS = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_TESTS, *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
# Every JVM the run starts through spark-submit (the session's, the `wisp` command's,
# the Connect servers', the subprocess jobs') is short-lived over small data: the client
# compiler alone (C1) spends about half the CPU of tiered compilation up to C2, which
# pays off only in long runs. The code run, and so every result, is the same. A level
# given in SPARK_SUBMIT_OPTS already is kept.
if "TieredStopAtLevel" not in os.environ.get("SPARK_SUBMIT_OPTS", ""):
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
        filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"), "-XX:TieredStopAtLevel=1"]))

settings.register_profile(
    "default", deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large])
# CI explores a fixed sequence of examples so a red run can be reproduced exactly.
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
# `make test-fast` (HYPOTHESIS_PROFILE=dev): the default's settings, and a quarter of each
# property test's examples (`fewer_examples`), so the Spark-free tier runs in a few minutes;
# the full suite (`make test`, CI) explores every example it always did.
DEV_SHARE = 4
settings.register_profile("dev", parent=settings.get_profile("default"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
settings.load_profile(PROFILE)


CHECKPOINT_FILES = ("spark.sql.streaming.checkpointFileManagerClass",
                    "org.apache.spark.sql.execution.streaming.checkpointing."
                    "FileSystemBasedCheckpointFileManager")
"""How the test session writes a stream's checkpoint files (offsets, commits, state
metadata, the state store's changelogs). Spark's default goes through Hadoop's
FileContext, whose rename on a local disk, without Hadoop's native library (not in the
pip package), runs `readlink` in a new process: about 135 processes per stream start.
The FileSystem-based manager Spark ships renames with `File.renameTo` (atomic on a local
POSIX file system), leaving about 40 (`chmod`, for files created): a stream start took a
fifth less time. The same files and bytes are written, and every result is the same.
Only the test session sets it; `ws.session()` leaves Spark's default, the one to keep
on HDFS."""


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("wisp-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "3")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
               .config(*CHECKPOINT_FILES)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def new_york(spark: Any) -> Iterator[None]:
    """The shared session in New York's time zone (daylight saving) for one test."""
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.fixture(scope="module")
def streaming(spark: Any) -> Iterator[Any]:
    """The shared session set for streams: the RocksDB state store (with changelog
    checkpointing, as `wisp.session()` sets it) and two shuffle partitions (each
    micro-batch runs a task per partition of the stateful operator); the settings are
    put back after the module."""
    from wisp.plan.source import ROCKSDB, STATE_STORE
    from wisp.session import CHANGELOG

    names = (STATE_STORE, "spark.sql.shuffle.partitions", CHANGELOG)
    previous = {name: spark.conf.get(name, None) for name in names}
    spark.conf.set(STATE_STORE, ROCKSDB)
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    spark.conf.set(CHANGELOG, "true")  # as wisp.session() sets it
    yield spark
    for name, value in previous.items():
        if value is None:
            spark.conf.unset(name)
        else:
            spark.conf.set(name, value)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--save-golden", action="store_true", default=False,
                     help="rewrite the golden files (tests/plan/golden) from the current "
                     "code instead of comparing with them; review the diff before committing")


SPARK_FIXTURES = ("spark", "streaming", "new_york")
"""Fixtures that start the JVM: a test using one is marked `spark` even if its module
forgot, so `make test-fast` (`-m "not spark"`) never needs Java."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SPARK_FIXTURES):
            item.add_marker(pytest.mark.spark)
    if PROFILE == "dev":
        fewer_examples(items)


def fewer_examples(items: list[pytest.Item]) -> None:
    """The dev profile's share of each property test's examples: N // DEV_SHARE (at least
    one) of the N of its own `@settings(max_examples=N)` (which overrides any profile) or
    of the profile's default. Hypothesis reads a test's settings from the wrapped function
    when the test runs; under any other profile this is not called and every test runs
    its full count."""
    done: set[int] = set()
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is None or id(test) in done:
            continue
        done.add(id(test))
        test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            own, max_examples=max(1, own.max_examples // DEV_SHARE))
