"""The as-of join's oracle: `pandas.merge_asof`, with wisp's documented rule for what
pandas refuses (a missing time: pandas raises, wisp leaves a left row unmatched and never
matches a right row) applied around it.

pandas reads both frames in their row order: the left sorted by time, the right by time
then its tie-break column (stable), so that of several right rows of one time it takes
the last backward and the first forward, as wisp takes them in the tie-break's order.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def missing(series: pd.Series) -> pd.Series:
    """A null or NaN time."""
    return series.isna()


def merge_asof(left: pd.DataFrame, right: pd.DataFrame, *, on: str, by: list[str],
               direction: str, tolerance: Any, exact: bool, order: str | None,
               suffixes: tuple[str, str] = ("", "_right")) -> pd.DataFrame:
    """pandas' `merge_asof` over the rows with a time, the left rows without one appended
    with null right columns; rows in no particular order."""
    kept_right = right[~missing(right[on])]
    kept_right = kept_right.sort_values([on] if order is None else [on, order], kind="stable")
    timed_left = left[~missing(left[on])].sort_values(on, kind="stable")
    merged = pd.merge_asof(timed_left, kept_right.reset_index(drop=True), on=on,
                           by=by or None, direction=direction, tolerance=tolerance,
                           allow_exact_matches=exact, suffixes=suffixes)
    untimed = left[missing(left[on])]
    if len(untimed):
        extra = untimed.copy()
        for name in merged.columns:
            if name not in extra.columns:
                extra[name] = None
        merged = pd.concat([merged.astype(object), extra[merged.columns].astype(object)],
                           ignore_index=True)
    return merged


def matched(merged: pd.DataFrame, left_id: str, right_id: str) -> dict[Any, Any]:
    """Each left row's id with its matched right row's id (None: no match)."""
    return {row[left_id]: (None if pd.isna(row[right_id]) else int(row[right_id]))
            for row in merged.to_dict("records")}
