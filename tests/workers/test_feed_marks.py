"""A thread's feed is kept only while a follower marked it (workers/feed/marks.py), on a
real Redis: a thread nobody follows publishes every event and keeps none; a mark keeps
them, through the ingest's commits and the workers' alike; a lapsed mark keeps none
again, and a follower that resumes across it reads a snapshot; the hub and a direct
subscription mark what they follow. An ingest commit that nobody hears (no mark, no
subscriber on the server) makes no event at all, but while anyone listens by pattern,
and on a Cluster, where a listener may be on another node, it publishes every one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis

from tests.workers.harness import make_settings, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.workers import wiring
from threadfold.workers.feed import connect, subscription
from threadfold.workers.feed.subscriber import Start
from threadfold.workers.ingest import calls
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.storage import follow, ingest
from threadfold.workers.storage.feed_record import decode
from threadfold.workers.storage.follow import LEAST_WINDOW_MS


def _published(listener: Any, n: int) -> int:
    got = 0
    deadline = time.monotonic() + 10
    while got < n and time.monotonic() < deadline:
        message = listener.get_message(timeout=1)
        if message is not None and message["type"] == "message":
            got += 1
    return got


def test_a_thread_nobody_follows_publishes_and_keeps_nothing(redis_url: str) -> None:
    for commits in (True, False):  # the ingest's commits, and a worker's
        settings = make_settings(redis_url, key_prefix=f"mark{int(commits)}",
                                 ingest_commits=commits)
        store = store_for(settings)
        producer, drainer = Producer(store.client, settings, NoWake()), Drainer(store, settings)
        k = settings.keyspace.thread("_/m")
        listener = redis.Redis.from_url(redis_url).pubsub()
        listener.subscribe(k.feed)
        for step in range(3):
            producer.enqueue("m", [("user", f"unfollowed {step}")])
            drainer.drain("_/m")
        assert _published(listener, 3) == 3  # live followers hear every commit
        assert store.client.xlen(k.feed) == 0  # and nothing is kept for resumes
        held = store.read_state("_/m").version  # type: ignore[union-attr]
        store.follow(["_/m"], LEAST_WINDOW_MS)
        assert 0 < store.client.pttl(k.followed) <= LEAST_WINDOW_MS
        for step in range(3):
            producer.enqueue("m", [("user", f"followed {step}")])
            drainer.drain("_/m")
        assert _published(listener, 3) == 3
        read = store.feed_after("_/m", held)
        assert read.kind == "events" and len(read.events) == 3  # chained from the mark on
        assert read.events[0].prev == held
        listener.close()


def _publishes(client: redis.Redis | redis.RedisCluster) -> int:
    stats = client.info("commandstats").get("cmdstat_publish", {"calls": 0})
    return int(stats["calls"])


def test_an_ingest_commit_nobody_hears_makes_no_event(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(redis_url, key_prefix="unheard")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    before = _publishes(store.client)
    for step in range(3):
        producer.enqueue("u", [("user", f"unheard {step}")])
    assert _publishes(store.client) == before  # no mark, no subscriber: no event
    k = settings.keyspace.thread("_/u")
    listener = redis.Redis.from_url(redis_url).pubsub()
    listener.subscribe(k.feed)
    listener.get_message(timeout=1)  # the subscription's confirmation
    done = producer.enqueue("u", [("user", "heard")])
    message = listener.get_message(timeout=5)
    assert message is not None and message["type"] == "message"
    event = decode(message["data"])
    assert event is not None and event.version == done.version
    assert tuple(u[1] for u in event.upserts) == done.ids
    listener.close()
    # A listener by pattern is not counted by channel: while one listens, all publish.
    patterns = redis.Redis.from_url(redis_url).pubsub()
    patterns.psubscribe("*")
    patterns.get_message(timeout=1)
    before = _publishes(store.client)
    producer.enqueue("u", [("user", "by pattern")])
    assert _publishes(store.client) == before + 1
    patterns.close()
    # On a Cluster, a listener may hang off any node: every commit publishes.
    monkeypatch.setattr(calls, "here", lambda s: ingest.Here(
        s.retention_ms, s.feed_limits, s.thread_ttl_ms, cluster=True))
    before = _publishes(store.client)
    producer.enqueue("u", [("user", "cluster")])
    assert _publishes(store.client) == before + 1


def test_a_lapsed_mark_keeps_nothing_and_a_resume_across_it_reads_a_snapshot(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, key_prefix="lapse")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    store.follow(["_/l"], 200)  # a short window, for the test
    first = producer.enqueue("l", [("user", "kept")])
    assert store.feed_after("_/l", "0-0").kind == "events"
    followed = settings.keyspace.thread("_/l").followed
    deadline = time.monotonic() + 10
    while store.client.exists(followed) and time.monotonic() < deadline:
        time.sleep(0.05)  # the mark lapses: nobody marks the thread again
    assert store.client.exists(followed) == 0
    producer.enqueue("l", [("user", "not kept")])
    assert store.client.xlen(settings.keyspace.thread("_/l").feed) == 1
    assert store.feed_after("_/l", first.version).kind == "gap"  # a snapshot, not a hole


def test_a_mark_outlives_a_delete_and_keeps_the_next_incarnations_events(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, key_prefix="again")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    store.follow(["_/d"], LEAST_WINDOW_MS)
    producer.enqueue("d", [("user", "first life")])
    assert store.delete("_/d")
    born = producer.enqueue("d", [("user", "second life")])
    read = store.feed_after("_/d", "0-0")
    assert read.kind == "events" and [e.version for e in read.events] == [born.version]


def test_a_direct_subscription_and_a_hub_mark_what_they_follow(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="marks")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("s", [("user", "hi")])
    producer.enqueue("h", [("user", "hi")])
    window = follow.window_ms(settings.feed_limits.max_age_ms)
    k = settings.keyspace.thread("_/s")
    events = subscription.follow(
        store, redis.Redis.from_url(redis_url), subscription.Steps("s", "_/s", k.feed, "openai"),
        None, window,
    )
    next(events)  # its start: marked before it was read
    assert window - 5_000 < store.client.pttl(k.followed) <= window
    events.close()  # type: ignore[attr-defined]

    async def scenario() -> None:
        astore = wiring.astore(settings, wiring.aredis(settings))
        hub = connect.ahub(settings, astore, name="marks-hub", queue_events=100,
                           max_subscribers=10)
        try:
            sub = hub.subscribe("_/h")
            assert isinstance(await asyncio.wait_for(sub.next(), 10), Start)
            followed = settings.keyspace.thread("_/h").followed
            for _ in range(100):  # the hub marks a new thread at once, in its own task
                if await astore.client.exists(followed):
                    break
                await asyncio.sleep(0.05)
            assert window - 5_000 < await astore.client.pttl(followed) <= window
        finally:
            await hub.close()
            await astore.client.aclose()

    asyncio.run(scenario())
