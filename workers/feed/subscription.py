"""``subscribe()`` of the direct clients: a thread's events read straight from Redis.

A subscription listens on the thread's feed channel (:func:`.connect.listener`)
*before* it reads its starting point, so nothing committed in between is missed: what
arrives at or before that point is stale and dropped (the :class:`Follower`'s rule).
Pub/Sub loses messages only by dropping the connection (a restart, an output buffer
overflow), which the listener, having no silent reconnects, sees: it reconnects and
reads what it missed from the thread's feed, or a fresh snapshot when the feed no longer
reaches back. A resync published by a rebuild is answered with a snapshot; a removal's
notice with a :class:`Deleted` (the empty thread at 0-0, which the next incarnation's
first change applies on, so no read follows it).
The feed is never polled on a timer: after a rebuild at the follower's version the feed
cannot tell that version's old state from its new one, and would answer every poll
with a gap (a snapshot each time).

:class:`Steps` is the sync subscription's logic: given what Redis answered, the events
to yield. An :class:`~threadfold.AsyncClient` follows its threads through one
:class:`~threadfold.workers.feed.hub.Hub`, the API's multiplexed reader: one Pub/Sub
connection for all of the client's subscriptions, which the hub keeps and resyncs by
the same rules (:func:`ahub_follow`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any, Final

import redis

from threadfold.core.render import Format
from threadfold.workers.feed.bodies import Bodies
from threadfold.workers.feed.events import Change, Deleted, Event, Reason, Snapshot
from threadfold.workers.feed.follow import Follower, Notice, Step, heard
from threadfold.workers.feed.hub import Hub, HubClosed
from threadfold.workers.feed.marks import Due
from threadfold.workers.feed.subscriber import TOO_SLOW, Ended, Published, Start, ThreadRemoved
from threadfold.workers.storage.feed import FeedRead
from threadfold.workers.storage.feed_record import ORIGIN, FeedEvent, Removal
from threadfold.workers.storage.read_state import WholeThread
from threadfold.workers.storage.store import Store

#: How long a listener waits for a message before it looks whether it was closed.
TICK: Final = 1.0
#: Reconnection backoff: first wait, cap.
BACKOFF: Final = (0.05, 2.0)
#: Events a direct asyncio subscription may leave unread before the hub ends it; it is
#: then resumed from the feed (its memory is bounded, and nothing is lost).
QUEUE_EVENTS: Final = 10_000


def snapshot_event(bodies: Bodies, found: WholeThread | None, reason: Reason) -> Snapshot:
    """A whole stored state (None: never written) as the client's :class:`Snapshot`."""
    version = found.version if found is not None else ORIGIN
    return bodies.snapshot(version, found, reason, exists=found is not None)


def change_event(bodies: Bodies, event: FeedEvent) -> Change:
    """A feed event as the client's :class:`Change`."""
    return bodies.change(event)


class Steps:
    """One subscription's state: the version it holds, and the events Redis's answers
    make of it."""

    def __init__(self, thread_id: str, ref: str, channel: str, fmt: Format) -> None:
        self.ref, self.channel = ref, channel
        self.bodies = Bodies(thread_id, fmt)
        self.follower = Follower(ORIGIN)

    def snapshot(self, found: WholeThread | None, reason: Reason) -> Snapshot:
        made = snapshot_event(self.bodies, found, reason)
        self.follower.version = made.version
        return made

    def change(self, event: FeedEvent) -> Change:
        self.follower.delivered(event)
        return change_event(self.bodies, event)

    def deliver(self, notice: FeedEvent | Removal) -> Change | Deleted:
        """The event a notice the follower took is (it holds the version after it)."""
        if not isinstance(notice, str):
            return self.change(notice)
        self.follower.delivered(notice)
        return self.bodies.deleted(notice)

    def offered(self, blob: bytes) -> tuple[Step, Notice]:
        notice = heard(blob)
        return self.follower.offer(notice), notice

    def caught_up(self, read: FeedRead) -> tuple[list[Change], bool]:
        """The changes a feed read gives, and whether a snapshot must follow (the feed
        does not lead from this follower's version)."""
        if read.kind == "current" or (read.kind == "absent" and self.follower.version == ORIGIN):
            return [], False
        if read.kind != "events":
            return [], True
        out: list[Change] = []
        for event in read.events:
            step = self.follower.offer(event)
            if step is Step.STALE:
                continue
            if step is Step.GAP:
                return out, True
            out.append(self.change(event))
        return out, False


def _message(raw: Any) -> bytes | None:
    """A channel message's payload; None for anything else (subscribe confirmations)."""
    if raw is None or raw.get("type") != "message":
        return None
    data: bytes = raw["data"]
    return data


def follow(
    store: Store, listener: redis.Redis, steps: Steps, after: str | None, window_ms: int
) -> Iterator[Event]:
    """The events of a direct sync subscription, for ever (until the caller stops); its
    thread marked followed for ``window_ms`` (:mod:`threadfold.workers.feed.marks`)."""
    wait = BACKOFF[0]
    resuming: str | None = after
    mark = Due(store, steps.ref, window_ms)
    while True:
        pubsub = listener.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(steps.channel)
            mark.now()  # (again) before the start is read
            yield from _start(store, steps, resuming)
            wait = BACKOFF[0]
            while True:
                mark()
                blob = _message(pubsub.get_message(timeout=TICK))
                if blob is None:
                    continue
                step, notice = steps.offered(blob)
                if step is Step.DELIVER and notice is not None:
                    yield steps.deliver(notice)
                elif step is Step.GAP:
                    yield from _catch_up(store, steps, resync=notice is None)
        except (redis.ConnectionError, redis.TimeoutError):
            time.sleep(wait)
            wait = min(wait * 2, BACKOFF[1])
        finally:
            pubsub.close()
        resuming = steps.follower.version  # a reconnection resumes where it stood


def _start(store: Store, steps: Steps, after: str | None) -> Iterator[Event]:
    if after is None:
        yield steps.snapshot(store.snapshot(steps.ref), "start")
        return
    steps.follower.version = after
    changes, gap = steps.caught_up(store.feed_after(steps.ref, after))
    yield from changes
    if gap:
        yield steps.snapshot(store.snapshot(steps.ref), "resume_gap")


def _catch_up(store: Store, steps: Steps, *, resync: bool) -> Iterator[Event]:
    if resync:  # a rebuild (or a removal of a reason unknown here): no event describes it
        yield steps.snapshot(store.snapshot(steps.ref), "resync")
        return
    changes, gap = steps.caught_up(store.feed_after(steps.ref, steps.follower.version))
    yield from changes
    if gap:
        yield steps.snapshot(store.snapshot(steps.ref), "resync")


async def ahub_follow(
    hub: Hub, ref: str, bodies: Bodies, after: str | None
) -> AsyncGenerator[Event, None]:
    """The events of a direct asyncio subscription, from the client's one :class:`Hub`
    (the API's multiplexed reader): for ever, until the caller stops or the client is
    closed (:class:`HubClosed`: the thread service says ClientClosed). A subscription
    that falls :data:`QUEUE_EVENTS` behind is ended by the hub and resumed here from the
    version it reached."""
    held = after
    while True:
        sub = hub.subscribe(ref, held)  # HubClosed once the hub is closed
        try:
            while not isinstance(item := await sub.next(), Ended):
                if isinstance(item, Start):
                    event: Event = snapshot_event(bodies, item.snapshot, item.reason)
                elif isinstance(item, Published):
                    event = change_event(bodies, item.event)
                elif isinstance(item, ThreadRemoved):
                    event = bodies.deleted(item.reason)
                else:
                    continue  # a heartbeat: nobody asks for them here
                held = event.version
                yield event
        finally:
            hub.unsubscribe(sub)
        if item.code != TOO_SLOW.code:
            raise HubClosed("the hub is closed")
