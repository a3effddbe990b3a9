"""The asyncio producer: same script, same answers, standalone and on a cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
import redis

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.core import InvalidMessage
from threadfold.workers.ingest import producer as producer_module
from threadfold.workers.ingest.producer import AsyncProducer, Delta
from threadfold.workers.ingest.wakeup import ThreadedWaker
from threadfold.workers.redisio import client as redis_io
from threadfold.workers.redisio.client import AsyncRedis, Call, async_client
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings


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


async def _concurrent(settings: Settings, waker: NoWake) -> list[str]:
    client = async_client(settings.redis_url.get_secret_value(), cluster=settings.cluster)
    producer = AsyncProducer(client, settings, ThreadedWaker(waker))
    try:
        good = [
            producer.enqueue(f"c{i % 7}", [{"role": "user", "content": str(i)}], delta_id=f"k{i}")
            for i in range(60)
        ]
        bad = producer.enqueue("c0", [{"role": "tool", "content": "no tool_call_id"}])
        answers = await asyncio.gather(*good, bad, return_exceptions=True)
        assert isinstance(answers[-1], InvalidMessage)  # only the bad call fails
        results = [a for a in answers[:-1] if not isinstance(a, BaseException)]
        assert len(results) == 60 and not any(r.duplicate for r in results)
        assert [r.thread_id for r in results] == [f"c{i % 7}" for i in range(60)]
        # a caller cancelled while waiting: the others still get their answers
        waiting = [
            asyncio.ensure_future(producer.enqueue("c9", [{"role": "user", "content": "z"}]))
            for _ in range(3)
        ]
        await asyncio.sleep(0)
        waiting[1].cancel()
        done = await asyncio.gather(*waiting, return_exceptions=True)
        assert isinstance(done[1], asyncio.CancelledError)
        assert not isinstance(done[0], BaseException) and not isinstance(done[2], BaseException)
        return [f"{r.thread_id}@{r.version}" for r in results]
    finally:
        await client.aclose()


def test_calls_in_one_event_loop_turn_share_one_round_trip(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(redis_url, key_prefix="apc", **WORKERS_ONLY)
    waker = NoWake()
    sent: list[int] = []
    real = redis_io.arun_many

    async def counting(client: AsyncRedis, calls: Sequence[Call]) -> list[Any]:
        sent.append(len(calls))
        return await real(client, calls)

    monkeypatch.setattr(producer_module, "arun_many", counting)
    versions = asyncio.run(_concurrent(settings, waker))
    assert len(sent) == 2  # the 60 calls of one turn, then the three of the next
    assert len(set(versions)) == 60
    assert sorted(set(waker.refs)) == sorted({f"_/c{i}" for i in range(7)} | {"_/c9"})
    store = store_for(settings)
    for i in range(7):
        Drainer(store, settings).drain(f"_/c{i}")
        expected = [str(n) for n in range(60) if n % 7 == i]
        assert [m["content"] for m in state_dump(store, f"_/c{i}")] == expected


async def _broken(settings: Settings) -> list[object]:
    client = async_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
    producer = AsyncProducer(client, settings, ThreadedWaker(NoWake()))
    try:
        calls = [producer.enqueue(f"x{i}", ["hi"]) for i in range(5)]
        return await asyncio.gather(*calls, return_exceptions=True)
    finally:
        await client.aclose()


def test_a_failed_shared_round_trip_fails_every_call_in_it() -> None:
    settings = make_settings("redis://127.0.0.1:1/0")  # nothing listens on port 1
    answers = asyncio.run(_broken(settings))
    assert all(isinstance(a, redis.ConnectionError) for a in answers)


async def _same_turn_retries(settings: Settings) -> list[Any]:
    client = async_client(settings.redis_url.get_secret_value(), cluster=settings.cluster)
    producer = AsyncProducer(client, settings, ThreadedWaker(NoWake()))
    try:
        calls = [
            producer.enqueue("r1", [{"role": "user", "content": "first", "id": "m"}],
                             delta_id="same"),
            producer.enqueue("r1", [{"role": "user", "content": "next", "id": "n"}]),
            producer.enqueue("r1", [{"role": "user", "content": "again", "id": "m"}],
                             delta_id="same"),
            producer.enqueue("r2", [{"role": "user", "content": "other", "id": "m"}],
                             delta_id="same"),
        ]
        return list(await asyncio.gather(*calls))
    finally:
        await client.aclose()


@pytest.mark.parametrize("where", ["standalone", "cluster"])
def test_a_retry_in_the_same_turn_is_answered_as_the_first_and_order_is_kept(
    where: str, redis_url: str, redis_cluster: RedisCluster
) -> None:
    """Calls sharing one round trip keep every guarantee of calls of their own: a
    ``delta_id`` sent twice is applied once and both answered with its version, a
    thread's deltas keep the order they were made in, and a delta_id is per thread."""
    url = redis_url if where == "standalone" else redis_cluster.url
    settings = make_settings(url, cluster=where == "cluster", key_prefix=f"as{where[0]}")
    first, following, again, other = asyncio.run(_same_turn_retries(settings))
    assert (first.duplicate, following.duplicate, again.duplicate) == (False, False, True)
    assert again.version == first.version and again.ids == first.ids
    assert not other.duplicate and other.thread_id == "r2"
    order = [tuple(map(int, r.version.split("-"))) for r in (first, following)]
    assert order == sorted(order)  # the log's order is the calls' order
    store = store_for(settings)
    for ref in ("_/r1", "_/r2"):
        Drainer(store, settings).drain(ref)
    assert [m["content"] for m in state_dump(store, "_/r1")] == ["first", "next"]
    assert [m["content"] for m in state_dump(store, "_/r2")] == ["other"]
