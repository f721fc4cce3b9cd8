"""The SparkSession wisp runs on: the active one, or a local one it starts for the user."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def session(master: str | None = None, app_name: str = "wisp") -> SparkSession:
    """The active SparkSession, or a new local one (`local[*]` unless `master` is given)
    with the UI off, the session time zone UTC, and executors on this interpreter."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master or "local[*]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    return builder.getOrCreate()
