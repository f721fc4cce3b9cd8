"""Benchmark data, generated inside Spark (no driver-side data) and written to Parquet once.

Events: `k` (long key), `t` (long time: the row id, so a key's events are ~`keys` ticks
apart on average, at hash-random gaps), `v` (double in [-1000, 1000), hash-based).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F


@dataclass(frozen=True)
class Data:
    """One materialised event table and what it looks like."""

    name: str
    df: DataFrame
    events: int
    keys: int

    @property
    def gap(self) -> int:
        """The mean time gap between two events of one key (ticks)."""
        return self.keys


def _hash(seed: int) -> Column:
    return F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(1 << 40))


def generate(spark: SparkSession, directory: str, events: int, keys: int = 100,
             hot_share: float = 0.0) -> Data:
    """`events` rows over `keys` keys (uniform by hash), or with `hot_share` of them on
    key 0 (skew). Written to Parquet under `directory`, read back and counted."""
    uniform = F.pmod(_hash(1), F.lit(keys))
    if hot_share > 0:
        hot = (_hash(4) % 1000) < int(hot_share * 1000)
        key = F.when(hot, F.lit(0)).otherwise(1 + F.pmod(_hash(1), F.lit(keys - 1)))
    else:
        key = uniform
    df = spark.range(events).select(
        key.cast("long").alias("k"),
        F.col("id").alias("t"),
        ((_hash(3) % 2_000_000).cast("double") / 1000.0 - 1000.0).alias("v"))
    name = f"events_{events}_{keys}{'_skew' if hot_share else ''}"
    path = f"{directory}/{name}"
    df.write.mode("overwrite").parquet(path)
    loaded = spark.read.parquet(path)
    assert loaded.count() == events
    return Data(name, loaded, events, keys)
