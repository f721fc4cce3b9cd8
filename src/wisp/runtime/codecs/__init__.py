"""Arrow at the worker's edges: columns as numpy values and ticks (`arrays`),
batches cut by key (`batches`), the worker's sort, key normalisation as Spark
groups, and rows across Spark's pandas and JSON boundaries."""
