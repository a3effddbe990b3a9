"""One reader of the change feeds a process follows: one Pub/Sub connection, fanned out.

Each API process (and later a direct AsyncClient) holds one :class:`Hub`: one
``redis.asyncio`` Pub/Sub connection, SUBSCRIBEd to a thread's channel (named like its
feed key) while at least one local follower watches the thread, UNSUBSCRIBEd when the
last one leaves; one read loop hands each published event to that thread's followers.
A thousand followers cost one connection, one decode per event, and a queue slot each.

On a Redis Cluster the connection goes to one node (the URL's), not through the cluster
client: a classic PUBLISH, which COMMIT, REBUILD and a removal issue from their scripts,
is broadcast to every node of the cluster, so any node hears every thread's channel.

Joining without loss: a follower is registered (so live events are buffered for it)
before its start is read, and the read is issued only once the SUBSCRIBE is confirmed;
what the buffer holds at or before the version read is dropped (``Step.STALE``); a
removal's notice is delivered as it comes (it applies on any version). Gaps (an event
that does not chain, a resync, the Pub/Sub connection lost and made again: then every
follower is checked) are filled with one FEED read per thread and version held, shared
by the followers at that version, else one fresh snapshot. The loop never waits for a
follower: a full queue ends that follower (too slow).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from threadfold.core.errors import ThreadfoldError
from threadfold.workers.feed.marks import Marking, Marks
from threadfold.workers.feed.subscriber import (
    SHUTTING_DOWN,
    Published,
    Reason,
    Start,
    Subscriber,
    item_of,
)
from threadfold.workers.storage.feed import FeedRead
from threadfold.workers.storage.feed_record import ORIGIN
from threadfold.workers.storage.read_state import WholeThread

log = logging.getLogger("threadfold.feed")

#: Failures after which the hub reconnects (or a fill is tried again).
LOST: Final = (RedisConnectionError, RedisTimeoutError, OSError)
#: Seconds :meth:`Hub.close` waits for its tasks to end before it cancels them again.
CANCEL_AGAIN: Final = 0.1
#: Longest pause between reconnection attempts (seconds; from 50 ms, doubling).
MAX_BACKOFF: Final = 2.0
#: Fills reading at once (threads): a thousand followers joining, or a reconnection
#: re-checking every thread, must not take all of the store client's pool (its other
#: users, the process's requests, would be refused) nor queue a read per thread at once.
FILLS_AT_ONCE: Final = 16


class Source(Marking, Protocol):
    """Where fills are read, and followed threads marked
    (:class:`threadfold.workers.storage.astore.AsyncStore`)."""

    async def snapshot(self, ref: str) -> WholeThread | None: ...

    async def feed_after(self, ref: str, after: str, count: int = ...) -> FeedRead: ...


class HubFull(ThreadfoldError):
    """Raised by :meth:`Hub.subscribe` at the hub's cap of followers."""


class HubClosed(ThreadfoldError):
    """Raised by :meth:`Hub.subscribe` once the hub is shutting down."""


@dataclass(eq=False)
class Topic:
    """A watched thread: its local followers, and whether its SUBSCRIBE is confirmed."""

    ref: str
    channel: str
    subs: set[Subscriber] = field(default_factory=set)
    confirmed: asyncio.Event = field(default_factory=asyncio.Event)
    filler: asyncio.Task[None] | None = None


class Hub:
    """The process's follower of thread feeds (see the module's docstring)."""

    def __init__(
        self,
        client: aioredis.Redis,
        source: Source,
        channel_of: Callable[[str], str],
        *,
        queue_events: int = 1000,
        max_subscribers: int = 10_000,
        follow_window_ms: int = 300_000,
    ) -> None:
        self.client = client
        self.source = source
        self.channel_of = channel_of  # ref -> channel name (the thread's feed key)
        self.queue_events = queue_events
        self.max_subscribers = max_subscribers
        self.subscribers = 0
        self.dropped = 0  # followers ended as too slow, in this process's life
        self._topics: dict[str, Topic] = {}
        self._ps: PubSub | None = None
        self._sent: set[str] = set()  # channels SUBSCRIBEd on the current connection
        self._awaiting: Counter[str] = Counter()  # SUBSCRIBEs not confirmed yet
        self._dirty = asyncio.Event()  # the wanted channels changed
        self._kick = asyncio.Event()  # SUBSCRIBEs went out: the reader has a reply to read
        self._epoch = 0  # connections lost so far: a fill across a loss is read again
        self._tasks: list[asyncio.Task[None]] = []
        self._reading = asyncio.Semaphore(FILLS_AT_ONCE)
        self._closed = False
        self.marks = Marks(source, follow_window_ms)  # its threads marked followed

    # --- followers ----------------------------------------------------------------

    def subscribe(self, ref: str, after: str | None = None) -> Subscriber:
        """A new follower of ``ref``: from a whole state, or resuming after version
        ``after``. Its items come through :meth:`Subscriber.next`."""
        if self._closed:
            raise HubClosed("shutting down")
        if self.subscribers >= self.max_subscribers:
            raise HubFull(f"{self.subscribers} subscribers: the cap is reached")
        self._start()
        channel = self.channel_of(ref)
        topic = self._topics.get(channel)
        if topic is None:
            topic = self._topics[channel] = Topic(ref, channel)
            self.marks.watch(ref)
            if channel in self._sent and self._awaiting[channel] <= 0:
                # Its last follower left and this one came before _reconcile ran: the
                # channel was never unsubscribed, and stays so.
                topic.confirmed.set()
            self._dirty.set()
        sub = Subscriber(ref, channel, after, self.queue_events)
        topic.subs.add(sub)
        self.subscribers += 1
        self._fill_later(topic)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        """``sub`` leaves (at once; idempotent). The last follower of a thread leaving
        unsubscribes its channel."""
        topic = self._topics.get(sub.channel)
        if topic is None or sub not in topic.subs:
            return
        topic.subs.discard(sub)
        self.subscribers -= 1
        if not topic.subs:
            del self._topics[sub.channel]
            self.marks.unwatch(sub.ref)
            if topic.filler is not None:
                topic.filler.cancel()
            self._dirty.set()

    def shutting_down(self) -> None:
        """End every follower (``shutting_down``: its last item) and refuse new ones;
        idempotent. The process is stopping: its clients resume elsewhere."""
        self._closed = True
        for topic in list(self._topics.values()):
            for sub in list(topic.subs):
                sub.end(SHUTTING_DOWN)
                self.unsubscribe(sub)

    async def close(self) -> None:
        """:meth:`shutting_down`, then the connection."""
        self.shutting_down()
        # Cancelled until they end: Python 3.11's asyncio.wait_for, which redis-py sends
        # each command under, drops a cancellation that lands as the send completes
        # (python/cpython#86296), and the task goes on (seen: a client's close() waited
        # for ever on the subscriptions task, back at its next wait).
        pending = set(self._tasks)
        while pending:
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
        for task in self._tasks:
            if not task.cancelled() and task.exception() is not None:
                log.warning("feed hub: a task ended with %r", task.exception())
        await self.client.aclose()

    # --- the connection --------------------------------------------------------------

    def _start(self) -> None:
        if not self._tasks and not self._closed:
            self._tasks = [
                asyncio.create_task(self._run(), name="feed-hub-reader"),
                asyncio.create_task(self._reconcile(), name="feed-hub-subscriptions"),
                asyncio.create_task(self.marks.run(), name="feed-hub-marks"),
            ]

    async def _run(self) -> None:
        """Connect, read, and after a loss reconnect with backoff; forever."""
        delay, failing = 0.05, False
        while True:
            ps = self.client.pubsub()
            try:
                await ps.connect()  # type: ignore[no-untyped-call]
                if failing:
                    log.info("feed hub: Redis reachable again; resyncing followers")
                self._ps, self._sent, failing, delay = ps, set(), False, 0.05
                self._awaiting.clear()
                self._dirty.set()
                await self._read(ps)
            except LOST as exc:
                if not failing:
                    log.warning("feed hub: Pub/Sub connection lost (%s); reconnecting", exc)
                failing = True
            except Exception:  # a bug must not stop every stream of the process for good
                log.exception("feed hub: the reader failed; reconnecting")
            finally:
                self._ps = None
                self._lost()
                with contextlib.suppress(Exception):
                    await ps.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)

    async def _read(self, ps: PubSub) -> None:
        while True:
            if not ps.subscribed:  # nothing to read until _reconcile subscribes
                with contextlib.suppress(TimeoutError):
                    # asyncio.timeout, not wait_for: 3.11's wait_for can drop a cancel.
                    async with asyncio.timeout(5):
                        await self._kick.wait()
                self._kick.clear()
                continue
            message = await ps.get_message(timeout=5.0)
            if message is not None:
                self._dispatch(message)

    async def _reconcile(self) -> None:
        """SUBSCRIBE and UNSUBSCRIBE so that the connection hears exactly the watched
        channels (one task: the commands go out in the order the changes were made)."""
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            ps = self._ps
            if ps is None:
                continue  # the next connection subscribes everything watched
            add = [c for c in self._topics if c not in self._sent]
            drop = [c for c in self._sent if c not in self._topics]
            self._sent.difference_update(drop)
            self._sent.update(add)
            self._awaiting.update(add)
            try:
                if drop:
                    await ps.unsubscribe(*drop)
                if add:
                    await ps.subscribe(*add)
            except LOST:
                pass  # the reader sees the loss and reconnects, then subscribes everything
            except Exception:  # this task must outlive any one failure
                log.exception("feed hub: (un)subscribing %s failed", add + drop)
            self._kick.set()

    def _lost(self) -> None:
        """The connection is gone: every follower may have missed events."""
        self._epoch += 1
        self._sent = set()
        for topic in self._topics.values():
            topic.confirmed.clear()
            for sub in topic.subs:
                if not sub.gapped:
                    sub.gapped, sub.reason = True, "resync"
            self._fill_later(topic)

    def _dispatch(self, message: dict[str, Any]) -> None:
        channel = message["channel"]
        channel = channel.decode() if isinstance(channel, bytes) else str(channel)
        if message["type"] == "subscribe":
            self._awaiting[channel] -= 1
            topic = self._topics.get(channel)
            if self._awaiting[channel] <= 0 and topic is not None and channel in self._sent:
                topic.confirmed.set()
            return
        topic = self._topics.get(channel)
        if message["type"] != "message" or topic is None:
            return
        try:
            change = item_of(message["data"])  # one item for all: rendered once per format
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("feed hub: an undecodable event on %s; resyncing its followers", channel)
            change = None
        gap = False
        for sub in list(topic.subs):
            gap |= sub.offer(change)
            self._settle(sub)
        if gap:
            self._fill_later(topic)

    def _settle(self, sub: Subscriber) -> None:
        if sub.dropped and sub in self._topic_subs(sub):
            self.dropped += 1
            self.unsubscribe(sub)

    def _topic_subs(self, sub: Subscriber) -> set[Subscriber]:
        topic = self._topics.get(sub.channel)
        return topic.subs if topic is not None else set()

    # --- filling gaps ----------------------------------------------------------------

    def _fill_later(self, topic: Topic) -> None:
        if topic.filler is None or topic.filler.done():
            topic.filler = asyncio.create_task(self._fill(topic), name="feed-hub-fill")

    async def _fill(self, topic: Topic) -> None:
        """Rounds of reads until none of ``topic``'s followers has a gap, at most
        :data:`FILLS_AT_ONCE` threads reading at once."""
        delay = 0.05
        while self._topics.get(topic.channel) is topic:
            await topic.confirmed.wait()
            try:
                async with self._reading:
                    if not await self._round(topic):
                        return
                delay = 0.05
            except Exception as exc:  # out of reach, or a bug: try again
                log.log(
                    logging.INFO if isinstance(exc, LOST) else logging.ERROR,
                    "feed hub: a fill of %s failed (%s); trying again", topic.ref, exc,
                    exc_info=not isinstance(exc, LOST),
                )  # fmt: skip
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)

    async def _round(self, topic: Topic) -> bool:
        """One round: the followers gapped now (taken once the round's turn came; a
        later one is not covered by its reads), read for and filled, unless the
        connection was lost meanwhile (then they are read for again). False when none
        is gapped."""
        if not topic.confirmed.is_set():
            return True  # the connection was lost while it waited for its turn
        batch = [s for s in topic.subs if s.gapped and not s.dropped]
        if not batch:
            return False
        epoch = self._epoch
        chains, snapshot = await self._reads(topic.ref, batch)
        if epoch == self._epoch:
            self._apply(topic, batch, chains, snapshot)
        return True

    async def _reads(
        self, ref: str, batch: Sequence[Subscriber]
    ) -> tuple[dict[str, list[Published] | None], WholeThread | None]:
        """One FEED read (paged) per version held, and one snapshot if any follower
        needs a whole state."""
        versions = sorted({s.follower.version for s in batch if s.follower is not None})
        found = await asyncio.gather(*(self._chain(ref, v) for v in versions))
        chains = dict(zip(versions, found, strict=True))
        snapshot = None
        if any(s.follower is None or chains[s.follower.version] is None for s in batch):
            snapshot = await self.source.snapshot(ref)
        return chains, snapshot

    async def _chain(self, ref: str, after: str) -> list[Published] | None:
        """The events from ``after`` to the thread's version, or None: a gap. A chain
        as long as a follower's queue is a gap too (a snapshot is sent instead): put in
        the queue, it would drop its follower as too slow, and the follower, resuming
        from the same version, would get the same chain, for ever."""
        out: list[Published] = []
        at = after
        while True:
            read = await self.source.feed_after(ref, at)
            if read.kind == "current" or (read.kind == "absent" and at == ORIGIN):
                return out
            if read.kind != "events" or not read.events:
                return None
            out += [Published(e) for e in read.events]
            if len(out) >= self.queue_events:
                return None
            at = read.events[-1].version
            if at == read.cursor:
                return out

    def _apply(
        self,
        topic: Topic,
        batch: Sequence[Subscriber],
        chains: dict[str, list[Published] | None],
        snapshot: WholeThread | None,
    ) -> None:
        starts: dict[Reason, Start] = {}  # one per reason, shared by its followers
        for sub in batch:
            if sub not in topic.subs or not sub.gapped or sub.dropped:
                continue
            chain = chains.get(sub.follower.version) if sub.follower is not None else None
            start = None
            if chain is None:
                start = starts.get(sub.reason)
                if start is None:
                    start = starts[sub.reason] = Start(snapshot, sub.reason)
            sub.filled(chain or [], start)
            self._settle(sub)
