"""The SparkSession wisp runs on: the active one, or a local one it starts for the user."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession


def session(master: str | None = None, app_name: str = "wisp", *,
            progress: bool = False, log_level: str | None = None) -> SparkSession:
    """The active SparkSession, or a new one: `local[*]` unless `master` is given
    (`sc://host:port` connects over Spark Connect), with the UI off, the session time
    zone UTC and executors on this interpreter. `progress` turns on Spark's console
    progress bar; `log_level` (e.g. "WARN", "OFF") sets Spark's own log level."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is not None and master.startswith("sc://"):
        return (SparkSession.builder.remote(master).appName(app_name)
                .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    builder = (SparkSession.builder.master(master or "local[*]").appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "true" if progress else "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if log_level is not None:
        builder = builder.config("spark.log.level", log_level)
    return builder.getOrCreate()
