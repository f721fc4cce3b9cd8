"""YAML names of calendar-sized `Tumbling`/`Hopping` and of a per-row `Session` gap: built
from a query file (no Spark), their errors by the key's path, and one run end to end."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pyspark.sql import SparkSession

import wisp as ws
from wisp.cli import main
from wisp.query import QueryError, build_window, parse_query


def window_of(text: str) -> object:
    return build_window(yaml.safe_load(text), columns=False)


@pytest.mark.parametrize(("text", "expected"), [
    ("{kind: Tumbling, size: 1mo, tz: Europe/Berlin}",
     ws.Tumbling("1mo", tz="Europe/Berlin")),
    ("{kind: Tumbling, size: 1y}", ws.Tumbling("1y")),
    ("{kind: Tumbling, size: 1d, tz: America/New_York}",
     ws.Tumbling("1d", tz="America/New_York")),
    ("{kind: Hopping, size: 3mo, hop: 1mo, align: 2024-02-01}",
     ws.Hopping("3mo", "1mo", align=dt.date(2024, 2, 1))),
    ("{kind: Session, gap: {col: gap_s}, max_duration: 4h}",
     ws.Session("<col gap_s>", "4h")),
    ("{kind: Session, gap: {expr: 'gap_s * 2'}}", ws.Session("<expr gap_s * 2>")),
])
def test_calendar_and_gap_windows_from_yaml(text: str, expected: object) -> None:
    assert window_of(text) == expected


BASE = "events: {time: ts}\naggregations: [count]\n"


@pytest.mark.parametrize(("text", "message"), [
    (BASE + "window: {kind: Tumbling, size: 1mo, tz: Europe/Berln}",
     "`window.tz` must be an IANA time zone name such as 'Europe/Berlin', found "
     "'Europe/Berln'; did you mean 'Europe/Berlin'?"),
    (BASE + "window: {kind: Hopping, size: 3mo, hop: 1d}",
     "`window.hop` must be a calendar size in months ('1mo', '3mo', '1y') like `size` "
     "('3mo'), found '1d'"),
    (BASE + "window: {kind: Tumbling, size: 1w}",
     "`window.size` must be a duration such as '250ms', '2s', '1h30m', a calendar size "
     "such as '1mo', '3mo', '1y' (or whole days such as '1d' with `tz`), or a number, "
     "found '1w'"),
    (BASE + "window: {kind: Tumbling, size: 1mo, align: 2024-01-15}",
     "`window.align` must be a date (the first local day of a window, the 1st of a month "
     "for month sizes) or None, found datetime.date(2024, 1, 15)"),
])
def test_bad_calendar_yaml_names_the_key(text: str, message: str) -> None:
    with pytest.raises(QueryError) as error:
        parse_query(yaml.safe_load(text))
    assert str(error.value) == message


CSV = """ts,sensor,v
2024-01-31T23:30:00Z,a,1.0
2024-02-01T00:30:00Z,a,2.0
2024-03-31T21:30:00Z,a,4.0
"""


@pytest.mark.spark
def test_wisp_run_with_berlin_months(spark: SparkSession, tmp_path: Path) -> None:
    body = ("events: {time: ts, key: sensor}\n"
            "window: {kind: Tumbling, size: 1mo, tz: Europe/Berlin}\n"
            "aggregations: [sum(v)]\n"
            "input: {schema: 'ts TIMESTAMP, sensor STRING, v DOUBLE'}\n")
    (tmp_path / "q.yaml").write_text(body)
    (tmp_path / "events.csv").write_text(CSV)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(tmp_path / "q.yaml"), "--input",
                                       str(tmp_path / "events.csv"), "--output", str(out),
                                       "--format", "csv"])
    assert result.exit_code == 0, result.output
    lines = {line for p in out.glob("part-*.csv") for line in p.read_text().splitlines()}
    # 23:30 UTC on January 31st is February 1st in Berlin; 21:30 UTC on March 31st is
    # 23:30 in Berlin (summer time): still March, whose Berlin month ends at 22:00 UTC
    assert lines == {
        "sensor,window_start,window_end,time,sum_v",
        "a,2024-01-31T23:00:00.000Z,2024-02-29T23:00:00.000Z,2024-02-29T23:00:00.000Z,3.0",
        "a,2024-02-29T23:00:00.000Z,2024-03-31T22:00:00.000Z,2024-03-31T22:00:00.000Z,4.0"}
