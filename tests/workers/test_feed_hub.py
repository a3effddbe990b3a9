"""The feed hub in-process, against a real redis-server and the real drainer: what only
an in-process test can time (a follower leaving and another arriving in one tick)."""

from __future__ import annotations

import asyncio

from tests.workers.harness import make_settings, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.workers import entry
from threadfold.workers.astore import AsyncStore
from threadfold.workers.drain import Drainer
from threadfold.workers.feed.hub import Hub
from threadfold.workers.feed.subscriber import Change, Start, Subscriber
from threadfold.workers.producer import Producer
from threadfold.workers.settings import Settings


def _hub(settings: Settings, store: AsyncStore) -> Hub:
    return Hub(
        entry.alistener(settings, name="test-hub"),
        store,
        lambda ref: settings.keyspace.thread(ref).feed,
        queue_events=10,
    )


async def _next(sub: Subscriber) -> Start | Change:
    item = await asyncio.wait_for(sub.next(), 10)
    assert isinstance(item, Start | Change), item
    return item


def test_a_follower_arriving_as_the_last_one_leaves_is_served(redis_url: str) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())

    async def scenario() -> None:
        astore = entry.astore(settings, entry.aredis(settings))
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
            assert isinstance(change, Change) and change.event.prev == "0-0"
            assert change.event.version == store.read_state("_/h").version  # type: ignore[union-attr]
            assert done.version <= change.event.version
            assert hub.subscribers == 1
        finally:
            await hub.close()
            await astore.client.aclose()

    asyncio.run(scenario())
