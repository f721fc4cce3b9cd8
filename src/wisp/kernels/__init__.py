"""Per-key algorithms on numpy arrays. No Spark here: shared by the engine and tests."""
