"""Brute-force reference implementation (the oracle) of `Rows`, `Range` and cumulative
aggregation, against which the Spark engine is judged.

Pure Python, standard library only: every window is built per anchor by scanning its
key's rows, and every aggregate is computed from the window's values from scratch.
Clarity beats speed here; nothing is clever on purpose.

Data model: `rows` is a list of dicts (column -> Python value, None = null); `time` names
a column holding plain numbers (int ticks or float), never None or NaN; `key` lists the
key columns (empty = one global stream); `order` optionally names the tie-break column;
`columns` lists all column names in schema order (the default tie-break).

Output rows are dicts: the key columns, `window_start`, `window_end`, `time`, then one
entry per aggregation (`agg.output_name`), sorted by key (null first), time, and the
anchor's position in its key's sorted sequence.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from aggregators import brute_force

from wisp.spec.aggregates import Aggregation
from wisp.spec.time import duration_to_ticks
from wisp.spec.windows import Range, Rows, Since, Trailing

Row = dict[str, Any]
# One anchor's window: (window_start, window_end, anchor time, the window's rows in order).
Frame = tuple[Any, Any, Any, list[Row]]

# ------------------------------------------------------------------------ ordering


def _is_nan(value: object) -> bool:
    return isinstance(value, (float, Decimal)) and value != value


def spark_sort_key(value: object) -> tuple[Any, ...]:
    """Spark's ascending order as a Python sort key: null first, then values (numbers
    ascending with -0.0 == 0.0, strings by code point, False < True, arrays element by
    element), NaN after every number and equal to itself. Also a grouping key: values
    Spark groups together get equal keys."""
    if value is None:
        return (0,)
    if isinstance(value, (list, tuple)):
        return (1, tuple(spark_sort_key(item) for item in value))
    if isinstance(value, dict):  # a map: its entries by key (only a tie-break here)
        return (1, tuple(sorted((spark_sort_key(k), spark_sort_key(v))
                                for k, v in value.items())))
    if _is_nan(value):
        return (2,)
    return (1, value)


def _sorted_by_key(rows: list[Row], *, time: str, key: list[str], order: str | None,
                   columns: list[str]) -> list[tuple[Row, list[Row]]]:
    """The rows grouped by key (groups in null-first key order), each group sorted by
    time, ties broken by `order` or else by the other columns in schema order."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    for row in rows:
        if row[time] is None or _is_nan(row[time]):
            raise ValueError(f"the oracle takes no null/NaN time, found {row!r}")
        groups.setdefault(tuple(spark_sort_key(row[k]) for k in key), []).append(row)
    others = [c for c in columns if c not in key and c != time]
    tie_break = [order] if order is not None else others

    def position(row: Row) -> tuple[Any, ...]:
        return (row[time], *(spark_sort_key(row[c]) for c in tie_break))

    result = []
    for group_key in sorted(groups):
        members = groups[group_key]
        key_values = {k: members[0][k] for k in key}
        result.append((key_values, sorted(members, key=position)))
    return result


# -------------------------------------------------------------------- aggregations


def _to_float(total: Fraction) -> float:
    """An exact rational as the nearest float, overflowing to a signed infinity."""
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def _float_sum(values: list[Any]) -> float:
    """Exactly rounded sum of floats, with IEEE rules for NaN and infinities."""
    if any(_is_nan(v) for v in values):
        return math.nan
    has_pos_inf = any(v == math.inf for v in values)
    has_neg_inf = any(v == -math.inf for v in values)
    if has_pos_inf and has_neg_inf:
        return math.nan
    if has_pos_inf:
        return math.inf
    if has_neg_inf:
        return -math.inf
    try:
        return math.fsum(values)
    except OverflowError:  # a finite sum too large for a float
        return _to_float(sum((Fraction(v) for v in values), Fraction(0)))


def _has_float(values: list[Any]) -> bool:
    return any(isinstance(v, float) for v in values)


def _sum(values: list[Any]) -> Any:
    if not values:
        return 0
    if _has_float(values):
        return _float_sum(values)
    if any(isinstance(v, Decimal) for v in values):
        with localcontext() as context:
            context.prec = 200  # enough digits to be exact for decimal(38, s)
            return sum(values, Decimal(0))
    return sum(values)  # ints: an exact Python int


def _mean(values: list[Any]) -> float | None:
    if not values:
        return None
    if _has_float(values):
        return _float_sum(values) / len(values)
    return _to_float(Fraction(_sum(values)) / len(values))


def _variance(values: list[Any]) -> float | None:
    """Sample variance (n - 1), computed exactly with fractions, then rounded once."""
    if len(values) < 2:
        return None
    if any(isinstance(v, float) and not math.isfinite(v) for v in values):
        return math.nan  # NaN or an infinity: inf - inf in the deviations
    exact = [Fraction(v) for v in values]
    mean = sum(exact, Fraction(0)) / len(exact)
    squares = sum(((x - mean) ** 2 for x in exact), Fraction(0))
    return _to_float(squares / (len(exact) - 1))


def _min(values: list[Any]) -> Any:
    if not values:
        return None
    numbers = [v for v in values if not _is_nan(v)]
    return min(numbers) if numbers else math.nan


def _max(values: list[Any]) -> Any:
    if not values:
        return None
    if any(_is_nan(v) for v in values):
        return math.nan
    return max(values)


def _quantile(values: list[Any], q: float, method: str) -> float | None:
    """numpy's quantile methods over `h = (n - 1) * q` of the values sorted in Spark's
    order (NaN greatest), interpolating as numpy does (from the upper side where the
    fraction is at least one half)."""
    if not values:
        return None
    ordered = [float(v) for v in sorted(values, key=spark_sort_key)]
    n = len(ordered)
    h = (n - 1) * q
    lower = math.floor(h)
    if method == "lower":
        return ordered[lower]
    if method == "higher":
        return ordered[math.ceil(h)]
    if method == "nearest":
        return ordered[round(h)]  # Python rounds half to even, as numpy's around
    a, b = ordered[lower], ordered[min(lower + 1, n - 1)]
    if h == lower:  # a whole index: the value there, whatever its neighbour
        return a
    gamma = 0.5 if method == "midpoint" else h - lower
    if gamma >= 0.5:
        return b - (b - a) * (1 - gamma)
    return a + (b - a) * gamma


def _inclusive_quantiles(values: list[Any], agg: Aggregation) -> Any:
    """What a quantiles sketch that holds every value (a window of at most `k` values)
    answers: for each `q`, the smallest value whose count of values at or below it
    reaches `ceil(q * n)` (at least one), NaN not held; null without values. A
    `kll_sketch`'s is its median, as a reader asks it."""
    numbers = sorted(float(v) for v in values if not _is_nan(v))
    if not numbers:
        return None
    qs = [0.5] if agg.fn == "kll_sketch" else (list(agg.qs) if agg.qs is not None
                                               else [agg.q])
    found = [numbers[max(math.ceil(q * len(numbers)), 1) - 1] for q in qs]
    return found if agg.qs is not None else found[0]


def _extreme_by(agg: Aggregation, window: list[Row]) -> Any:
    """The `col` value of the first row (window order) whose `by` is strictly beyond
    every earlier row's (Spark's order: NaN greatest); rows with a null `by` skipped."""
    assert agg.by is not None and agg.col is not None
    best: Row | None = None
    for row in window:
        if row[agg.by] is None:
            continue
        if best is None:
            best = row
            continue
        here, there = spark_sort_key(row[agg.by]), spark_sort_key(best[agg.by])
        if (here > there) if agg.fn == "max_by" else (here < there):
            best = row
    return None if best is None else best[agg.col]


def _ewm_mean(agg: Aggregation, present: list[Row], time: str) -> float | None:
    """sum(w_i x_i) / sum(w_i), w_i = 0.5 ** ((t_now - t_i) / half_life), over the
    window's non-null rows; every weight scaled by 2 ** ((t_now - t_last) / half_life)
    (t_last: the last non-null row's time: the same ratio, without underflow)."""
    if not present:
        return None
    half_life = agg.half_life
    if not isinstance(half_life, (int, float)):
        half_life = duration_to_ticks(half_life, "half_life")
    now = present[-1][time]
    num = den = 0.0
    for row in present:
        weight = 0.5 ** ((now - row[time]) / half_life)
        num += weight * float(row[agg.col])
        den += weight
    return num / den


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ticks(t: Any) -> Any:
    """A time as the engine hands it to user code (a udaf, an `Aggregator`): an instant
    as its microseconds since the epoch (a naive datetime read as UTC wall time), a date
    as the microseconds of its midnight (what the engine gives, whatever `Aggregator`'s
    docstring says of days), a number as itself (the oracles' times are mostly int
    microseconds already)."""
    if isinstance(t, dt.datetime):
        moment = t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
        return (moment - _EPOCH) // dt.timedelta(microseconds=1)
    if isinstance(t, dt.date):
        return (t - _EPOCH.date()).days * 86_400_000_000
    return t


def _histogram(values: list[Any]) -> dict[Any, int]:
    """Each distinct value's count, as Spark groups values (one NaN, `-0.0` as `0.0`)."""
    counts: dict[tuple[Any, ...], int] = {}
    shown: dict[tuple[Any, ...], Any] = {}
    for value in values:
        key = spark_sort_key(value)
        counts[key] = counts.get(key, 0) + 1
        shown[key] = 0.0 if isinstance(value, float) and value == 0 else value
    return {shown[key]: counts[key] for key in sorted(counts)}


def aggregate(agg: Aggregation, window: list[Row], time: str) -> Any:
    """One aggregation over one window's rows (in window order); null where the window
    holds fewer than `agg.min_count` non-null values of its counted column (rows for
    `count()`)."""
    if agg.min_count:
        counted = agg.by if agg.by is not None else agg.col
        held = len(window) if counted is None else sum(
            1 for row in window if row[counted] is not None)
        if held < agg.min_count:
            return None
    if agg.fn in ("max_by", "min_by"):
        return _extreme_by(agg, window)
    if agg.fn == "count" and agg.col is None:
        return len(window)
    assert agg.col is not None, f"{agg.fn} needs a column"
    present = [row for row in window if row[agg.col] is not None]
    values = [row[agg.col] for row in present]
    if agg.fn == "count":
        return len(values)
    if agg.fn == "sum":
        return _sum(values)
    if agg.fn == "mean":
        return _mean(values)
    if agg.fn == "min":
        return _min(values)
    if agg.fn == "max":
        return _max(values)
    if agg.fn == "first":
        return values[0] if values else None
    if agg.fn == "last":
        return values[-1] if values else None
    if agg.fn == "variance":
        return _variance(values)
    if agg.fn == "stddev":
        variance = _variance(values)
        return None if variance is None else math.sqrt(variance)
    if agg.fn == "collect":
        return values
    if agg.fn == "udaf":
        assert agg.func is not None
        return agg.func(values, [row[time] for row in present])
    if agg.aggregator is not None:  # a user's Aggregator: one add of it all, then finish
        return brute_force(agg.aggregator, values, [_ticks(row[time]) for row in present])
    if agg.fn in ("quantile", "median"):
        assert agg.q is not None
        return _quantile(values, agg.q, agg.interpolation)
    if agg.fn == "count_distinct":
        return len({spark_sort_key(v) for v in values})
    if agg.fn == "ewm_mean":
        return _ewm_mean(agg, present, time)
    if agg.fn in ("first_k", "last_k"):
        return values[:agg.k] if agg.fn == "first_k" else values[-agg.k:]
    if agg.fn in ("top_k", "bottom_k"):  # a stable sort: equal values in window order
        return sorted(values, key=spark_sort_key, reverse=agg.fn == "top_k")[:agg.k]
    if agg.fn == "histogram":
        return _histogram(values)
    if agg.fn in ("hll_sketch", "theta_sketch", "approx_count_distinct"):
        return len({spark_sort_key(v) for v in values if v != ""})
    if agg.fn in ("kll_sketch", "approx_quantile"):
        return _inclusive_quantiles(values, agg)
    raise NotImplementedError(f"the oracle has no aggregation {agg.fn!r}")


# ------------------------------------------------------------------------- windows


def _run(rows: list[Row], *, time: str, key: list[str], order: str | None,
         columns: list[str], aggs: Sequence[Aggregation],
         frames: Callable[[list[Row]], list[Frame]]) -> list[Row]:
    """For every key, `frames(sorted rows)` gives one frame per emitted anchor (in anchor
    order); each frame becomes one output row."""
    out: list[Row] = []
    for key_values, members in _sorted_by_key(rows, time=time, key=key, order=order,
                                              columns=columns):
        for start, end, anchor_time, window in frames(members):
            row: Row = dict(key_values)
            row.update(window_start=start, window_end=end, time=anchor_time)
            for agg in aggs:
                row[agg.output_name] = aggregate(agg, window, time)
            out.append(row)
    return out


def rows_window(rows: list[Row], *, time: str, key: list[str], order: str | None,
                columns: list[str], window: Rows, aggs: Sequence[Aggregation]) -> list[Row]:
    """\\psi relative-index window: anchor i holds positions i+first_index..i+last_index."""

    def frames(members: list[Row]) -> list[Frame]:
        n = len(members)
        result: list[Frame] = []
        for i, anchor in enumerate(members):
            wanted = range(i + window.first_index, i + window.last_index + 1)
            existing = [p for p in wanted if 0 <= p < n]
            if len(existing) < len(wanted) and not window.partial:
                continue
            events = [members[p] for p in existing]
            start = events[0][time] if events else None
            end = events[-1][time] if events else None
            result.append((start, end, anchor[time], events))
        return result

    return _run(rows, time=time, key=key, order=order, columns=columns, aggs=aggs,
                frames=frames)


def _shift(t: Any, ticks: Any) -> Any:
    """`t + ticks`, also for a Decimal bound over float time."""
    if isinstance(t, float) and isinstance(ticks, Decimal):
        return t + float(ticks)
    return t + ticks


def range_window(rows: list[Row], *, time: str, key: list[str], order: str | None,
                 columns: list[str], window: Range, aggs: Sequence[Aggregation]) -> list[Row]:
    """\\psi relative-time window: anchor at t holds the events with time u in
    [t + start, t + end], each side open or closed per `window.closed`."""
    left_closed = window.closed in ("both", "left")
    right_closed = window.closed in ("both", "right")

    def frames(members: list[Row]) -> list[Frame]:
        result: list[Frame] = []
        for anchor in members:
            lo = _shift(anchor[time], window.start_ticks)
            hi = _shift(anchor[time], window.end_ticks)
            events = []
            for row in members:
                u = row[time]
                after_lo = lo <= u if left_closed else lo < u
                before_hi = u <= hi if right_closed else u < hi
                if after_lo and before_hi:
                    events.append(row)
            result.append((lo, hi, anchor[time], events))
        return result

    return _run(rows, time=time, key=key, order=order, columns=columns, aggs=aggs,
                frames=frames)


def cumulative(rows: list[Row], *, time: str, key: list[str], order: str | None,
               columns: list[str], aggs: Sequence[Aggregation]) -> list[Row]:
    """No window: anchor i holds positions 0..i of its key."""

    def frames(members: list[Row]) -> list[Frame]:
        return [(members[0][time], anchor[time], anchor[time], members[:i + 1])
                for i, anchor in enumerate(members)]

    return _run(rows, time=time, key=key, order=order, columns=columns, aggs=aggs,
                frames=frames)


# ---------------------------------------------------------------------- comparison


def sort_output(rows: list[Row], key: list[str]) -> list[Row]:
    """Output rows in a deterministic order: key values (null first), `time`,
    `window_start`, `window_end`; remaining ties by the other columns, first those
    holding no float (exact, so engine and oracle agree on them), then all of them.
    Columns named `__...` are the oracle's helpers (such as a row's `__scale`), which
    the engine's rows lack: they take no part in the order. Apply it to both sides
    before `assert_rows_match`."""
    leading = [*key, "time", "window_start", "window_end"]

    def order(row: Row) -> tuple[Any, ...]:
        rest = [c for c in sorted(row) if c not in leading and not c.startswith("__")]
        exact = tuple(spark_sort_key(None if isinstance(row[c], float) else row[c])
                      for c in rest)
        return (*(spark_sort_key(row.get(c)) for c in leading), exact,
                *(spark_sort_key(row[c]) for c in rest))

    return sorted(rows, key=order)


_MISSING = object()


def _values_match(a: Any, b: Any, rel: float, scale: float) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):  # maps: their entries by key
        return _values_match(sorted(a.items(), key=lambda e: spark_sort_key(e[0])),
                             sorted(b.items(), key=lambda e: spark_sort_key(e[0])),
                             rel, scale)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_values_match(x, y, rel, scale)
                                        for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float, Decimal)) or not isinstance(b, (int, float, Decimal)):
            return False
        x, y = float(a), float(b)
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return x == y or math.isclose(x, y, rel_tol=rel, abs_tol=rel * scale)
    return bool(a == b) and (a is None) == (b is None)


def assert_rows_match(actual: list[Row], expected: list[Row], rel: float = 1e-9,
                      scales: dict[str, float] | None = None) -> None:
    """Row by row, column by column: exact for ints, strings, bools, None; floats equal
    when both NaN, equal, or close (`rel_tol=rel`, `abs_tol=rel * scales[column]`, the
    scale defaulting to 1.0); lists element-wise by the same rule, maps (dicts) entry
    by entry in key order."""
    scales = scales or {}
    for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
        names = list(want) + [c for c in got if c not in want]
        for name in names:
            a, b = got.get(name, _MISSING), want.get(name, _MISSING)
            if a is _MISSING or b is _MISSING or not _values_match(
                    a, b, rel, scales.get(name, 1.0)):
                shown_a = "<missing>" if a is _MISSING else repr(a)
                shown_b = "<missing>" if b is _MISSING else repr(b)
                raise AssertionError(
                    f"row {index}, column {name!r}: actual {shown_a} != expected {shown_b}\n"
                    f"  actual row:   {got!r}\n  expected row: {want!r}")
    if len(actual) != len(expected):
        longer, label = (actual, "actual") if len(actual) > len(expected) else \
            (expected, "expected")
        raise AssertionError(
            f"{len(actual)} actual rows != {len(expected)} expected rows; first extra "
            f"{label} row (index {min(len(actual), len(expected))}): "
            f"{longer[min(len(actual), len(expected))]!r}")


def tick_periods(rows: list[Row], *, time: str, key: list[str], order: str | None,
                 columns: list[str], tick: str, n: int, aggs: Sequence[Aggregation]
                 ) -> list[Row]:
    """At each event, its tick period and the `n - 1` before it: the events after the
    `n`-th last row before it whose boolean `tick` is true (a tick row closes its
    period), through the event; from the key's first event with fewer ticks."""

    def frames(members: list[Row]) -> list[Frame]:
        result: list[Frame] = []
        for i, anchor in enumerate(members):
            ticks = [p for p in range(i) if members[p][tick]]
            lo = ticks[-n] + 1 if len(ticks) >= n else 0
            result.append((members[lo][time], anchor[time], anchor[time], members[lo:i + 1]))
        return result

    return _run(rows, time=time, key=key, order=order, columns=columns, aggs=aggs,
                frames=frames)


FeatureWindow = Range | Rows | Since | Trailing | None


def features(rows: list[Row], *, time: str, key: list[str], order: str | None,
             columns: list[str], windows: Sequence[tuple[str, FeatureWindow]],
             aggs: Sequence[Aggregation]) -> list[Row]:
    """A feature set: every window at every event (a `Rows` window over the indices
    that exist, as `partial=True`; `Since`/`Trailing` over a boolean tick column), one
    row per event with the key columns, `time` and, for each aggregation, for each
    window, `<aggregation's name>_<label>`."""
    outputs: list[list[Row]] = []
    for _, window in windows:
        common = {"time": time, "key": key, "order": order, "columns": columns,
                  "aggs": aggs}
        if isinstance(window, (Since, Trailing)):
            n = window.n if isinstance(window, Trailing) else 1
            outputs.append(tick_periods(rows, tick=window.tick, n=n, **common))
        elif isinstance(window, Rows):
            outputs.append(rows_window(rows, window=replace(window, partial=True), **common))
        elif isinstance(window, Range):
            outputs.append(range_window(rows, window=window, **common))
        else:
            outputs.append(cumulative(rows, **common))
    result: list[Row] = []
    for parts in zip(*outputs, strict=True):
        row: Row = {k: parts[0][k] for k in key}
        row["time"] = parts[0]["time"]
        for agg in aggs:
            for (label, _), part in zip(windows, parts, strict=True):
                row[f"{agg.output_name}_{label}"] = part[agg.output_name]
        result.append(row)
    return result


def point_in_time(rows: list[Row], labels: list[Row], *, time: str, key: list[str],
                  order: str | None, columns: list[str],
                  windows: Sequence[tuple[str, FeatureWindow]],
                  aggs: Sequence[Aggregation], include_current: bool,
                  carried: Sequence[str]) -> list[Row]:
    """A feature set at label rows: per label row at time `T`, its key's events before
    `T` (at or before it with `include_current`), in window order; `Range` the events
    among them in `[T + start, T + end]`, `Rows` the positions around the last of them
    (index 0), None all of them. One row per label row: the key columns, `time`, the
    label's `carried` columns, then `<aggregation's name>_<label>` per aggregation and
    window."""
    by_key = {tuple(spark_sort_key(v) for v in key_values.values()): members
              for key_values, members in _sorted_by_key(rows, time=time, key=key,
                                                        order=order, columns=columns)}
    result: list[Row] = []
    for label in labels:
        at = label[time]
        members = by_key.get(tuple(spark_sort_key(label[k]) for k in key), [])
        before = [r for r in members if r[time] < at or (include_current and r[time] == at)]
        windows_rows: list[list[Row]] = []
        for _, window in windows:
            if isinstance(window, (Since, Trailing)):
                n = window.n if isinstance(window, Trailing) else 1
                ticks = [p for p in range(len(before)) if before[p][window.tick]]
                windows_rows.append(before[ticks[-n] + 1 if len(ticks) >= n else 0:])
            elif isinstance(window, Range):
                lo, hi = _shift(at, window.start_ticks), _shift(at, window.end_ticks)
                left = window.closed in ("both", "left")
                right = window.closed in ("both", "right")
                windows_rows.append([r for r in before if (lo < r[time] or (
                    left and lo == r[time])) and (r[time] < hi or (right and r[time] == hi))])
            elif isinstance(window, Rows):
                last = len(before) - 1
                windows_rows.append([before[p] for p in range(
                    last + window.first_index, last + window.last_index + 1)
                    if 0 <= p < len(before)])
            else:
                windows_rows.append(before)
        row: Row = {k: label[k] for k in key}
        row["time"] = at
        row.update({c: label[c] for c in carried})
        for agg in aggs:
            for (name, _), window_rows in zip(windows, windows_rows, strict=True):
                row[f"{agg.output_name}_{name}"] = aggregate(agg, window_rows, time)
        result.append(row)
    return result
