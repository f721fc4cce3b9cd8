"""`wisp.spec` is pure Python: the standard library and `wisp.errors`, nothing else."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

WISP_DIR = Path(__file__).resolve().parents[2] / "src" / "wisp"
SPEC_DIR = WISP_DIR / "spec"
SPEC_FILES = sorted(SPEC_DIR.rglob("*.py"))
HEAVY = ("pyspark", "pyarrow", "numpy", "pandas", "py4j")


def test_spec_files_found() -> None:
    names = {path.name for path in SPEC_FILES}
    assert {"__init__.py", "time.py", "windows.py", "policies.py", "aggregates.py"} <= names


def imports_outside_stdlib(path: Path, root: Path = WISP_DIR) -> list[str]:
    """The imports of `path` (a module under the package dir `root`) that are neither
    standard library, relative imports inside `root/spec`, nor `wisp.errors`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    depth = len(path.relative_to(root).parts) - 1  # 1 for spec/x.py: `.` is wisp.spec
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level <= depth:
                    continue  # inside wisp.spec
                if node.level == depth + 1 and node.module == "errors":
                    continue  # wisp.errors
                bad.append(f"{'.' * node.level}{node.module or ''} (line {node.lineno})")
                continue
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            if module.split(".")[0] in sys.stdlib_module_names:
                continue
            if module == "wisp.errors" or module == "wisp.spec" or module.startswith(
                    "wisp.spec."):
                continue
            bad.append(f"{module} (line {node.lineno})")
    return bad


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: p.name)
def test_spec_modules_import_only_stdlib_and_errors(path: Path) -> None:
    assert imports_outside_stdlib(path) == []


def test_the_import_checker_is_not_vacuous(tmp_path: Path) -> None:
    probe = tmp_path / "wisp" / "spec" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "from __future__ import annotations\n"
        "import datetime, zoneinfo\n"
        "from . import time\n"
        "from .policies import Count\n"
        "from ..errors import bad_value\n"
        "from wisp.errors import WispError\n"
        "import numpy\n"
        "from pyspark.sql import functions\n"
        "from ..engine import native\n"
        "from .. import events\n"
        "import wisp.plan\n"
        "def later():\n"
        "    import pandas\n",
        encoding="utf-8",
    )
    found = [item.split(" ")[0] for item in imports_outside_stdlib(probe, tmp_path / "wisp")]
    assert found == ["numpy", "pyspark.sql", "..engine", "..", "wisp.plan", "pandas"]


SCRIPT = """
import json, sys, types
wisp = types.ModuleType("wisp")
wisp.__path__ = [sys.argv[1]]  # a bare parent package: wisp/__init__.py never runs
sys.modules["wisp"] = wisp
import wisp.spec.windows, wisp.spec.aggregates, wisp.spec.policies, wisp.spec.time
import wisp.spec.windows as w
w.Rows(-2, 0); w.Range.past("10s"); w.daily("Europe/Berlin")
heavy = sorted(name for name in sys.modules if name.split(".")[0] in sys.argv[2].split(","))
loaded = sorted(name for name in sys.modules if name.startswith("wisp"))
print(json.dumps({"heavy": heavy, "wisp": loaded, "windows_file": w.__file__,
                  "init_ran": hasattr(sys.modules["wisp"], "__file__")}))
"""


def test_importing_the_spec_loads_no_heavy_dependency() -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT, str(WISP_DIR), ",".join(HEAVY)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["heavy"] == []
    assert Path(report["windows_file"]) == SPEC_DIR / "windows.py"
    assert report["init_ran"] is False
    assert "wisp.spec.windows" in report["wisp"]
    assert "wisp.errors" in report["wisp"]
    outside = [name for name in report["wisp"]
               if name not in ("wisp", "wisp.errors") and not name.startswith("wisp.spec")]
    assert outside == []
