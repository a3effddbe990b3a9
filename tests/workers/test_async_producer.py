"""The asyncio producer: same script, same answers, standalone and on a cluster."""

from __future__ import annotations

import asyncio

import pytest

from core import InvalidMessage
from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, state_dump, store_for
from tests.workers.test_concurrency import NoWake
from workers.drain import Drainer
from workers.producer import AsyncProducer, Delta
from workers.redis_io import async_client
from workers.settings import Settings
from workers.wakeup import ThreadedWaker


async def _produce(settings: Settings, waker: NoWake) -> list[str]:
    client = async_client(settings.redis_url.get_secret_value(), cluster=settings.cluster)
    producer = AsyncProducer(client, settings, ThreadedWaker(waker))
    try:
        one = await producer.enqueue(
            "a1", [{"role": "user", "content": "x", "id": "1"}], delta_id="d1"
        )
        again = await producer.enqueue("a1", ["ignored"], delta_id="d1")
        assert again.duplicate and again.version == one.version
        bulk = await producer.enqueue_many(
            [
                Delta(f"a{i % 5}", [{"role": "assistant", "content": str(i), "id": "1"}])
                for i in range(20)
            ]
        )
        assert [r.thread_id for r in bulk] == [f"a{i % 5}" for i in range(20)]
        with pytest.raises(InvalidMessage, match=r"^deltas\[1\]\.messages\[0\]"):
            await producer.enqueue_many([Delta("ok", ["x"]), Delta("ok", [{"role": "tool"}])])
        return [f"{r.thread_id}@{r.version}" for r in bulk]
    finally:
        await client.aclose()


@pytest.mark.parametrize("where", ["standalone", "cluster"])
def test_the_async_producer_appends_dedupes_and_wakes_like_the_sync_one(
    where: str, redis_url: str, redis_cluster: RedisCluster
) -> None:
    url = redis_url if where == "standalone" else redis_cluster.url
    settings = make_settings(url, cluster=where == "cluster", key_prefix=f"ap{where[0]}")
    waker = NoWake()
    versions = asyncio.run(_produce(settings, waker))
    assert len(set(versions)) == 20  # versions are per thread
    assert sorted(waker.refs) == [f"_/a{i}" for i in range(5)]
    store = store_for(settings)
    for i in range(5):
        Drainer(store, settings).drain(f"_/a{i}")
    assert [m["content"] for m in state_dump(store, "_/a0")] == ["15"]
    assert store.read_state("_/ok") is None  # the bad bulk call wrote nothing
