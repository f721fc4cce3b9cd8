"""Input descriptions written by hand for planner tests: no Spark.

`source("k string, ts timestamp, v double", time="ts", key="k")` describes what the
engine would describe for a DataFrame of that schema bound with those roles."""

from __future__ import annotations

from collections.abc import Sequence

from wisp.plan.source import ColumnType, Field, Source, TimeColumn, TypeFamily, time_kind

FAMILIES: dict[str, TypeFamily] = {
    "tinyint": "integer", "smallint": "integer", "int": "integer", "bigint": "integer",
    "float": "float", "double": "float", "boolean": "boolean", "string": "string",
    "binary": "binary", "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz",
    "date": "date",
}


def column_type(text: str) -> ColumnType:
    """A column type from Spark's short name for it (`bigint`, `decimal(10,2)`,
    `array<int>`, `string collate UTF8_LCASE`)."""
    if text.startswith("decimal("):
        precision, scale = (int(x) for x in text[len("decimal("):-1].split(","))
        return ColumnType(text, "decimal", precision=precision, scale=scale)
    if text.startswith(("array<", "map<", "struct<")):
        return ColumnType(text, "other", atomic=False, arrow_orders=False)
    if text.startswith("string collate"):
        return ColumnType(text, "string", arrow_orders=False)
    return ColumnType(text, FAMILIES[text])


def fields(ddl: str) -> tuple[Field, ...]:
    """Columns from `name type, name type, ...` (no commas inside types but decimals')."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in ddl:
        depth += char in "(<"
        depth -= char in ")>"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    out = []
    for part in parts:
        name, _, text = part.strip().partition(" ")
        out.append(Field(name, column_type(text.strip())))
    return tuple(out)


def source(ddl: str, time: str, *, end: str | None = None,
           key: str | Sequence[str] | None = None, order: str | None = None,
           on_null_time: str = "error") -> Source:
    columns = fields(ddl)
    types = {c.name: c.type for c in columns}
    kind = time_kind(types[time])
    assert kind is not None
    keys = () if key is None else (key,) if isinstance(key, str) else tuple(key)
    return Source(columns, TimeColumn(time, kind, types[time]), end, keys, order,
                  on_null_time)  # type: ignore[arg-type]
