"""`wisp plot` and `wisp.plot.plot_events`: valid PNG and SVG files of the asked size,
and sampling of large inputs inside Spark."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import wisp as ws
from wisp.cli import main
from wisp.errors import WispInputError
from wisp.plot import plot_events, sample

pytestmark = pytest.mark.spark

CSV = """ts,sensor,v
2024-01-01T00:00:01Z,a,1.0
2024-01-01T00:00:02Z,a,3.0
2024-01-01T00:00:04Z,a,5.0
2024-01-01T00:00:01Z,b,10.0
2024-01-01T00:00:03Z,b,20.0
"""
QUERY = """
events: {time: ts, key: sensor}
window: {kind: Range, start: -2s, end: 1s}
aggregations: [collect(v)]
input: {schema: "ts TIMESTAMP, sensor STRING, v DOUBLE"}
"""


@pytest.fixture(autouse=True)
def shared_session(spark: SparkSession) -> None:
    """Start the shared test session first: the CLI then reuses it instead of starting
    its own."""


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "q.yaml").write_text(QUERY)
    (tmp_path / "e.csv").write_text(CSV)
    return str(tmp_path / "q.yaml"), str(tmp_path / "e.csv")


def test_plot_writes_a_png_of_the_asked_size(files: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "t.png"
    result = CliRunner().invoke(main, ["plot", files[0], "--input", files[1], "--out",
                                       str(out), "--width", "640", "--height", "320"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {out}\n"
    assert png_size(out) == (640, 320)
    again = CliRunner().invoke(main, ["plot", files[0], "--input", files[1], "--out",
                                      str(out)])
    assert again.exit_code == 2
    assert "`--out` must not exist (pass --overwrite to replace it)" in again.stderr


def test_plot_writes_an_svg_of_the_asked_size(files: tuple[str, str], tmp_path: Path) -> None:
    out = tmp_path / "t.svg"
    result = CliRunner().invoke(main, ["plot", files[0], "--input", files[1], "--out",
                                       str(out), "--width", "500", "--height", "250"])
    assert result.exit_code == 0, result.output
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # 100 pixels per inch, 72 points per inch
    assert (root.get("width"), root.get("height")) == ("360pt", "180pt")


def test_plot_refuses_other_formats(files: tuple[str, str], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["plot", files[0], "--input", files[1], "--out",
                                       str(tmp_path / "t.jpg")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: `out` must be a file name ending in .png or "
                                    ".svg, found ")


@pytest.fixture(scope="module")
def many(spark: SparkSession) -> DataFrame:
    """Three keys (one null) with ten events each, one per second, values 0..9."""
    ids = spark.range(30)
    return ids.select(
        F.when(F.col("id") % 3 == 0, F.lit(None)).otherwise(
            F.format_string("k%d", F.col("id") % 3)).alias("k"),
        F.timestamp_seconds(F.floor(F.col("id") / 3)).alias("ts"),
        F.floor(F.col("id") / 3).cast("double").alias("v"))


def test_large_inputs_are_cut_inside_spark(many: DataFrame) -> None:
    ev = ws.events(many, time="ts", key="k")
    result = ev.window(ws.Range.past("1s")).agg(ws.sum("v"))
    picked = sample(ev, result, max_keys=2, max_events=5)
    # the first two keys in key order (nulls first), and their first five events in time
    assert picked.lanes == ["null", "k1"]
    assert sorted((lane, t / 1e6) for lane, t, _, _ in picked.events) == [
        (0, 0.0), (0, 1.0), (0, 2.0), (1, 0.0), (1, 1.0)]
    assert picked.note == "first 2 of 3 keys; first 5 of 20 events in time"
    # outputs of those keys with a time inside the slice [0 s, 2 s]: [t - 1 s, t] each
    assert sorted((lane, s / 1e6, e / 1e6, t / 1e6, v)
                  for lane, s, e, t, v in picked.outputs) == [
        (0, -1.0, 0.0, 0.0, 0.0), (0, 0.0, 1.0, 1.0, 1.0), (0, 1.0, 2.0, 2.0, 3.0),
        (1, -1.0, 0.0, 0.0, 0.0), (1, 0.0, 1.0, 1.0, 1.0), (1, 1.0, 2.0, 2.0, 3.0)]
    # not cut in time: every output of the drawn key, with no upper time bound
    whole = sample(ev, result, max_keys=1, max_events=100)
    assert whole.lanes == ["null"]
    assert whole.note == "first 1 of 3 keys"
    assert [(t / 1e6, v) for _, _, _, t, v in whole.outputs] == \
        [(0.0, 0.0)] + [(float(k), 2.0 * k - 1) for k in range(1, 10)]


def test_plot_events_from_python(many: DataFrame, tmp_path: Path) -> None:
    ev = ws.events(many.filter(F.col("k").isNotNull()), time="ts", key="k")
    out = str(tmp_path / "p.png")
    assert plot_events(ev, None, ws.sum("v"), out=out, width=480, height=360) == out
    assert png_size(Path(out)) == (480, 360)
    with pytest.raises(WispInputError, match=r"^`max_keys` must be an integer >= 1, found 0"):
        plot_events(ev, None, out=out, max_keys=0)
    with pytest.raises(WispInputError, match=r"^`ev` must be wisp Events"):
        plot_events(many, None, out=out)  # type: ignore[arg-type]
