"""Writing a query's result (`wisp run`): the row counter on the way out, CSV's text
columns, and the write itself."""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as sf
from pyspark.sql import types as T


def counted_rows(df: DataFrame, name: str) -> tuple[DataFrame, Observation]:
    """`df`, counting its rows as they are written: the observation `name` gets
    `rows_out` once an action ran."""
    rows_out = Observation(name)
    return df.observe(rows_out, sf.count(sf.lit(1)).alias("rows_out")), rows_out


def for_csv(df: DataFrame) -> DataFrame:
    """CSV holds no arrays, maps or structs: such columns are written as JSON text."""
    return df.select(*[
        sf.to_json(sf.col(f"`{f.name}`")).alias(f.name)
        if isinstance(f.dataType, (T.ArrayType, T.MapType, T.StructType))
        else sf.col(f"`{f.name}`") for f in df.schema.fields])


def write_result(df: DataFrame, target: str, fmt: str, *, overwrite: bool) -> None:
    """Write `df` to `target` as `fmt` ("parquet", or "csv" with a header and nested
    columns as JSON text); an existing `target` is replaced with `overwrite`, else the
    write fails. The mode is spelled "error", not its alias "errorifexists": Spark
    Connect knows only the short name."""
    if fmt == "csv":
        df = for_csv(df)
    writer = df.write.mode("overwrite" if overwrite else "error").format(fmt)
    if fmt == "csv":
        writer = writer.option("header", "true")
    writer.save(target)
