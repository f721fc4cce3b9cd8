"""The example of docs/streaming.md runs as written and says what the page says."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PAGE = Path(__file__).resolve().parents[2] / "docs" / "streaming.md"


def test_the_streaming_page_example(spark: SparkSession) -> None:
    code = PAGE.read_text().split("```python\n")[1].split("```")[0]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
    text = printed.getvalue()
    assert "{'rows_in': 6, 'late': 1, 'rejected_null_time': 0, 'watermark': " \
           "'1970-01-01T00:00:25.000Z'" in text
    table = [line.split("|")[1:-1] for line in text.splitlines()
             if line.startswith("|") and "window_start" not in line]
    assert [(k.strip(), t.strip()[-8:], c.strip(), s.strip())
            for k, _, _, t, c, s in table] == [
        ("a", "00:00:10", "1", "1.0"), ("a", "00:00:16", "2", "5.0"),
        ("a", "00:00:20", "3", "8.0"), ("b", "00:00:11", "1", "2.0")]
