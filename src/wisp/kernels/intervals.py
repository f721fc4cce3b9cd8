"""Windows over interval events, per key: hopping/tumbling, snapshot and count windows.

Pure numpy on integer ticks. Every event of one key is a lifetime `[s, e)` (point events
are `[t, t + 1)`; an open-ended event has `e = END_OF_TIME`); events come sorted by start
(ties in tie-break order), which is also the window order of their values.

A window kind produces `Groups`: sets of events whose aggregates are computed once
(`positions[lo[g]:hi[g]]` are the members of group `g`, in window order; `clip_start`,
`clip_end` the interval their lifetimes are clipped to), and `Rows`: the output rows,
each naming its group. No function here builds one entry per (event, window) pair: a
hopping group stands for a run of consecutive windows over which the membership is
constant, so an event spanning a million windows, or an open-ended one, appears in O(1)
groups when nothing else changes around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .runs import RunSearch, offsets, one_run, run_index
from .stabbing import Stabbing

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

END_OF_TIME = np.iinfo(np.int64).max
"""The end of time in ticks: an open-ended lifetime ends here; shown as a null end."""
_NO_INDEX = np.iinfo(np.int64).max // 4
"""A window index beyond every real one (the window index of the end of time)."""
MAX_WINDOW_INDEX = int(_NO_INDEX) - 1
"""The largest window index (`(w - align) / hop`) `hopping` tells apart from the index
it gives open-ended runs: callers fail where a window's index would pass it."""


@dataclass(frozen=True)
class Groups:
    """Member sets: `positions[lo[g]:hi[g]]` (ascending), clipped to `[clip_start,
    clip_end)` for time-weighted aggregates.

    Also, without listing members: event `i` belongs to the base groups
    `event_first[i] .. event_stop[i] - 1` and group `g` is base group `base_of[g]`, so
    sums and counts come from a difference array in O(n + groups). When the members were
    not gathered (`gathered` False), `positions`, `lo` and `hi` are empty."""

    positions: IntArray
    lo: IntArray
    hi: IntArray
    clip_start: IntArray
    clip_end: IntArray
    event_first: IntArray
    event_stop: IntArray
    base_of: IntArray
    base_count: int
    gathered: bool = True


def member_counts(first: IntArray, stop: IntArray, count: int) -> IntArray:
    """How many events each group holds (event `i` is in groups `first[i]..stop[i]-1`)."""
    return group_sums(first, stop, np.ones(len(first), np.int64), count)


def group_sums(first: IntArray, stop: IntArray, weights: IntArray, count: int) -> IntArray:
    """Per group, the exact sum of its events' integer weights, by a difference array
    (`Stabbing.exact_sums`): O(n + groups), no member lists."""
    sums: IntArray = Stabbing(first, stop, count).exact_sums(weights)
    return sums


@dataclass(frozen=True)
class Rows:
    """Output rows: the group each row shows, `window_start`, `window_end` (ticks;
    `end_known` False = end of time, a null), and `time`."""

    group: IntArray
    start: IntArray
    end: IntArray
    end_known: BoolArray
    time: IntArray


def floor_to_grid(t: IntArray, align: int, step: int) -> IntArray:
    """The largest `align + n*step` that is <= t (floor-mod: correct before 1970)."""
    result: IntArray = t - np.mod(t - align, step)
    return result


def lifetimes(start: IntArray, end: IntArray, known: BoolArray) -> IntArray:
    """Effective ends: open ends become `END_OF_TIME`; an end not after its start (a
    zero-length interval, or a point event) lasts one tick, `[s, s + 1)`."""
    result: IntArray = np.where(known, np.maximum(end, start + 1), END_OF_TIME)
    return result


# ---------------------------------------------------------------- snapping


def snap_start(start: IntArray, size: int, hop: int, align: int) -> IntArray:
    """The end of the earliest window `[w, w + size)` holding `start`, i.e. where that
    window's result becomes valid. Needs `hop <= size` (no gaps between windows)."""
    ends_align = align + size % hop
    result: IntArray = floor_to_grid(start, ends_align, hop) + hop
    return result


def snap_end(end: IntArray, size: int, hop: int, align: int) -> IntArray:
    """The end of the validity `[w + size, w + size + hop)` of the latest window holding
    the lifetime's last tick `end - 1`; `END_OF_TIME` stays the end of time."""
    open_end = end == END_OF_TIME
    safe = np.where(open_end, 0, end)
    snapped = floor_to_grid(safe - 1, align, hop) + hop + size
    result: IntArray = np.where(open_end, END_OF_TIME, snapped)
    return result


_EXACT_BELOW = 1 << 62
"""Below this magnitude (ticks, `size + hop` and `align`), `snapped` computes in 64-bit
ticks: no step of its arithmetic can then leave the range."""


def _near_limits(ticks: IntArray) -> bool:
    """Whether some tick lies within a quarter of the range's limits (`_EXACT_BELOW`)."""
    return bool(len(ticks)) and (int(ticks.min()) <= -_EXACT_BELOW
                                 or int(ticks.max()) >= _EXACT_BELOW)


def grid_index(t: IntArray, shift: int, align: int, hop: int) -> IntArray:
    """`floor((t + shift - align) / hop)`: the index of the window `[align + k*hop, ...)`
    beginning at or before `t + shift`. Exact: where a tick or `shift - align` lies
    within a quarter of the range's limits, it computes in Python integers; an index
    beyond 64 bits raises OverflowError."""
    offset = shift - align
    if not _near_limits(t) and -_EXACT_BELOW < offset < _EXACT_BELOW:
        result: IntArray = (t + offset) // hop
        return result
    return np.array([(int(x) + offset) // hop for x in t.tolist()], dtype=np.int64)


def snapped(start: IntArray, end: IntArray, known: BoolArray, size: int, hop: int,
            align: int) -> tuple[IntArray, IntArray] | None:
    """`snap_start` and `snap_end` of the lifetimes `[start, end)` (`known` False: open
    ended), or None where a snapped bound leaves the tick range: a start beyond the last
    tick, or a finite end at or beyond it (the last tick stands for the end of time, as
    does a finite lifetime reaching it). Exact: where a tick, `size + hop` or `align`
    lies within a quarter of the range's limits, it computes in Python integers."""
    near = (size + hop >= _EXACT_BELOW or not -_EXACT_BELOW < align < _EXACT_BELOW
            or _near_limits(start) or _near_limits(end[known]))
    if near:
        start, end = start.astype(object), end.astype(object)
    finish = lifetimes(start, end, known)
    new_start, new_end = snap_start(start, size, hop, align), snap_end(finish, size, hop,
                                                                         align)
    beyond = (new_start > END_OF_TIME) | (known & ((finish >= END_OF_TIME)
                                                   | (new_end >= END_OF_TIME)))
    if beyond.any():
        return None
    return new_start.astype(np.int64), new_end.astype(np.int64)


# ---------------------------------------------------------------------- membership


def _members(first: IntArray, stop: IntArray, count: int) -> tuple[IntArray, IntArray,
                                                                    IntArray]:
    """Event `i` belongs to the groups `first[i] .. stop[i] - 1`. Returns the members
    of every group, ascending, as (positions, lo, hi)."""
    lengths = np.maximum(stop - first, 0)
    total = int(lengths.sum())
    events = np.repeat(np.arange(len(first), dtype=np.int64), lengths)
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])[:-1]
    groups = np.repeat(first, lengths) + (np.arange(total, dtype=np.int64)
                                          - np.repeat(offsets, lengths))
    order = np.lexsort((events, groups))
    positions = events[order]
    counts = np.bincount(groups, minlength=count).astype(np.int64) if total else \
        np.zeros(count, np.int64)
    hi = np.cumsum(counts)
    return positions, hi - counts, hi


# ----------------------------------------------------------------- hopping windows


def hopping(start: IntArray, end: IntArray, size: int, hop: int, align: int, *,
            output: str, horizon: int, split_partial: bool,
            gather: bool = True, per_window: bool = False) -> tuple[Groups, Rows]:
    """Windows `[w, w + size)`, `w = align + k*hop` (floor-mod), over lifetimes
    `[start, end)` (`end` as from `lifetimes`); an event belongs to every window its
    lifetime overlaps. Window indices `k` count hops from `align % hop` (the same
    windows) and are computed exactly (`grid_index`): OverflowError where one leaves
    64 bits.

    The window index axis is cut where some event enters or leaves (and, when
    `split_partial`, where some member starts or stops covering whole windows, so that
    time-weighted results are constant within a run; runs where a member covers windows
    only partly are cut into single windows). Each run with members is one group.

    output="windows": one row per non-empty window, `time = window_end`, for windows
    beginning before `horizon`; windows beginning at or after it hold only open-ended
    events, all with the same result: one more row stands for all of them, with
    `window_start` = the first such window's start, a null `window_end` (end of time)
    and `time` = that first window's end.
    output="changes": one row per run, valid on `[w_first + size, w_last + size + hop)`
    (null end for a run that lasts to the end of time), `time = window_start`.

    `per_window` (for aggregates that see absolute clipped lifetimes, which differ from
    window to window): every window beginning before `horizon` is a group of its own;
    a run lasting to the end of time keeps one group for its windows from `horizon` on.
    """
    n = len(start)
    align %= hop  # the same windows; window indices then fit in 64 bits
    open_ended = end == END_OF_TIME
    # the first window ending after the start, and the first beginning after the last
    # tick (`end - 1`)
    k_in = grid_index(start, hop - size, align, hop)
    safe_end = np.where(open_ended, start + 1, end)
    k_out = np.where(open_ended, _NO_INDEX, grid_index(safe_end, hop - 1, align, hop))
    cuts = [k_in, k_out]
    if split_partial:  # the first window beginning at or after the start, and the
        # first ending after the end
        k_full = grid_index(start, hop - 1, align, hop)
        k_full_end = np.where(open_ended, _NO_INDEX, grid_index(safe_end, hop - size, align,
                                                                hop))
        cuts += [k_full, np.maximum(k_full_end, k_full)]
    points = np.unique(np.concatenate([*cuts, np.array([_NO_INDEX], np.int64)]))
    run_first = np.searchsorted(points, k_in, side="left").astype(np.int64)
    run_stop = np.searchsorted(points, k_out, side="left").astype(np.int64)
    runs = len(points) - 1
    gather = gather or split_partial or per_window
    if gather:
        positions, lo, hi = _members(run_first, run_stop, runs)
    else:
        empty = np.zeros(0, np.int64)
        positions, lo, hi = empty, empty, empty
    k1, k2 = points[:-1], points[1:]
    keep = member_counts(run_first, run_stop, runs) > 0
    split = np.zeros(runs, dtype=bool)
    if split_partial and n:
        k_full_at = np.maximum(k_full, k_in)
        k_full_end_at = np.maximum(np.minimum(k_full_end, k_out), k_full_at)
        run_of = np.repeat(np.arange(runs, dtype=np.int64), hi - lo)
        partial = (k1[run_of] < k_full_at[positions]) | (k1[run_of] >= k_full_end_at[positions])
        split[run_of[partial]] = True
    runs_kept = np.nonzero(keep)[0]
    k_horizon = -((align - horizon) // hop) if horizon != END_OF_TIME else _NO_INDEX
    endless = k2[runs_kept] >= _NO_INDEX
    if per_window:  # single windows up to the horizon, then one group to the end of time
        span = k2[runs_kept] - k1[runs_kept]
        before_horizon = (np.maximum(k_horizon - k1[runs_kept], 0) if k_horizon < _NO_INDEX
                          else np.zeros_like(span))
        widths = np.where(endless, before_horizon, span) + endless
    else:  # runs where some member covers windows only partly: single windows
        widths = np.where(split[runs_kept], (k2 - k1)[runs_kept], 1)
    unit_run = np.repeat(runs_kept, widths)
    unit_offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(widths)])[:-1]
    unit_k1 = k1[unit_run] + (np.arange(len(unit_run), dtype=np.int64)
                              - np.repeat(unit_offsets, widths))
    if per_window:
        tail = np.zeros(len(unit_run), dtype=bool)
        tail[(unit_offsets + widths - 1)[endless]] = True
        unit_k2 = np.where(tail, _NO_INDEX, unit_k1 + 1)
    else:
        unit_k2 = np.where(split[unit_run], unit_k1 + 1, k2[unit_run])
    clip_start = align + unit_k1 * hop
    groups = Groups(positions, lo[unit_run] if gather else lo, hi[unit_run] if gather else hi,
                    clip_start, clip_start + size, run_first, run_stop, unit_run, runs,
                    gather)
    unit = np.arange(len(unit_run), dtype=np.int64)
    if output == "changes":
        open_run = unit_k2 >= _NO_INDEX
        row_start = clip_start + size
        row_end = np.where(open_run, 0, align + np.where(open_run, 0, unit_k2) * hop + size)
        return groups, Rows(unit, row_start, row_end, ~open_run, row_start)
    explicit_stop = np.minimum(unit_k2, k_horizon)
    counts = np.maximum(explicit_stop - unit_k1, 0)
    row_unit = np.repeat(unit, counts)
    row_offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)])[:-1]
    row_k = unit_k1[row_unit] + (np.arange(len(row_unit), dtype=np.int64)
                                 - np.repeat(row_offsets, counts))
    beyond = np.nonzero(unit_k2 >= _NO_INDEX)[0]
    tail_k = np.maximum(unit_k1[beyond], k_horizon)
    all_unit = np.concatenate([row_unit, beyond])
    all_k = np.concatenate([row_k, tail_k])
    known = np.concatenate([np.ones(len(row_unit), bool), np.zeros(len(beyond), bool)])
    order = np.argsort(all_k, kind="stable")
    all_unit, all_k, known = all_unit[order], all_k[order], known[order]
    row_start = align + all_k * hop
    return groups, Rows(all_unit, row_start, np.where(known, row_start + size, 0), known,
                        row_start + size)


# ---------------------------------------------------------------- snapshot windows


def snapshot(start: IntArray, end: IntArray, gather: bool = True,
             runs: IntArray | None = None) -> tuple[Groups, Rows, IntArray]:
    """One window per interval between consecutive distinct start/end points, over the
    events alive in it (half-open); none where nothing is alive; the window after the
    last finite point reaches the end of time when an open-ended event is alive there.
    `time = window_start`; lifetimes are clipped to the window (every member covers it).
    Several keys' runs (`runs`, as in `kernels.runs`) each get their own points; also
    returns the run of each row."""
    runs = one_run(len(start)) if runs is None else runs
    run_of = run_index(runs)
    finite = end != END_OF_TIME
    point_run = np.concatenate([run_of, run_of[finite],
                                np.arange(len(runs) - 1, dtype=np.int64)])
    every = np.concatenate([start, end[finite],
                            np.full(len(runs) - 1, END_OF_TIME, dtype=np.int64)])
    order = np.lexsort((every, point_run))
    every, point_run = every[order], point_run[order]
    distinct = np.ones(len(every), dtype=bool)
    distinct[1:] = (every[1:] != every[:-1]) | (point_run[1:] != point_run[:-1])
    points, point_run = every[distinct], point_run[distinct]
    bounds = np.searchsorted(point_run, np.arange(len(runs)), side="left").astype(np.int64)
    search = RunSearch(points, bounds)
    first, stop = search(start, run_of, "left"), search(end, run_of, "left")
    count = len(points) - 1
    # no event covers the step from a run's end of time to the next run's first point
    kept = np.nonzero(member_counts(first, stop, count) > 0)[0]
    seg_start, seg_end = points[:-1][kept], points[1:][kept]
    if gather:
        positions, lo, hi = _members(first, stop, count)
        lo, hi = lo[kept], hi[kept]
    else:
        positions = lo = hi = np.zeros(0, np.int64)
    groups = Groups(positions, lo, hi, seg_start, seg_end, first, stop, kept, count, gather)
    known = seg_end != END_OF_TIME
    return groups, Rows(np.arange(len(kept), dtype=np.int64), seg_start,
                        np.where(known, seg_end, 0), known, seg_start), point_run[kept]


# ------------------------------------------------------------------- count windows


def count_by_start(start: IntArray, n: int, runs: IntArray | None = None
                   ) -> tuple[Groups, Rows, IntArray]:
    """Window `i` holds the events whose start lies in `[u_i, u_{i+n-1}]` (`u` = the
    key's distinct start times, ascending); span `[u_i, u_{i+n-1} + 1)`; `time =
    u_{i+n-1}`. No window until there are `n` distinct start times. Members are
    contiguous in start order: groups index the events directly. Several keys' runs
    (`runs`, as in `kernels.runs`) each count their own start times; also returns the
    run of each row."""
    runs = one_run(len(start)) if runs is None else runs
    run_of = run_index(runs)
    new = np.ones(len(start), dtype=bool)
    new[1:] = (start[1:] != start[:-1]) | (run_of[1:] != run_of[:-1])
    heads = np.nonzero(new)[0].astype(np.int64)  # each distinct start's first event
    per_run = np.bincount(run_of[heads], minlength=len(runs) - 1).astype(np.int64)
    windows = np.maximum(per_run - n + 1, 0)
    run_first = np.concatenate([[0], np.cumsum(per_run)[:-1]]).astype(np.int64)
    index = np.repeat(run_first, windows) + offsets(windows)
    # the window's last start time ends where the next distinct start (or run) begins
    after = np.append(heads, len(start))
    lo, hi = heads[index], after[index + n]
    first, last = start[lo], start[hi - 1]
    positions = np.arange(len(start), dtype=np.int64)
    m = len(index)
    groups = Groups(positions, lo, hi, first, last + 1, np.zeros(0, np.int64),
                    np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    return groups, Rows(np.arange(m, dtype=np.int64), first, last + 1,
                        np.ones(m, bool), last), run_of[lo]


# --------------------------------------------------------------- time-weighted mean


def gathered(groups: Groups) -> tuple[IntArray, IntArray, IntArray]:
    """Every group's members laid out one group after the other (a member of several
    groups appears once per group): (positions, lo, hi) with disjoint frames."""
    lengths = groups.hi - groups.lo
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
    total = int(offsets[-1])
    index = np.repeat(groups.lo, lengths) + (np.arange(total, dtype=np.int64)
                                             - np.repeat(offsets[:-1], lengths))
    return groups.positions[index], offsets[:-1], offsets[1:]


def clipped_lifetimes(start: IntArray, end: IntArray, groups: Groups) -> tuple[
        IntArray, IntArray, IntArray, IntArray, IntArray]:
    """Each group member's lifetime clipped to its group's clip interval: (positions,
    clipped starts, clipped ends, lo, hi), members laid out group after group; an end
    is `END_OF_TIME` where the clip interval reaches the end of time."""
    positions, lo, hi = gathered(groups)
    lengths = hi - lo
    clip_lo = np.repeat(groups.clip_start, lengths)
    clip_hi = np.repeat(groups.clip_end, lengths)
    return (positions, np.maximum(start[positions], clip_lo),
            np.minimum(end[positions], clip_hi), lo, hi)


def clipped_weights(start: IntArray, end: IntArray, groups: Groups) -> tuple[
        IntArray, npt.NDArray[np.float64], IntArray, IntArray]:
    """Each group member's lifetime clipped to its group's clip interval, as a weight
    (ticks, float). Where the clip interval reaches the end of time every member lives
    to the end of time: all weigh 1 (equal weights)."""
    positions, lo_t, hi_t, lo, hi = clipped_lifetimes(start, end, groups)
    endless = hi_t == END_OF_TIME
    weights = np.where(endless, 1.0, (np.where(endless, lo_t, hi_t) - lo_t).astype(
        np.float64))
    return positions, weights, lo, hi


def time_weighted_mean(values: npt.NDArray[np.float64], valid: BoolArray,
                       weights: npt.NDArray[np.float64], lo: IntArray,
                       hi: IntArray) -> tuple[npt.NDArray[np.float64], BoolArray]:
    """Per frame `[lo, hi)` of gathered values: sum(w * v) / sum(w) over the non-null
    values (NaN propagates); null (valid False) when a frame has no non-null value."""
    w = np.where(valid, weights, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        products = np.where(valid, w * np.where(valid, values, 0.0), 0.0)
    numerator = _frame_sums(products, lo, hi)
    denominator = _frame_sums(w, lo, hi)
    present = _frame_sums(valid.astype(np.float64), lo, hi) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(present, numerator / np.where(present, denominator, 1.0), 0.0)
    return result, present


def _frame_sums(values: npt.NDArray[np.float64], lo: IntArray,
                hi: IntArray) -> npt.NDArray[np.float64]:
    """Sums over disjoint, consecutive frames, each summed on its own (no cancellation
    between frames)."""
    if len(lo) == 0:
        return np.zeros(0)
    nonempty = hi > lo
    sums = np.zeros(len(lo))
    if nonempty.any():
        starts = lo[nonempty]
        reduced = np.add.reduceat(values, starts) if len(values) else np.zeros(len(starts))
        # reduceat sums up to the next start: exact for frames laid end to end
        sums[nonempty] = reduced
    return sums
