"""`wisp.wisp_error` on Spark's refusal of a checkpoint whose stateful operator was
grouped by other columns (no JVM: the text is Spark's, as a stream of an older wisp
version resumed on this one printed it)."""

from __future__ import annotations

import wisp as ws
from wisp.errors import WispInputError

SPARK_TEXT = (
    "[STREAM_FAILED] Query [id = 80587858-0996-49ab-845a-102c8c43a0d3, runId = "
    "72765f25-0376-4608-a6aa-122fecfbc05d] terminated with exception: "
    "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing "
    "state key schema.")


def test_a_checkpoint_grouped_by_other_columns_is_named() -> None:
    found = ws.wisp_error(RuntimeError(SPARK_TEXT))
    assert isinstance(found, WispInputError)
    assert str(found).startswith("`checkpointLocation` must belong to this query, found a "
                                 "checkpoint whose state is grouped by other columns")
    assert "start this query on a new checkpoint" in str(found)


def test_other_state_failures_are_not_taken_for_it() -> None:
    assert ws.wisp_error(RuntimeError("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] x")) is None
