"""`Session(gap=...)`: a duration, a column name or a Column (a per-row gap), told apart
at construction; bad gaps by their text."""

from __future__ import annotations

import datetime as dt

import pytest

import wisp as ws
from wisp.errors import WispInputError


@pytest.mark.parametrize(("gap", "kind"), [
    ("30s", "duration"), (dt.timedelta(seconds=3), "duration"), (5, "duration"),
    (2.5, "duration"), ("patience", "column"), ("gap_s", "column"), ("<col g>", "column"),
])
def test_gap_kinds(gap: object, kind: str) -> None:
    assert ws.Session(gap).gap_kind == kind


def test_a_column_gap_keeps_max_duration() -> None:
    window = ws.Session("patience", max_duration="1h")
    assert (window.gap_kind, window.max_duration) == ("column", "1h")


@pytest.mark.parametrize(("gap", "message"), [
    ("30 minutes", "`gap` must be a duration such as '250ms', '2s', '1h30m', a "
     "datetime.timedelta, or a number, found '30 minutes'"),
    ("0s", "`gap` must be a positive duration, found '0s'"),
    (None, "`gap` must be a duration such as '250ms', '2s', '1h30m', a datetime.timedelta "
     "or a number, or a per-row gap (a column name or a PySpark Column), found None"),
    (True, "`gap` must be a duration such as '250ms', '2s', '1h30m', a datetime.timedelta "
     "or a number, or a per-row gap (a column name or a PySpark Column), found True"),
])
def test_bad_gaps(gap: object, message: str) -> None:
    with pytest.raises(WispInputError) as error:
        ws.Session(gap)
    assert str(error.value) == message
