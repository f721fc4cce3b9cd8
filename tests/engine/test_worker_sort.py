"""The Python worker's sort (runtime/codecs/sorting.py): Spark's ascending, nulls-first order
with NaN after every number, in memory or through sorted runs spilled to disk and
merged; and which plans use it."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import wisp as ws
from wisp.engine.describe import sorts_in_worker
from wisp.runtime.codecs import sorting
from wisp.runtime.codecs.sorting import merged, sorted_batches

COLUMNS = ("k", "t", "v")


def spark_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """Spark's ascending order of a row: null first, NaN after every number."""
    return tuple((0,) if x is None else (1, 1) if x != x else (1, 0, x) for x in row)


def canonical(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """The row with NaN made comparable, so that rows can be counted."""
    return tuple("NaN" if isinstance(x, float) and math.isnan(x) else x for x in row)


rows_strategy = st.lists(st.tuples(
    st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "𝄞", "Z"])),
    st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.integers(-3, 3)),
    st.one_of(st.none(), st.just(math.nan), st.sampled_from([0.0, -0.0, 1.5, -1e300]),
              st.floats(allow_nan=False))), max_size=60)


def table_of(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in rows], pa.string()),
                     "t": pa.array([r[1] for r in rows], pa.int64()),
                     "v": pa.array([r[2] for r in rows], pa.float64()),
                     "row": pa.array(range(len(rows)), pa.int64())})


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = [table.column(c).to_pylist() for c in COLUMNS]
    return list(zip(*columns, strict=True))


@settings(max_examples=300)
@given(rows=rows_strategy, cuts=st.lists(st.integers(1, 7), max_size=12),
       budget=st.sampled_from([0, 1, 100, 400, 1 << 40]), block=st.integers(1, 5))
def test_sorted_batches_is_a_sorted_permutation(rows: list[tuple[Any, ...]],
                                                cuts: list[int], budget: int,
                                                block: int) -> None:
    table = table_of(rows)
    batches = [pa.RecordBatch.from_pylist([], schema=table.schema)]  # skipped
    begin, sizes = 0, cuts or [7]
    while begin < len(rows):
        size = sizes[len(batches) % len(sizes)]
        batches.extend(table.slice(begin, size).to_batches())
        begin += size
    out = list(sorted_batches(iter(batches), COLUMNS, budget, block))
    longest = max([b.num_rows for b in batches], default=0)
    assert all(0 < b.num_rows <= longest for b in out)
    got = rows_of(pa.Table.from_batches(out, schema=table.schema))
    assert Counter(map(canonical, got)) == Counter(map(canonical, rows))
    keys = [spark_order(r) for r in got]
    assert all(a <= b for a, b in pairwise(keys)), got


@settings(max_examples=200)
@given(runs=st.lists(rows_strategy, min_size=2, max_size=5), block=st.integers(1, 4))
def test_merged_runs_are_sorted_and_keep_every_row(runs: list[list[tuple[Any, ...]]],
                                                   block: int) -> None:
    def blocks(rows: list[tuple[Any, ...]]) -> Any:
        ordered = sorted(rows, key=spark_order)
        table = table_of(ordered)
        return iter([table.slice(i, block) for i in range(0, len(ordered), block)])

    out = list(merged([blocks(r) for r in runs], COLUMNS))
    got = [row for t in out for row in rows_of(t)]
    everything = [row for r in runs for row in r]
    assert Counter(map(canonical, got)) == Counter(map(canonical, everything))
    keys = [spark_order(r) for r in got]
    assert all(a <= b for a, b in pairwise(keys))


def test_spilled_runs_are_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    table = table_of([("a", i % 5, float(-i)) for i in range(50)])
    seen: list[str] = []
    real = sorting._Spill

    class Watched(real):  # type: ignore[misc, valid-type]
        def __init__(self, block_rows: int) -> None:
            super().__init__(block_rows)
            seen.append(self.directory.name)

    monkeypatch.setattr(sorting, "_Spill", Watched)
    out = list(sorted_batches(iter(table.to_batches(max_chunksize=4)), COLUMNS, 1, 3))
    assert sum(b.num_rows for b in out) == 50
    assert len(seen) == 1
    assert not os.path.exists(seen[0])


def test_which_columns_the_worker_sorts() -> None:
    schema = T.StructType([
        T.StructField("k", T.StringType()), T.StructField("t", T.TimestampType()),
        T.StructField("d", T.DecimalType(10, 2)), T.StructField("b", T.BinaryType()),
        T.StructField("lc", T.StringType("UTF8_LCASE")),
        T.StructField("a", T.ArrayType(T.LongType())),
    ])
    assert sorts_in_worker(schema, ["k", "t", "d", "b"])
    assert not sorts_in_worker(schema, ["k", "lc"])  # a collation Arrow does not know
    assert not sorts_in_worker(schema, ["k", "a"])
    assert not sorts_in_worker(schema, ["missing"])


@pytest.mark.spark
def test_plans_sort_in_the_worker_unless_a_column_needs_spark(spark: SparkSession) -> None:
    df = spark.createDataFrame([("a", 1, 2.0), ("b", 2, 3.0)], "k string, t long, v double")
    plain = ws.events(df, time="t", key="k").window(ws.Range(-5, 0)).agg(ws.sum("v"))
    assert "Sort " not in plain._jdf.queryExecution().executedPlan().toString()
    assert "Sorting: The Python worker sorts each partition with Arrow" in ws.explain(plain)
    collated = df.withColumn("k", F.col("k").cast("string collate UTF8_LCASE"))
    other = ws.events(collated, time="t", key="k").window(ws.Range(-5, 0)).agg(ws.sum("v"))
    assert "Sort [" in other._jdf.queryExecution().executedPlan().toString()
    assert "Sorting: Spark sorts within partitions" in ws.explain(other)
    assert sorted(other.select("k", "sum_v").collect()) == sorted(
        plain.select("k", "sum_v").collect())


def test_spills_go_to_sparks_local_directory(tmp_path: Any, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{tmp_path / 'missing'},{tmp_path}")
    assert sorting.local_dir() == str(tmp_path)
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "")
    assert sorting.local_dir() is None


def test_memory_stays_near_the_budget_past_it() -> None:
    """18 MB of events through a 1 MB budget: sorted runs spilled and merged, with the
    worker's Arrow memory (measured after each batch out) staying a few budgets, not
    the input's size."""
    rng = np.random.default_rng(7)

    def batches() -> Iterator[pa.RecordBatch]:  # made lazily: the input is not held
        for _ in range(80):
            yield pa.record_batch({"k": rng.integers(0, 3, 10_000),
                                   "t": rng.integers(0, 10**9, 10_000),
                                   "v": rng.normal(size=10_000)})

    base = pa.total_allocated_bytes()
    peak, rows, previous = 0, 0, (-1, -1)
    for batch in sorted_batches(batches(), COLUMNS, budget_bytes=1 << 20, block_rows=4096):
        peak = max(peak, pa.total_allocated_bytes() - base)
        rows += batch.num_rows
        k, t = batch.column("k").to_numpy(), batch.column("t").to_numpy()
        assert (int(k[0]), int(t[0])) >= previous
        assert np.all((k[1:] > k[:-1]) | ((k[1:] == k[:-1]) & (t[1:] >= t[:-1])))
        previous = (int(k[-1]), int(t[-1]))
    assert rows == 800_000
    assert peak < 6 << 20, peak


def test_a_worker_memory_cap_bounds_the_sort_budget(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Any) -> None:
    """Spark hands a worker its `spark.executor.pyspark.memory` as
    PYSPARK_EXECUTOR_MEMORY_MB: the in-memory sort then takes a sixteenth of it, and a
    partition larger than that is sorted in spilled runs, still in order."""
    monkeypatch.delenv("PYSPARK_EXECUTOR_MEMORY_MB", raising=False)
    assert sorting.capped_budget(16) >= sorting.SORT_BUDGET_BYTES
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "1024")
    assert sorting.capped_budget(16) == 64 << 20
    monkeypatch.setenv("PYSPARK_EXECUTOR_MEMORY_MB", "1")  # 64 KiB in memory
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path))
    rng = np.random.default_rng(3)
    times = rng.integers(0, 1_000, 50_000)
    batches = [pa.RecordBatch.from_pydict({"k": ["a"] * 1_000, "t": times[i:i + 1_000]})
               for i in range(0, 50_000, 1_000)]
    seen: list[int] = []

    def kernel(sorted_input: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in sorted_input:
            seen.extend(batch.column("t").to_pylist())
            yield batch

    list(sorting.SortedInput(kernel, ("k", "t"))(iter(batches)))
    assert seen == sorted(times.tolist())
