"""Query files: YAML -> window spec and aggregations, and the errors that name the key.
No Spark needed: a query is validated before any session starts."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

import wisp as ws
from wisp.query import QueryError, build_window, load_query, parse_query


def window_of(text: str) -> object:
    return build_window(yaml.safe_load(text), columns=False)


@pytest.mark.parametrize(("text", "expected"), [
    ("{kind: Rows, start: -2, end: 0}", ws.Rows(-2, 0)),
    ("{kind: rows, start: -3, end: -1, closed: left, partial: true}",
     ws.Rows(-3, -1, closed="left", partial=True)),
    ("{kind: Range, start: -10s, end: 0s}", ws.Range("-10s", "0s")),
    ("{kind: Range, start: -5, end: 5, closed: neither}", ws.Range(-5, 5, closed="neither")),
    ("{kind: Sliding, evict: {kind: Count, n: 4}}", ws.Sliding(ws.Count(4))),
    ("{kind: Sliding, evict: {kind: Time, t: 10s}, trigger: {kind: Delta, attr: v, d: 2}}",
     ws.Sliding(ws.Time("10s"), ws.Delta("v", 2))),
    ("{kind: Tumbling, size: {kind: Punctuation, col: flush}}",
     ws.Tumbling(ws.Punctuation("flush"))),
    ("{kind: Tumbling, size: 1h, align: 2024-01-01T00:30:00Z}",
     ws.Tumbling("1h", align=dt.datetime(2024, 1, 1, 0, 30, tzinfo=dt.UTC))),
    ("{kind: Hopping, size: 10m, hop: 5m, output: changes}",
     ws.Hopping("10m", "5m", output="changes")),
    ("{kind: Since, tick: {kind: daily, tz: Europe/Berlin}, emit: both}",
     ws.Since(ws.daily("Europe/Berlin"), emit="both")),
    ("{kind: Trailing, n: 3, tick: {kind: cron, expr: '0 * * * *'}}",
     ws.Trailing(3, ws.cron("0 * * * *"))),
    ("{kind: Session, gap: 30m, max_duration: 4h}", ws.Session("30m", "4h")),
    ("{kind: CountByStartTime, n: 3}", ws.CountByStartTime(3)),
    ("Snapshot", ws.Snapshot()),
    ("{kind: Dynamic, anchors: {kind: clock, every: 1m}, start: -1m, end: 0s}",
     ws.Dynamic(ws.clock("1m"), start="-1m", end="0s")),
])
def test_every_window_kind_is_built_from_its_arguments(text: str, expected: object) -> None:
    assert window_of(text) == expected


@pytest.mark.parametrize("text", ["cumulative", "{kind: cumulative}", "null"])
def test_cumulative_is_no_window(text: str) -> None:
    assert window_of(text) is None


def test_a_column_argument_is_a_placeholder_until_spark_runs() -> None:
    assert window_of("{kind: Since, tick: {col: reset}}") == ws.Since("<col reset>")


QUERY = """
events: {time: ts, key: [sensor, site], order: seq, on_null_time: drop}
window: {kind: Range, start: -10s, end: 0s}
aggregations:
  - count
  - mean(temperature)
  - {fn: max, col: temperature, as: peak}
  - {fn: count, col: temperature}
input: {format: csv, header: false, schema: "ts TIMESTAMP", options: {sep: ";"},
        on_malformed: drop}
output: {format: csv, path: out}
"""


def test_a_full_query() -> None:
    query = parse_query(yaml.safe_load(QUERY))
    assert (query.time, query.key, query.order, query.on_null_time) == \
        ("ts", ("sensor", "site"), "seq", "drop")
    assert query.window() == ws.Range("-10s", "0s")
    assert query.aggregations == (ws.count(), ws.mean("temperature"),
                                  ws.max("temperature").alias("peak"),
                                  ws.count("temperature"))
    assert [a.output_name for a in query.aggregations] == \
        ["count", "mean_temperature", "peak", "count_temperature"]
    assert (query.input.format, query.input.header, query.input.schema,
            query.input.options, query.input.on_malformed) == \
        ("csv", False, "ts TIMESTAMP", {"sep": ";"}, "drop")
    assert (query.output_format, query.output_path) == ("csv", "out")


def error_of(text: str) -> str:
    with pytest.raises(QueryError) as caught:
        parse_query(yaml.safe_load(text))
    return str(caught.value)


BASE = "events: {time: ts}\naggregations: [count]\n"


@pytest.mark.parametrize(("text", "message"), [
    ("events: {time: ts, kee: k}\naggregations: [count]",
     "`events.kee` must be a known key of events (known: time, end, key, order, "
     "on_null_time, edge, id), found 'kee'; did you mean 'key'?"),
    ("events: {time: ts}\naggregation: [count]",
     "`aggregation` must be a known key of query (known: events, window, features, "
     "aggregations, input, output, join), found 'aggregation'; did you mean "
     "'aggregations'?"),
    (BASE + "window: {kind: Rows, start: -2, ned: 0}",
     "`window.ned` must be a known key of Rows (known: kind, start, end, closed, partial), "
     "found 'ned'; did you mean 'end'?"),
    (BASE + "window: {kind: Sliding, evict: {kind: Count, nn: 4}}",
     "`window.evict.nn` must be a known key of Count (known: kind, n), found 'nn'; "
     "did you mean 'n'?"),
    (BASE + "window: {kind: Sliding, evict: {kind: Count, n: 0}}",
     "`window.evict.n` must be an integer >= 1, found 0"),
    (BASE + "window: {kind: Since, tick: {kind: daily, tz: Europe/Berln}}",
     "`window.tick.tz` must be an IANA time zone name such as 'Europe/Berlin', found "
     "'Europe/Berln'; did you mean 'Europe/Berlin'?"),
    (BASE + "window: {kind: Range, start: -10x, end: 0s}",
     "`window.start` must be a duration such as '250ms', '2s', '1h30m', a "
     "datetime.timedelta, or a number, found '-10x'"),
    (BASE + "window: {kind: Rows, start: -2}", "`window.end` must be given for Rows, "
     "found nothing"),
    ("events: {key: k}\naggregations: [count]", "`events.time` must be given, found nothing"),
    ("events: {time: ts}\naggregations: [cout]",
     "`aggregations[0].fn` must be one of count, sum, mean, variance, stddev, min, max, "
     "first, last, collect, time_weighted_mean, quantile, median, count_distinct, max_by, "
     "min_by, ewm_mean, hll_sketch, theta_sketch, kll_sketch, approx_count_distinct, "
     "approx_quantile, first_k, last_k, top_k, bottom_k, histogram, found 'cout'; did you "
     "mean 'count'?"),
    ("events: {time: ts}\naggregations: [{fn: mean, column: v}]",
     "`aggregations[0].column` must be a known key of aggregation (known: fn, col, as, q, "
     "interpolation, by, half_life, min_count, k, lg_k), found 'column'; did you mean "
     "'col'?"),
    ("events: {time: ts}\naggregations: [{fn: quantile, col: v}]",
     "`aggregations[0].q` must be given (the probability, a number in [0, 1]), found "
     "nothing"),
    ("events: {time: ts}\naggregations: ['quantile(v, 2)']",
     "`aggregations[0].q` must be a number in [0, 1], found 2.0"),
    ("events: {time: ts}\naggregations: ['quantile(v, high)']",
     "`aggregations[0].q` must be a number in [0, 1], found 'high'"),
    ("events: {time: ts}\naggregations: [{fn: max_by, col: v}]",
     "`aggregations[0].by` must be given (the column whose extreme row is picked), found "
     "nothing"),
    ("events: {time: ts}\naggregations: [{fn: mean, col: v, by: t}]",
     "`aggregations[0].by` must be one of the arguments of mean (min_count), found 'by'"),
    ("events: {time: ts}\naggregations: ['ewm_mean(v)']",
     "`aggregations[0].half_life` must be given (a duration such as 10s), found nothing"),
    ("events: {time: ts}\naggregations: ['max_by(v, a, b)']",
     "`aggregations[0]` must be a call max_by(col, by) with at most 2 arguments, found "
     "'v, a, b'"),
    ("events: {time: ts}\naggregations: [mean]",
     "`aggregations[0].col` must be a column name for mean, found nothing"),
    ("events: {time: ts}\naggregations: []", "`aggregations` must be a non-empty list, "
     "found []"),
    (BASE + "input: {fromat: csv}", "`input.fromat` must be a known key of input (known: "
     "path, format, header, schema, options, on_malformed), found 'fromat'; "
     "did you mean 'format'?"),
    (BASE + "input: {format: xml}", "`input.format` must be one of parquet, csv, json, "
     "found 'xml'"),
    (BASE + "input: {header: yes please}", "`input.header` must be true or false, "
     "found 'yes please'"),
    (BASE + "input: {options: {mode: FAILFAST}}", "`input.options.mode` must be left to "
     "wisp (use input.header, input.schema, input.on_malformed), found 'FAILFAST'"),
    (BASE + "input: {on_malformed: skip}", "`input.on_malformed` must be one of error, "
     "drop, found 'skip'"),
    (BASE + "output: {format: json}", "`output.format` must be one of parquet, csv, "
     "found 'json'"),
])
def test_an_error_names_the_key(text: str, message: str) -> None:
    assert error_of(text) == message


def test_an_unknown_kind_suggests_the_closest() -> None:
    message = error_of(BASE + "window: {kind: Rwos, start: -2, end: 0}")
    assert message.startswith("`window.kind` must be one of Rows, Range, ")
    assert message.endswith("or cumulative, found 'Rwos'; did you mean 'Rows'?")
    # policies and ticks go inside a window, so the top level lists windows only
    assert "Count," not in message and "daily" not in message


def test_a_policy_is_not_a_window() -> None:
    assert error_of(BASE + "window: {kind: Count, n: 3}").startswith(
        "`window.kind` must be a window kind (a policy or tick goes inside a window")


def test_the_query_must_be_a_mapping() -> None:
    assert error_of("- count") == "`query` must be a mapping, found ['count']"


def test_yaml_syntax_errors_and_missing_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("events: {time: ts\naggregations: [count]\n")
    with pytest.raises(QueryError, match=r"^`QUERY` must be valid YAML, found an error in"):
        load_query(broken)
    with pytest.raises(QueryError, match=r"^`QUERY` must be a readable YAML file, found "):
        load_query(tmp_path / "missing.yaml")


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    # A Python tag is refused by safe_load instead of constructing an object.
    evil = tmp_path / "evil.yaml"
    evil.write_text("events: !!python/object/apply:os.system ['true']\naggregations: [count]\n")
    with pytest.raises(QueryError, match="must be valid YAML"):
        load_query(evil)


def test_edge_rows_give_interval_events() -> None:
    query = parse_query(yaml.safe_load(
        "events: {time: t, edge: kind, id: ride, key: city}\naggregations: [count]"))
    assert (query.time, query.edge, query.id, query.key, query.end) == \
        ("t", "kind", "ride", ("city",), None)


@pytest.mark.parametrize(("text", "message"), [
    ("events: {time: t, edge: kind}\naggregations: [count]",
     "`events.id` must be given with events.edge (edge rows need both), found nothing"),
    ("events: {time: t, id: ride}\naggregations: [count]",
     "`events.edge` must be given with events.id (edge rows need both), found nothing"),
    ("events: {time: t, edge: kind, id: ride, end: stop}\naggregations: [count]",
     "`events.end` must be left out for edge rows (events.edge: intervals come from start "
     "and end edges), found 'stop'"),
])
def test_edge_rows_need_edge_and_id_only(text: str, message: str) -> None:
    assert error_of(text) == message


def test_the_new_aggregations_by_name_call_and_mapping() -> None:
    text = """
events: {time: ts}
aggregations:
  - median(v)
  - quantile(v, 0.9)
  - quantile(v, 0.25, lower)
  - {fn: quantile, col: v, q: 0.5, interpolation: nearest, as: mid, min_count: 3}
  - count_distinct(s)
  - max_by(s, v)
  - {fn: min_by, col: s, by: v}
  - ewm_mean(v, 10s)
  - {fn: ewm_mean, col: v, half_life: 30, as: slow}
  - {fn: sum, col: v, min_count: 2}
  - {fn: count, min_count: 1}
"""
    query = parse_query(yaml.safe_load(text))
    assert query.aggregations == (
        ws.median("v"), ws.quantile("v", 0.9), ws.quantile("v", 0.25, "lower"),
        ws.quantile("v", 0.5, "nearest", min_count=3).alias("mid"), ws.count_distinct("s"),
        ws.max_by("s", "v"), ws.min_by("s", "v"), ws.ewm_mean("v", half_life="10s"),
        ws.ewm_mean("v", half_life=30).alias("slow"), ws.sum("v", min_count=2),
        ws.count(min_count=1))


def test_sketches_and_k_collections_by_name_call_and_mapping() -> None:
    text = """
events: {time: ts}
aggregations:
  - hll_sketch(user)
  - hll_sketch(user, 14)
  - theta_sketch(user, 10)
  - kll_sketch(ms, 400)
  - approx_count_distinct(user)
  - approx_quantile(ms, 0.99)
  - {fn: approx_quantile, col: ms, q: [0.5, 0.99], k: 400, as: ms_quantiles}
  - first_k(user, 3)
  - last_k(user, 2)
  - top_k(ms, 5)
  - {fn: bottom_k, col: ms, k: 1, min_count: 1}
  - histogram(user)
"""
    query = parse_query(yaml.safe_load(text))
    assert query.aggregations == (
        ws.hll_sketch("user"), ws.hll_sketch("user", 14), ws.theta_sketch("user", 10),
        ws.kll_sketch("ms", 400), ws.approx_count_distinct("user"),
        ws.approx_quantile("ms", 0.99),
        ws.approx_quantile("ms", [0.5, 0.99], k=400).alias("ms_quantiles"),
        ws.first_k("user", 3), ws.last_k("user", 2), ws.top_k("ms", 5),
        ws.bottom_k("ms", 1, min_count=1), ws.histogram("user"))
    assert [a.output_name for a in query.aggregations] == [
        "hll_sketch_user", "hll_sketch_user", "theta_sketch_user", "kll_sketch_ms",
        "approx_count_distinct_user", "approx_q99_ms", "ms_quantiles", "first_3_user",
        "last_2_user", "top_5_ms", "bottom_1_ms", "histogram_user"]


@pytest.mark.parametrize(("line", "message"), [
    ("top_k(v)", "`aggregations[0].k` must be given (how many values, a whole number "
     ">= 1), found nothing"),
    ("top_k(v, 0)", "`aggregations[0].k` must be a whole number >= 1 (how many values), "
     "found 0"),
    ("top_k(v, many)", "`aggregations[0].k` must be a whole number, found 'many'"),
    ("hll_sketch(v, 22)", "`aggregations[0].lg_k` must be a whole number between 4 and 21 "
     "(log2 of the HLL buckets), found 22"),
    ("theta_sketch(v, 4)", "`aggregations[0].lg_k` must be a whole number between 5 and "
     "26 (log2 of the nominal entries), found 4"),
    ("{fn: kll_sketch, col: v, k: 7}", "`aggregations[0].k` must be a whole number "
     "between 8 and 65535 (the KLL sketch's accuracy), found 7"),
    ("{fn: approx_quantile, col: v, q: []}", "`aggregations[0].q` must be a number in "
     "[0, 1] or a non-empty list of them, found []"),
    ("{fn: approx_quantile, col: v, q: [0.5, 2]}", "`aggregations[0].q` must be a number "
     "in [0, 1] or a non-empty list of them, found [0.5, 2]"),
])
def test_bad_sketch_and_k_arguments_name_the_argument(line: str, message: str) -> None:
    assert error_of(f"events: {{time: ts}}\naggregations:\n  - {line}\n") == message
