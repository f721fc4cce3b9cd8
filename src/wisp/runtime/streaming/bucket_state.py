"""The stored shape of a bucket of keys: each key's values, stream state and timer
(`Entry`), the bucket's keys and waiting rows (`BucketState`), and what one handler
call gives (`BucketStep`). Shared by the key-by-key handler (`buckets`) and the
handler stepping a bucket's keys at once (`bucket_rows`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..codecs.grouping import Key
from .operator import StreamState


@dataclass
class Entry:
    """One key of a bucket: its key values (as the table's key columns hold them), its
    stream state and its timer (watermark ms, or None)."""

    values: dict[str, Any]
    state: StreamState
    timer: int | None


@dataclass
class BucketState:
    """The keys of one bucket, by their canonical key (`canonical`)."""

    entries: dict[Key, Entry] = field(default_factory=dict)
    pending: pa.Table | None = None
    """The rows of its keys waiting for the watermark (key columns included; None: none),
    one table for the bucket (`bucket_rows`; a kernel taking rows in any order keeps
    none)."""

    def due(self, watermark_ms: int) -> list[tuple[Key, Entry]]:
        """The keys whose timer is at or below the watermark, in the bucket's order."""
        return [(k, e) for k, e in self.entries.items()
                if e.timer is not None and e.timer <= watermark_ms]

    def timer(self) -> int | None:
        """The bucket's timer: its keys' earliest."""
        timers = [e.timer for e in self.entries.values() if e.timer is not None]
        return min(timers) if timers else None


@dataclass(frozen=True)
class BucketStep:
    """What one handler call of a bucket gives: each key's late rows with their reason
    (under `on_late="emit"`), the output batches, the new state and its timer."""

    late: list[tuple[pa.Table, str]]
    outputs: list[pa.RecordBatch]
    state: BucketState
    timer: int | None
