"""A thread's lifetime: the bounds of a TTL (the deployment's default and a thread's own).

A thread idle for its TTL (no append and no commit for that long) is removed whole; a
pinned thread never is. The bounds are here so that the settings, the service's checks
and the docs name one pair of numbers.
"""

from __future__ import annotations

from typing import Final, Literal

#: The shortest TTL a thread may be given: the sweep runs every few seconds, so a
#: shorter one could not be kept.
MIN_TTL_SECONDS: Final = 1
#: The longest: ten years (beyond it "forever", a TTL of none, says what is meant).
MAX_TTL_SECONDS: Final = 10 * 365 * 24 * 3600

#: A TTL change of an update: unchanged, back to the deployment's default (else: ms).
TTL_KEEP: Final = ""
TTL_DEFAULT: Final = "-"

#: The orders a search lists threads in, and the statuses it filters by.
Order = Literal["activity", "created"]
StatusName = Literal["idle", "busy", "quarantined"]
