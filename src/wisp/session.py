"""The SparkSession wisp runs on: the active one, or a local one it starts for the user."""

from __future__ import annotations

import os
import re
import sys

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from .plan.source import ARROW_BATCH_BYTES as ARROW_BATCH_BYTES
from .plan.source import ROCKSDB, STATE_STORE

# ARROW_BATCH_BYTES: Spark's cap on the bytes of one Arrow batch sent to a Python worker
# (64 MiB by default). Under any cap, Spark measures the batch being built after every row it adds;
# at `UNCAPPED_ARROW_BATCH_BYTES` it skips that measure and cuts batches by
# `spark.sql.execution.arrow.maxRecordsPerBatch` rows alone (10,000 by default).

UNCAPPED_ARROW_BATCH_BYTES = 2**31 - 1
"""Spark's largest int: the one value of `ARROW_BATCH_BYTES` that turns the per-row measure
off (a sizeable share of an Arrow strategy's time on narrow events; BENCHMARKS.md)."""

CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def session(master: str | None = None, app_name: str = "wisp", *,
            progress: bool = False, log_level: str | None = None) -> SparkSession:
    """The active SparkSession, or a new one: `local[*]` unless `master` is given
    (`sc://host:port` connects over Spark Connect) or the program runs under
    spark-submit (whose `--master` and executors' Python then stand), with the UI off,
    the session time zone UTC and executors on this interpreter. `progress` turns on Spark's console
    progress bar; `log_level` (e.g. "WARN", "OFF") sets Spark's own log level.

    A session started here (or found by `master`) also sets `ARROW_BATCH_BYTES` to
    `UNCAPPED_ARROW_BATCH_BYTES`: wisp's Arrow strategies send narrow rows (key, time,
    the aggregated columns), so the batches stay small while Spark no longer measures
    each one after every row. With events that carry very wide columns into an Arrow
    strategy, set it back to a cap (e.g. "64m"). It also sets the RocksDB state store
    (with changelog checkpointing on a new session), which wisp's streams need; on the
    active session too."""
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        active.conf.set(STATE_STORE, ROCKSDB)
        return active
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit
    if not submitted:  # spark-submit's settings (master, executors' Python) stand
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is not None and master.startswith("sc://"):
        return (SparkSession.builder.remote(master).appName(app_name)
                .config("spark.sql.session.timeZone", "UTC")
                .config(ARROW_BATCH_BYTES, str(UNCAPPED_ARROW_BATCH_BYTES))
                .config(STATE_STORE, ROCKSDB).getOrCreate())
    builder = SparkSession.builder
    if master is not None or not submitted:
        builder = builder.master(master or "local[*]")
    builder = (builder.appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "true" if progress else "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config(ARROW_BATCH_BYTES, str(UNCAPPED_ARROW_BATCH_BYTES))
               .config(STATE_STORE, ROCKSDB)
               .config(CHANGELOG, "true"))
    if log_level is not None:
        builder = builder.config("spark.log.level", log_level)
    return builder.getOrCreate()


def byte_count(text: str | None) -> int | None:
    """A byte size written as Spark writes them ("64m", "67108864b", "1g"), in bytes;
    None for no text or text that is not one."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-z]?)b?\s*", (text or "").lower())
    if found is None or found.group(2) not in _BYTE_UNITS:
        return None
    return int(found.group(1)) * _BYTE_UNITS[found.group(2)]


def arrow_batch_cap(spark: SparkSession) -> int | None:
    """`ARROW_BATCH_BYTES` in bytes as the session reads it (Spark's default unless set);
    None where this Spark does not know the setting."""
    try:
        return byte_count(spark.conf.get(ARROW_BATCH_BYTES))
    except PySparkException:  # no such setting, no default
        return None


def arrow_batches_measured(spark: SparkSession) -> bool:
    """Whether the session measures every Arrow batch row by row: `ARROW_BATCH_BYTES`
    below `UNCAPPED_ARROW_BATCH_BYTES` (False where this Spark has no such cap)."""
    cap = arrow_batch_cap(spark)
    return cap is not None and cap != UNCAPPED_ARROW_BATCH_BYTES


def arrow_batch_advice(spark: SparkSession) -> str | None:
    """A sentence for `explain` when the session measures every Arrow batch row by row."""
    cap = arrow_batch_cap(spark)  # read once: over Spark Connect each read is a call
    if cap is None or cap == UNCAPPED_ARROW_BATCH_BYTES:
        return None
    return (f"{ARROW_BATCH_BYTES} is {cap:,} bytes, so Spark measures each Arrow batch "
            f"after every row it sends to the Python worker; "
            f'spark.conf.set("{ARROW_BATCH_BYTES}", "{UNCAPPED_ARROW_BATCH_BYTES}") turns '
            "that off (wisp.session() does), about a fifth of this strategy's time on "
            "narrow events.")
