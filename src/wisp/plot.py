"""Timeline pictures of events and windows (PNG or SVG), drawn with matplotlib.

One lane per key. In each lane the events are marks on the lane's first row (interval
events are bars over `[time, end)`), and below them each output row of the query is a
box from its `window_start` to its `window_end` with a mark at its output `time` (and
its first aggregation's value when few outputs are drawn). The picture uses only the
output columns every window kind has (API §4), so it works for every kind unchanged.

Large inputs are cut inside Spark before anything reaches the driver: the first
`max_keys` keys in key order, and the time slice holding the first `max_events` of
their events; the title says what was left out. Windows are computed over all events
(a window near the slice's start still sees earlier events).

The sampling query is built by `wisp.engine.sampling`; this module validates the
arguments and draws.

matplotlib is imported lazily (the `plot` extra): without it, plotting raises a
`WispError` that says how to install it.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import binding
from .engine.sampling import Sample, sample
from .errors import WispError, bad_value
from .spec.aggregates import Aggregation, count
from .spec.windows import Window

if TYPE_CHECKING:
    from .events import Events

PICTURE_FORMATS = {".png": "png", ".svg": "svg"}
DPI = 100
DEFAULT_WIDTH = 1000
ROW_PX = 22
LABELLED_OUTPUTS = 40  # write each output's value next to it up to this many outputs
OWN_ROWS = 24  # up to this many outputs per lane get a row each; more are packed
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def picture_format(out: str) -> str:
    """"png" or "svg", from the file name's extension."""
    suffix = Path(out).suffix.lower()
    if suffix not in PICTURE_FORMATS:
        raise bad_value("out", "a file name ending in .png or .svg", out)
    return PICTURE_FORMATS[suffix]


def _matplotlib() -> Any:
    try:
        import matplotlib
        import matplotlib.dates
        import matplotlib.figure
        import matplotlib.lines
        import matplotlib.patches
    except ImportError:
        raise WispError("plotting needs matplotlib: pip install 'wisp[plot]' "
                        "(or pip install matplotlib)") from None
    return matplotlib


# ---------------------------------------------------------------------- drawing


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        text = "[" + ", ".join(_text(v) for v in value) + "]"
        return text if len(text) <= 32 else text[:29] + "...]"
    return "null" if value is None else str(value)


def _levels(outputs: list[tuple[int, float | None, float | None, float, Any]],
            right: float) -> list[int]:
    """A row per output when few, else greedy packing of non-overlapping boxes."""
    if len(outputs) <= OWN_ROWS:
        return list(range(len(outputs)))
    ends: list[float] = []
    levels = []
    for _, start, stop, t, _ in outputs:
        lo = t if start is None else min(start, t)
        hi = right if stop is None else max(stop, t)
        level = next((i for i, e in enumerate(ends) if e < lo), len(ends))
        if level == len(ends):
            ends.append(hi)
        else:
            ends[level] = hi
        levels.append(level)
    return levels


def draw(sample: Sample, title: str, out: str, fmt: str, *, time_axis: bool,
         width: int | None, height: int | None) -> None:
    mpl = _matplotlib()
    dates = mpl.dates

    def x(v: float) -> float:  # microseconds -> matplotlib date numbers
        if not time_axis:
            return v
        return float(dates.date2num(EPOCH + _dt.timedelta(microseconds=int(v))))

    points = [e[1] for e in sample.events] + [e[2] for e in sample.events if e[2] is not None]
    points += [v for o in sample.outputs for v in (o[1], o[2], o[3]) if v is not None]
    lo, hi = (min(points), max(points)) if points else (0.0, 1.0)
    pad = (hi - lo) * 0.05 or 1.0
    left, right = x(lo - pad), x(hi + pad)

    lane_rows: list[list[int]] = []
    for lane in range(len(sample.lanes)):
        mine = [o for o in sample.outputs if o[0] == lane]
        lane_rows.append(_levels(mine, hi + pad))
    offsets, y = [], 0.0
    for rows in lane_rows:
        offsets.append(y)
        y += 2 + (max(rows) + 1 if rows else 0)
    total_rows = max(y, 1.0)
    w = width or DEFAULT_WIDTH
    h = height or int(min(4000, max(240, 150 + ROW_PX * total_rows)))
    fig = mpl.figure.Figure(figsize=(w / DPI, h / DPI), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    min_width = (right - left) * 0.004
    for lane, rows in enumerate(lane_rows):
        base = offsets[lane]
        color = colors[lane % len(colors)]
        if lane:
            ax.axhline(base - 0.5, color="#cccccc", linewidth=0.8)
        for lane_of, t, end, interval in sample.events:
            if lane_of != lane:
                continue
            if interval:
                bar_end = right if end is None else x(end)
                ax.broken_barh([(x(t), max(bar_end - x(t), min_width))], (base - 0.25, 0.5),
                               facecolors=color, alpha=0.8)
            else:
                ax.plot([x(t)], [base], "o", color=color, markersize=5)
        mine = [o for o in sample.outputs if o[0] == lane]
        label = len(sample.outputs) <= LABELLED_OUTPUTS
        for (_, start, stop, when, value), level in zip(mine, rows, strict=True):
            yy = base + 1 + level
            if start is not None:
                end_x = right if stop is None else x(stop)
                ax.add_patch(mpl.patches.Rectangle(
                    (x(start), yy - 0.3), max(end_x - x(start), min_width), 0.6,
                    facecolor=color, alpha=0.18, edgecolor=color, linewidth=1))
            ax.plot([x(when)], [yy], "D", color="black", markersize=4)
            if label:
                ax.annotate(_text(value), (x(when), yy), xytext=(5, 0),
                            textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(offsets, sample.lanes)
    ax.set_ylim(total_rows - 0.5, -1)
    ax.set_xlim(left, right)
    if time_axis:
        locator = dates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))
    ax.grid(axis="x", color="#eeeeee")
    intervals = any(e[3] for e in sample.events)
    event_handle = (mpl.patches.Patch(facecolor=colors[0], alpha=0.8, label="event [time, end)")
                    if intervals else
                    mpl.lines.Line2D([], [], marker="o", linestyle="", color=colors[0],
                                     label="event"))
    handles = [
        event_handle,
        mpl.patches.Patch(facecolor=colors[0], alpha=0.18, edgecolor=colors[0],
                          label="window [window_start, window_end]"),
        mpl.lines.Line2D([], [], marker="D", linestyle="", color="black",
                         label="output at its time"),
    ]
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
              fontsize=8, frameon=False)
    fig.suptitle(title + (f"\n({sample.note})" if sample.note else ""), fontsize=9)
    fig.savefig(out, format=fmt, dpi=DPI)


def plot_events(ev: Events, window: Window | None = None, *aggregations: Aggregation,
                out: str, width: int | None = None, height: int | None = None,
                max_keys: int = 8, max_events: int = 60, title: str | None = None) -> str:
    """Draw `ev` and `ev.window(window).agg(*aggregations)` (or the cumulative
    aggregation when `window` is None; `count()` when no aggregation is given) on a
    timeline, written to `out` (.png or .svg, `width` x `height` pixels). Returns `out`.

    Only `max_keys` keys and a slice of at most `max_events` of their events are drawn,
    chosen inside Spark; the title notes the cut."""
    if not isinstance(ev, binding.Events):
        raise bad_value("ev", "wisp Events (wisp.events(df, ...))", type(ev).__name__)
    fmt = picture_format(out)
    for name, value in (("max_keys", max_keys), ("max_events", max_events)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad_value(name, "an integer >= 1", value)
    for name, size in (("width", width), ("height", height)):
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                                 or not 100 <= size <= 10_000):
            raise bad_value(name, "a number of pixels in 100..10000 or None", size)
    _matplotlib()
    aggs = aggregations or (count(),)
    result = ev.agg(*aggs) if window is None else ev.window(window).agg(*aggs)
    picked = sample(ev, result, max_keys, max_events)
    what = "cumulative" if window is None else repr(window)
    heading = title or f"{what}: {result.columns[len(ev.key) + 3]}"
    draw(picked, heading, out, fmt, time_axis=ev.time.uses_time_units, width=width,
         height=height)
    return out
