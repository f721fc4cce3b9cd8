"""The errors wisp raises.

Every message follows one formula: "`param` must be <expectation>, found <what was found>",
with a "did you mean" hint where one helps.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class WispError(Exception):
    """Base class of every error wisp raises on purpose."""


class WispInputError(WispError, ValueError):
    """A caller passed a bad value: a bad argument, a bad schema, or bad data."""


class WispUnsupportedError(WispError, NotImplementedError):
    """The request is valid but this version of wisp cannot execute it yet."""


def bad_value(param: str, expected: str, found: object, *, hint: str = "") -> WispInputError:
    """Build the standard error for a bad argument: "`param` must be ..., found ..."."""
    message = f"`{param}` must be {expected}, found {found!r}"
    if hint:
        message += f"; {hint}"
    return WispInputError(message)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" suffix when `word` is close to one of `choices`."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class WispMemoryError(WispError, MemoryError):
    """A window's state or output outgrew the Python worker's memory cap (raised in the
    worker, named by the message: the setting to raise and what grew)."""
