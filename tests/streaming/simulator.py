"""A micro-batch simulator of Spark's stateful operator, without Spark, following the
rules verified on Spark (docs/streaming.md): a batch's watermark is the newest event
time seen in the batches before it (in ms) minus the lateness (in ms), never falling;
the batch first drops the rows at or below the watermark of the batch before it (late,
counted); each key with rows runs its data handler with the batch's watermark, then
each key whose timer is at or below it runs its timer handler. Each key's state goes
through its stored form (bytes) between batches, as on a restart after every batch.
With `emit_late` (on_late="emit") Spark's late filter is off: every row reaches the
data handler, which splits off the rows below the key's fed horizon as late rows.

Several inputs (`inputs`: the column that tells a row's input, and each input's
lateness): each input has its own watermark, its newest time minus its lateness, and
the query's watermark is the minimum over the inputs (Spark's default policy), an input
that has had no row yet counting as 0 (the epoch): it holds the watermark back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from wisp.engine.processor import PanePacker
from wisp.runtime.streaming.bucket_state import BucketStep
from wisp.runtime.streaming.buckets import KeyBuckets
from wisp.runtime.streaming.operator import StreamKernel, StreamState, table_of
from wisp.runtime.streaming.pane_buckets import PaneBuckets, PaneStep
from wisp.runtime.streaming.panes import PaneKernel


@dataclass
class Simulation:
    """The rows emitted, the rows dropped as late, and the watermark after each batch."""

    emitted: list[pa.RecordBatch] = field(default_factory=list)
    late: int = 0
    late_rows: list[tuple[pa.Table, int]] = field(default_factory=list)
    """Each key's late rows of a batch with the filter watermark of that batch (ms)."""
    accepted: list[pa.Table] = field(default_factory=list)
    watermarks: list[int] = field(default_factory=list)
    pending: int = 0
    batch_rows: list[int] = field(default_factory=list)
    """The number of rows emitted in each batch."""
    carried: int = 0
    """The most rows the kernels' states carried (all keys) after a batch."""


def simulate(stream: StreamKernel, batches: Sequence[pa.Table], key: str,
             lateness_micros: int, emit_late: bool = False,
             inputs: tuple[str, Mapping[Any, int]] | None = None,
             spark_filter: bool | None = None) -> Simulation:
    """Run `batches` (tables in the kernel's input schema, one key column `key`);
    with `inputs` (a column and each of its values' lateness in microseconds), one
    watermark per input, `lateness_micros` unused. `spark_filter`: whether Spark's late
    filter is on (by default when late rows are counted; never for pane partials)."""
    filtered = not emit_late if spark_filter is None else spark_filter
    states: dict[Any, tuple[Any, ...]] = {}
    timers: dict[Any, int] = {}
    current = 0  # the watermark the handlers of this batch see
    previous = 0  # the one the late filter of this batch uses: the batch before's
    newest_ms: int | None = None
    newest_of: dict[Any, int] = {}  # with `inputs`: each input's newest time (ms)
    result = Simulation()
    delay_ms = lateness_micros // 1000
    for batch in batches:
        ticks = stream.ticks(batch)
        if batch.num_rows:  # the watermark follows every row read, late or not
            batch_max = int(ticks.max()) // 1000
            newest_ms = batch_max if newest_ms is None else max(newest_ms, batch_max)
            if inputs is not None:
                for value, t in zip(batch.column(inputs[0]).to_pylist(),
                                    ticks.tolist(), strict=True):
                    newest_of[value] = max(newest_of.get(value, int(t) // 1000),
                                           int(t) // 1000)
        if filtered:
            on_time = ticks > previous * 1000 if previous > 0 else ticks == ticks
            result.late += int((~on_time).sum())
            batch = batch.filter(pa.array(on_time))
        for value in dict.fromkeys(batch.column(key).to_pylist()):
            rows = batch.filter(pa.compute.equal(batch.column(key), value)) \
                if value is not None else batch.filter(pa.compute.is_null(batch.column(key)))
            state = _load(states.get(value), stream)
            rows, late = stream.split_late(state, rows)
            assert not filtered or late.num_rows == 0
            result.late += late.num_rows
            result.late_rows.append((late, previous))
            result.accepted.append(rows)
            out, state, timer = stream.on_rows(state, rows, current)
            _keep(states, timers, value, state, timer, stream)
            result.emitted += out
        for value, timer in sorted(timers.items(), key=lambda item: repr(item[0])):
            if timer <= current:
                del timers[value]
                out, state, new_timer = stream.on_timer(_load(states.get(value), stream),
                                                        current)
                _keep(states, timers, value, state, new_timer, stream)
                result.emitted += out
        result.watermarks.append(current)
        result.carried = max(result.carried, sum(
            loaded.kernel.rows.num_rows for row in states.values()
            if (loaded := _load(row, stream)) is not None and loaded.kernel is not None))
        result.batch_rows.append(sum(b.num_rows for b in result.emitted)
                                 - sum(result.batch_rows))
        previous = current
        if inputs is not None:
            current = max(current, min(newest_of[value] - delay // 1000
                                       if value in newest_of else 0
                                       for value, delay in inputs[1].items()))
        elif inputs is None and newest_ms is not None:
            current = max(current, newest_ms - delay_ms)
    result.pending = sum(_load(row, stream).pending.num_rows  # type: ignore[union-attr]
                         for row in states.values())
    return result


def _load(row: tuple[Any, ...] | None, stream: StreamKernel) -> StreamState | None:
    return None if row is None else StreamState.from_row(row, stream.spec)


def _keep(states: dict[Any, tuple[Any, ...]], timers: dict[Any, int], value: Any,
          state: StreamState, timer: int | None, stream: StreamKernel) -> None:
    states[value] = state.to_row(stream.spec)
    if timer is None:
        timers.pop(value, None)
    else:
        timers[value] = timer


@dataclass
class BucketSimulation:
    """The rows emitted and the late rows of each micro-batch, and the late count."""

    emitted: list[list[dict[str, Any]]] = field(default_factory=list)
    late_rows: list[list[dict[str, Any]]] = field(default_factory=list)
    late: int = 0
    pending: int = 0


def newest(ticks: Any, newest_ms: int | None) -> int | None:
    """The newest time seen (ms), with a batch's times (`ticks`, µs)."""
    if not len(ticks):
        return newest_ms
    batch_max = int(ticks.max()) // 1000
    return batch_max if newest_ms is None else max(newest_ms, batch_max)


@dataclass
class Store:
    """Each bucket's stored bytes and timer between batches, as Spark keeps them."""

    buckets: KeyBuckets | PaneBuckets
    states: dict[int, bytes] = field(default_factory=dict)
    timers: dict[int, int] = field(default_factory=dict)

    def load(self, bucket: int) -> Any:
        blob = self.states.get(bucket)
        return None if blob is None else self.buckets.from_bytes(blob)

    def keep(self, bucket: int, step: BucketStep | PaneStep) -> list[dict[str, Any]]:
        """Store the bucket's state and timer; its output rows."""
        self.states[bucket] = self.buckets.to_bytes(step.state)  # type: ignore[arg-type]
        if step.timer is None:
            self.timers.pop(bucket, None)
        else:
            self.timers[bucket] = step.timer
        return [r for b in step.outputs for r in b.to_pylist()]

    def timers_due(self, current: int) -> list[dict[str, Any]]:
        """Run each bucket's timer at or below the watermark `current`: the rows."""
        out: list[dict[str, Any]] = []
        for bucket, timer in sorted(self.timers.items()):
            if timer <= current:
                del self.timers[bucket]
                out += self.keep(bucket, self.buckets.on_timer(self.load(bucket), current))
        return out


def simulate_buckets(buckets: KeyBuckets, batches: Sequence[pa.Table], key: str,
                     lateness_micros: int, emit_late: bool, bucket_of: Any
                     ) -> BucketSimulation:
    """`simulate` for an operator grouped by bucket (`bucket_of(key value)`): each bucket
    with rows runs its data handler, then each bucket whose timer is at or below the
    watermark its timer handler; each bucket's state through its bytes between
    batches. Each batch's rows (emitted and late) are kept per batch."""
    store = Store(buckets)
    current = previous = 0
    newest_ms: int | None = None
    result = BucketSimulation()
    for batch in batches:
        ticks = buckets.stream.ticks(batch)
        newest_ms = newest(ticks, newest_ms)
        if not emit_late:
            on_time = ticks > previous * 1000 if previous > 0 else ticks == ticks
            result.late += int((~on_time).sum())
            batch = batch.filter(pa.array(on_time))
        out: list[dict[str, Any]] = []
        late: list[dict[str, Any]] = []
        labels = [bucket_of(v) for v in batch.column(key).to_pylist()]
        for bucket in dict.fromkeys(labels):
            rows = batch.filter(pa.array([b == bucket for b in labels]))
            step = buckets.on_rows(store.load(bucket), rows, current, emit_late)
            for rows_late, _reason in step.late:
                result.late += rows_late.num_rows
                late += rows_late.to_pylist()
            out += store.keep(bucket, step)
        out += store.timers_due(current)
        result.emitted.append(out)
        result.late_rows.append(late)
        previous = current
        if newest_ms is not None:
            current = max(current, newest_ms - lateness_micros // 1000)
    result.pending = sum(buckets.pending_rows(buckets.from_bytes(b))
                         for b in store.states.values())
    return result


def simulate_partials(buckets: PaneBuckets, batches: Sequence[pa.Table], key: str,
                      lateness_micros: int, bucket_of: Any, places: Sequence[int]
                      ) -> BucketSimulation:
    """`simulate_buckets` for pane partials with late rows counted: Spark's late filter
    is off; each batch's rows are dealt over places (tasks) in turn, `places[i]` rows to
    place i (cycling), and each place reduces its rows to each bucket's partials
    (`PanePacker`, with the bucket of each row in a column); each bucket's data handler
    gets the partials of every place (`PaneBuckets.on_partials`), then the timers run."""
    assert isinstance(buckets.stream.kernel, PaneKernel)
    packer = PanePacker(buckets.stream.kernel, buckets.stream.schema, "__bucket")
    store = Store(buckets)
    current = 0
    newest_ms: int | None = None
    result = BucketSimulation()
    for batch in batches:
        ticks = buckets.stream.ticks(batch)
        newest_ms = newest(ticks, newest_ms)
        labels = pa.array([bucket_of(v) for v in batch.column(key).to_pylist()], pa.int32())
        rows = batch.append_column("__bucket", labels)
        packed: dict[int, list[pa.Table]] = {}
        start, turn = 0, 0
        while start < rows.num_rows:
            size = max(1, places[turn % len(places)])
            for record in packer(iter(rows.slice(start, size).to_batches())):
                for bucket, blob in zip(record.column(0).to_pylist(),
                                        record.column(1).to_pylist(), strict=True):
                    packed.setdefault(bucket, []).append(table_of(blob))
            start, turn = start + size, turn + 1
        out: list[dict[str, Any]] = []
        for bucket, tables in packed.items():
            step = buckets.on_partials(store.load(bucket), pa.concat_tables(tables), current)
            result.late += step.counted
            out += store.keep(bucket, step)
        out += store.timers_due(current)
        result.emitted.append(out)
        result.late_rows.append([])
        if newest_ms is not None:
            current = max(current, newest_ms - lateness_micros // 1000)
    return result
