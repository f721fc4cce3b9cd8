"""Spark columns written as text: a column by name or a SQL expression (a query file's
`{col: name}` and `{expr: "SQL"}`, for boolean ticks and dynamic bounds)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def text_column(key: str, text: str) -> Column:
    """`F.col(text)` for "col", `F.expr(text)` for "expr"."""
    return F.col(text) if key == "col" else F.expr(text)
