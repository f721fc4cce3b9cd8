"""A query over a stream: the batch strategy's kernel, driven per key by Spark's stateful
operator (`transformWithStateInPandas`, event time, Append mode), one compiler per
shape of the operator the planner chose (`plan.streaming`).

Every shape reads the guarded input (null times fail or are dropped, as in batch) with
a hidden event time column carrying the watermark (`withWatermark` takes only
timestamps: integer, date and timestamp_ntz time reach it as microseconds), and drives
`runtime.streaming.operator.StreamKernel`:
- `CarriedRowsStream` (and `CarriedPanesStream`): each column the kernel reads in a form
  pandas carries exactly (`runtime.codecs.crossing`), grouped by key (no key: one group), the
  processor `engine.processor.StreamProcessor`;
- `BucketedRowsStream` (keyed, not over edges) and `KeyBucketsStream` (pane partials,
  late rows emitted): the same columns grouped by a hash bucket of the key, the keys of
  a bucket sharing one stored value and one timer (`runtime.streaming.buckets`);
- `PanePartialsStream`: each task first reduces its rows to pane partials, and a
  bucket's keys are handled all at once (`runtime.streaming.pane_buckets`).
The output becomes rows of exactly the batch columns (`engine.stream_rows`: Arrow
payloads through `mapInArrow`, or, for pane partials, JSON text read by `from_json`
without a Python stage), written with the ordinary `writeStream` in Append mode.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, GroupedData, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..binding import TimeColumn, time_kind
from ..errors import WispInputError, WispUnsupportedError
from ..plan.source import ROCKSDB, STATE_STORE
from ..plan.streaming import (
    KEY_BUCKETS,
    BucketedRowsStream,
    CarriedPanesStream,
    CarriedRowsStream,
    KeyBucketsStream,
    PanePartialsStream,
    RevisedRowsStream,
    StreamPlan,
)
from ..runtime.codecs.arrays import DAY
from ..runtime.codecs.crossing import NULL_SUFFIX, Crossing
from ..runtime.codecs.json_rows import carries
from ..runtime.streaming.buckets import KeyBuckets
from ..runtime.streaming.operator import StreamKernel, spec_hash
from ..runtime.streaming.pane_buckets import FINAL, REVISION, PaneBuckets
from ..runtime.streaming.panes import PaneKernel
from ..runtime.streaming.revised import REPLACES, RevisedKernel, kind_windows
from ..runtime.windows.edges import EdgesKernel
from ..runtime.windows.resumable import Streamable
from ..spec.aggregates import Aggregation
from .columns import LATE_COUNTED, LATE_COUNTER, col
from .compiler import KeyedKernel, Query, StreamInput, compiles, kernel_for
from .layout import arrow_schema, arrow_type
from .native import kind_ticks, time_ticks
from .processor import (
    APPLIED,
    BUCKET,
    COUNTED,
    LATE_REASON,
    LATE_ROW,
    OPERATOR_SCHEMA,
    PACKED_SCHEMA,
    BucketProcessor,
    LateRows,
    PanePacker,
    PartialsProcessor,
    PayloadRows,
    RevisedProcessor,
    StreamProcessor,
)
from .stream_rows import json_rows, payload_rows

EVENT_TIME = "__wisp_event_time"
"""The hidden timestamp column the watermark is on (a user's own watermark on the time
column, with the same delay, stays upstream of it)."""
NO_KEY = "__wisp_all"
BUCKET_OF = "__wisp_bucket_of"


def check_state_store(spark: SparkSession) -> None:
    """Spark's stateful operator for Python needs the RocksDB state store; without it the
    query would fail only when it starts."""
    provider = spark.conf.get(STATE_STORE, None) or ""
    if "RocksDB" not in provider:
        raise WispInputError(f"`{STATE_STORE}` must be {ROCKSDB} for a query over a stream "
                             f"(wisp.session() sets it), found {provider or 'unset'!r}")


def crossing(field: T.StructField, is_time: bool, label: str) -> Crossing:
    """How the column `field` crosses into the processor (as `label`)."""
    kind, data_type = arrow_type(field.dataType), field.dataType
    if is_time and not isinstance(data_type, T.FractionalType):
        return Crossing(field.name, kind, "ticks", label)
    if isinstance(data_type, (T.StringType, T.BinaryType, T.DecimalType)):
        return Crossing(field.name, kind, "plain", label)
    if isinstance(data_type, (T.NumericType, T.BooleanType, T.TimestampType,
                              T.TimestampNTZType, T.DateType)):
        return Crossing(field.name, kind, "flagged", label)
    raise WispUnsupportedError(
        f"`{field.name}` must be a number, boolean, string, binary, decimal or time column "
        "for a query over a stream to read it (other types do not cross into its operator "
        f"yet), found {data_type.simpleString()}")


def wire_columns(c: Crossing, data_type: T.DataType) -> list[Column]:
    """The Spark columns that carry `c` (see `runtime.codecs.crossing`)."""
    value = col(c.name)
    if c.encoding == "plain":
        return [value.alias(c.label)]
    if c.encoding == "ticks" or isinstance(data_type, (T.TimestampType, T.TimestampNTZType,
                                                        T.DateType)):
        kind = time_kind(data_type) or "integer"
        ticks = kind_ticks(value, kind)
        if c.encoding == "ticks":
            return [ticks.alias(c.label)]
        return [F.coalesce(ticks, F.lit(0).cast("long")).alias(c.label),
                value.isNull().alias(c.label + NULL_SUFFIX)]
    zero = F.lit(False) if isinstance(data_type, T.BooleanType) else F.lit(0).cast(data_type)
    return [F.coalesce(value, zero).alias(c.label),
            value.isNull().alias(c.label + NULL_SUFFIX)]


def bucket_of(keys: list[Column]) -> Column:
    """The key's bucket: a hash of its columns. Spark's hash gives every NaN one value
    and `-0.0` the value of `0.0`, as its grouping does, so a key keeps its bucket
    (`KeyBuckets` groups the keys inside a bucket the same way)."""
    return F.pmod(F.xxhash64(*keys), F.lit(KEY_BUCKETS)).cast("int").alias(BUCKET)


def watermarked(inputs: Sequence[StreamInput], columns: list[Column]) -> DataFrame:
    """The inputs' `columns` and the hidden event time, each input with its own
    watermark (Spark's watermark of their union is the smaller), as one frame."""
    frames = [i.df.select(*columns, F.timestamp_micros(watermark_micros(i.time))
                          .alias(EVENT_TIME))
              .withWatermark(EVENT_TIME, f"{i.lateness} microseconds") for i in inputs]
    df = frames[0]
    for frame in frames[1:]:
        df = df.unionByName(frame)
    return df


LONG_RANGE = float(2 ** 62)
"""Float times beyond it (and infinities) are clamped for the watermark column."""


def watermark_micros(time: TimeColumn) -> Column:
    """The time as the long microseconds of the hidden watermark column: microseconds
    of a timestamp, days of a date in microseconds, and for numeric time its ticks
    (one tick reads as one microsecond): the integer, the floor of a float, the units of
    the last decimal place of a decimal."""
    value = col(time.name)
    if time.kind == "float":
        bounded = F.least(F.greatest(value, F.lit(-LONG_RANGE)), F.lit(LONG_RANGE))
        return F.floor(bounded).cast("long")
    if time.kind == "decimal":
        assert isinstance(time.data_type, T.DecimalType)
        return (value * F.lit(10 ** time.data_type.scale)).cast("long")
    return time_ticks(time) * (DAY if time.kind == "date" else 1)


def spec_text(plan: StreamPlan) -> str:
    """What a checkpoint's state must have been made for: everything that shapes it."""
    source = plan.source
    aggregations = [(r.name, r.aggregation.definition.name, r.aggregation.col) + (
        (r.aggregation.by, r.aggregation.q, r.aggregation.interpolation, r.half_life)
        if not r.aggregation.definition.spark_running else ()) + (
        (user_identity(r.aggregation),) if r.aggregation.user else ())
        for r in plan.aggregations]
    return repr((plan.inner.strategy, plan.inner.window, aggregations, source.key,
                 source.time.name, source.time.kind, source.end, plan.tie_break,
                 plan.lateness, source.on_late) + ((source.edges,) if source.edges else ())
                + ((source.allowed_lateness, source.emit) if source.revisions else ()))


def user_identity(aggregation: Aggregation) -> str:
    """A user's aggregator as its state depends on it: its class, declared type and
    the instance's own attributes (a digest of them pickled, or of their text)."""
    aggregator = aggregation.aggregator
    kind = type(aggregator)
    attributes = dict(sorted(getattr(aggregator, "__dict__", {}).items()))
    try:
        shown = pickle.dumps(attributes, protocol=4)
    except Exception:
        shown = repr(attributes).encode()
    digest = hashlib.sha256(shown).hexdigest()[:16]
    return f"{kind.__module__}.{kind.__qualname__}:{aggregation.returns}:{digest}"


@dataclass(frozen=True)
class Operator:
    """What every shape of a stream's stateful operator reads: the kernel strategy
    (`keyed`) with its input's fields by name (`schema`), the columns the kernel reads
    in order (`columns`), the inputs with their watermarks, the kernel driven per key
    (`stream_kernel`) and how the key and value columns cross into the operator."""

    keyed: KeyedKernel
    schema: dict[str, T.StructField]
    columns: list[str]
    inputs: tuple[StreamInput, ...]
    stream_kernel: StreamKernel
    keys: list[Crossing]
    values: list[Crossing]


def operator(plan: StreamPlan, query: Query) -> Operator:
    """The parts of `plan`'s operator, built for `query`."""
    events = query.events
    check_state_store(events.df.sparkSession)
    keyed: KeyedKernel = kernel_for(plan.inner, query)
    schema = {f.name: f for f in keyed.df.schema.fields}
    edges = plan.source.edges  # from_edges: the operator pairs the edges
    columns = list(dict.fromkeys([*keyed.needed, *keyed.order, *(edges or ())]))
    inputs = keyed.inputs or (StreamInput(keyed.df, events.time, plan.lateness),)
    time = inputs[0].time.name
    kernel: Streamable = keyed.kernel
    if edges is not None:
        assert events.end is not None
        kernel = EdgesKernel(kernel, time, events.end, edges[0], edges[1],
                             inputs[0].time.kind)
    stream_kernel = StreamKernel(kernel, arrow_schema([schema[c] for c in columns]), time,
                                 inputs[0].time.kind, tuple(keyed.order),
                                 spec_hash(spec_text(plan)))
    # the columns' crossings refuse the types no operator input takes, on every path
    keys = [crossing(schema[k], False, f"wisp_key{i}") for i, k in enumerate(keyed.keys)]
    values = [crossing(schema[c], c == time, f"wisp_col{i}")
              for i, c in enumerate(c for c in columns if c not in keyed.keys)]
    return Operator(keyed, schema, columns, inputs, stream_kernel, keys, values)


@compiles(CarriedRowsStream)
def carried_rows(plan: StreamPlan, query: Query) -> DataFrame:
    """Rows grouped by key (no key: one group) into the stateful operator, which drives
    each key's kernel (`StreamProcessor`)."""
    parts = operator(plan, query)
    emit_late = query.events.on_late == "emit"
    processor = StreamProcessor(parts.stream_kernel, parts.keys, parts.values, emit_late)
    df = on_the_wire(parts, emit_late, [] if parts.keys else [F.lit(0).alias(NO_KEY)])
    group = [col(w) for c in parts.keys for w in c.wire] or [col(NO_KEY)]
    return rows_out(parts, query, df.groupBy(*group), processor)


compiles(CarriedPanesStream)(carried_rows)


def bucketed_rows(plan: StreamPlan, query: Query) -> DataFrame:
    """Keyed rows grouped by a hash bucket of the key, the keys of a bucket sharing one
    stored value and one timer (`KeyBuckets`): a micro-batch visits at most
    `KEY_BUCKETS` groups, whatever the number of keys, and each key inside is handled
    as `StreamProcessor` handles it on its own. (`KeyBucketsStream`, pane partials by
    key with late rows emitted, is the same shape.)"""
    parts = operator(plan, query)
    emit_late = query.events.on_late == "emit"
    df = on_the_wire(parts, emit_late, [])
    df = df.select("*", bucket_of([col(w) for c in parts.keys for w in c.wire]))
    key_schema = arrow_schema([parts.schema[k] for k in parts.keyed.keys])
    processor = BucketProcessor(KeyBuckets(parts.stream_kernel, key_schema),
                                parts.keys + parts.values, emit_late)
    return rows_out(parts, query, df.groupBy(col(BUCKET)), processor)


compiles(BucketedRowsStream)(bucketed_rows)
compiles(KeyBucketsStream)(bucketed_rows)


def on_the_wire(parts: Operator, emit_late: bool, extra: list[Column],
                unfiltered: bool = False) -> DataFrame:
    """The inputs' rows as the operator reads them (each column by its crossing), with
    `extra` columns and the hidden event time column (not with late rows emitted, or
    `unfiltered`: the watermark stays the query's, and without its column Spark filters
    no late row)."""
    wire = [w for c in parts.keys + parts.values
            for w in wire_columns(c, parts.schema[c.name].dataType)]
    df = watermarked(parts.inputs, [*wire, *extra])
    if unfiltered:
        return df.drop(EVENT_TIME)
    if not emit_late:
        return df
    taken = [f.name for f in parts.keyed.fields if f.name in (LATE_REASON, LATE_ROW)]
    if taken:
        raise WispInputError(f"`on_late` must be 'count' when the result has a column "
                             f"named {taken[0]!r} (on_late='emit' adds it)")
    return df.drop(EVENT_TIME)


def rows_out(parts: Operator, query: Query, grouped: GroupedData,
             processor: BucketProcessor | StreamProcessor) -> DataFrame:
    """The operator over `grouped`, its output as rows of the batch columns (Arrow
    payloads), and with late rows emitted, those rows too, counted."""
    states = grouped.transformWithStateInPandas(processor, OPERATOR_SCHEMA, "Append",
                                                "EventTime")
    fields = parts.keyed.fields
    if query.events.on_late != "emit":
        return payload_rows(states, fields)
    with_late = [*fields, T.StructField(LATE_REASON, T.StringType()),
                 T.StructField(LATE_ROW, T.StructType([parts.schema[c]
                                                       for c in parts.columns]))]
    late_rows = LateRows(arrow_schema(with_late), query.events.key)
    out = states.mapInArrow(PayloadRows(arrow_schema(fields), late_rows),
                            T.StructType(with_late))
    return out.observe(LATE_COUNTER, F.count(col(LATE_REASON)).alias("late"))


@compiles(RevisedRowsStream)
def revised_rows(plan: StreamPlan, query: Query) -> DataFrame:
    """Rows grouped by key into the stateful operator with revisions
    (`RevisedProcessor`): each key keeps the rows of its windows not retired and writes
    each window whose rows changed, with `revision`, `final` (and `replaces`). With
    `on_late="update"`, Spark's late filter is off and the operator counts late rows
    and late rows applied."""
    parts = operator(plan, query)
    source = plan.source
    stream = parts.stream_kernel
    kind = kind_windows(stream.kernel)
    if kind is None:
        raise WispUnsupportedError(
            "`on_late` must be 'count' and `emit` 'final' for this query: its kernel "
            f"({type(stream.kernel).__name__}) cannot write its windows again")
    keys = len(parts.keyed.keys)
    revised = RevisedKernel(kind, stream.schema, stream.time, stream.time_kind,
                            stream.order, stream.spec, source.allowed_lateness,
                            source.emit == "changes", keys)
    processor = RevisedProcessor(revised, parts.keys, parts.values)
    df = on_the_wire(parts, False, [] if parts.keys else [F.lit(0).alias(NO_KEY)],
                     unfiltered=source.on_late == "update")
    group = [col(w) for c in parts.keys for w in c.wire] or [col(NO_KEY)]
    states = df.groupBy(*group).transformWithStateInPandas(processor, OPERATOR_SCHEMA,
                                                           "Append", "EventTime")
    fields = with_revisions(parts.keyed.fields, keys)
    if kind.replaces:
        bound = fields[keys].dataType
        fields.insert(keys + 5, T.StructField(REPLACES, T.ArrayType(T.StructType([
            T.StructField("window_start", bound), T.StructField("window_end", bound)]))))
    if source.on_late == "update":
        states = states.observe(LATE_COUNTED, F.sum(col(COUNTED)).alias("late"),
                                F.sum(col(APPLIED)).alias("late_applied"))
    return payload_rows(states, fields)


@compiles(PanePartialsStream)
def pane_partials(plan: StreamPlan, query: Query) -> DataFrame:
    """Tumbling/Hopping on pane partials with late rows counted: where the rows are
    read, each bucket's rows become pane partials per key and pane (`PanePacker`), so a
    handful of rows per key crosses the shuffle instead of every row; the operator,
    grouped by bucket, adds them to its keys' panes (`PartialsProcessor`). The event
    time column stops before the operator: Spark's late filter is off, and a row is
    late only once its key has closed the earliest window holding it (counted)."""
    parts = operator(plan, query)
    keyed, stream_kernel = parts.keyed, parts.stream_kernel
    df = watermarked(parts.inputs, [col(c) for c in parts.columns])
    bucket = (bucket_of([col(k) for k in keyed.keys]) if keyed.keys
              else F.lit(0).cast("int"))
    # the rows as Spark has them (Arrow carries every column exactly); without the
    # event time column
    rows = df.select(bucket.alias(BUCKET_OF), *[col(n) for n in stream_kernel.schema.names])
    assert isinstance(stream_kernel.kernel, PaneKernel)
    packed = rows.mapInArrow(PanePacker(stream_kernel.kernel, stream_kernel.schema,
                                        BUCKET_OF), PACKED_SCHEMA)
    key_schema = arrow_schema([parts.schema[k] for k in keyed.keys])
    source = plan.source
    fields = with_revisions(keyed.fields, len(keyed.keys)) if source.revisions \
        else keyed.fields
    output = arrow_schema(fields)
    assert carries(output)  # a stream reads only the types that cross as JSON text
    buckets = PaneBuckets(stream_kernel, key_schema, source.allowed_lateness,
                          source.emit == "changes")
    processor = PartialsProcessor(buckets, output)
    states = packed.groupBy(col(BUCKET)).transformWithStateInPandas(
        processor, OPERATOR_SCHEMA, "Append", "EventTime")
    counted = states.observe(LATE_COUNTED, F.sum(col(COUNTED)).alias("late"),
                             F.sum(col(APPLIED)).alias("late_applied"))
    return json_rows(counted, fields)


def with_revisions(fields: list[T.StructField], keys: int) -> list[T.StructField]:
    """The output fields with `revision` and `final` after `time` (which follows the
    keys, `window_start` and `window_end`)."""
    at = keys + 3
    return [*fields[:at], T.StructField(REVISION, T.LongType(), False),
            T.StructField(FINAL, T.BooleanType(), False), *fields[at:]]
