"""Eager data checks (`Events.validate`)."""

from __future__ import annotations

from pyspark.sql import functions as F

from ..binding import Events
from ..errors import WispInputError
from .columns import is_missing_time


def validate_events(events: Events) -> None:
    """One Spark job: raise `WispInputError` if a row has a null time (policy "error")."""
    if events.on_null_time == "drop":
        return
    nulls = events.df.select(F.count_if(is_missing_time(events.time))).first()
    found = 0 if nulls is None else int(nulls[0])
    if found:
        raise WispInputError(f"`time` column {events.time.name!r} must not be null, found "
                             f"{found} rows with a null time; pass on_null_time='drop' to "
                             "drop them on purpose")
