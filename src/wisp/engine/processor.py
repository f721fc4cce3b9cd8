"""The stateful processor Spark runs per key of a stream (`transformWithStateInPandas`):
a thin shell around `runtime.streaming.StreamKernel`, which holds the logic.

Per key, one `ValueState` holds the stream state (format version, the query's spec hash,
the kernel state's bytes, the pending rows' bytes) and one event-time timer is set where
the key's next output can be final. Output batches leave as Arrow IPC bytes in a single
binary column (`PAYLOAD`), which `PayloadRows` turns back into rows after the operator.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from ..runtime.crossing import Crossing, decode, key_column, key_values
from ..runtime.streaming import StreamKernel, StreamState, batch_bytes, batches_of

PAYLOAD = "payload"
STATE_NAME = "wisp_stream"
STATE_SCHEMA = T.StructType([
    T.StructField("version", T.IntegerType()),
    T.StructField("spec", T.StringType()),
    T.StructField("kernel", T.BinaryType()),
    T.StructField("pending", T.BinaryType()),
])


class StreamProcessor(StatefulProcessor):
    """Feeds each key's rows and timers to a `StreamKernel`."""

    def __init__(self, stream: StreamKernel, keys: Sequence[Crossing],
                 values: Sequence[Crossing]) -> None:
        self.stream = stream
        self.keys = tuple(keys)
        self.values = tuple(values)

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, STATE_SCHEMA)

    def handleInputRows(self, key: Any, rows: Iterator[Any],
                        timerValues: TimerValues) -> Iterator[pd.DataFrame]:
        table = decode(list(rows), self.values)
        for crossing, value in zip(self.keys, key_values(key, self.keys), strict=True):
            table = table.append_column(crossing.name,
                                        key_column(value, crossing, table.num_rows))
        outputs, state, timer = self.stream.on_rows(
            self.load(), table, timerValues.getCurrentWatermarkInMs())
        yield from self.save(outputs, state, timer)

    def handleExpiredTimer(self, key: Any, timerValues: TimerValues,
                           expiredTimerInfo: ExpiredTimerInfo) -> Iterator[pd.DataFrame]:
        outputs, state, timer = self.stream.on_timer(
            self.load(), timerValues.getCurrentWatermarkInMs())
        yield from self.save(outputs, state, timer)

    def load(self) -> StreamState | None:
        if not self.state.exists():
            return None
        row = self.state.get()
        assert row is not None
        return StreamState.from_row(tuple(row), self.stream.spec)

    def save(self, outputs: list[pa.RecordBatch], state: StreamState, timer: int | None
             ) -> Iterator[pd.DataFrame]:
        self.state.update(state.to_row(self.stream.spec))
        existing = set(self.handle.listTimers())  # a round trip to the state server
        for old in existing - {timer}:
            self.handle.deleteTimer(old)
        if timer is not None and timer not in existing:
            self.handle.registerTimer(timer)
        if outputs:
            yield pd.DataFrame({PAYLOAD: [batch_bytes(b) for b in outputs]})

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class PayloadRows:
    """After the stateful operator: each payload's rows, in the output schema."""

    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for blob in batch.column(0).to_pylist():
                for found in batches_of(blob):
                    yield found.cast(self.schema) if found.schema != self.schema else found
