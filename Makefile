# wisp: entry points. `make demo` and `make test` work on a fresh machine with
# Python >= 3.11 and Java 17+; everything is installed into ./.venv.

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

# Exits non-zero when the interpreter it runs under is older than 3.11.
PY_VERSION_OK := -c 'import sys; sys.exit(sys.version_info < (3, 11))'

.PHONY: help install java-check demo test test-fast lint bench bench-quick clean

help:
	@echo "make demo         install, then run the windowed demo pipeline (Parquet in out/demo)"
	@echo "make test         install, then run the test suite"
	@echo "make test-fast    the tests that need no JVM (no Java needed), a few minutes"
	@echo "make install      create $(VENV) and install wisp with the dev and connect extras"
	@echo "make java-check   check that Java 17+ is available"
	@echo "make lint         ruff over src, tests and benchmarks; mypy --strict over src/wisp and benchmarks"
	@echo "make bench        run the benchmarks, a hot key under a memory cap, streams, feature sets (bench-quick: a short run)"
	@echo "make clean        remove $(VENV), caches and out/"

install: $(STAMP)

# Re-runs only when pyproject.toml changes (or the stamp is missing).
$(STAMP): pyproject.toml
	@if [ ! -x $(PY) ]; then \
	    if ! command -v $(PYTHON) >/dev/null 2>&1; then \
	        echo "error: '$(PYTHON)' not found; wisp needs Python >= 3.11 (set PYTHON=...)." >&2; \
	        exit 1; \
	    fi; \
	    if ! $(PYTHON) $(PY_VERSION_OK); then \
	        echo "error: wisp needs Python >= 3.11, but '$(PYTHON)' is $$($(PYTHON) --version 2>&1)." >&2; \
	        echo "Install Python 3.11+ or run: make install PYTHON=python3.11" >&2; \
	        exit 1; \
	    fi; \
	    echo "Creating $(VENV) with $$($(PYTHON) --version 2>&1)"; \
	    if ! $(PYTHON) -m venv $(VENV); then \
	        rm -rf $(VENV); \
	        echo "error: '$(PYTHON) -m venv' failed. On Debian/Ubuntu: sudo apt-get install -y python3-venv" >&2; \
	        exit 1; \
	    fi; \
	fi
	@$(PY) $(PY_VERSION_OK) || { \
	    echo "error: $(VENV) uses $$($(PY) --version 2>&1); wisp needs Python >= 3.11. Run 'make clean' and retry." >&2; \
	    exit 1; }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --editable '.[dev,connect]'
	@touch $@

java-check:
	@bash scripts/check_java.sh

demo: install java-check
	$(PY) -m wisp.demo

# Plain `pytest` (not `python -m pytest`): pyproject's pytest settings alone put the
# repository root and tests/ on the path, so the suite collects either way.
# Two processes (pytest-xdist), each with its own local SparkSession (tests/conftest.py),
# a test file at a time (`--dist loadfile`, so a module's shared stream runs once): much
# of a Spark test's time is latency (query starts, micro-batch commits, the Python
# workers' sockets), which the other process fills. `pytest -q` alone runs the same tests
# in one process.
test: install java-check
	$(VENV)/bin/pytest -q -n 2 --dist loadfile

# The tests that need no JVM (spec, plan, kernels, runtime, the stream simulator, query
# parsing): a few minutes, without Java. Two tiers' levers, neither used by `make test`:
# HYPOTHESIS_PROFILE=dev runs a quarter of each property test's examples (tests/conftest.py;
# `make test` and CI run them all), and `-n 2` (pytest-xdist) runs the tests in two
# processes, one a core: with no JVM and no SparkSession, they share nothing. Plain
# `pytest -q -m "not spark"` runs the same tests with every example in one process.
test-fast: install
	HYPOTHESIS_PROFILE=dev $(VENV)/bin/pytest -q -m "not spark" -n 2

lint: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict benchmarks

bench: install java-check
	$(PY) -m benchmarks.run
	$(PY) -m benchmarks.hotkey --output out/hotkey.md
	$(PY) -m benchmarks.streaming --output out/streaming.md
	$(PY) -m benchmarks.asof --output out/asof.md
	$(PY) -m pip install --quiet 'polars>=1'  # the rolling-median comparison alone
	$(PY) -m benchmarks.aggregations --output out/aggregations.md
	$(PY) -m benchmarks.user_aggregator --output out/user_aggregator.md
	$(PY) -m benchmarks.features --output out/features.md
	$(PY) -m benchmarks.point_in_time --output out/point_in_time.md
	$(PY) -m benchmarks.sketches --output out/sketches.md
	$(PY) -m benchmarks.sql --output out/sql.md
	$(PY) -m benchmarks.native_overhead --zone America/New_York --events 1000000,10000000 --output out/native_overhead.md

bench-quick: install java-check
	$(PY) -m benchmarks.run --quick

clean:
	rm -rf $(VENV) out/ build/ dist/ src/*.egg-info
	rm -rf .pytest_cache .mypy_cache .ruff_cache .hypothesis spark-warehouse metastore_db derby.log
	find . -path ./.git -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
