"""The chain rule of a follower: an event is delivered only on top of the version the
follower holds, so that what it builds is always some version's exact state.

Every way the chain can break (a Pub/Sub message lost across a reconnection, a feed
trimmed past the follower, a retry ``--skip`` that moved the version with no event, a
rebuild or a delete) shows as an event whose ``prev`` is not the follower's version,
or as :data:`~threadfold.workers.storage.feed_record.RESYNC`; the follower then reads the feed
from its version or, failing that, a fresh snapshot. Nothing here does I/O.
"""

from __future__ import annotations

from enum import Enum

from threadfold.workers.storage.feed_record import FeedEvent, version_key


class Step(Enum):
    DELIVER = "deliver"  # on top of the follower's version: apply it
    STALE = "stale"  # at or before the follower's version: seen already
    GAP = "gap"  # something lies between: read the feed or a snapshot


class Follower:
    """The version a follower holds, and what it makes of the next event."""

    __slots__ = ("version",)

    def __init__(self, version: str) -> None:
        self.version = version

    def offer(self, event: FeedEvent | None) -> Step:
        """What to do with ``event`` (None: a resync was published)."""
        if event is None:
            return Step.GAP
        if event.prev == self.version:
            return Step.DELIVER
        if version_key(event.version) <= version_key(self.version):
            return Step.STALE
        return Step.GAP

    def delivered(self, event: FeedEvent) -> None:
        self.version = event.version
