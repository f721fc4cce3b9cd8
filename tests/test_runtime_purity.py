"""`wisp.runtime` is what runs in Spark's Python workers: every module of it imports
with pyspark (and py4j) unimportable."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WISP_DIR = Path(__file__).resolve().parents[1] / "src" / "wisp"
RUNTIME_DIR = WISP_DIR / "runtime"
MODULES = ["wisp.runtime", *sorted(
    ".".join(("wisp", "runtime", *path.relative_to(RUNTIME_DIR).with_suffix("").parts))
    .removesuffix(".__init__") for path in RUNTIME_DIR.rglob("*.py")
    if path != RUNTIME_DIR / "__init__.py")]

SCRIPT = """
import importlib, json, sys, traceback

sys.path.insert(0, sys.argv[1])  # this checkout's wisp, whatever is installed
BLOCKED = ("pyspark", "py4j")


class NoSpark:
    \"\"\"A finder, first in line, for which pyspark and py4j do not exist.\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"No module named {name!r} (blocked by the purity test)")
        return None


sys.meta_path.insert(0, NoSpark())
failed = {}
for module in sys.argv[2:]:
    try:
        importlib.import_module(module)
    except ImportError:
        failed[module] = traceback.format_exc(limit=-6)
spark = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
files = {name: getattr(sys.modules.get(name), "__file__", None) for name in sys.argv[2:]}
print(json.dumps({"failed": failed, "spark": spark, "files": files}))
"""


def import_without_spark(modules: list[str]) -> dict[str, object]:
    """Import `modules` one after another in a fresh interpreter where pyspark and py4j
    cannot be imported; what failed (with the end of its traceback), which pyspark or
    py4j modules got loaded, and where each module came from."""
    result = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT, str(WISP_DIR.parent), *modules],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def test_runtime_modules_found() -> None:
    assert {"wisp.runtime.codecs", "wisp.runtime.codecs.arrays",
            "wisp.runtime.codecs.batches", "wisp.runtime.aggregates.aggregate",
            "wisp.runtime.windows.frames", "wisp.runtime.windows.intervals",
            "wisp.runtime.windows.hopping", "wisp.runtime.windows.policies",
            "wisp.runtime.codecs.sorting", "wisp.runtime.streaming.operator",
            "wisp.runtime.limits"} <= set(MODULES)


def test_runtime_imports_without_pyspark() -> None:
    report = import_without_spark(MODULES)
    failed = report["failed"]
    assert isinstance(failed, dict)
    assert failed == {}, "\n".join(f"{name}:\n{trace}" for name, trace in failed.items())
    assert report["spark"] == []
    files = report["files"]
    assert isinstance(files, dict)
    for name in MODULES:
        path = Path(files[name])
        assert path.is_relative_to(RUNTIME_DIR), (name, path)


def test_the_blocker_blocks() -> None:
    report = import_without_spark(["pyspark.sql"])
    failed = report["failed"]
    assert isinstance(failed, dict)
    assert list(failed) == ["pyspark.sql"]
    assert report["spark"] == []
