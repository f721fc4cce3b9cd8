"""wisp: temporal windowing and windowed aggregation over event data on Apache Spark."""
