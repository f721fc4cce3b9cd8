"""SQL access: the table function `wisp_window(TABLE(t), query)` (`register_sql`).

`query` is a query file's text (`wisp.query`: the same grammar, checks and messages as
`wisp run`), of which the `events`, `window` (or `features`: a feature set without
label rows) and `aggregations` sections are read; the table argument is the input. The
function is a Python table function whose `eval` takes Arrow batches (Spark's Arrow
UDTF, evaluation type `SQL_ARROW_UDTF`) and whose static `analyze` plans the query when
Spark analyses the statement:

- it parses and checks the text, binds the event roles to the table's schema, and asks
  wisp's planner for a plan, forcing a kernel strategy where the planner would choose a
  native one (`table_plan`);
- it returns the output schema (the API's columns) and asks Spark to hash-partition the
  table by the key columns and, where Arrow does not order the key, time and
  tie-break columns as Spark does, to sort each partition by them (the user writes no
  PARTITION BY);
- it hands the kernel (`engine.compiler.TableKernel`) to the executors in its result.

On the executors, the null-time, end and Delta-attribute checks that the API runs as
Spark expressions run in Python on each batch; then, as in the API's worker, the
instance either sorts its partition with Arrow within a budget (`SortedRuns`, spilling
past it) and runs the kernel over the sorted rows at the partition's end, or, where
Spark sorted it, hands each batch to the kernel as it comes (`Resumed`). Either way the
kernel reads a long key in pieces.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, OrderingColumn, PartitioningColumn

from .binding import Events, TableSchema, bind_events
from .engine.build import COMPILER_MODULES
from .engine.columns import null_time_message
from .engine.compiler import (
    EXPRESSION_IN_SQL,
    TableKernel,
    has_table_kernel,
    table_kernel_for,
)
from .engine.describe import describe_events, sorts_in_worker
from .engine.layout import arrow_schema
from .errors import WispInputError, WispUnsupportedError
from .features_query import in_features, in_window
from .plan.nodes import Plan
from .plan.planner import plan as make_plan
from .plan.source import Inputs
from .query import (
    MAX_QUERY_BYTES,
    QueryError,
    build_feature_window,
    build_window,
    load_yaml,
    parse_query,
    qerr,
)
from .runtime.codecs.batches import CHUNK_ROWS
from .runtime.codecs.sorting import Kernel, SortedRuns, sort_budget
from .runtime.limits import WithinMemory, within_memory
from .runtime.windows.resumable import Resumed
from .spec.aggregates import Aggregation
from .spec.features import FeatureSet, feature_set
from .spec.windows import Window

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FUNCTION = "wisp_window"
"""The name `register_sql` gives the table function."""
HIDE_TRACEBACK = "spark.sql.execution.pyspark.udf.hideTraceback.enabled"
"""The session setting under which an error raised in a Python function reaches the SQL
error as its one line (`ExceptionClass: message`), without the Python traceback."""
KERNEL_STRATEGIES = ("arrow-frames", "arrow-intervals", "arrow-spl", "arrow-ticks",
                     "arrow-running", "arrow-sessions")
"""The kernel strategies tried, in turn, for a window whose best plan is native."""
QUERY_NAME = "the query"
"""How an error about the YAML text names where it was read."""

assert COMPILER_MODULES  # imported for its side effect: every table kernel is registered


# ------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class TablePlan:
    """What `analyze` resolved, for the executors: the kernel strategy (`kernel`: its
    kernel, keys, order and input columns), the time column and its null-time policy,
    the kernel's input columns with their Arrow types (`inputs`) and the output schema
    (`output`)."""

    kernel: TableKernel
    time: str
    time_kind: str
    on_null_time: str
    null_message: str
    inputs: pa.Schema
    output: pa.Schema
    sorts_in_worker: bool
    """Whether the table function sorts each partition itself (Arrow orders every sort
    column as Spark does: `engine.describe.sorts_in_worker`), as the API's worker does;
    otherwise Spark sorts it."""
    copies: tuple[tuple[str, str], ...] = ()
    """The kernel's hidden input columns, each a copy of a table column (a feature
    set's tick columns: `parameter_columns`)."""

    @property
    def sort_columns(self) -> tuple[str, ...]:
        """The order of the kernel's input: key, time, tie-break columns."""
        return tuple(dict.fromkeys([*self.kernel.keys, *self.kernel.order]))


def quoted(name: str) -> str:
    """A column name as SQL text, whatever characters it holds."""
    return "`" + name.replace("`", "``") + "`"


def spark_expressions(raw: object, where: str = "window") -> str | None:
    """The path of the first `{col: ...}` or `{expr: ...}` value in a window's raw YAML
    (None: none): a Spark expression the table function cannot evaluate."""
    if isinstance(raw, Mapping):
        if set(raw) in ({"col"}, {"expr"}):
            return where
        for key, value in raw.items():
            found = spark_expressions(value, f"{where}.{key}")
            if found is not None:
                return found
    if isinstance(raw, list):
        for i, value in enumerate(raw):
            found = spark_expressions(value, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def read_query_text(text: object) -> Any:
    """The parsed query of `query`'s text, refused (a `QueryError` naming `query`) when
    it is not a constant string or is larger than a query file may be."""
    if not isinstance(text, str):
        raise qerr("query", "a query file's text given as a constant string (a literal, "
                   "or a named parameter such as :q passed with spark.sql(text, args=...))",
                   "a value known only when the query runs" if text is None else text)
    if len(text.encode("utf-8")) > MAX_QUERY_BYTES:
        raise qerr("query", f"a text of at most {MAX_QUERY_BYTES:,} bytes (1 MiB)",
                   f"{len(text.encode('utf-8')):,} bytes")
    return parse_query(load_yaml(text, QUERY_NAME))


def refuse_other_forms(query: Any) -> None:
    """Refuse what a query file may hold but the table function does not run: a join,
    a feature set's label rows, edge rows, and Spark expressions in the window or the
    feature set's windows."""
    if query.join is not None:
        raise WispUnsupportedError(
            f"`join` must be left out of a query run by {FUNCTION} (its `events`, "
            "`window` or `features`, and `aggregations` sections are read), found one; "
            "run it with wisp run or the Python API")
    if query.features is not None and query.features.at is not None:
        raise WispUnsupportedError(
            f"`features.at` must be left out of a query run by {FUNCTION} (it takes one "
            "table, the events, and reads no path), found label rows at "
            f"{query.features.at.path!r}; run the query with wisp run or the Python API "
            "(events.features(..., at=labels))")
    if query.edge is not None:
        raise WispUnsupportedError(
            f"`events.edge` must be left out of a query run by {FUNCTION} (pairing edge "
            "rows needs Spark), found one; pair them in the table first (an end column), "
            "or run the query with wisp run or the Python API")
    found = spark_expressions(query.raw_window)
    for label, raw in () if query.features is None else query.features.windows:
        found = found or spark_expressions(raw, f"features.windows.{label}")
    if found is not None:
        raise WispUnsupportedError(
            f"`{found}` must not be a {{col: ...}} or {{expr: ...}} value in SQL "
            f"({FUNCTION} runs no Spark expression inside the table function), found one; "
            "compute the column in the table first, or run the query with wisp run or "
            "the Python API")


def query_window(query: Any) -> Window | None:
    """The query's window, or its feature set (`features:`), built without Spark."""
    if query.features is None:
        return build_window(query.raw_window, columns=False)
    return feature_set({label: build_feature_window(label, raw, columns=False)
                        for label, raw in query.features.windows})


def planned(inputs: Inputs, window: Window | None, aggregations: tuple[Aggregation, ...]
            ) -> Plan:
    """`table_plan`, a feature set's errors naming their key under `features` as `wisp
    run`'s do (`features_query.in_window`)."""
    if not isinstance(window, FeatureSet):
        return table_plan(inputs, window, aggregations)
    try:
        return table_plan(inputs, window, aggregations)
    except WispUnsupportedError as error:
        raise WispUnsupportedError(in_features(error)) from None
    except WispInputError as error:
        alone = PlannedAlone(inputs)
        raise WispInputError(in_window(error, dict(window.windows), alone, aggregations)
                             ) from None


@dataclass(frozen=True)
class PlannedAlone:
    """What `features_query.in_window` tries each window of a set with: the planner
    over the table's schema, in place of the API's events."""

    inputs: Inputs

    def features(self, windows: Mapping[str, Window | None], *aggregations: Aggregation
                 ) -> Plan:
        return make_plan(self.inputs, feature_set(windows), aggregations)


def table_plan(inputs: Inputs, window: Window | None,
               aggregations: tuple[Aggregation, ...]) -> Plan:
    """The planner's plan for the query when its strategy runs on a kernel; otherwise
    the first kernel strategy of `KERNEL_STRATEGIES` the query runs on (the rows are
    the API's, as `strategy=` promises). A window with no kernel strategy is refused."""
    chosen = make_plan(inputs, window, aggregations)
    if has_table_kernel(chosen):
        return chosen
    for name in KERNEL_STRATEGIES:
        try:
            forced = make_plan(inputs, window, aggregations, name)
        except WispInputError:
            continue
        if has_table_kernel(forced):
            return forced
    kind = "the cumulative window" if window is None else type(window).__name__
    raise WispUnsupportedError(
        f"`window` must be a window that runs on a kernel in SQL, found {kind}, whose "
        f"strategy ({chosen.strategy}) needs Spark expressions to compute its input; run "
        "it with the Python API or wisp run")


def resolve(schema: T.StructType, text: object) -> TablePlan:
    """Plan the query `text` over a table of `schema`, as `analyze` does: every error
    is wisp's own (a `QueryError` for the text, a `WispInputError` naming the role or
    column, a `WispUnsupportedError` for what SQL does not run)."""
    query = read_query_text(text)
    refuse_other_forms(query)
    window = query_window(query)
    events = bind_events(Events, TableSchema(schema), query.time, end=query.end,
                         key=list(query.key), order=query.order,
                         on_null_time="drop" if query.on_null_time == "drop" else "error")
    chosen = planned(Inputs(describe_events(events)), window, query.aggregations)
    kernel = table_kernel_for(chosen, events)
    assert kernel is not None  # `table_plan` chose a plan with one
    copies = parameter_columns(kernel, window)
    fields = {f.name: f for f in schema.fields}
    sort_columns = list(dict.fromkeys([*kernel.keys, *kernel.order]))
    in_worker = sorts_in_worker(schema, sort_columns)
    assert in_worker or resumable(kernel.kernel), "a kernel Spark sorts for takes pieces"
    hidden = dict(copies)
    read = list(dict.fromkeys([*(hidden.get(c, c) for c in kernel.needed),
                               *(c for c in sort_columns if in_worker)]))
    return TablePlan(kernel, events.time.name, events.time.kind, events.on_null_time,
                     null_time_message(events.time).removeprefix("WispError: "),
                     arrow_schema([fields[c] for c in read]), output_schema(kernel.fields),
                     in_worker, tuple(copies))


def output_schema(fields: list[T.StructField]) -> pa.Schema:
    """The Arrow schema Spark writes the output in: the kernel's types, with each
    field's nullability (`arrow_schema` makes every field nullable)."""
    return pa.schema([f.with_nullable(s.nullable)
                      for f, s in zip(arrow_schema(fields), fields, strict=True)])


def resumable(kernel: object) -> bool:
    """Whether `kernel` takes a key's rows in pieces (`runtime.windows.resumable`):
    where Spark sorts, the table function feeds it each batch as Spark hands it over
    (`Resumed`), as the API's worker does."""
    return all(hasattr(kernel, name) for name in ("keys", "step", "finish", "run_group"))


def parameter_columns(kernel: TableKernel, window: Window | None
                      ) -> list[tuple[str, str]]:
    """The kernel's hidden input columns that hold a window parameter, each with the
    table's column that the parameter names (`TableKernel.parameters`); the parameter
    of a Spark expression was refused with the query (`refuse_other_forms`)."""
    if not kernel.parameters:
        return []
    assert window is not None
    values = window.parameters()
    copies = []
    for hidden, param in kernel.parameters:
        source = values[param]
        if not isinstance(source, str):
            raise WispUnsupportedError(EXPRESSION_IN_SQL.format(param=param))
        copies.append((hidden, source))
    return copies


# ------------------------------------------------------------------ the function


@dataclass
class Analyzed(AnalyzeResult):
    """`analyze`'s result: Spark's (schema, partitioning, order) and the plan that
    Spark hands, pickled, to every instance on the executors."""

    plan: TablePlan | None = None


class WispWindow:
    """The table function `wisp_window(TABLE(t), query)` (see the module's docstring).
    Spark makes one instance per partition of the table it was asked for (per key hash),
    calls `eval` with each Arrow batch of it, in order, then `terminate`."""

    def __init__(self, analyzed: Analyzed) -> None:
        assert analyzed.plan is not None
        self.plan = analyzed.plan
        kernel = self.plan.kernel.kernel
        self.sorter: SortedRuns | None = None
        self.feed: Resumed | None = None
        if self.plan.sorts_in_worker:
            self.sorter = SortedRuns(self.plan.sort_columns, sort_budget())
        else:
            self.feed = Resumed(kernel, getattr(kernel, "chunk_rows", CHUNK_ROWS))
        vectorise_partition_boundaries(sys._getframe(1))

    @staticmethod
    def analyze(table: AnalyzeArgument, query: AnalyzeArgument) -> Analyzed:
        """Plan the query over the table's schema (`resolve`): the output schema, the
        partitioning by a hash of the key columns (one partition without keys) and the
        order within it (key, time, tie-break columns)."""
        if not table.isTable or not isinstance(table.dataType, T.StructType):
            raise qerr("table", f"a table argument, as in {FUNCTION}(TABLE(t), query)",
                       table.dataType.simpleString())
        plan = resolve(table.dataType, query.value)
        schema = T.StructType(plan.kernel.fields)
        keys = plan.kernel.keys
        order = [] if plan.sorts_in_worker else \
            [OrderingColumn(quoted(c)) for c in plan.sort_columns]
        if not keys:
            return Analyzed(schema, withSinglePartition=True, orderBy=order, plan=plan)
        # One hash of the keys, not the key columns themselves: Spark's Arrow UDTF drops
        # partitioning columns that are plain columns from the batches eval sees.
        partition = PartitioningColumn(f"hash({', '.join(quoted(k) for k in keys)})")
        return Analyzed(schema, partitionBy=[partition], orderBy=order, plan=plan)

    def eval(self, batch: pa.RecordBatch, query: object) -> Iterator[pa.RecordBatch]:
        """Check `batch` (`checked`), then, as in the API's worker: where Spark sorted
        the partition, hand it to the kernel at once, for the outputs it makes final (a
        long key read in pieces: the instance holds a few pieces and the kernel's
        state); where the table function sorts, take it into the sort (held within
        the sort's budget, spilled to disk past it)."""
        rows = checked(batch, self.plan)
        if not rows.num_rows:
            return iter(())
        if self.sorter is not None:
            self.sorter.push(rows)
            return iter(())
        assert self.feed is not None
        return self.conformed(within_memory(self.feed.push(rows)))

    def terminate(self) -> Iterator[pa.RecordBatch]:
        """The outputs the partition's end makes final: the rest of a kernel fed as the
        batches came, or the kernel over the sorted partition (long keys in pieces)."""
        if self.sorter is not None:
            kernel: Kernel = self.plan.kernel.kernel
            return self.conformed(WithinMemory(kernel)(self.sorter.close()))
        assert self.feed is not None
        return self.conformed(within_memory(self.feed.close()))

    def conformed(self, outputs: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The kernel's non-empty `outputs` in the output schema, nullability included:
        Spark's Arrow writer takes every batch of a task in the schema of the first
        (an empty batch of the output schema where an `eval` returns none), and a
        kernel marks every column nullable."""
        schema = self.plan.output
        for out in outputs:
            if out.num_rows:
                yield out if out.schema.equals(schema) else \
                    pa.RecordBatch.from_arrays(out.columns, schema=schema)


def checked(batch: pa.RecordBatch, plan: TablePlan) -> pa.RecordBatch:
    """The kernel's input columns of `batch`, in the kernel's Arrow types, after the data
    checks the API runs in Spark: a null (or NaN) time fails with wisp's message (or is
    dropped under on_null_time: drop), an end before its time fails, a null or NaN
    Delta attribute fails."""
    columns = [batch.column(f.name).cast(f.type) for f in plan.inputs]
    rows = pa.RecordBatch.from_arrays(columns, schema=plan.inputs)
    for hidden, source in plan.copies:
        rows = rows.append_column(hidden, rows.column(source))
    missing = absent(rows.column(plan.time), plan.time_kind)
    if missing is not None:
        if plan.on_null_time == "error":
            raise WispInputError(plan.null_message)
        rows = pc.filter(rows, pc.invert(missing))
    kernel = plan.kernel
    if kernel.end is not None:
        before = pc.fill_null(pc.less(rows.column(kernel.end), rows.column(plan.time)),
                              False)
        if pc.any(before).as_py():
            i = int(np.flatnonzero(before.to_numpy(zero_copy_only=False))[0])
            raise WispInputError(
                f"`end` column {kernel.end!r} must not be before the `time` column "
                f"{plan.time!r}, found end {rows.column(kernel.end)[i].as_py()} < time "
                f"{rows.column(plan.time)[i].as_py()}")
    for name, kind in kernel.attributes:
        if absent(rows.column(name), kind) is not None:
            raise WispInputError(
                f"`attr` column {name!r} must not be null or NaN (a Delta policy compares "
                "its values), found a null or NaN value")
    return rows


def absent(values: pa.Array, kind: str) -> pa.Array | None:
    """Where `values` are null (or NaN for float values), or None where none is."""
    missing = pc.is_null(values, nan_is_null=kind == "float")
    return missing if pc.any(missing).as_py() else None


# ------------------------------------------------------- partition boundaries

BOUNDARY_METHOD = "_detect_partition_boundaries"
"""The method of PySpark's Arrow UDTF wrapper (`ArrowUDTFWithPartition`, in
`pyspark.worker`) that finds where the partitions of a batch begin: a Python loop that
converts two values of every row, which costs the table function as much as a kernel."""


def vectorise_partition_boundaries(frame: FrameType | None, depth: int = 4) -> None:
    """Give the PySpark wrapper that is making this instance (found among the calling
    frames, up to `depth`) a vectorised `BOUNDARY_METHOD`: the same boundaries, found
    with Arrow compute instead of a loop per row. Where no such wrapper is found (another
    PySpark version) nothing changes: the results are the same either way."""
    for _ in range(depth):
        if frame is None:
            return
        wrapper = frame.f_locals.get("self")
        indexes = getattr(wrapper, "_partition_child_indexes", None)
        if wrapper is not None and indexes and hasattr(wrapper, BOUNDARY_METHOD):
            setattr(wrapper, BOUNDARY_METHOD,
                    functools.partial(partition_boundaries, indexes=list(indexes)))
            return
        frame = frame.f_back


def partition_boundaries(batch: pa.RecordBatch, indexes: list[int]) -> list[int]:
    """Where each run of equal values of the columns `indexes` begins in `batch`, then
    its length (nulls equal to nulls): `[0, ..., num_rows]`."""
    n = batch.num_rows
    if n <= 1:
        return [0, n]
    changed = np.zeros(n - 1, dtype=bool)
    for i in indexes:
        values = batch.column(i)
        after, before = values.slice(1), values.slice(0, n - 1)
        differ = pc.fill_null(pc.not_equal(after, before), False)
        one_null = pc.xor(pc.is_null(after), pc.is_null(before))
        changed |= pc.or_(differ, one_null).to_numpy(zero_copy_only=False)
    return [0, *(np.flatnonzero(changed) + 1).tolist(), n]


# ------------------------------------------------------------------ registration


def register_sql(spark: SparkSession, name: str = FUNCTION, *,
                 hide_traceback: bool = True) -> None:
    """Register the table function `name(TABLE(t), query)` (default `wisp_window`) in
    `spark`'s session, classic or Spark Connect:

        ws.register_sql(spark)
        spark.sql("SELECT * FROM wisp_window(TABLE(readings), :q)", args={"q": text})

    `query` is a query file's text (its `events`, `window` and `aggregations`
    sections); the output has the API's columns and rows (docs/sql.md).
    `hide_traceback` (default True) sets the session's
    `spark.sql.execution.pyspark.udf.hideTraceback.enabled`, so that a bad query's SQL
    error shows wisp's message, not a Python traceback (for every Python function of
    the session: pass False to leave the setting alone)."""
    from pyspark.util import PythonEvalType

    if hide_traceback:
        spark.conf.set(HIDE_TRACEBACK, "true")
    # Spark's own `arrow_udtf` refuses a class with `analyze` (SPARK-53286); Spark itself
    # analyses and runs such a function with Arrow batches, so it is made directly.
    function: Any
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect.udtf import UserDefinedTableFunction as ConnectFunction

        function = ConnectFunction(WispWindow, returnType=None, name=name,
                                   evalType=PythonEvalType.SQL_ARROW_UDTF)
    else:
        from pyspark.sql.udtf import UserDefinedTableFunction

        function = UserDefinedTableFunction(WispWindow, returnType=None, name=name,
                                            evalType=PythonEvalType.SQL_ARROW_UDTF)
    spark.udtf.register(name, function)


__all__ = ["FUNCTION", "QueryError", "WispWindow", "register_sql"]
