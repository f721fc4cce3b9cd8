"""The only place that builds Spark plans."""
