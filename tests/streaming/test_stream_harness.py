"""The stream tests' own harness, without Spark: `finish` starts a query failed by
Spark's connect-back timeout again from its checkpoint and sums every attempt's
micro-batches; any other failure, or the timeout once too often, fails the test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from test_stream_spark import CONNECT_BACK, RESTARTS_AFTER_CONNECT_BACK, finish


@dataclass
class Attempt:
    """A stand-in for a finished `StreamingQuery`: its progress reports, and the failure
    `awaitTermination` raises (None: it ran to its end)."""

    progress: list[dict[str, Any]]
    failure: Exception | None = None
    waited: list[bool] = field(default_factory=list)

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        return self.progress

    def awaitTermination(self) -> None:
        self.waited.append(True)
        if self.failure is not None:
            raise self.failure


def batch(rows: int) -> dict[str, Any]:
    return {"numInputRows": rows, "stateOperators": [], "observedMetrics": {}}


def test_a_connect_back_failure_is_started_again_and_every_batch_counted() -> None:
    failed = Attempt([batch(3)], RuntimeError(f"[STREAM_FAILED] {CONNECT_BACK}. XXKST"))
    again = Attempt([batch(2), batch(0)])
    with pytest.warns(UserWarning, match="stream restarted from its checkpoint"):
        report, query = finish(failed, lambda: again)
    assert query is again and again.waited == [True]
    assert report["rows_in"] == 5 and report["batches"] == 3


def test_another_failure_fails_at_once() -> None:
    starts: list[Attempt] = []
    with pytest.raises(RuntimeError, match="some other failure"):
        finish(Attempt([], RuntimeError("some other failure")), lambda: starts[0])


def test_the_timeout_once_too_often_fails() -> None:
    def failing() -> Attempt:
        return Attempt([], RuntimeError(CONNECT_BACK))

    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=CONNECT_BACK):
        finish(failing(), failing)
    assert RESTARTS_AFTER_CONNECT_BACK == 2
