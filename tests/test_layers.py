"""The layers of `wisp` hold: what may import what, and who builds Spark plans.

* `spec/` (pure Python), `plan/` and `kernels/` (and `runtime/`) import without pyspark;
* no import cycle between wisp's modules, counting imports inside functions;
* only `engine/` builds Spark plans.

Every check reads the source (or imports it in a fresh interpreter); none needs Spark.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "wisp"


def module_name(path: Path, root: Path = SRC) -> str:
    """`src/wisp/engine/native.py` -> `wisp.engine.native`; a package's `__init__.py` is
    the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_files(root: Path = SRC, package: str = "wisp") -> dict[str, Path]:
    """Every module of `package` under `root`, by name."""
    return {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


# ------------------------------------------------------------- imports without Spark

PURE_PACKAGES = ("spec", "plan", "kernels", "runtime")
"""Packages that must import in an interpreter where pyspark and py4j cannot be
imported (`runtime/` when it exists)."""

_WITHOUT_SPARK = textwrap.dedent('''
    import importlib, json, sys, traceback

    class NoSpark:
        """Finder that makes pyspark and py4j (and their submodules) unimportable."""

        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("pyspark", "py4j"):
                raise ImportError(f"{name} is blocked: this module must import without it")
            return None

    sys.meta_path.insert(0, NoSpark())
    failures = {}
    for statement in json.loads(sys.argv[1]):
        try:
            exec(statement, {})
        except BaseException as error:
            chain = [f"{f.filename.rpartition('/src/')[2]}:{f.lineno}"
                     for f in traceback.extract_tb(error.__traceback__)
                     if "/wisp/" in f.filename]
            failures[statement] = f"{type(error).__name__}: {error} (via {' -> '.join(chain)})"
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("pyspark", "py4j"))
    print(json.dumps({"failures": failures, "loaded": loaded}))
''')


def this_source() -> dict[str, str]:
    """The environment of a subprocess that imports this tree's `src/wisp`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def import_without_spark(statements: Iterable[str]) -> dict[str, str]:
    """Run each import statement in one fresh interpreter in which importing pyspark or
    py4j raises ImportError; the statements that failed, with the error and the chain of
    wisp files that led to it."""
    done = subprocess.run([sys.executable, "-c", _WITHOUT_SPARK, json.dumps(list(statements))],
                          capture_output=True, text=True, env=this_source(), timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert not report["loaded"], f"pyspark was loaded despite the block: {report['loaded']}"
    failures: dict[str, str] = report["failures"]
    return failures


def pure_modules() -> list[str]:
    return [name for name, path in module_files().items()
            if path.relative_to(PACKAGE).parts[0] in PURE_PACKAGES]


def test_spec_plan_and_kernels_import_without_pyspark() -> None:
    statements = ["import wisp.plan, wisp.kernels, wisp.spec"]
    statements += [f"import importlib; importlib.import_module({name!r})"
                   for name in pure_modules()]
    failures = import_without_spark(statements)
    assert not failures, "these imports need pyspark:\n" + "\n".join(
        f"  {statement}: {why}" for statement, why in failures.items())


def test_the_spark_free_import_check_sees_pyspark() -> None:
    """Not vacuous: the same harness reports the engine, which imports pyspark, and passes
    the errors module, which does not."""
    failures = import_without_spark(["import importlib; importlib.import_module("
                                     "'wisp.engine.native')", "import wisp.errors"])
    assert list(failures) == ["import importlib; importlib.import_module('wisp.engine.native')"]
    assert "pyspark" in failures[next(iter(failures))]
    assert "wisp/engine/native.py" in failures[next(iter(failures))]


def test_the_package_loads_spark_names_lazily() -> None:
    """`import wisp` loads no pyspark; the names that need it load on first use, and
    importing the submodules `wisp.events` and `wisp.session` first does not hide the
    functions `wisp.events` and `wisp.session` (fresh interpreter: nothing loaded yet)."""
    script = textwrap.dedent("""
        import sys, types
        import wisp
        assert "pyspark" not in sys.modules, "import wisp loaded pyspark"
        import wisp.events, wisp.session
        from wisp.events import Events, TimeColumn, events, from_edges, time_kind
        for name in ("events", "session"):
            value = getattr(wisp, name)
            assert not isinstance(value, types.ModuleType), (name, value)
            assert value is getattr(sys.modules["wisp." + name], name), (name, value)
        assert wisp.Events is Events and wisp.from_edges is from_edges
        assert "snap_to_hops" in dir(wisp) and "Events" in dir(wisp)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=this_source(), timeout=300, check=False)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------ runtime: roles in order

RUNTIME_ROLES = ("limits", "codecs", "aggregates", "windows", "streaming")
"""The runtime's sub-packages (and its memory guard) in order: a module imports from
its own role and the roles before it, never after (docs/architecture.md)."""


def runtime_role(module: str) -> int | None:
    """The place in `RUNTIME_ROLES` of a module of `wisp.runtime` (None: not one)."""
    parts = module.split(".")
    if parts[:2] != ["wisp", "runtime"] or len(parts) < 3:
        return None
    return RUNTIME_ROLES.index(parts[2]) if parts[2] in RUNTIME_ROLES else None


def test_runtime_roles_import_in_order() -> None:
    graph = import_graph()
    placed = [name for name in graph if runtime_role(name) is not None]
    assert {runtime_role(name) for name in placed} == set(range(len(RUNTIME_ROLES)))
    backwards = [str(i) for name in placed for i in graph[name]
                 if (role := runtime_role(i.target)) is not None
                 and role > (runtime_role(name) or 0)]
    assert backwards == []
    unplaced = [name for name in graph if name.startswith("wisp.runtime.")
                and runtime_role(name) is None]
    assert unplaced == []


# ------------------------------------------------------------- kernels: numpy alone


def outside_kernels(modules: Mapping[str, Path]) -> dict[str, list[str]]:
    """Per module of `wisp.kernels`, what it imports that is neither numpy, the standard
    library, another module of `wisp.kernels` nor the pure-Python `wisp.spec` and
    `wisp.errors`."""
    found: dict[str, list[str]] = {}
    for name, path in modules.items():
        if not (name == "wisp.kernels" or name.startswith("wisp.kernels.")):
            continue
        wrong = [str(i) for i in wisp_imports(name, path, modules)
                 if i.target.partition(".")[2].partition(".")[0]
                 not in ("kernels", "spec", "errors")]
        for node, _ in imports_in(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [] if node.level else [node.module or ""])
            wrong += [n for n in names if n.partition(".")[0] not in
                      {"numpy", "wisp", "__future__", *sys.stdlib_module_names}]
        if wrong:
            found[name] = wrong
    return found


def test_kernels_need_numpy_alone() -> None:
    """`kernels/` holds the pure per-key algorithms: numpy and the standard library, no
    pyarrow, no Spark, nothing of wisp but `kernels/` and the spec (`runtime/` feeds them
    Arrow batches and state)."""
    modules = module_files()
    assert any(name.startswith("wisp.kernels.") for name in modules)
    assert outside_kernels(modules) == {}


def test_the_kernels_check_sees_arrow_and_the_runtime(tmp_path: Path) -> None:
    kernels = tmp_path / "wisp" / "kernels"
    kernels.mkdir(parents=True)
    (tmp_path / "wisp" / "runtime").mkdir()
    for path in (tmp_path / "wisp" / "__init__.py", kernels / "__init__.py",
                 tmp_path / "wisp" / "runtime" / "__init__.py",
                 tmp_path / "wisp" / "runtime" / "codec.py", kernels / "fine.py"):
        path.write_text("import math\nimport numpy as np\n")
    (kernels / "arrow.py").write_text("import pyarrow as pa\nfrom ..runtime import codec\n")
    found = outside_kernels(module_files(tmp_path))
    assert list(found) == ["wisp.kernels.arrow"]
    assert len(found["wisp.kernels.arrow"]) == 2



# ------------------------------------------------------------------- import cycles


@dataclass(frozen=True)
class Import:
    """An import of a wisp module by a wisp module: where it is written, and whether it
    runs inside a function."""

    source: str
    target: str
    line: int
    in_function: bool

    def __str__(self) -> str:
        where = "in a function" if self.in_function else "module level"
        return f"{self.source} -> {self.target} (line {self.line}, {where})"


def is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_in(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of `tree` with whether it is inside a function, skipping
    the bodies of `if TYPE_CHECKING:` (their `else:` counts)."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom,
                                                                 bool]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
            return
        if isinstance(node, ast.If) and is_type_checking(node.test):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
        for child in children:
            yield from walk(child, inside)

    yield from walk(tree, False)


def wisp_imports(name: str, path: Path, modules: Mapping[str, Path],
                 package: str = "wisp") -> list[Import]:
    """The imports of wisp modules that module `name` (file `path`) makes.

    `import a.b` imports `a.b`; `from .m import x` imports `m`, or the submodule `m.x`
    when there is one (`from . import binding`); a package stands for its `__init__`."""
    is_package = path.name == "__init__.py"
    found = []
    for node, in_function in imports_in(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                parts = name.split(".")
                base_parts = parts if is_package else parts[:-1]
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = []
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in modules else base)
        for target in dict.fromkeys(targets):
            if target.partition(".")[0] == package and target in modules:
                found.append(Import(name, target, node.lineno, in_function))
    return found


def import_graph(root: Path = SRC, package: str = "wisp") -> dict[str, list[Import]]:
    """Each module of `package` with the wisp imports it makes."""
    modules = module_files(root, package)
    return {name: wisp_imports(name, path, modules, package)
            for name, path in modules.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Import cycles of `graph` (module -> modules it imports), each as a chain that
    starts and ends at the same module: for every strongly connected component with a
    cycle, the shortest cycle through each of its modules (without repeats)."""
    nodes = sorted({*graph, *(t for ts in graph.values() for t in ts)})
    edges = {n: sorted(set(graph.get(n, ()))) for n in nodes}
    # Tarjan's strongly connected components (iterative).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    found: set[tuple[str, ...]] = set()
    for component in components:
        members = set(component)
        if len(component) == 1 and component[0] not in edges[component[0]]:
            continue
        for start in component:
            chain = _shortest_cycle(start, edges, members)
            ring = chain[:-1]
            turn = ring.index(min(ring))
            found.add(tuple(ring[turn:] + ring[:turn]))
    return [[*ring, ring[0]] for ring in sorted(found)]


def _shortest_cycle(start: str, edges: Mapping[str, list[str]],
                    members: set[str]) -> list[str]:
    """A shortest path from `start` back to itself inside `members` (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in edges[node]:
                if child not in members:
                    continue
                if child == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(previous[chain[-1]])
                    return [*reversed(chain), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is on no cycle")  # pragma: no cover


def describe_cycles(graph: Mapping[str, list[Import]]) -> list[str]:
    """Each cycle as `a -> b -> a`, with the import lines that make each step."""
    simple = {name: [i.target for i in found] for name, found in graph.items()}
    texts = []
    for chain in cycles(simple):
        steps = []
        for source, target in itertools.pairwise(chain):
            lines = [i for i in graph[source] if i.target == target]
            steps.append("      " + "; ".join(str(i) for i in lines))
        texts.append("  " + " -> ".join(chain) + "\n" + "\n".join(steps))
    return texts


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = describe_cycles(graph)
    assert not found, "import cycles between wisp's modules (TYPE_CHECKING imports not " \
                      "counted):\n" + "\n".join(found)


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}) == \
        [["a", "b", "c", "a"]]
    assert cycles({"a": ["b", "a"], "b": ["c"], "c": []}) == [["a", "a"]]
    assert cycles({"a": ["b", "c"], "b": ["c"], "c": []}) == []
    # two cycles through one module: both reported
    assert cycles({"a": ["b", "c"], "b": ["a"], "c": ["a"]}) == \
        [["a", "b", "a"], ["a", "c", "a"]]


def test_the_import_reader_resolves_what_the_cycle_check_needs(tmp_path: Path) -> None:
    """Relative imports, `from . import submodule`, imports inside functions, and
    `if TYPE_CHECKING:` skipped, on a package written for the test."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .low import thing\n",
        "low.py": "import pkg.sub.deep\n",
        "high.py": textwrap.dedent("""
            from typing import TYPE_CHECKING
            from . import low
            if TYPE_CHECKING:
                from .sub import deep
            else:
                from .sub import other_name
            def late():
                from .sub.deep import x
        """),
        "sub/__init__.py": "",
        "sub/deep.py": "from .. import high\nfrom ..low import y\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = import_graph(tmp_path, "pkg")
    edges = {name: sorted((i.target, i.in_function) for i in found)
             for name, found in graph.items()}
    assert edges == {
        "pkg": [("pkg.low", False)],
        "pkg.low": [("pkg.sub.deep", False)],
        "pkg.high": [("pkg.low", False), ("pkg.sub", False), ("pkg.sub.deep", True)],
        "pkg.sub": [],
        "pkg.sub.deep": [("pkg.high", False), ("pkg.low", False)],
    }
    assert cycles({n: [i.target for i in found] for n, found in graph.items()}) == [
        ["pkg.high", "pkg.sub.deep", "pkg.high"],
        ["pkg.low", "pkg.sub.deep", "pkg.low"],
    ]


# ------------------------------------------------------------ who builds Spark plans

SPARK_PLAN_MODULES = ("pyspark.sql.functions", "pyspark.sql.window",
                      "pyspark.sql.connect.functions", "pyspark.sql.connect.window")
"""Modules whose only use is building Column expressions and window specifications."""
SPARK_PLAN_NAMES = ("functions", "Window", "WindowSpec")
"""The same, imported by name from `pyspark.sql` (or `pyspark.sql.connect`)."""

DATAFRAME_BUILDERS = frozenset({
    # DataFrame -> a new DataFrame
    "select", "selectExpr", "filter", "where", "withColumn", "withColumns",
    "withColumnRenamed", "withColumnsRenamed", "withMetadata", "withWatermark", "drop",
    "dropDuplicates", "dropDuplicatesWithinWatermark", "dropna", "fillna", "distinct",
    "limit", "offset", "orderBy", "sort", "sortWithinPartitions", "repartition",
    "repartitionByRange", "coalesce", "hint", "join", "crossJoin", "lateralJoin", "union",
    "unionAll", "unionByName", "intersect", "intersectAll", "subtract", "exceptAll",
    "groupBy", "groupby", "rollup", "cube", "groupingSets", "observe", "mapInArrow",
    "mapInPandas", "applyInPandas", "applyInArrow", "applyInPandasWithState", "cogroup",
    "unpivot", "melt", "toDF", "sample", "sampleBy", "randomSplit",
    # SparkSession -> a new DataFrame
    "createDataFrame", "range", "sql", "table",
})
"""Methods of DataFrame, GroupedData and SparkSession that make a new DataFrame. Left
out because wisp's own API or Python's types share the name: `agg` (`Events.agg`),
`alias` (`Aggregation.alias`), `replace` (`str.replace`), `transform`."""

ALLOWED_OUTSIDE_ENGINE = {
    # An example program written against the public API (`import wisp as ws`), as a user
    # would: its Spark code makes the demo's synthetic input, not a wisp query.
    "wisp.demo": "the bundled example's synthetic data",
}


def imported_names(tree: ast.AST) -> tuple[bool, set[str]]:
    """Whether the module imports anything of pyspark (anywhere, annotations included),
    and the names it binds to imports of other packages (`np`, `pa`, `pc`, `re`, ...)."""
    uses_spark = False
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == "pyspark":
                    uses_spark = True
                else:
                    other.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").partition(".")[0] == "pyspark":
                uses_spark = True
            elif node.level == 0:
                other.update(alias.asname or alias.name for alias in node.names)
    return uses_spark, other


def spark_plan_building(path: Path) -> list[str]:
    """Where the module at `path` builds Spark plans (see the test's docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node, _ in imports_in(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith(SPARK_PLAN_MODULES)]
        elif node.level == 0 and (node.module or "").startswith(SPARK_PLAN_MODULES):
            names = [f"{node.module}.{a.name}" for a in node.names]
        elif node.level == 0 and node.module in ("pyspark.sql", "pyspark.sql.connect"):
            names = [f"{node.module}.{a.name}" for a in node.names
                     if a.name in SPARK_PLAN_NAMES]
        else:
            names = []
        found += [f"line {node.lineno}: imports {name}" for name in names]
    uses_spark, other = imported_names(tree)
    if not uses_spark:
        return found
    calls = []
    literals = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict,
                ast.ListComp, ast.SetComp, ast.DictComp)
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        receiver = call.func.value
        if isinstance(receiver, literals) or (isinstance(receiver, ast.Name)
                                              and receiver.id in other):
            continue
        method = call.func.attr
        if method in DATAFRAME_BUILDERS:
            calls.append((call.lineno, f"calls .{method}(...)"))
        elif isinstance(receiver, ast.Attribute) and receiver.attr in ("read", "readStream"):
            calls.append((call.lineno, f"reads a table (.{receiver.attr}.{method})"))
    return found + [f"line {line}: {what}" for line, what in sorted(calls)]


def test_only_the_engine_builds_spark_plans() -> None:
    """Outside `src/wisp/engine/` (and `ALLOWED_OUTSIDE_ENGINE`), no module:

    1. imports `pyspark.sql.functions`, `pyspark.sql.window` (or their Spark Connect
       twins), or the names `functions`, `Window`, `WindowSpec` from `pyspark.sql`, at
       module level or in a function (`if TYPE_CHECKING:` blocks are skipped);
    2. if it imports anything of pyspark at all (annotations included), calls a method
       named in `DATAFRAME_BUILDERS` (`df.select(...)`, `df.groupBy(...)`,
       `spark.createDataFrame(...)`, ...) or reads through `<session>.read.<...>(...)`,
       on any receiver except a literal (`", ".join(...)`) or a name bound to an import
       of another package (`np.where`, `pc.filter`).

    Modules that import nothing of pyspark (the Arrow kernels, the pure planner) are not
    checked for method names: they cannot name a DataFrame, and their numpy and Arrow
    calls share these names. Reading a schema (`df.schema`, `df.columns`) is allowed."""
    offenders = {}
    for name, path in module_files().items():
        if path.relative_to(PACKAGE).parts[0] == "engine" or name in ALLOWED_OUTSIDE_ENGINE:
            continue
        found = spark_plan_building(path)
        if found:
            offenders[name] = found
    assert not offenders, "Spark plans built outside wisp.engine:\n" + "\n".join(
        f"  {name}: " + "; ".join(found) for name, found in offenders.items())


def test_the_plan_building_check_sees_spark_code(tmp_path: Path) -> None:
    """Not vacuous: the check flags an import of functions and a `select`, and passes
    numpy's `where`, `str.join` and a module that never imports pyspark."""
    spark = tmp_path / "spark.py"
    spark.write_text(textwrap.dedent("""
        import numpy as np
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pyspark.sql import DataFrame, Window
        def f(df: DataFrame):
            from pyspark.sql import functions as F
            np.where(df)
            ", ".join(df.columns)
            return df.select(F.col("x"))
    """))
    assert spark_plan_building(spark) == ["line 7: imports pyspark.sql.functions",
                                          "line 10: calls .select(...)"]
    arrow = tmp_path / "arrow.py"
    arrow.write_text("def f(table):\n    return table.filter(table.column(0))\n")
    assert spark_plan_building(arrow) == []
