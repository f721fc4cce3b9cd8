"""The Arrow batch setting `wisp.session()` applies, and the advice `explain` gives on a
session without it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

import wisp as ws
from wisp.session import (
    ARROW_BATCH_BYTES,
    UNCAPPED_ARROW_BATCH_BYTES,
    arrow_batch_advice,
    byte_count,
)


@pytest.fixture
def events(spark: SparkSession) -> Iterator[ws.Events]:
    """A few events; the session's Arrow batch cap is back at Spark's default after."""
    df = spark.createDataFrame([("a", 1, 1.0), ("a", 2, 2.0), ("b", 1, 3.0)],
                               "k string, t long, v double")
    try:
        yield ws.events(df, time="t", key="k")
    finally:
        spark.conf.unset(ARROW_BATCH_BYTES)


def tuning_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("Tuning:")]


def test_explain_advises_lifting_a_byte_cap_for_arrow_strategies(
        spark: SparkSession, events: ws.Events) -> None:
    spark.conf.set(ARROW_BATCH_BYTES, "64m")
    lines = tuning_lines(ws.explain(events.window(ws.Range(-5, 0)).agg(ws.sum("v"))))
    assert lines == [
        "Tuning: spark.sql.execution.arrow.maxBytesPerBatch is 67,108,864 bytes, so Spark "
        "measures each Arrow batch after every row it sends to the Python worker; "
        'spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", "2147483647") turns '
        "that off (wisp.session() does), about a fifth of this strategy's time on narrow "
        "events."]


def test_explain_gives_no_advice_without_a_cap_or_a_python_worker(
        spark: SparkSession, events: ws.Events) -> None:
    native = events.window(ws.Rows(-9, 0)).agg(ws.mean("v"))
    assert "Strategy native-frames" in ws.explain(native)
    assert tuning_lines(ws.explain(native)) == []
    spark.conf.set(ARROW_BATCH_BYTES, str(UNCAPPED_ARROW_BATCH_BYTES))
    kernel = events.window(ws.Range(-5, 0)).agg(ws.sum("v"))
    assert "Strategy arrow-frames" in ws.explain(kernel)
    assert tuning_lines(ws.explain(kernel)) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("64m", 64 << 20), ("67108864b", 64 << 20), ("1g", 1 << 30), ("512KB", 512 << 10),
    ("2147483647", UNCAPPED_ARROW_BATCH_BYTES), ("a lot", None), ("12x", None), (None, None)])
def test_byte_sizes_are_read_in_sparks_units(text: str | None, expected: int | None) -> None:
    assert byte_count(text) == expected


def test_wisp_session_lifts_the_cap(spark: SparkSession, events: ws.Events) -> None:
    spark.conf.set(ARROW_BATCH_BYTES, "64m")
    started = ws.session("local[2]")  # the running session, its SQL settings applied
    assert started.conf.get(ARROW_BATCH_BYTES) in ("2147483647", "2147483647b")
    assert arrow_batch_advice(started) is None
