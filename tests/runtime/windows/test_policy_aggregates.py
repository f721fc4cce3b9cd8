"""The executor side of the `arrow-spl` strategy (one key's Arrow table in, output batch
out) against the oracle of tests/oracle_spl.py, without a Spark session: every
aggregation, over contiguous windows and over windows that lose tuples from the middle
(out-of-order time or delta eviction), with nulls, NaN, infinities and ties."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from jobs import built_in_job
from oracle import assert_rows_match, sort_output
from oracle_policies import spl_window
from pyspark.sql import types as T

import wisp as ws
from wisp.engine.describe import column_type, spark_output_type
from wisp.engine.layout import arrow_type
from wisp.plan.aggregations import output_type
from wisp.plan.nodes import ResolvedAggregation
from wisp.plan.source import value_class
from wisp.runtime.aggregates.aggregate import AggregateJob
from wisp.runtime.windows.policies import SplKernel
from wisp.spec.aggregates import Aggregation
from wisp.spec.policies import Delta, Policy

TYPES = {"v": T.DoubleType(), "i": T.LongType(), "s": T.StringType()}
AGGREGATIONS: list[Aggregation] = [
    ws.count(), ws.count("v"), ws.sum("v"), ws.mean("v"), ws.min("v"), ws.max("v"),
    ws.first("v"), ws.last("v"), ws.variance("v"), ws.stddev("v"), ws.collect("v"),
    ws.sum("i"), ws.min("i"), ws.max("i"), ws.mean("i"), ws.min("s"), ws.max("s"),
    ws.last("s"), ws.collect("s"),
    ws.udaf(lambda v, t: int(np.sum(t)) if len(t) else None, "v", returns="long")
    .alias("sum_times"),
]


def job(agg: Aggregation) -> AggregateJob:
    data_type = TYPES.get(agg.col) if agg.col else None
    kind = column_type(data_type) if data_type is not None else None
    schema = T.StructType([T.StructField(name, t) for name, t in TYPES.items()])
    resolved = ResolvedAggregation(agg, kind, output_type(agg, kind), value_class(kind))
    # a udaf's DDL type needs a session to parse: the one used here is a long
    out = T.LongType() if agg.fn == "udaf" else spark_output_type(resolved, schema)
    return built_in_job(agg.fn, agg.col, value_class(kind), arrow_type(out), agg.func)


def resolved(kind: str, size: int, d: float) -> Policy:
    """The policy, resolved: `Time` in ticks of the integer time column, `Delta` on the
    float column "a"."""
    if kind == "count":
        return ws.Count(size)
    if kind == "time":
        return ws.Time(size)
    return ws.Delta("a", d)


def run_kernel(rows: list[dict[str, Any]], evict: Policy, trigger: Policy, partial: bool,
               keys: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The kernel over `rows` (sorted by key and arrival order), in batches of 5 rows."""
    key_fields = [pa.field(name, pa.string()) for name in keys]
    schema = pa.schema([*key_fields, pa.field("t", pa.int64()), pa.field("a", pa.float64()),
                        pa.field("v", pa.float64()), pa.field("i", pa.int64()),
                        pa.field("s", pa.string())])
    table = pa.Table.from_pylist(rows, schema=schema)
    fields = [*key_fields, pa.field("window_start", pa.int64()),
              pa.field("window_end", pa.int64()), pa.field("time", pa.int64())]
    fields += [pa.field(a.output_name, job(a).output_type) for a in AGGREGATIONS]
    delta = isinstance(evict, Delta) or isinstance(trigger, Delta)
    kernel = SplKernel(keys, "t", "integer", 0, "sliding", evict, trigger, partial,
                       (("a", "float"),) if delta else (),
                       tuple(job(a) for a in AGGREGATIONS), pa.schema(fields))
    out: list[dict[str, Any]] = []
    for batch in kernel(iter(table.to_batches(max_chunksize=5))):
        out.extend(batch.to_pylist())
    return out


values = st.one_of(st.none(), st.just(math.nan), st.just(math.inf),
                   st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, -0.0, 1.5]))
rows_st = st.lists(st.fixed_dictionaries({
    "t": st.integers(-15, 15), "a": st.integers(-8, 8).map(lambda x: x * 0.5),
    "v": values, "i": st.one_of(st.none(), st.integers(-10**12, 10**12)),
    "s": st.one_of(st.none(), st.sampled_from(["x", "y", "é", ""]))}), max_size=25)


def compare(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected, strict=True):
        finite = [abs(x) for x in want["collect_v"] if math.isfinite(x)]
        scale = math.fsum(finite) or 1.0
        # sums, means and deviations scale with |v|, variances with |v|^2; a variance
        # below ~1e-308 is subnormal and keeps only a few bits, so its absolute
        # tolerance stays above 1e-320 (about 2,000 of the smallest subnormals) and the
        # deviation's above its square root, 1e-160
        linear = max(scale, 1e-151)
        assert_rows_match([got], [want], rel=1e-9,
                          scales={"sum_v": linear, "mean_v": linear, "stddev_v": linear,
                                  "variance_v": max(scale * scale, 1e-311)})


@settings(max_examples=200, deadline=None)
@given(rows=rows_st, evict=st.sampled_from(["count", "time", "delta"]),
       trigger=st.sampled_from(["count", "time", "delta"]), size_e=st.integers(1, 6),
       size_t=st.integers(1, 4), d_e=st.sampled_from([0.0, 0.5, 1.5, 3.0]),
       d_t=st.sampled_from([0.0, 1.0, 2.5]), partial=st.booleans(), in_order=st.booleans())
def test_sliding_aggregates_match_oracle(rows: list[dict[str, Any]], evict: str,
                                         trigger: str, size_e: int, size_t: int,
                                         d_e: float, d_t: float, partial: bool,
                                         in_order: bool) -> None:
    if in_order:
        rows = sorted(rows, key=lambda r: r["t"])
    for i, row in enumerate(rows):
        row["seq"] = i
    spec_e = resolved(evict, size_e, d_e)
    spec_t = resolved(trigger, size_t, d_t)
    window = ws.Sliding(spec_e, spec_t, partial=partial)
    actual = sort_output(run_kernel(rows, spec_e, spec_t, partial), [])
    expected = sort_output(spl_window(rows, time="t", key=[], order="seq",
                                      columns=["t", "a", "v", "i", "s", "seq"],
                                      window=window, aggs=AGGREGATIONS), [])
    compare(actual, expected)


@settings(max_examples=150, deadline=None)
@given(rows=rows_st, keys=st.lists(st.sampled_from(["p", "q", "r", ""]), min_size=25,
                                   max_size=25),
       evict=st.sampled_from(["count", "time", "delta"]),
       trigger=st.sampled_from(["count", "time", "delta"]), size_e=st.integers(1, 4),
       size_t=st.integers(1, 3), d_e=st.sampled_from([0.0, 1.5]),
       d_t=st.sampled_from([0.0, 2.5]), partial=st.booleans())
def test_several_keys_at_once_match_oracle(rows: list[dict[str, Any]], keys: list[str],
                                           evict: str, trigger: str, size_e: int,
                                           size_t: int, d_e: float, d_t: float,
                                           partial: bool) -> None:
    """Short keys' runs are computed together: each key's rows are the oracle's for that
    key alone (rows arrive out of order; keys sorted as Spark hands them over)."""
    for i, (row, key) in enumerate(zip(rows, keys, strict=False)):
        row.update(seq=i, k=key)
    rows = sorted(rows, key=lambda r: (r["k"], r["seq"]))
    spec_e = resolved(evict, size_e, d_e)
    spec_t = resolved(trigger, size_t, d_t)
    window = ws.Sliding(spec_e, spec_t, partial=partial)
    actual = sort_output(run_kernel(rows, spec_e, spec_t, partial, ("k",)), ["k"])
    expected = sort_output(spl_window(rows, time="t", key=["k"], order="seq",
                                      columns=["k", "t", "a", "v", "i", "s", "seq"],
                                      window=window, aggs=AGGREGATIONS), ["k"])
    compare(actual, expected)
