"""wisp's benchmarks: `make bench` (full) and `make bench-quick` (short); see BENCHMARKS.md."""
