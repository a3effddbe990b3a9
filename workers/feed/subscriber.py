"""What a live follower of a thread receives, and the follower's own state in the hub
(:mod:`threadfold.workers.feed.hub`).

A follower gets :class:`Start` (a whole state), then :class:`Published` after change, each
exactly on top of the version it holds (:class:`~threadfold.workers.feed.follow.Follower`),
and :class:`ThreadRemoved` when the thread is removed (it applies on any version), until
an :class:`Ended`. Items are shared: one :class:`Published` or :class:`ThreadRemoved`
object goes to every local follower of its thread, and ``cache`` holds its renderings (by
whatever key the renderer picks, e.g. the format), made once by the first follower that
needs one.
Nothing here renders or decodes a stored body, and nothing does I/O.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Final

from threadfold.workers.feed.events import Reason
from threadfold.workers.feed.follow import Follower, Notice, Step, heard
from threadfold.workers.storage.feed_record import ORIGIN, FeedEvent, Removal
from threadfold.workers.storage.read_state import WholeThread

__all__ = [
    "Ended",
    "Item",
    "Published",
    "Reason",
    "Start",
    "Subscriber",
    "ThreadRemoved",
    "item_of",
]


@dataclass(eq=False, slots=True)
class Published:
    """One committed version's event as COMMIT published it (:class:`FeedEvent`, bodies
    still encoded): a follower's next step."""

    event: FeedEvent
    cache: dict[Any, bytes] = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class ThreadRemoved:
    """The thread was removed (``reason``, its notice's): a follower holds the empty
    thread at version 0-0 after it."""

    reason: Removal
    cache: dict[Any, bytes] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return ORIGIN


def item_of(payload: bytes) -> Published | ThreadRemoved | None:
    """A channel message as the item every local follower is offered (None: a resync;
    msgspec's errors for an event that does not decode)."""
    notice = heard(payload)
    if notice is None:
        return None
    return ThreadRemoved(notice) if isinstance(notice, str) else Published(notice)


def _notice(item: Published | ThreadRemoved | None) -> Notice:
    if item is None:
        return None
    return item.reason if isinstance(item, ThreadRemoved) else item.event


@dataclass(eq=False, slots=True)
class Start:
    """A whole state (``snapshot`` None: the thread does not exist, at version 0-0)."""

    snapshot: WholeThread | None
    reason: Reason
    cache: dict[Any, bytes] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.snapshot.version if self.snapshot is not None else ORIGIN

    @property
    def exists(self) -> bool:
        return self.snapshot is not None


@dataclass(frozen=True, slots=True)
class Ended:
    """The last item: ``code`` ``too_slow`` (the follower's queue overflowed) or
    ``shutting_down`` (the process is stopping)."""

    code: str
    message: str


TOO_SLOW: Final = Ended(
    "too_slow", "the subscriber read too slowly: its queue of events overflowed; reconnect "
    "with Last-Event-ID to resume"
)
SHUTTING_DOWN: Final = Ended("shutting_down", "the server is shutting down; reconnect")


@dataclass(frozen=True, slots=True)
class Beat:
    """Nothing to send for a while: the stream writes a heartbeat (its reader learns the
    connection is alive, a proxy that it is in use)."""


BEAT: Final = Beat()

Item = Start | Published | ThreadRemoved | Ended | Beat


class Subscriber:
    """One live follower of one thread: what it holds (``follower``; None until its
    first state), its bounded queue of items, and what it buffers while the hub fills
    a gap for it (``pending``: live messages that arrived meanwhile, None = a resync)."""

    __slots__ = ("channel", "dropped", "ended", "follower", "gapped", "limit", "pending",
                 "queue", "reason", "ref")

    def __init__(self, ref: str, channel: str, after: str | None, limit: int) -> None:
        self.ref = ref
        self.channel = channel
        self.follower = Follower(after) if after is not None else None
        self.reason: Reason = "start" if after is None else "resume_gap"
        self.limit = limit
        self.queue: asyncio.Queue[Item] = asyncio.Queue()  # bounded by _put, not maxsize
        self.pending: list[Published | ThreadRemoved | None] = []
        self.gapped = True  # a new follower needs its start (or its resume) first
        self.dropped = False
        self.ended: Ended | None = None  # why it was ended, once it was

    async def next(self) -> Item:
        return await self.queue.get()

    def next_nowait(self) -> Item | None:
        return None if self.queue.empty() else self.queue.get_nowait()

    def offer(self, change: Published | ThreadRemoved | None) -> bool:
        """A live message (None: a resync); True when it opened a gap to fill."""
        if self.dropped:
            return False
        if self.gapped:
            self.pending.append(change)
            if len(self.pending) > self.limit:
                self.end(TOO_SLOW)
            return False
        return self._step(change)

    def filled(self, changes: list[Published], start: Start | None) -> bool:
        """The hub's fill: ``start`` (a whole state) or ``changes`` (the chain from the
        version held), then what was buffered meanwhile. True when a gap remains."""
        self.gapped = False
        if start is not None:
            self.follower = Follower(start.version)
            self._put(start)
        pending, self.pending = self.pending, []
        for i, change in enumerate([*changes, *pending]):
            if self.dropped:
                return False
            if self._step(change):
                # Buffered messages past the break wait for the next fill; the feed's
                # own events are read again from the version reached.
                self.pending = pending[max(0, i + 1 - len(changes)) :]
                return True
        return False

    def beat(self) -> None:
        """Queue a heartbeat, unless something else is queued (it says as much)."""
        if not self.dropped and self.queue.empty():
            self.queue.put_nowait(BEAT)

    def end(self, item: Ended) -> None:
        """Drop what is queued (it frees the memory now) and leave ``item`` last."""
        self.dropped, self.ended = True, item
        self.pending = []
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(item)

    def _step(self, change: Published | ThreadRemoved | None) -> bool:
        assert self.follower is not None  # a follower past its fill holds a version
        event = _notice(change)
        step = self.follower.offer(event)
        if step is Step.STALE:
            return False
        if step is Step.DELIVER:
            assert event is not None and change is not None
            self.follower.delivered(event)
            self._put(change)
            return False
        self.gapped, self.reason = True, "resync"
        return True

    def _put(self, item: Item) -> None:
        if self.queue.qsize() >= self.limit:
            self.end(TOO_SLOW)
        else:
            self.queue.put_nowait(item)
