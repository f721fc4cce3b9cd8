"""The `features:` section of a query file: a feature set (`Events.features`), the
same aggregations over several windows at every event, or point-in-time at the rows of
a label table (`features.at`).

```yaml
events: {time: t, key: user}
features:
  windows:
    1h: {kind: Range, start: -1h, end: 0s}
    last10: {kind: Rows, start: -9, end: 0}
    all: cumulative
  at: {path: labels.parquet}     # optional: one output row per label row
  include_current: false         # optional, with `at`
aggregations: [sum(amount), count]
```

`features.windows` maps labels (letters, digits and underscores) to `Range`, `Rows`,
`Since`, `Trailing` or `cumulative`, written as `window:` is. `features.at` names the
label table's file (`path`; `format`, `header`, `schema` and `options` as in `input`)
and its roles: `time`
defaults to the events' time column's name; `key`, when given, names the events' key
columns (label rows meet the events by the key's names). A query has `window` or
`features`, never both. Checked when the file is loaded, before Spark starts
(`query.parse_features`); the label table is read with `on_malformed: error` and its
null times fail the query, so no label row is lost without a word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .engine.reading import read_file
from .errors import WispInputError, WispUnsupportedError, bad_value
from .spec.windows import Range, Window

FEATURE_PARAMS = ("windows", "at", "include_current")
"""The parameters of `Events.features` that a query file writes under `features`."""


@dataclass(frozen=True)
class LabelTable:
    """The label rows of a point-in-time feature set: where they are read from and
    their roles (None: the events' column names)."""

    path: str
    format: str
    header: bool
    schema: str | None
    options: dict[str, str]
    time: str | None
    key: tuple[str, ...] | None


@dataclass(frozen=True)
class FeaturesSpec:
    """A validated `features:` section; the windows as written (built with
    `Query.feature_windows()`, once Spark runs)."""

    windows: tuple[tuple[str, Any], ...]
    at: LabelTable | None
    include_current: bool


def in_features(error: Exception) -> str:
    """The message of an error of `Events.features` naming its parameter (`windows`,
    `at`, `include_current`), with the parameter's path in the query file."""
    names = "|".join(FEATURE_PARAMS)
    return re.sub(rf"^`({names})\b", r"`features.\1", str(error), count=1)


def label_rows(spark: SparkSession, table: LabelTable, time: str, key: tuple[str, ...]
               ) -> Any:
    """The label table as an event table: its time column `features.at.time` (else the
    events' name, `time`), its key columns the events' (`key`; `features.at.key`, when
    given, names the same, as the query checks)."""
    from .events import events

    df, _ = read_file(spark, table.path, table.format, options=table.options,
                      header=table.header, schema=table.schema, on_malformed="error")
    missing = [k for k in key if k not in df.columns]
    if missing:
        raise bad_value("features.at", f"a label table with the events' key columns "
                        f"{list(key)!r} (a CSV table's columns can be named by "
                        f"features.at.schema)", f"columns {df.columns!r}")
    try:
        return events(df, table.time or time, key=list(key) or None)
    except WispInputError as error:  # it names its parameter: `time`, `key`
        raise WispInputError(re.sub(r"^`([^`]+)`", r"`features.at.\1`", str(error),
                                    count=1)) from None


def featured(spark: SparkSession, spec: FeaturesSpec,
             windows: Mapping[str, Window | None], source: Any,
             aggregations: tuple[Any, ...]) -> DataFrame:
    """The feature set of the query over the events `source` (lazy); errors of
    `Events.features` name their key under `features`."""
    at = None
    if spec.at is not None:
        at = label_rows(spark, spec.at, source.time.name, tuple(source.key))
    try:
        result: DataFrame = source.features(windows, *aggregations, at=at,
                                            include_current=spec.include_current)
    except WispUnsupportedError as error:
        raise WispUnsupportedError(in_features(error)) from None
    except WispInputError as error:
        raise WispInputError(in_window(error, windows, source, aggregations)) from None
    return result


def in_window(error: WispInputError, windows: Mapping[str, Window | None], source: Any,
              aggregations: tuple[Any, ...]) -> str:
    """`in_features`, and an error of a Range's bound that does not fit the time column
    (`start`, `end`) with its path `features.windows.<label>.<bound>`: the first Range
    that fails alone."""
    found = re.match(r"^`(start|end)`", str(error))
    if found is None:
        return in_features(error)
    for label, window in windows.items():
        if not isinstance(window, Range):
            continue
        try:
            source.features({label: window}, *aggregations)
        except WispInputError as alone:
            if str(alone) == str(error):
                return f"`features.windows.{label}.{found.group(1)}`" + \
                    str(error)[found.end():]
    return str(error)
