"""FOLLOW (``follow.lua``): a follower marks its thread followed for a window (the key
``followed``), so that the thread's commits keep their change events in its feed for
resumes meanwhile; a thread nobody followed within the window only publishes them."""

from __future__ import annotations

from typing import Final, NamedTuple

from threadfold.core.keys import ThreadKeys
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("follow")

#: How often a follower marks its thread again while it follows (seconds).
EVERY_SECONDS: Final = 10.0
#: A mark lasts at least this long (ms): three of a follower's marks, so one late or
#: lost mark costs nothing.
LEAST_WINDOW_MS: Final = 30_000
#: The window when the feed has no age limit (``THREADFOLD_FEED_MAX_AGE_SECONDS=0``).
UNAGED_WINDOW_MS: Final = 300_000


class Keys(NamedTuple):
    followed: str


class Args(NamedTuple):
    window_ms: int


def window_ms(feed_max_age_ms: int) -> int:
    """How long a mark keeps a thread's events: as long as the feed keeps them (a
    follower that left and comes back within the feed's age resumes from it)."""
    return max(feed_max_age_ms or UNAGED_WINDOW_MS, LEAST_WINDOW_MS)


def call(k: ThreadKeys, window: int) -> Call:
    return Call(SCRIPT, keys_of(Keys, k), Args(window))


