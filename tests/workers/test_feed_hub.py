"""The feed hub in-process, against a real redis-server and the real drainer: what only
an in-process test can time (a follower leaving and another arriving in one tick)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tests.workers.harness import make_settings, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.workers import wiring
from threadfold.workers.feed import connect
from threadfold.workers.feed.hub import Hub, Source
from threadfold.workers.feed.subscriber import Published, Start, Subscriber
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.feed import PAGE, FeedRead
from threadfold.workers.storage.follow import LEAST_WINDOW_MS
from threadfold.workers.storage.read_state import WholeThread


def _hub(settings: Settings, store: Source) -> Hub:
    return Hub(
        connect.alistener(settings, name="test-hub"),
        store,
        lambda ref: settings.keyspace.thread(ref).feed,
        queue_events=10,
    )


async def _next(sub: Subscriber) -> Start | Published:
    item = await asyncio.wait_for(sub.next(), 10)
    assert isinstance(item, Start | Published), item
    return item


def test_a_follower_arriving_as_the_last_one_leaves_is_served(redis_url: str) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())

    async def scenario() -> None:
        astore = wiring.astore(settings, wiring.aredis(settings))
        hub = _hub(settings, astore)
        try:
            first = hub.subscribe("_/h")
            assert isinstance(await _next(first), Start)
            hub.unsubscribe(first)
            second = hub.subscribe("_/h")  # same tick: the channel was never unsubscribed
            start = await _next(second)
            assert isinstance(start, Start) and not start.exists
            done = producer.enqueue("h", [["user", "hi"]])
            await asyncio.to_thread(Drainer(store, settings).drain, "_/h")
            change = await _next(second)
            assert isinstance(change, Published) and change.event.prev == "0-0"
            assert change.event.version == store.read_state("_/h").version  # type: ignore[union-attr]
            assert done.version <= change.event.version
            assert hub.subscribers == 1
        finally:
            await hub.close()
            await astore.client.aclose()

    asyncio.run(scenario())


class Counting:
    """The real store's reads, counted (what the hub shares among its followers)."""

    def __init__(self, store: AsyncStore) -> None:
        self.store = store
        self.snapshots = 0
        self.feed_reads = 0

    async def snapshot(self, ref: str) -> WholeThread | None:
        self.snapshots += 1
        return await self.store.snapshot(ref)

    async def feed_after(self, ref: str, after: str, count: int = PAGE) -> FeedRead:
        self.feed_reads += 1
        return await self.store.feed_after(ref, after, count)

    async def follow(self, refs: Sequence[str], window_ms: int) -> None:
        await self.store.follow(refs, window_ms)


def test_followers_of_a_thread_share_its_reads(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=1)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    store.follow(["_/s"], LEAST_WINDOW_MS)  # followed before: its feed holds every version
    versions = []
    for step in range(5):
        producer.enqueue("s", [["user", f"s{step}"]])
        Drainer(store, settings).drain("_/s")
        versions.append(store.read_state("_/s").version)  # type: ignore[union-attr]

    async def scenario() -> None:
        astore = wiring.astore(settings, wiring.aredis(settings))
        counting = Counting(astore)
        hub = _hub(settings, counting)
        try:
            starting = [hub.subscribe("_/s") for _ in range(20)]
            resuming = [hub.subscribe("_/s", after=versions[1]) for _ in range(20)]
            for sub in starting:
                start = await _next(sub)
                assert isinstance(start, Start) and start.version == versions[-1]
            for sub in resuming:
                got = [await _next(sub) for _ in range(3)]
                assert [c.event.version for c in got if isinstance(c, Published)] == versions[2:]
            # One snapshot for the 20 that start, one feed read for the 20 that resume
            # from the same version: not one each.
            assert (counting.snapshots, counting.feed_reads) == (1, 1)
        finally:
            await hub.close()
            await astore.client.aclose()

    asyncio.run(scenario())
