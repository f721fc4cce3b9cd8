"""The `join:` section of a query file: an as-of join (`wisp.asof_join`) of the query's
events (the left table, read from `--input`) with a second table (`join.right`).

```yaml
events: {time: ts, key: ticker}
join:
  kind: asof
  right: {path: quotes.parquet, time: ts, key: ticker}
  direction: backward          # forward, nearest
  tolerance: 2s
  allow_exact_matches: true
  suffixes: ["", "_quote"]
```

`join.right` names the right table's file (`path`; `format`, `header`, `schema` and
`options` as in `input`) and its roles (`time`, `key`, `order`). `on` and `by` default
to the two sides' time and key columns, as `asof_join` does with two Events. A query
with `join` has no `window` and no `aggregations`: its output is one row per left row.
The right table is read with `on_malformed: error` and its null times fail the query,
so no right row is lost without a word; the left follows `input` and `events` as any
query. Checked when the file is loaded, before Spark starts (`query.parse_join`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .engine.reading import read_file
from .spec.joins import AsOfJoin

JOIN_KINDS = ("asof",)


@dataclass(frozen=True)
class RightTable:
    """The right table of a join: where it is read from and its roles."""

    path: str
    format: str
    header: bool
    schema: str | None
    options: dict[str, str]
    time: str
    key: tuple[str, ...] | None
    order: str | None


@dataclass(frozen=True)
class JoinSpec:
    """A validated `join:` section."""

    right: RightTable
    spec: AsOfJoin


def joined(spark: SparkSession, join: JoinSpec, left: Any) -> DataFrame:
    """The as-of join of the left events with the right table (lazy)."""
    from .events import events
    from .joins import asof_join

    table = join.right
    df, _ = read_file(spark, table.path, table.format, options=table.options,
                      header=table.header, schema=table.schema, on_malformed="error")
    right = events(df, table.time, key=list(table.key) if table.key is not None else None,
                   order=table.order)
    spec = join.spec
    return asof_join(left, right, on=spec.on, by=spec.by, direction=spec.direction,
                     tolerance=spec.tolerance,
                     allow_exact_matches=spec.allow_exact_matches, suffixes=spec.suffixes)
