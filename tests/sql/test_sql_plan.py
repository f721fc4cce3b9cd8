"""The table function's Spark-free parts: the vectorised partition boundaries against
a loop over the rows (what PySpark's wrapper computes), and the query planned over a
schema alone (`wisp.sql.resolve`, as `analyze` runs it, without a session)."""

from __future__ import annotations

import itertools
import random

import pyarrow as pa
import pytest
from pyspark.sql import types as T

from wisp.errors import WispUnsupportedError
from wisp.sql import partition_boundaries, resolve


def boundaries_by_loop(batch: pa.RecordBatch, indexes: list[int]) -> list[int]:
    """Where the values of `indexes` change, row by row, as PySpark's wrapper finds it."""
    found = [0]
    for i in range(1, batch.num_rows):
        if any(batch.column(c)[i].as_py() != batch.column(c)[i - 1].as_py()
               for c in indexes):
            found.append(i)
    return [*found, batch.num_rows] if batch.num_rows > 1 else [0, batch.num_rows]


@pytest.mark.parametrize("seed", range(20))
def test_partition_boundaries_are_the_loops(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 40)
    batch = pa.RecordBatch.from_pydict({
        "a": sorted((rng.choice([None, 1, 2]) for _ in range(n)),
                    key=lambda x: (x is not None, x or 0)),
        "b": [rng.choice([None, "x", "y"]) for _ in range(n)],
        "c": [1.5] * n})
    for indexes in ([0], [1], [0, 1], [2]):
        assert partition_boundaries(batch, indexes) == boundaries_by_loop(batch, indexes)


SCHEMA = T.StructType([T.StructField("k", T.StringType()),
                       T.StructField("ts", T.TimestampType()),
                       T.StructField("v", T.DoubleType())])


def test_a_native_plan_is_replaced_by_a_kernel_strategy() -> None:
    # Tumbling with a mean is native-buckets in the API; cumulative sum native-running
    tumbling = resolve(SCHEMA, "events: {time: ts, key: k}\nwindow: {kind: Tumbling, "
                               "size: 1m}\naggregations: [mean(v)]\n")
    assert type(tumbling.kernel.kernel).__name__.endswith("Kernel")
    assert [f.name for f in tumbling.kernel.fields] == \
        ["k", "window_start", "window_end", "time", "mean_v"]
    assert tumbling.sort_columns == ("k", "ts", "v")
    assert tumbling.sorts_in_worker
    cumulative = resolve(SCHEMA, "events: {time: ts, key: k}\naggregations: [sum(v)]\n")
    assert [f.name for f in cumulative.kernel.fields][-1] == "sum_v"


def test_windows_that_need_spark_are_refused() -> None:
    with pytest.raises(WispUnsupportedError, match=r"^`window.tick` must not be a"):
        resolve(SCHEMA, "events: {time: ts, key: k}\nwindow: {kind: Since, tick: "
                        "{col: v}}\naggregations: [count]\n")
    with pytest.raises(WispUnsupportedError, match=r"Since over calendar ticks emitting "
                                                   r"tick rows"):
        resolve(SCHEMA, "events: {time: ts, key: k}\nwindow: {kind: Since, tick: "
                        "{kind: hourly}, emit: ticks}\naggregations: [count]\n")


def test_batches_pushed_one_at_a_time_give_what_the_whole_partition_gives() -> None:
    """What `eval` does (each batch pushed to `Resumed` as it comes, then `close`), long
    keys read in pieces of 50 events, against the kernel over each key's whole run at
    once (one batch, pieces larger than any key); the kernel's outputs are checked
    against the oracle by the kernels' own tests."""
    from wisp.runtime.windows.resumable import Resumed

    rng = random.Random(7)
    plan = resolve(SCHEMA, "events: {time: ts, key: k}\nwindow: {kind: Range, start: -40s, "
                           "end: 0s}\naggregations: [count, sum(v), max(v)]\n")
    kernel = plan.kernel.kernel
    keys = sorted(rng.choice("abcdefgh") for _ in range(600))
    times = [rng.randint(0, 5_000) * 1_000_000 for _ in keys]
    rows = sorted(zip(keys, times, strict=True))
    table = pa.table({"k": [k for k, _ in rows],
                      "ts": pa.array([t for _, t in rows], pa.timestamp("us", tz="UTC")),
                      "v": [float(rng.randint(-9, 9)) for _ in rows]})
    cuts = sorted({0, len(rows), *(rng.randint(1, len(rows) - 1) for _ in range(40))})
    batches = [table.slice(a, b - a).combine_chunks().to_batches()[0]
               for a, b in itertools.pairwise(cuts)]
    whole = pa.Table.from_batches(list(kernel(iter(table.to_batches()))))
    feed = Resumed(kernel, 50)
    pushed = [out for batch in batches for out in feed.push(batch)]
    pushed += list(feed.close())
    assert whole.num_rows == len(rows)
    assert max(keys.count(k) for k in set(keys)) > 50  # some key is read in pieces
    order = [(c, "ascending") for c in whole.column_names]
    assert pa.Table.from_batches(pushed).cast(whole.schema).sort_by(order).equals(
        whole.sort_by(order))
