"""Reading a query's input file (`wisp run`, `wisp explain`, `wisp plot`): the scan, its
row counter and the malformed-row guard.

`wisp.query.read_input` decides the format and validates the query; this module builds
the Spark plan that reads the file.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from pyspark.sql import DataFrame, DataFrameReader, Observation, SparkSession
from pyspark.sql import functions as F

from .columns import counted_where, fail_where

MALFORMED_COLUMN = "_wisp_malformed"
_COUNTER = itertools.count()


def malformed_message(fmt: str) -> str:
    return (f"WispError: `input` must be well-formed {fmt.upper()}, found a malformed row; "
            "set input.on_malformed: drop to drop such rows on purpose (they are counted); "
            "first malformed row: ")


def read_file(spark: SparkSession, path: str, fmt: str, *, options: Mapping[str, str],
              header: bool, schema: str | None,
              on_malformed: str) -> tuple[DataFrame, Observation]:
    """The file(s) at `path` in format `fmt` ("parquet", "csv" or "json") as a DataFrame,
    and the observation that gets `rows_read` (and for CSV and JSON `rejected_malformed`)
    once an action ran. CSV and JSON are read in PERMISSIVE mode with a corrupt-record
    column, so that a malformed row is never silently dropped: with `on_malformed`
    "error" the query fails naming the row; with "drop" the row is dropped and counted."""
    if fmt == "parquet":
        reader = spark.read.options(**options)
        if schema:
            reader = reader.schema(schema)
        observation = Observation(f"wisp_input_{next(_COUNTER)}")
        df = reader.parquet(path).observe(observation, F.count(F.lit(1)).alias("rows_read"))
        return df, observation
    options = dict(options)
    if fmt == "csv":
        options["header"] = str(header).lower()

    def read(reader: DataFrameReader) -> DataFrame:
        return reader.csv(path) if fmt == "csv" else reader.json(path)

    if schema:
        ddl = f"{schema}, `{MALFORMED_COLUMN}` STRING"
    else:  # infer the types (a pass over the data; only the schema reaches the driver)
        inferred = read(spark.read.options(inferSchema="true", columnNameOfCorruptRecord=
                                           MALFORMED_COLUMN, **options)).schema
        fields = [f for f in inferred.fields if f.name != MALFORMED_COLUMN]
        ddl = ", ".join([f"`{f.name}` {f.dataType.simpleString()}" for f in fields]
                        + [f"`{MALFORMED_COLUMN}` STRING"])
    df = read(spark.read.options(mode="PERMISSIVE", columnNameOfCorruptRecord=MALFORMED_COLUMN,
                                 **options).schema(ddl))
    bad = F.col(MALFORMED_COLUMN).isNotNull()
    observation = Observation(f"wisp_input_{next(_COUNTER)}")
    df = df.observe(observation, F.count(F.lit(1)).alias("rows_read"),
                    counted_where(bad).alias("rejected_malformed"))
    if on_malformed == "drop":
        df = df.filter(~bad)
    else:
        df = fail_where(df, bad, F.concat(F.lit(malformed_message(fmt)),
                                          F.col(MALFORMED_COLUMN)))
    return df.drop(MALFORMED_COLUMN), observation
