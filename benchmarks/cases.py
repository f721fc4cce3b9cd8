"""The benchmark cases. Adding one is one small function registered with `@case`: it
takes the data and the case's parameter `w` (a width, a ratio, a gap: see `param`) and
returns the wisp DataFrame and, when there is one, the hand-written native PySpark
equivalent, with the same columns: the join columns `on` (default k, t), then the
compared values."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

import wisp as ws
import wisp.windowed
from wisp.runtime.codecs.sorting import SortedInput
from wisp.spec.windows import Window as WispWindow

from .data import Data

Build = Callable[[Data, int], tuple[DataFrame, DataFrame | None]]
VALUES = ("sum_v", "mean_v", "max_v")


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    build: Build
    widths: tuple[int, ...]
    compare: tuple[str, ...]
    on: tuple[str, ...]
    param: str
    equivalent: bool = True
    """False where the native query gives wisp's rows on this data only: its ratio is
    shown in parentheses and is not one of the ratios the targets are about."""

    def label(self, w: int) -> str:
        """The parameter as the table shows it: `1,000`, `size/hop 100`, `gap 60 s`,
        `alive 10`."""
        if not w:
            return "-"
        if self.param == "w":
            return f"{w:,}"
        if self.param in ("gap", "max_duration"):
            return f"{self.param} {w:,} s"
        return f"{self.param} {w:,}"


CASES: dict[str, Case] = {}
WIDTHS = (10, 100, 1_000, 10_000)


def case(family: str, widths: tuple[int, ...] = WIDTHS, compare: tuple[str, ...] = VALUES,
         on: tuple[str, ...] = ("k", "t"), param: str = "w",
         equivalent: bool = True) -> Callable[[Build], Build]:
    """Register a benchmark (`family` names the window family it belongs to; results are
    joined on the columns `on` and the columns `compare` compared; `equivalent` False
    for a shorter native query that gives wisp's rows on this data only)."""
    def register(build: Build) -> Build:
        name = build.__name__
        CASES[name] = Case(name, family, build, widths, compare, on, param, equivalent)
        return build
    return register


STRATEGIES: dict[int, str] = {}
"""The strategy wisp chose, by id() of the benchmark's wisp DataFrame."""


def _tracked(out: DataFrame, selected: DataFrame) -> DataFrame:
    run = wisp.windowed._RUNS.get(out)
    STRATEGIES[id(selected)] = run.plan.strategy if run is not None else "-"
    return selected


def _selected(out: DataFrame) -> DataFrame:
    """wisp's output as (k, t, sum_v, mean_v, max_v), remembering its strategy."""
    return _tracked(out, out.select("k", F.col("time").alias("t"), *VALUES))


def _windows(out: DataFrame) -> DataFrame:
    """wisp's output as (k, window_start, window_end, sum_v, mean_v, max_v)."""
    return _tracked(out, out.select("k", "window_start", "window_end", *VALUES))


def _aggregates(events: ws.Events, window: WispWindow | None) -> DataFrame:
    windowed = events if window is None else events.window(window)
    return windowed.agg(ws.sum("v"), ws.mean("v"), ws.max("v"))


def _wisp(data: Data, window: WispWindow | None) -> DataFrame:
    return _selected(_aggregates(ws.events(data.df, time="t", key="k"), window))


def _values() -> list[Column]:
    """sum, mean and max of `v` as plain aggregates (for groupBy)."""
    v = F.col("v")
    return [F.sum(v).alias("sum_v"), F.avg(v).alias("mean_v"), F.max(v).alias("max_v")]


def _over(spec: WindowSpec) -> list[Column]:
    """sum, mean and max of `v` over the window spec `spec`."""
    v = F.col("v")
    return [F.sum(v).over(spec).alias("sum_v"), F.avg(v).over(spec).alias("mean_v"),
            F.max(v).over(spec).alias("max_v")]


def _native(data: Data, frame: Callable[[WindowSpec], WindowSpec]) -> DataFrame:
    spec = frame(Window.partitionBy("k").orderBy("t"))
    return data.df.select("k", "t", *_over(spec))


def _stamped(data: Data) -> DataFrame:
    """The data with a timestamp time `ts` = `t` seconds after the epoch (k, ts, v)."""
    return data.df.select("k", F.timestamp_seconds("t").alias("ts"), "v")


# ------------------------------------------------------------------ psi: Rows, Range


@case("psi")
def rows(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Rows(-(w-1), 0, partial=True): the last w events, as rowsBetween(-(w-1), 0)."""
    return (_wisp(data, ws.Rows(-(w - 1), 0, partial=True)),
            _native(data, lambda s: s.rowsBetween(-(w - 1), 0)))


@case("psi")
def range_(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Range(-(w*gap-1), 0): ~w events on average, as rangeBetween(-(w*gap-1), 0)."""
    span = w * data.gap - 1
    return (_wisp(data, ws.Range(-span, 0)),
            _native(data, lambda s: s.rangeBetween(-span, 0)))


@case("psi", widths=(0,))
def cumulative(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Running sum, mean, max per key (no window): rowsBetween(unboundedPreceding, 0)."""
    return (_wisp(data, None), _native(data, lambda s: s.rowsBetween(
        Window.unboundedPreceding, 0)))


# ------------------------------------------------------ hopping and tumbling windows

HOP = 1_000
"""The hop of the hopping cases, in seconds: ~10 events of a key per hop."""


@case("streaminsight", widths=(1, 10, 100, 1_000), on=("k", "window_start", "window_end"),
      param="size/hop")
def hopping(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Hopping(w*1000 s, 1000 s) (Tumbling at w = 1) on a timestamp time (~10*w events
    of a key per window), as groupBy("k", F.window("ts", size, hop))."""
    return _hopping_windows(_stamped(data), w)


def _hopping_windows(df: DataFrame, w: int) -> tuple[DataFrame, DataFrame]:
    """Hopping(w*1000 s, 1000 s) (Tumbling at w = 1) over `df`'s time `ts`, wisp's and
    Spark's `groupBy("k", F.window(...))`."""
    size, hop = dt.timedelta(seconds=w * HOP), dt.timedelta(seconds=HOP)
    window = ws.Tumbling(size) if w == 1 else ws.Hopping(size, hop)
    ours = _windows(_aggregates(ws.events(df, time="ts", key="k"), window))
    spark_window = (F.window("ts", f"{w * HOP} seconds") if w == 1
                    else F.window("ts", f"{w * HOP} seconds", f"{HOP} seconds"))
    theirs = df.groupBy("k", spark_window.alias("w")).agg(*_values()).select(
        "k", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"),
        *VALUES)
    return ours, theirs


@case("streaminsight", widths=(10, 1_000))
def count_windows(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """CountByStartTime(w) (every key's times are distinct here: each window holds w
    consecutive events, output at the last one's time), as rowsBetween(0, w-1) kept
    where lead(t, w-1) exists, that lead being the output time."""
    ours = _wisp(data, ws.CountByStartTime(w))
    by_t = Window.partitionBy("k").orderBy("t")
    theirs = data.df.select("k", F.lead("t", w - 1).over(by_t).alias("t"),
                            *_over(by_t.rowsBetween(0, w - 1))).where(F.col("t").isNotNull())
    return ours, theirs


LIFE = 10
"""Interval events live `LIFE` mean gaps (~10 events of a key alive at once)."""


def _living(data: Data, life: int) -> ws.Events:
    """The data as interval events `[t, t + life)`."""
    return ws.events(data.df.withColumn("e", F.col("t") + life), time="t", end="e", key="k")


def _interval_windows(data: Data, w: int) -> tuple[DataFrame, int, int, int]:
    """wisp's `Hopping(w*hop, hop)` over interval events `[t, t + 10 gaps)` (hop = 10
    gaps), with its size, hop and the events' lifetime."""
    hop = 10 * data.gap
    size, life = w * hop, LIFE * data.gap
    return _windows(_aggregates(_living(data, life), ws.Hopping(size, hop))), size, hop, life


@case("streaminsight", widths=(10, 1_000), on=("k", "window_start", "window_end"),
      param="size/hop")
def interval_hopping(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Hopping(w*hop, hop) over interval events `[t, t + 10 gaps)` (hop = 10 gaps, ~10
    events of a key), each in every window its lifetime overlaps. Native: the same
    windows for any events, open-ended ones included (`native_interval_hopping`)."""
    ours, size, hop, life = _interval_windows(data, w)
    living = data.df.select("k", "t", (F.col("t") + life).alias("e"), "v")
    return ours, native_interval_hopping(living, size, hop)


@case("streaminsight", widths=(10,), on=("k", "window_start", "window_end"),
      param="size/hop", equivalent=False)
def interval_hopping_finite(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """`interval_hopping` against a shorter native query that is not an equivalent: it
    knows every lifetime here is finite, so it needs no horizon (the newest start and
    end of the whole input, where the windows of open-ended events stop being written
    one by one). It gives the same rows on this data only: an open-ended event fails
    it."""
    ours, size, hop, life = _interval_windows(data, w)
    t = F.col("t")
    first = (F.floor((t - size) / hop) + 1) * hop
    last = F.floor((t + life - 1) / hop) * hop
    starts = data.df.select("k", "v", F.explode(F.sequence(first.cast("long"), last.cast(
        "long"), F.lit(hop).cast("long"))).alias("window_start"))
    theirs = starts.groupBy("k", "window_start").agg(*_values()).select(
        "k", "window_start", (F.col("window_start") + size).alias("window_end"), *VALUES)
    return ours, theirs


def native_interval_hopping(df: DataFrame, size: int, hop: int) -> DataFrame:
    """What a Spark user writes for wisp's `Hopping(size, hop)` over interval events
    (`df`: k, t, e, v with long times, a null `e` for an open-ended event): each event
    exploded into the starts s of the windows its lifetime overlaps (t - size < s <=
    its last tick, max(e, t + 1) - 1), then groupBy(k, s). The horizon H (one tick
    after the newest start, or the newest finite end if later: one scalar subquery)
    bounds open-ended events: they reach the first window starting at or after H, the
    row that stands for every later window (a null `window_end`). The grid is found in
    double arithmetic, exact for times within 2^53."""
    t, e = F.col("t"), F.col("e")
    horizon = df.select(F.greatest(F.max(t) + 1, F.max(e))).scalar()
    rest = (F.ceil(horizon / hop) * hop).cast("long")
    last_tick = F.greatest(F.coalesce(e, rest + 1), t + 1) - 1
    first = ((F.floor((t - size) / hop) + 1) * hop).cast("long")
    last = (F.floor(last_tick / hop) * hop).cast("long")
    starts = F.when(first <= last, F.sequence(first, last, F.lit(hop).cast("long")))
    exploded = df.select("k", "v", F.explode(starts).alias("window_start"))
    start = F.col("window_start")
    return exploded.groupBy("k", "window_start").agg(*_values()).select(
        "k", "window_start", F.when(start < horizon, start + size).alias("window_end"),
        *VALUES)


@case("streaminsight", widths=(10, 1_000), param="alive")
def snapshot(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Snapshot() over interval events `[t, t + w gaps)` (~w events of a key alive at
    any moment): one window between each two consecutive event starts or ends. No
    native counterpart (a window's maximum needs the set of events alive in it)."""
    return _selected(_aggregates(_living(data, w * data.gap), ws.Snapshot())), None


# ------------------------------------------------------------------- policy windows


@case("spl", widths=(10, 1_000))
def sliding_count(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Sliding(Count(w)) (trigger Count(1); nothing before the window is full), as
    rowsBetween(-(w-1), 0) kept from each key's w-th event on (row_number() >= w)."""
    ours = _wisp(data, ws.Sliding(ws.Count(w)))
    by_t = Window.partitionBy("k").orderBy("t")
    theirs = data.df.select("k", "t", *_over(by_t.rowsBetween(-(w - 1), 0)),
                            F.row_number().over(by_t).alias("n")).where(
        F.col("n") >= w).drop("n")
    return ours, theirs


@case("spl", widths=(10, 1_000))
def sliding_time(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Sliding(Time(w*gap-1)) (trigger Count(1)): the tuples at most w*gap-1 old, ~w
    events, as rangeBetween(-(w*gap-1), 0)."""
    span = w * data.gap - 1
    return (_wisp(data, ws.Sliding(ws.Time(span))),
            _native(data, lambda s: s.rangeBetween(-span, 0)))


@case("spl", widths=(10, 1_000))
def sliding_delta(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Sliding(Delta("t", w*gap-1)) (trigger Count(1)): evicts tuples more than
    w*gap-1 older than the arriving one; output once the key's first eviction happened.
    Native: rangeBetween(-(w*gap-1), 0) kept where t - min(t) of the key > w*gap-1."""
    span = w * data.gap - 1
    ours = _wisp(data, ws.Sliding(ws.Delta("t", span)))
    by_t = Window.partitionBy("k").orderBy("t")
    theirs = data.df.select("k", "t", *_over(by_t.rangeBetween(-span, 0)),
                            F.min("t").over(Window.partitionBy("k")).alias("first")).where(
        F.col("t") - F.col("first") > span).drop("first")
    return ours, theirs


@case("spl", widths=(10, 1_000))
def policy_tumbling(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Tumbling(Count(w)): each key's events in batches of w, output at the w-th (an
    incomplete last batch is not output). Native: row_number() per key, groupBy(k,
    (row_number - 1) div w), kept where the batch holds w events."""
    ours = _wisp(data, ws.Tumbling(ws.Count(w)))
    number = F.row_number().over(Window.partitionBy("k").orderBy("t"))
    batches = data.df.select("k", "t", "v", F.floor((number - 1) / w).alias("batch"))
    theirs = batches.groupBy("k", "batch").agg(
        F.max("t").alias("t"), F.count("*").alias("n"), *_values()).where(
        F.col("n") == w).select("k", "t", *VALUES)
    return ours, theirs


# ------------------------------------------------ periods: Since and Trailing by hour

HOUR = 3_600


@case("streaminsight", widths=(1, 10), on=("k", "window_start", "window_end"),
      param="size/hop")
def hopping_ntz(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """`hopping` on a timestamp_ntz time (what Spark reads from Parquet that pandas or
    pyarrow wrote): the same windows, as groupBy("k", F.window("ts", size, hop))."""
    df = _stamped(data).select("k", F.col("ts").cast("timestamp_ntz").alias("ts"), "v")
    return _hopping_windows(df, w)


def _tick(ts: Column) -> Column:
    """The hourly tick closing the period `(previous tick, tick]` of `ts`."""
    return F.date_trunc("hour", ts - F.expr("INTERVAL 1 MICROSECOND")) + F.expr(
        "INTERVAL 1 HOUR")


@case("fenl", widths=(0,))
def since(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Since(hourly()) on a timestamp time: one row per key and hour over
    (previous hour, hour], each key's empty hours included. Native: the same rows for
    any events (`native_since`)."""
    df = _stamped(data)
    return _hourly(df), native_since(df)


@case("fenl", widths=(0,), equivalent=False)
def since_groupby(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """`since` against a shorter native query that is not an equivalent: groupBy("k",
    tick) alone, where tick is the hour closing ts. It leaves out the hours without
    events, so it gives the same rows only where every key has events in every hour
    from its first to the newest one of the whole input, as on this data."""
    df = _stamped(data)
    return _hourly(df), df.groupBy("k", _tick(F.col("ts")).alias("t")).agg(*_values())


def _hourly(df: DataFrame) -> DataFrame:
    """wisp's `Since(hourly())` over the stamped data (k, ts, v)."""
    return _selected(_aggregates(ws.events(df, time="ts", key="k"), ws.Since(ws.hourly())))


def native_since(df: DataFrame) -> DataFrame:
    """What a Spark user writes for wisp's `Since(hourly())` (`df`: k, ts, v), in
    microseconds (faster than timestamp arithmetic): per-hour aggregates by groupBy("k",
    tick), tick being the hour closing ts; then each key's hours without events, from
    its first hour to the one closing the newest event of the whole input (one scalar
    subquery), generated after each hour with events (lead + sequence + explode), with
    sum 0 and mean and max null."""
    hour = F.lit(HOUR * 1_000_000)

    def closing(micros: Column) -> Column:
        return micros + F.pmod(-micros, hour)

    hours = df.groupBy("k", closing(F.unix_micros("ts")).alias("t")).agg(*_values())
    newest = df.select(closing(F.unix_micros(F.max("ts")))).scalar()
    following = F.coalesce(F.lead("t").over(Window.partitionBy("k").orderBy("t")),
                           newest + hour)
    spread = hours.withColumn("next", following).select(
        "k", "t", *VALUES, F.explode(F.sequence(F.col("t"), F.col("next") - hour,
                                                hour)).alias("hour"))
    own = F.col("hour") == F.col("t")
    return spread.select(
        "k", F.timestamp_micros("hour").alias("t"),
        F.when(own, F.col("sum_v")).otherwise(F.lit(0.0)).alias("sum_v"),
        F.when(own, F.col("mean_v")).alias("mean_v"), F.when(own, F.col("max_v")).alias("max_v"))


@case("fenl", widths=(24,), param="n")
def trailing(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Trailing(w, hourly()): per event, the current hour so far and the w-1 hours
    before it (null while the key has fewer than w-1 earlier ticks). Native: per-hour
    aggregates combined over the w-1 previous hours by rangeBetween, plus a running
    aggregate over the current hour, joined on (k, hour)."""
    df = _stamped(data)
    ours = _selected(_aggregates(ws.events(df, time="ts", key="k"), ws.Trailing(w, ws.hourly())))
    ticked = df.withColumn("tick", _tick(F.col("ts")))
    hours = ticked.groupBy("k", "tick").agg(
        F.sum("v").alias("s"), F.count("v").alias("c"), F.max("v").alias("m"))
    before = Window.partitionBy("k").orderBy(F.unix_seconds("tick")).rangeBetween(
        -(w - 1) * HOUR, -HOUR)
    hours = hours.select(
        "k", "tick", F.sum("s").over(before).alias("ps"), F.sum("c").over(before).alias("pc"),
        F.max("m").over(before).alias("pm"),
        F.min("tick").over(Window.partitionBy("k")).alias("first"))
    so_far = Window.partitionBy("k", "tick").orderBy("ts").rowsBetween(
        Window.unboundedPreceding, 0)
    running = ticked.select("k", "tick", "ts", F.sum("v").over(so_far).alias("cs"),
                            F.count("v").over(so_far).alias("cc"),
                            F.max("v").over(so_far).alias("cm"))
    joined = running.join(hours, ["k", "tick"])
    enough = F.unix_seconds("tick") - F.unix_seconds("first") >= (w - 1) * HOUR
    total = F.coalesce(F.col("ps"), F.lit(0.0)) + F.col("cs")
    count = F.coalesce(F.col("pc"), F.lit(0)) + F.col("cc")
    theirs = joined.select(
        "k", F.col("ts").alias("t"), F.when(enough, total).alias("sum_v"),
        F.when(enough, total / count).alias("mean_v"),
        F.when(enough, F.greatest("pm", "cm")).alias("max_v"))
    return ours, theirs


# ------------------------------------------------------------------------- sessions


@case("dynamic", widths=(60, 600), on=("k", "window_start", "window_end"), param="gap")
def session(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Session(w seconds) on a timestamp time, as groupBy("k", F.session_window("ts",
    gap)); at gap 60 s sessions hold ~2 events, at 600 s ~400."""
    df = _stamped(data)
    ours = _windows(_aggregates(ws.events(df, time="ts", key="k"),
                                ws.Session(dt.timedelta(seconds=w))))
    theirs = df.groupBy("k", F.session_window("ts", f"{w} seconds").alias("w")).agg(
        *_values()).select("k", F.col("w.start").alias("window_start"),
                           F.col("w.end").alias("window_end"), *VALUES)
    return ours, theirs


@case("dynamic", widths=(10, 1_000))
def dynamic_clock(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Dynamic(clock(every 10 gaps), start=-(w*gap-1), end=0): per key, a window every
    ~10 of its events over the ~w events before the tick. No native counterpart short
    of a join of every tick with every event of its key."""
    window = ws.Dynamic(ws.clock(10 * data.gap), start=-(w * data.gap - 1), end=0)
    return _windows(_aggregates(ws.events(data.df, time="t", key="k"), window)), None


@case("dynamic", widths=(600, 6_000), on=("k", "window_start", "window_end"),
      param="max_duration")
def capped_session(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """Session(60 s, max_duration=w s) over interval events `[ts, ts + 30 s)` on a
    timestamp time (a key's events ~100 s apart). No native counterpart:
    session_window has no maximum duration."""
    df = _stamped(data).withColumn("te", F.col("ts") + F.expr("INTERVAL 30 SECONDS"))
    events = ws.events(df, time="ts", end="te", key="k")
    window = ws.Session(dt.timedelta(seconds=60), max_duration=dt.timedelta(seconds=w))
    return _windows(_aggregates(events, window)), None


# --------------------------------------------------------------------------- floors


@case("floor", widths=(0,), compare=())
def shuffle_sort(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """repartition(k) + sortWithinPartitions(k, t): the floor of any per-key ordered job."""
    return data.df.repartition("k").sortWithinPartitions("k", "t"), None


@case("floor", widths=(0,), compare=())
def identity_arrow(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """The floor plus an identity mapInArrow round trip (Arrow to Python and back)."""
    sorted_ = data.df.repartition("k").sortWithinPartitions("k", "t")
    return sorted_.mapInArrow(_identity, sorted_.schema), None


@case("floor", widths=(0,), compare=())
def worker_sort_arrow(data: Data, w: int) -> tuple[DataFrame, DataFrame | None]:
    """repartition(k) + an identity mapInArrow fed each partition sorted by (k, t) in the
    Python worker, as wisp's kernels are (`wisp.runtime.codecs.sorting`): no Spark sort."""
    partitioned = data.df.repartition("k")
    return partitioned.mapInArrow(SortedInput(_identity, ("k", "t")), partitioned.schema), None


def _identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every batch back as it came: the Arrow round trip alone."""
    yield from batches
