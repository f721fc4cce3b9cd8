"""Spark columns written as text: a column by name or a SQL expression (a query file's
`{col: name}` and `{expr: "SQL"}`, for boolean ticks and dynamic bounds).

An expression reaches Spark only in the canonical form of `wisp.spec.safe_sql`: the
text is checked against the safe subset (no `reflect`, `java_method` or any function
outside the listed ones) and rewritten, and Spark parses the rewritten text alone."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from ..spec.safe_sql import canonical_sql


def text_column(key: str, text: str, param: str = "expr") -> Column:
    """`F.col(text)` for "col"; for "expr", `F.expr` of the canonical form of `text`
    (a `WispInputError` naming `param` for an expression outside the safe subset)."""
    return F.col(text) if key == "col" else F.expr(canonical_sql(text, param))
