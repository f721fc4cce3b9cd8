"""`stream_report`'s accounting from progress reports, without Spark: the counters wisp
observes read the same from a classic session's reports and from Spark Connect's, which
carry an observed row as its values beside its schema."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Row

from wisp.windowed import LATE_COUNTED, progress_report

FIELDS = {"type": "struct", "fields": [
    {"name": "late", "type": "long", "nullable": True, "metadata": {}},
    {"name": "late_applied", "type": "long", "nullable": True, "metadata": {}}]}


def report(*observed: Any) -> dict[str, Any]:
    return progress_report([{"numInputRows": 2, "observedMetrics": {LATE_COUNTED: row}}
                            for row in observed])


def test_a_classic_sessions_observed_rows() -> None:
    found = report(Row(late=None, late_applied=None), Row(late=1, late_applied=2))
    assert (found["rows_in"], found["late"], found["late_applied"]) == (4, 1, 2)


def test_spark_connects_observed_rows_read_the_same() -> None:
    found = report(Row(values=[None, None], schema=FIELDS),
                   Row(values=[1, 2], schema=FIELDS))
    assert (found["rows_in"], found["late"], found["late_applied"]) == (4, 1, 2)
