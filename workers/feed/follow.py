"""The chain rule of a follower: an event is delivered only on top of the version the
follower holds, so that what it builds is always some version's exact state.

Every way the chain can break (a Pub/Sub message lost across a reconnection, a feed
trimmed past the follower, a retry ``--skip`` that moved the version with no event, a
rebuild) shows as an event whose ``prev`` is not the follower's version, or as
:data:`~threadfold.workers.storage.feed_record.RESYNC`; the follower then reads the feed
from its version or, failing that, a fresh snapshot. A removal of the thread (its
notice, :func:`~threadfold.workers.storage.feed_record.removal_of`) breaks nothing: it
applies on any version and leaves the empty thread at
:data:`~threadfold.workers.storage.feed_record.ORIGIN`, on which the next incarnation's
first event applies. Nothing here does I/O.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeAlias

from threadfold.workers.storage.feed_record import (
    ORIGIN,
    FeedEvent,
    Removal,
    decode,
    removal_of,
    version_key,
)

#: What a follower is offered from a thread's channel: a committed version's event, a
#: removal (its reason), or None (a resync).
Notice: TypeAlias = FeedEvent | Removal | None


def heard(payload: bytes) -> Notice:
    """A channel message's payload as a :data:`Notice` (msgspec's errors for an event
    that does not decode)."""
    removal = removal_of(payload)
    return removal if removal is not None else decode(payload)


class Step(Enum):
    DELIVER = "deliver"  # on top of the follower's version: apply it
    STALE = "stale"  # at or before the follower's version: seen already
    GAP = "gap"  # something lies between: read the feed or a snapshot


class Follower:
    """The version a follower holds, and what it makes of the next event."""

    __slots__ = ("version",)

    def __init__(self, version: str) -> None:
        self.version = version

    def offer(self, event: Notice) -> Step:
        """What to do with ``event`` (None: a resync was published)."""
        if event is None:
            return Step.GAP
        if isinstance(event, str):
            # A removal cannot be dated against the version held, and need not be: what
            # it leaves (nothing) depends on nothing before it. One heard before the
            # follower's start read only repeats what that read found, and the events
            # after it chain on ORIGIN again: the follower still ends at the thread's state.
            return Step.DELIVER
        if event.prev == self.version:
            return Step.DELIVER
        if version_key(event.version) <= version_key(self.version):
            return Step.STALE
        return Step.GAP

    def delivered(self, event: FeedEvent | Removal) -> None:
        self.version = ORIGIN if isinstance(event, str) else event.version
