"""Draws docs/images/median.png (docs/aggregations.md): a rolling median and a rolling
mean over the same readings with one spike, both computed by wisp.

Run from the repository root: `.venv/bin/python docs/images/examples/aggregation_pictures.py`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import wisp as ws  # noqa: E402

OUT = "docs/images/median.png"
READINGS = [20.0, 21.0, 20.5, 21.5, 48.0, 22.0, 21.5, 22.5, 23.0]


def main() -> None:
    spark = ws.session("local[2]")
    df = spark.createDataFrame(list(enumerate(READINGS)), "s int, v double")
    ev = ws.events(df.withColumn("ts", F.timestamp_seconds("s")), time="ts")
    rows = (ev.window(ws.Rows(-4, 0, partial=True))
            .agg(ws.median("v"), ws.mean("v")).orderBy("time").collect())
    seconds = [r["time"].timestamp() for r in rows]
    figure, axes = plt.subplots(figsize=(8, 3.2), dpi=110)
    axes.plot(range(len(READINGS)), READINGS, "o", color="0.35", label="readings")
    axes.plot(seconds, [r["median_v"] for r in rows], "-", lw=2.2, label="median over Rows(-4, 0)")
    axes.plot(seconds, [r["mean_v"] for r in rows], "--", lw=1.6, label="mean over Rows(-4, 0)")
    axes.set_xlabel("seconds")
    axes.set_title("Rows(-4, 0): the rolling median ignores one spike, the mean follows it")
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    figure.savefig(OUT)
    spark.stop()


if __name__ == "__main__":
    main()
