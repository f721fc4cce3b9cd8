"""Moved to `wisp.runtime.codec`: these names are re-exported for `engine/snapping.py`
only, until it imports them from there."""

from ..runtime.codec import DAY as DAY
from ..runtime.codec import from_ticks as from_ticks
from ..runtime.codec import to_ticks as to_ticks
from ..runtime.codec import validity as validity
