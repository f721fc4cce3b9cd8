"""Declarative queries: a YAML file -> event roles, a window spec and aggregations.

The YAML is parsed with `yaml.safe_load` and validated against `SCHEMA` (plain Python:
the allowed keys of each section and their types). An unknown or misspelled key is a
`QueryError` naming the key's full path, with a "did you mean" hint.

Windows are built generically from the spec classes of `wisp.spec`: `kind` names a
window (`Rows`, `Range`, `Sliding`, ...), a policy (`Count`, `Time`, `Delta`,
`Punctuation`), a calendar tick (`hourly` ... `yearly`, `cron`) or `clock`, and the other
keys are the constructor's arguments (checked against its signature). A nested mapping
with a `kind` is built the same way, so `{kind: Sliding, evict: {kind: Count, n: 4}}`
and `{kind: Since, tick: {kind: daily, tz: Europe/Berlin}}` need no code of their own.
A mapping `{col: name}` or `{expr: "SQL"}` is a Spark column (for boolean ticks and
dynamic bounds). An `{expr: ...}` must keep to the safe subset of `wisp.spec.safe_sql`
(checked here, before Spark starts): a query file is data and runs no code.
`kind: cumulative`, or no `window`, is the cumulative aggregation. A `features:`
section instead of `window:` is a feature set (`wisp.features_query`): several windows,
each written as `window:` is, at every event or at the rows of a label table.

A query file is read within bounds: at most `MAX_QUERY_BYTES`, at most
`MAX_YAML_NODES` YAML nodes once every alias is counted at each use (a "billion laughs"
file of a few hundred bytes is refused, not expanded), no recursive alias; and a value
an error message quotes is cut to `MAX_QUOTED_CHARS`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import types as T

from .engine.reading import read_file
from .errors import WispInputError, WispUnsupportedError, bad_value, did_you_mean
from .events import Events
from .features_query import FeaturesSpec, LabelTable, in_features
from .join_query import JOIN_KINDS, JoinSpec, RightTable
from .spec import policies, windows
from .spec.aggregates import DEFINITIONS, Aggregation, built_in
from .spec.features import FeatureSet, feature_set
from .spec.joins import AsOfJoin
from .spec.safe_sql import canonical_sql

FORMATS_IN = ("parquet", "csv", "json")
FORMATS_OUT = ("parquet", "csv")
MALFORMED = ("error", "drop")
EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json",
              ".jsonl": "json", ".ndjson": "json"}
OWNED_OPTIONS = ("mode", "columnNameOfCorruptRecord", "inferSchema", "header")


MAX_QUERY_BYTES = 1 << 20
"""The largest query file read (1 MiB)."""
MAX_YAML_NODES = 10_000
"""The most YAML nodes a query file may hold, each alias counted at every use."""
MAX_QUOTED_CHARS = 200
"""The longest value an error message quotes (cut with "...")."""
MAX_MESSAGE_CHARS = 2_000
"""The longest message of a QueryError (cut with "...")."""


class QueryError(WispInputError):
    """A query file that cannot be read or does not follow the schema. Its message is
    cut to `MAX_MESSAGE_CHARS`."""

    def __init__(self, message: str) -> None:
        super().__init__(clip(message, MAX_MESSAGE_CHARS))


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with "..." when longer."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Missing:
    def __repr__(self) -> str:
        return "nothing"


NOTHING = _Missing()


class _Plain:
    """A text that an error message shows without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Quoted:
    """A value as an error message quotes it: its repr, cut to `MAX_QUOTED_CHARS`
    without ever building the whole repr of a large or deeply nested value."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        text = ""
        for piece in _repr_pieces(self.value, depth=0):
            text += piece
            if len(text) > MAX_QUOTED_CHARS:
                return text[:MAX_QUOTED_CHARS - 3] + "..."
        return text


def _repr_pieces(value: object, depth: int) -> Iterator[str]:
    """The repr of `value` in pieces, lazily: containers piece by piece (a nesting
    deeper than 20 is shown as `...`), anything else as its own repr."""
    if isinstance(value, (dict, list, tuple)) and depth > 20:
        yield "..."
        return
    if isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield ", " if i else ""
            yield from _repr_pieces(key, depth + 1)
            yield ": "
            yield from _repr_pieces(item, depth + 1)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "[" if isinstance(value, list) else "("
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _repr_pieces(item, depth + 1)
        yield "]" if isinstance(value, list) else ("," if len(value) == 1 else "") + ")"
    elif isinstance(value, str) and len(value) > MAX_QUOTED_CHARS:
        yield repr(value[:MAX_QUOTED_CHARS + 1])
    else:
        yield repr(value)


def qerr(param: str, expected: str, found: object, *, hint: str = "") -> QueryError:
    """`errors.bad_value` as a QueryError, quoting `found` within `MAX_QUOTED_CHARS`."""
    shown = found if found is NOTHING else Quoted(found)
    return QueryError(bad_value(param, expected, shown, hint=hint).args[0])


# --------------------------------------------------------------------------- schema

Scalar = (str, int, float, bool)
SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "query": {"events": (dict,), "window": (str, dict), "features": (dict,),
              "aggregations": (list,), "input": (dict,), "output": (dict,), "join": (dict,)},
    "events": {"time": (str,), "end": (str,), "key": (str, list), "order": (str,),
               "on_null_time": (str,), "edge": (str,), "id": (str,)},
    "input": {"path": (str,), "format": (str,), "header": (bool,), "schema": (str,),
              "options": (dict,), "on_malformed": (str,)},
    "output": {"path": (str,), "format": (str,)},
    "aggregation": {"fn": (str,), "col": (str,), "as": (str,), "q": (int, float, list),
                    "interpolation": (str,), "by": (str,), "half_life": (str, int, float),
                    "min_count": (int,), "k": (int,), "lg_k": (int,)},
    "join": {"kind": (str,), "right": (dict,), "on": (str,), "by": (str, list),
             "direction": (str,), "tolerance": (str, int, float),
             "allow_exact_matches": (bool,), "suffixes": (list,)},
    "join.right": {"path": (str,), "format": (str,), "header": (bool,), "schema": (str,),
                   "options": (dict,), "time": (str,), "key": (str, list), "order": (str,)},
    "features": {"windows": (dict,), "at": (dict,), "include_current": (bool,)},
    "features.at": {"path": (str,), "format": (str,), "header": (bool,), "schema": (str,),
                    "options": (dict,), "time": (str,), "key": (str, list)},
}
REQUIRED: dict[str, tuple[str, ...]] = {
    "query": ("events",), "events": ("time",), "aggregation": ("fn",),
    "join": ("kind", "right"), "join.right": ("path", "time"),
    "features": ("windows",), "features.at": ("path",)}
TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
              dict: "a mapping", list: "a list"}


def check_section(raw: object, section: str, path: str) -> dict[str, Any]:
    """`raw` as a mapping whose keys and value types follow `SCHEMA[section]`."""
    allowed = SCHEMA[section]
    if not isinstance(raw, dict):
        raise qerr(path or "query", "a mapping", raw)
    for key, value in raw.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in allowed:
            hint = did_you_mean(str(key), allowed).strip(" ()")
            raise unknown_key(where, section, allowed, key, hint)
        types = allowed[key]
        if value is None or (isinstance(value, bool) and bool not in types) or \
                not isinstance(value, types):
            expected = " or ".join(TYPE_NAMES[t] for t in types)
            raise qerr(where, expected, value)
    for key in REQUIRED.get(section, ()):
        if key not in raw:
            where = f"{path}.{key}" if path else key
            raise qerr(where, "given", NOTHING)
    return raw


def unknown_key(where: str, section: str, allowed: Mapping[str, Any], key: object,
                hint: str) -> QueryError:
    known = ", ".join(allowed)
    return qerr(where, f"a known key of {section} (known: {known})", key, hint=hint)


def choice(value: object, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        hint = did_you_mean(value, choices).strip(" ()") if isinstance(value, str) else ""
        raise qerr(where, f"one of {', '.join(choices)}", value, hint=hint)
    assert isinstance(value, str)
    return value


# ------------------------------------------------------------------- window kinds


@dataclass(frozen=True)
class Kind:
    """A constructor that `kind:` may name: its display name and its parameters."""

    name: str
    build: Callable[..., Any]
    params: tuple[str, ...]
    required: tuple[str, ...]


def _kind(name: str, build: Callable[..., Any]) -> Kind:
    if dataclasses.is_dataclass(build):
        fields = [f for f in dataclasses.fields(build) if f.init]
        required = tuple(f.name for f in fields if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING)
        return Kind(name, build, tuple(f.name for f in fields), required)
    parameters = inspect.signature(build).parameters.values()
    return Kind(name, build, tuple(p.name for p in parameters),
                tuple(p.name for p in parameters if p.default is inspect.Parameter.empty))


def kinds() -> dict[str, Kind]:
    """Every `kind:` a query may name, by lower-case name. Discovered from the spec
    modules, so a new window class in `spec/windows.py` is available at once."""
    found: dict[str, Kind] = {}
    for name, obj in vars(windows).items():
        if isinstance(obj, type) and issubclass(obj, windows.Window) and \
                obj is not windows.Window and dataclasses.is_dataclass(obj):
            found[name.lower()] = _kind(name, obj)
    for name in ("Count", "Time", "Delta", "Punctuation"):
        found[name.lower()] = _kind(name, getattr(policies, name))
    for name in ("hourly", "daily", "weekly", "monthly", "yearly", "cron", "clock"):
        found[name] = _kind(name, getattr(windows, name))
    return found


CUMULATIVE = "cumulative"


def build_spec(raw: object, where: str, columns: bool) -> Any:
    """A value of a window argument: a nested spec (mapping with `kind`), a column
    (`{col: ...}` / `{expr: ...}`), a list of values, or the plain YAML value."""
    if isinstance(raw, list):
        return [build_spec(item, f"{where}[{i}]", columns) for i, item in enumerate(raw)]
    if not isinstance(raw, dict):
        return raw
    if "kind" in raw:
        return build_kind(raw, where, columns)
    if set(raw) in ({"col"}, {"expr"}):
        return column(raw, where, columns)
    raise qerr(where, "a value, a mapping with `kind` (a window, policy or tick), "
               "{col: name} or {expr: SQL}", raw)


def column(raw: dict[str, Any], where: str, columns: bool) -> Any:
    """A Spark column, or (before Spark runs) a placeholder naming it. An `{expr: ...}`
    is checked against the safe subset either way (`wisp.spec.safe_sql`), so that a
    query file that would run code fails when it is loaded."""
    (key, text), = raw.items()
    if not isinstance(text, str) or not text:
        raise qerr(f"{where}.{key}", "a non-empty string", text)
    sql = text
    if key == "expr":
        try:
            sql = canonical_sql(text, f"{where}.{key}")
        except WispInputError as error:
            raise QueryError(str(error)) from None
    if not columns:
        return f"<{key} {text}>"
    from .engine.expressions import text_column

    return text_column(key, sql, f"{where}.{key}")


def build_kind(raw: Mapping[str, Any], where: str, columns: bool) -> Any:
    """Construct the spec named by `raw["kind"]` from the other keys of `raw`."""
    name = raw["kind"]
    table = kinds()
    if not isinstance(name, str) or name.lower() not in table:
        names = [k.name for k in table.values() if where != "window" or
                 (isinstance(k.build, type) and issubclass(k.build, windows.Window))]
        hint = did_you_mean(name, names).strip(" ()") if isinstance(name, str) else ""
        expected = f"one of {', '.join(names)}"
        if where == "window":
            expected += f" or {CUMULATIVE}"
        raise qerr(f"{where}.kind", expected, name, hint=hint)
    kind = table[name.lower()]
    arguments: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "kind":
            continue
        if key not in kind.params:
            hint = did_you_mean(str(key), kind.params).strip(" ()")
            allowed = dict.fromkeys(("kind", *kind.params))
            raise unknown_key(f"{where}.{key}", kind.name, allowed, key, hint)
        arguments[key] = build_spec(value, f"{where}.{key}", columns)
    for key in kind.required:
        if key not in arguments:
            raise qerr(f"{where}.{key}", f"given for {kind.name}", NOTHING)
    try:
        return kind.build(**arguments)
    except WispInputError as error:
        # The spec names its own parameter; prefix the path to it in the query.
        raise QueryError(re.sub(r"^`([^`]+)`", lambda m: f"`{where}.{m.group(1)}`",
                                str(error), count=1)) from None
    except (TypeError, ValueError, ArithmeticError) as error:
        raise qerr(where, f"valid arguments for {kind.name}", dict(raw),
                   hint=str(error)) from None


def build_window(raw: object, columns: bool = True) -> windows.Window | None:
    """The window of a query's `window:` value (None for the cumulative aggregation)."""
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw.lower() == CUMULATIVE:
            return None
        raw = {"kind": raw}
    if not isinstance(raw, dict) or "kind" not in raw:
        raise qerr("window.kind", "given (a window kind such as Rows, Range, Sliding, "
                   f"or {CUMULATIVE})", NOTHING)
    if isinstance(raw["kind"], str) and raw["kind"].lower() == CUMULATIVE:
        if len(raw) > 1:
            extra = next(k for k in raw if k != "kind")
            raise unknown_key(f"window.{extra}", CUMULATIVE, {"kind": None}, extra, "")
        return None
    window = build_kind(raw, "window", columns)
    if not isinstance(window, windows.Window):
        raise qerr("window.kind", "a window kind (a policy or tick goes inside a window, "
                   "e.g. {kind: Sliding, evict: ...})", raw["kind"])
    return window


FEATURE_KINDS = ("Range", "Rows", "Since", "Trailing", CUMULATIVE)
"""The windows of a feature set (`wisp.spec.features`)."""


def build_feature_window(label: object, raw: object, columns: bool = True
                         ) -> windows.Window | None:
    """The window of `features.windows.<label>`, written as `window:` is (None for the
    cumulative window). The spec checks the label and which windows a feature set takes:
    another window kind is its `WispUnsupportedError`, naming the key."""
    try:
        FeatureSet(((label, None),))  # type: ignore[arg-type]  # the spec checks labels
    except WispInputError as error:
        quote = "" if isinstance(label, str) else \
            f"; YAML reads it as a {type(label).__name__}: quote it ('{label}')"
        raise QueryError(in_features(error) + quote) from None
    where = f"features.windows.{label}"
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw.lower() == CUMULATIVE:
            return None
        raw = {"kind": raw}
    if not isinstance(raw, dict) or "kind" not in raw:
        raise qerr(f"{where}.kind", f"given (one of {', '.join(FEATURE_KINDS)})", NOTHING)
    name = raw["kind"]
    if isinstance(name, str) and name.lower() == CUMULATIVE:
        if len(raw) > 1:
            extra = next(k for k in raw if k != "kind")
            raise unknown_key(f"{where}.{extra}", CUMULATIVE, {"kind": None}, extra, "")
        return None
    kind = kinds().get(name.lower()) if isinstance(name, str) else None
    if kind is None or not (isinstance(kind.build, type) and
                            issubclass(kind.build, windows.Window)):
        hint = did_you_mean(name, FEATURE_KINDS).strip(" ()") if isinstance(name, str) \
            else ""
        raise qerr(f"{where}.kind", f"one of {', '.join(FEATURE_KINDS)}", name, hint=hint)
    window: windows.Window = build_kind(raw, where, columns)
    try:
        FeatureSet(((label, window),))  # type: ignore[arg-type]
    except WispUnsupportedError:
        raise WispUnsupportedError(
            f"`{where}.kind` must be one of {', '.join(FEATURE_KINDS)} in a feature set, "
            f"found {kind.name!r}; run it as a query of its own, with `window:`") from None
    return window


# ------------------------------------------------------------------- aggregations

AGG_FNS = tuple(fn for fn, definition in DEFINITIONS.items() if not definition.user_code)
"""The aggregations a query file may name: the built-ins but those of the user's code
(a udaf needs Python)."""
CALL_ARGUMENTS = {fn: tuple(a for a in definition.arguments if a != "col")
                  for fn, definition in DEFINITIONS.items() if not definition.user_code}
"""The arguments after the column a call form takes, in order (`quantile(v, 0.9)`,
`max_by(v, t)`, `ewm_mean(v, 10s)`): `Definition.arguments`."""
GIVEN = {"q": "the probability, a number in [0, 1]",
         "k": "how many values, a whole number >= 1",
         "by": "the column whose extreme row is picked",
         "half_life": "a duration such as 10s"}
"""What a required argument (`Definition.required`) is, for the error that misses it."""
_CALL = re.compile(r"^\s*([A-Za-z_]+)\s*\(\s*([^()]*?)\s*\)\s*$")


def build_aggregation(raw: object, where: str) -> Aggregation:
    """`count`, `mean(temperature)` or `{fn: mean, col: temperature, as: avg}`."""
    if isinstance(raw, str):
        match = _CALL.match(raw)
        fn, col = (match.group(1), match.group(2) or None) if match else (raw.strip(), None)
        return make_aggregation(fn, *_call_arguments(fn, col, where), None, where)
    section = check_section(raw, "aggregation", where)
    options = {k: v for k, v in section.items() if k not in ("fn", "col", "as")}
    return make_aggregation(section["fn"], section.get("col"), options, section.get("as"),
                            where)


def _call_arguments(fn: str, inside: str | None, where: str
                    ) -> tuple[str | None, dict[str, Any]]:
    """A call form's column and further arguments (`CALL_ARGUMENTS`); `q` a number."""
    names = CALL_ARGUMENTS.get(fn, ())
    if inside is None or not names:
        return inside, {}
    parts = [p.strip() for p in inside.split(",")]
    if len(parts) - 1 > len(names):
        shown = ", ".join(["col", *names])
        raise qerr(where, f"a call {fn}({shown}) with at most {len(names) + 1} arguments",
                   inside)
    options: dict[str, Any] = dict(zip(names, parts[1:], strict=False))
    if "q" in options:
        try:
            options["q"] = float(options["q"])
        except ValueError:
            raise qerr(f"{where}.q", "a number in [0, 1]", options["q"]) from None
    for name in ("k", "lg_k"):
        if name in options:
            try:
                options[name] = int(options[name])
            except ValueError:
                raise qerr(f"{where}.{name}", "a whole number", options[name]) from None
    return parts[0] or None, options


def make_aggregation(fn: str, col: str | None, options: dict[str, Any] | None,
                     alias: str | None, where: str) -> Aggregation:
    found = built_in(fn)
    if found is not None and found[0].user_code:
        raise qerr(f"{where}.fn", f"a built-in aggregation (a {fn} needs Python: use the "
                   "Python API)", fn)
    choice(fn, f"{where}.fn", AGG_FNS)
    assert found is not None  # `choice` took it
    definition, make = found
    required = definition.required
    if "col" in required and col is None:
        raise qerr(f"{where}.col", f"a column name for {fn}", NOTHING)
    options = dict(options or {})
    allowed = (*CALL_ARGUMENTS[fn], "min_count")
    for key in options:
        if key not in allowed:
            raise qerr(f"{where}.{key}", f"one of the arguments of {fn} "
                       f"({', '.join(allowed)})", key)
    for name in required:
        if name != "col" and name not in options:
            what = GIVEN.get(name)
            raise qerr(f"{where}.{name}", f"given ({what})" if what else "given", NOTHING)
    try:
        agg = make(**options) if col is None else make(col, **options)
        return agg.alias(alias) if alias is not None else agg
    except WispInputError as error:
        # the spec names its own parameter; prefix the path to it in the query
        raise QueryError(re.sub(r"^`([^`]+)`", lambda m: f"`{where}.{m.group(1)}`",
                                str(error), count=1)) from None


# ---------------------------------------------------------------------- the query


@dataclass(frozen=True)
class InputSpec:
    path: str | None
    format: str | None
    header: bool
    schema: str | None
    options: dict[str, str]
    on_malformed: str


@dataclass(frozen=True)
class Query:
    """A validated query: event roles, the raw window (built by `window()`),
    aggregations, input and output settings."""

    time: str
    end: str | None
    key: tuple[str, ...]
    order: str | None
    on_null_time: str
    raw_window: Any
    aggregations: tuple[Aggregation, ...]
    input: InputSpec
    output_path: str | None
    output_format: str | None
    edge: str | None = None
    id: str | None = None
    join: JoinSpec | None = None
    """An as-of join with a second table instead of a window (`wisp.join_query`)."""
    features: FeaturesSpec | None = None
    """A feature set instead of a window (`wisp.features_query`)."""

    def window(self) -> windows.Window | None:
        """The window spec, with Spark columns for `{col: ...}`/`{expr: ...}` values
        (call it once a SparkSession exists). A feature set has no one window: its
        query refuses this (`feature_windows`)."""
        if self.features is not None:
            raise WispUnsupportedError(
                "`window` must be given for this use of the query, found `features` "
                "instead (a feature set of several windows runs with wisp run and "
                "wisp explain)")
        return build_window(self.raw_window, columns=True)

    def feature_windows(self) -> dict[str, windows.Window | None]:
        """The windows of the feature set by label, with Spark columns (call it once a
        SparkSession exists)."""
        assert self.features is not None
        return {label: build_feature_window(label, raw, columns=True)
                for label, raw in self.features.windows}


def parse_query(data: object) -> Query:
    """Validate a parsed YAML document and build the query (no Spark needed)."""
    top = check_section(data, "query", "")
    events = check_section(top["events"], "events", "events")
    key = events.get("key", [])
    keys = (key,) if isinstance(key, str) else tuple(key)
    if not all(isinstance(k, str) for k in keys):
        raise qerr("events.key", "a column name or a list of names", key)
    on_null_time = choice(events.get("on_null_time", "error"), "events.on_null_time",
                          ("error", "drop"))
    if ("edge" in events) != ("id" in events):
        given, missing = ("edge", "id") if "edge" in events else ("id", "edge")
        raise qerr(f"events.{missing}", f"given with events.{given} (edge rows need both)",
                   NOTHING)
    if "edge" in events:
        for other in ("end", "order", "on_null_time"):
            if other in events:
                raise qerr(f"events.{other}", "left out for edge rows (events.edge: "
                           "intervals come from start and end edges)", events[other])
    raw_window = top.get("window")
    build_window(raw_window, columns=False)  # validate now, before Spark starts
    features = None
    if "features" in top:
        if "window" in top:
            raise qerr("window", "left out with features (a query has one window, or a "
                       "feature set of windows under features.windows)", top["window"])
        for role in ("end", "edge"):
            if role in events:
                raise qerr(f"events.{role}", "left out with features (a feature set's "
                           "windows read point events)", events[role])
        features = parse_features(check_section(top["features"], "features", "features"),
                                  keys)
    join = None
    if "join" in top:
        join = parse_join(check_section(top["join"], "join", "join"))
        for other in ("window", "features", "aggregations"):
            if other in top:
                raise qerr(other, "left out with join (a join gives one row per left "
                           "row)", top[other])
    elif "aggregations" not in top:
        raise qerr("aggregations", "given", NOTHING)
    aggs_raw = top.get("aggregations", [None])
    if not aggs_raw:
        raise qerr("aggregations", "a non-empty list", aggs_raw)
    aggs = () if join else tuple(build_aggregation(a, f"aggregations[{i}]")
                                 for i, a in enumerate(aggs_raw))
    inp = check_section(top.get("input", {}), "input", "input")
    fmt_in = inp.get("format")
    if fmt_in is not None:
        choice(fmt_in, "input.format", FORMATS_IN)
    options = inp.get("options", {})
    for name, value in options.items():
        if name in OWNED_OPTIONS:
            raise qerr(f"input.options.{name}", "left to wisp (use input.header, "
                       "input.schema, input.on_malformed)", value)
        if not isinstance(value, Scalar):
            raise qerr(f"input.options.{name}", "a string, number or boolean", value)
    out = check_section(top.get("output", {}), "output", "output")
    if "format" in out:
        choice(out["format"], "output.format", FORMATS_OUT)
    return Query(
        time=events["time"], end=events.get("end"), key=keys, order=events.get("order"),
        on_null_time=on_null_time, raw_window=raw_window, aggregations=aggs,
        input=InputSpec(inp.get("path"), fmt_in, inp.get("header", True), inp.get("schema"),
                        {k: str(v).lower() if isinstance(v, bool) else str(v)
                         for k, v in options.items()},
                        choice(inp.get("on_malformed", "error"), "input.on_malformed",
                               MALFORMED)),
        output_path=out.get("path"), output_format=out.get("format"),
        edge=events.get("edge"), id=events.get("id"), join=join, features=features)


def parse_features(raw: dict[str, Any], keys: tuple[str, ...]) -> FeaturesSpec:
    """`raw` (the `features` mapping, its keys and types already checked) as a
    FeaturesSpec, every window built and checked now; every error names the key's
    path. `keys`: the events' key columns."""
    pairs = tuple(raw["windows"].items())
    if not pairs:
        raise qerr("features.windows", "a mapping of at least one label to a window "
                   f"({', '.join(FEATURE_KINDS)})", raw["windows"])
    built = {label: build_feature_window(label, window, columns=False)
             for label, window in pairs}
    at = None
    if "at" in raw:
        at = parse_label_table(check_section(raw["at"], "features.at", "features.at"),
                               keys)
    if raw.get("include_current") and at is None:
        raise qerr("features.include_current", "false without features.at (every "
                   "event's windows hold the event itself)", raw["include_current"])
    try:  # the spec's checks of the whole set
        feature_set(built, at=at, include_current=raw.get("include_current", False))
    except WispInputError as error:
        raise QueryError(in_features(error)) from None
    return FeaturesSpec(pairs, at, raw.get("include_current", False))


def parse_label_table(raw: dict[str, Any], events_key: tuple[str, ...]) -> LabelTable:
    """The label table of `features.at`: a file read as `input` is (its format
    allowlisted, wisp's own reader options refused), its time and key columns."""
    if not raw["path"]:
        raise qerr("features.at.path", "a non-empty path", raw["path"])
    key = raw.get("key")
    keys = None if key is None else ((key,) if isinstance(key, str) else tuple(key))
    if keys is not None and not all(isinstance(k, str) for k in keys):
        raise qerr("features.at.key", "a column name or a list of names", key)
    if keys is not None and keys != events_key:
        raise qerr("features.at.key", f"the events' key columns {list(events_key)!r} (label "
                   "rows meet the events by the key's names; a CSV table's columns can be "
                   "named by features.at.schema)", key)
    options = raw.get("options", {})
    for name, value in options.items():
        if name in OWNED_OPTIONS:
            raise qerr(f"features.at.options.{name}", "left to wisp (use "
                       "features.at.header and features.at.schema)", value)
        if not isinstance(value, Scalar):
            raise qerr(f"features.at.options.{name}", "a string, number or boolean", value)
    fmt = raw.get("format")
    if fmt is not None:
        choice(fmt, "features.at.format", FORMATS_IN)
    else:
        suffix = Path(raw["path"].rstrip("/")).suffix.lower()
        if suffix not in EXTENSIONS:
            raise qerr("features.at.format", "given for a path without a known extension "
                       f"({', '.join(EXTENSIONS)})", raw["path"])
        fmt = EXTENSIONS[suffix]
    return LabelTable(
        raw["path"], fmt, raw.get("header", True), raw.get("schema"),
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()},
        raw.get("time"), keys)


def parse_join(raw: dict[str, Any]) -> JoinSpec:
    """`raw` (the `join` mapping, its keys and types already checked) as a JoinSpec;
    every error names the key's path."""
    choice(raw["kind"], "join.kind", JOIN_KINDS)
    right = check_section(raw["right"], "join.right", "join.right")
    key = right.get("key")
    keys = None if key is None else ((key,) if isinstance(key, str) else tuple(key))
    if keys is not None and not all(isinstance(k, str) for k in keys):
        raise qerr("join.right.key", "a column name or a list of names", key)
    options = right.get("options", {})
    for name, value in options.items():
        if name in OWNED_OPTIONS:
            raise qerr(f"join.right.options.{name}", "left to wisp (use join.right.header "
                       "and join.right.schema)", value)
        if not isinstance(value, (str, int, float, bool)):
            raise qerr(f"join.right.options.{name}", "a string, number or boolean", value)
    by = raw.get("by")
    try:
        spec = AsOfJoin(raw.get("on"), None if by is None else
                        ((by,) if isinstance(by, str) else tuple(by)),
                        raw.get("direction", "backward"), raw.get("tolerance"),
                        raw.get("allow_exact_matches", True),
                        tuple(raw.get("suffixes", ("", "_right"))))
    except WispInputError as error:
        raise QueryError(re.sub(r"^`([^`]+)`", lambda m: f"`join.{m.group(1)}`",
                                str(error), count=1)) from None
    fmt = right.get("format")
    if fmt is not None:
        choice(fmt, "join.right.format", FORMATS_IN)
    else:
        suffix = Path(right["path"].rstrip("/")).suffix.lower()
        if suffix not in EXTENSIONS:
            raise qerr("join.right.format", "given for a path without a known extension "
                       f"({', '.join(EXTENSIONS)})", right["path"])
        fmt = EXTENSIONS[suffix]
    return JoinSpec(RightTable(
        right["path"], fmt, right.get("header", True), right.get("schema"),
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()},
        right["time"], keys, right.get("order")), spec)


def load_query(path: str | Path) -> Query:
    """Read (at most `MAX_QUERY_BYTES`), parse (YAML's safe loader, at most
    `MAX_YAML_NODES` nodes) and validate a query file."""
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_QUERY_BYTES + 1)
    except OSError as error:
        raise qerr("QUERY", "a readable YAML file", str(path),
                   hint=error.strerror or "") from None
    if len(raw) > MAX_QUERY_BYTES:
        raise qerr("QUERY", f"a file of at most {MAX_QUERY_BYTES:,} bytes (1 MiB)",
                   _Plain(f"more in {path}"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise qerr("QUERY", "UTF-8 text", _Plain(f"a byte that is not UTF-8 at offset "
                                                   f"{error.start} of {path}")) from None
    return parse_query(load_yaml(text, str(path)))


def load_yaml(text: str, path: str) -> object:
    """The YAML document of `text`, read with PyYAML's safe loader after checking that
    its node graph holds no recursive alias and at most `MAX_YAML_NODES` nodes with
    every alias counted at each use: the size of what building it would make."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded_nodes(node, path)
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        raise QueryError(f"`QUERY` must be valid YAML, found an error in {path}: "
                         f"{error}") from None
    except RecursionError:
        raise qerr("QUERY", "YAML that nests less deeply",
                   _Plain(f"too deep a nesting to read in {path}")) from None
    finally:
        loader.dispose()


def expanded_nodes(root: yaml.Node, path: str = "the query") -> int:
    """The number of nodes of `root` with every alias expanded (a shared node counted at
    each use), without expanding anything: each node's count is its children's sum, once
    per node. Refuses more than `MAX_YAML_NODES` and an alias inside its own anchor."""
    counts: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes on the path from the root (for cycles)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if done:
            open_nodes.discard(id(node))
            counts[id(node)] = total = 1 + sum(counts[id(child)] for child in children)
            if total > MAX_YAML_NODES:
                raise qerr("QUERY", f"YAML of at most {MAX_YAML_NODES:,} nodes, each alias "
                           "counted at every use", _Plain(
                               f"more by line {node.start_mark.line + 1} of {path}"))
            continue
        if id(node) in counts:
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise qerr("QUERY", "YAML without a recursive alias", _Plain(
                    f"an alias inside its own anchor at line {child.start_mark.line + 1} "
                    f"of {path}"))
            if id(child) not in counts:
                stack.append((child, False))
    return counts[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def input_format(query: Query, path: str) -> str:
    """The input's format: `input.format`, else the path's extension."""
    if query.input.format:
        return query.input.format
    suffix = Path(path.rstrip("/")).suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    raise qerr("input.format", "given for a path without a known extension "
               f"({', '.join(EXTENSIONS)})", path)


# ---------------------------------------------------------------- reading input


@dataclass
class Input:
    """The input as a DataFrame, with its row accounting: `observation` gets
    `rows_read` (and for CSV and JSON `rejected_malformed`) once an action ran."""

    df: DataFrame
    format: str
    observation: Observation


def read_input(spark: SparkSession, query: Query, path: str) -> Input:
    """Read `path` as the query says. CSV and JSON are read in PERMISSIVE mode with a
    corrupt-record column, so that a malformed row (wrong number of fields, a value
    that does not parse as its schema type, broken JSON) is never silently dropped:
    with `on_malformed: error` (default) the query fails naming the row; with `drop`
    the row is dropped and counted (`rejected_malformed`)."""
    fmt = input_format(query, path)
    spec = query.input
    df, observation = read_file(spark, path, fmt, options=spec.options, header=spec.header,
                                schema=spec.schema, on_malformed=spec.on_malformed)
    return Input(df, fmt, observation)


def bind(query: Query, df: DataFrame) -> Events:
    """The input bound to the query's event roles (interval events from edge rows with
    `events.edge` and `events.id`)."""
    from .events import events, from_edges

    if query.edge is not None and query.id is not None:
        return from_edges(df, query.time, edge=query.edge, id=query.id,
                          key=list(query.key))
    try:
        return events(df, query.time, end=query.end, key=list(query.key), order=query.order,
                      on_null_time="drop" if query.on_null_time == "drop" else "error")
    except WispInputError as error:
        field = next((f for f in df.schema.fields if f.name == query.time), None)
        if field is not None and isinstance(field.dataType, T.StringType):
            raise QueryError(f"{error}; the input holds it as text: give input.schema "
                             f"(e.g. \"{query.time} TIMESTAMP, ...\") to read it as a "
                             "timestamp") from None
        raise
