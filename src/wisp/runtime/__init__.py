"""The executor side: what runs inside Spark's Python workers on Arrow batches.

Kernels (picklable callables from an iterator of Arrow record batches to one), the
Arrow <-> numpy codec, the worker's sort, and the per-key batching and aggregation they
share. Nothing here imports pyspark: the engine (`wisp.engine`) builds the Spark plans
on the driver and hands each kernel what it needs as plain data (Arrow types, plan
dataclasses, spec objects)."""
