"""A query over a directory of Parquet files as a stream (`wisp run --stream`): the
stream's schema, its reader, and the Parquet sink with its checkpoint and row counter.

`wisp.cli` decides what to run and checks the paths; this module builds the Spark plans.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import StructType

ROWS_OUT = "wisp_rows_out"
"""The observation counting the rows a stream writes (`rows_out` in each micro-batch's
`observedMetrics`): the Parquet sink reports no count of its own (-1)."""


def parquet_schema(spark: SparkSession, path: str) -> StructType:
    """The schema of the Parquet files under `path` (Spark reads their footers)."""
    return spark.read.parquet(path).schema


def parquet_stream(spark: SparkSession, path: str, schema: StructType | str,
                   options: Mapping[str, str]) -> DataFrame:
    """The Parquet files that arrive in the directory `path` as a streaming DataFrame of
    `schema` (or a DDL string). `options` go to Spark's file source (`maxFilesPerTrigger`
    bounds the files of a micro-batch)."""
    return spark.readStream.options(**options).schema(schema).parquet(path)


def start_parquet_sink(result: DataFrame, output: str, checkpoint: str, *,
                       once: bool) -> StreamingQuery:
    """Start writing `result` to the Parquet sink at `output` in Append mode, with its
    checkpoint at `checkpoint` (exactly once); each micro-batch counts its rows in the
    observation `ROWS_OUT`. `once`: process what is there now and stop
    (`trigger(availableNow=True)`); else run until stopped."""
    counted = result.observe(ROWS_OUT, F.count(F.lit(1)).alias("rows_out"))
    writer = (counted.writeStream.format("parquet").outputMode("append")
              .option("checkpointLocation", checkpoint))
    if once:
        writer = writer.trigger(availableNow=True)
    return writer.start(output)
