"""Draws the pictures of the window-family pages from each family's worked example.

Run from the repository root: `.venv/bin/python docs/images/examples/family_pictures.py`.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

import wisp as ws
from wisp.plot import plot_events

UTC = dt.UTC
OUT = "docs/images"


def seconds(spark, rows, schema):  # type: ignore[no-untyped-def]
    """A DataFrame whose long `t*` columns (seconds) become timestamps."""
    df = spark.createDataFrame(rows, schema)
    for name in [c for c in df.columns if c.startswith("t")]:
        df = df.withColumn(name, F.timestamp_micros(F.col(name) * 1_000_000))
    return df


def main() -> None:
    spark = ws.session("local[2]")
    base = 1_340_841_600  # 2012-06-28 00:00:00 UTC, the hopping example's day
    hops = seconds(spark, [(base + 0, None, "e0"), (base + 1, base + 2, "e1"),
                           (base + 3, base + 10, "e2"), (base + 9, base + 10, "e3")],
                   "t long, t_end long, id string")
    plot_events(ws.events(hops, time="t", end="t_end"),
                ws.Hopping("5s", "2s", align=dt.datetime(2012, 3, 15, 12, tzinfo=UTC),
                           output="changes"), ws.count(), out=f"{OUT}/hopping.png",
                title="Hopping(5s, 2s, output='changes'): count per validity interval")

    points = seconds(spark, [(1, 1.0), (3, 2.0), (3, 3.0), (6, 4.0), (8, 5.0)],
                     "t long, v double")
    plot_events(ws.events(points, time="t"), ws.CountByStartTime(2), ws.count(),
                out=f"{OUT}/count.png", title="CountByStartTime(2): collocated starts count once")

    values = seconds(spark, [(k, float(k)) for k in range(1, 9)], "t long, v double")
    plot_events(ws.events(values, time="t"), ws.Sliding(ws.Count(4)), ws.collect("v"),
                out=f"{OUT}/sliding.png", title="Sliding(Count(4)): the last four tuples")

    purchases = spark.createDataFrame(
        [(dt.datetime(2012, 2, 23, tzinfo=UTC), 5), (dt.datetime(2012, 5, 10, tzinfo=UTC), 2),
         (dt.datetime(2018, 11, 3, tzinfo=UTC), 13), (dt.datetime(2019, 10, 26, tzinfo=UTC), 4)],
        "ts timestamp, amount long")
    plot_events(ws.events(purchases, time="ts"), ws.Since(ws.yearly()), ws.sum("amount"),
                out=f"{OUT}/since-yearly.png", title="Since(yearly()): totals at each year")

    readings = spark.createDataFrame([(k * 0.3, float(k)) for k in range(12)],
                                     "s double, v double")
    readings = readings.withColumn("ts", F.timestamp_micros((F.col("s") * 1e6).cast("long")))
    plot_events(ws.events(readings.drop("s"), time="ts"),
                ws.Dynamic(ws.clock("500ms"), start="-500ms", end="500ms"), ws.count(),
                out=f"{OUT}/dynamic-clock.png",
                title="Dynamic(clock('500ms'), -500ms..+500ms)")

    clicks = seconds(spark, [("a", t) for t in (0, 2, 3, 9, 10, 20)]
                     + [("b", t) for t in (1, 7, 8)], "user string, t long")
    plot_events(ws.events(clicks, time="t", key="user"), ws.Session("3s"), ws.count(),
                out=f"{OUT}/session.png", title="Session('3s'): [first, last + gap)")

    spring = spark.createDataFrame(  # Berlin's clocks go forward on 2024-03-31
        [(dt.datetime(2024, 3, 30, 10, tzinfo=UTC), 1.0),
         (dt.datetime(2024, 3, 30, 22, 30, tzinfo=UTC), 2.0),
         (dt.datetime(2024, 3, 31, 12, tzinfo=UTC), 3.0),
         (dt.datetime(2024, 3, 31, 21, 30, tzinfo=UTC), 4.0),
         (dt.datetime(2024, 4, 1, 6, tzinfo=UTC), 5.0)], "ts timestamp, v double")
    plot_events(ws.events(spring, time="ts"), ws.Tumbling("1d", tz="Europe/Berlin"),
                ws.count(), out=f"{OUT}/calendar-day.png",
                title="Tumbling('1d', tz='Europe/Berlin'): the 23-hour day of March 31st, "
                "2024 (axis in UTC)")
    spark.stop()


if __name__ == "__main__":
    main()
