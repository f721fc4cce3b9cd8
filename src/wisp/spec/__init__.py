"""Pure-Python specifications: durations, windows, policies, aggregations.

Nothing here imports Spark, Arrow or numpy; a test enforces it.
"""
