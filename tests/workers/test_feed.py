"""A thread's change feed, against a real redis-server and the real drainer.

The feed's promise: applying a version's event to the state at the version before
gives exactly the state at that version. It is checked at every version a random
history commits, against time travel (the log replayed) and the one-delta-at-a-time
oracle; and every way the chain can break (a trim, a rebuild, a skipped entry) must
show as a gap, never as a wrong event. A delete is no break: it publishes its notice,
and the thread written again chains on 0-0, the empty thread the notice leaves.
"""

from __future__ import annotations

import random
from typing import Any

import redis

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, store_for
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.core import dump_messages
from threadfold.core.codec import decode_stored
from threadfold.testing import Ledger
from threadfold.workers.feed import subscription
from threadfold.workers.feed.apply import apply, in_order
from threadfold.workers.feed.events import Change, Deleted, Snapshot
from threadfold.workers.feed.follow import Follower, Step, heard
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run, text
from threadfold.workers.replay.replay import travel
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import rebuild
from threadfold.workers.storage.feed_record import (
    ORIGIN,
    FeedEvent,
    decode,
    removal_notice,
    removal_of,
)
from threadfold.workers.storage.follow import LEAST_WINDOW_MS as WINDOW_MS
from threadfold.workers.storage.store import Store

State = dict[int, tuple[str, bytes]]


def _entries(client: Any, key: str) -> list[tuple[str, dict[bytes, bytes]]]:
    """The feed's entries, (id, fields), oldest first."""
    return [(i.decode(), fields) for i, fields in client.xrange(key)]


def _listen(redis_url: str, channel: str) -> Any:
    listener = redis.Redis.from_url(redis_url).pubsub()
    listener.subscribe(channel)
    assert listener.get_message(timeout=5)["type"] == "subscribe"
    return listener


def _step(state: State, event: FeedEvent) -> State:
    return apply(
        state,
        reset=event.reset,
        removed=[p for _, p in event.removed],
        upserts=[(p, (i, body)) for p, i, body in event.upserts],
    )


def _messages(state: State) -> list[dict[str, Any]]:
    return dump_messages([decode_stored(body, i) for i, body in in_order(state)])


def _follow(store: Store, ref: str, state: State, version: str) -> list[tuple[str, State]]:
    """Every (version, state) the feed leads to from ``version``, paging through it."""
    seen: list[tuple[str, State]] = []
    follower = Follower(version)
    while True:
        read = store.feed_after(ref, follower.version, count=7)  # small pages: paging too
        if read.kind != "events":
            assert read.kind == "current", read
            return seen
        for event in read.events:
            assert follower.offer(event) is Step.DELIVER
            state = _step(state, event)
            follower.delivered(event)
            seen.append((event.version, state))


def _run_history(settings: Settings, seed: int, threads: int, deltas: int) -> tuple[Store, Ledger]:
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(seed)
    sent = Ledger()
    refs = [f"_/f{t}" for t in range(threads)]
    store.follow(refs, WINDOW_MS)  # followed throughout: every commit keeps its event
    for step in range(deltas):
        thread = f"f{rng.randrange(threads)}"
        messages = random_messages(rng, step)
        result = producer.enqueue(thread, messages)
        sent.add(f"_/{thread}", result.version, messages, result.ids)
        if rng.random() < 0.15:  # drains of every size, some one delta, some many
            size = rng.choice([1, 2, 5, 50])
            sized = settings.model_copy(update={"batch_size": size})
            Drainer(store, sized).drain_many(refs)
    Drainer(store, settings).drain_many(refs)
    return store, sent


def test_each_event_turns_the_state_before_into_the_state_after(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="feed1", retention_seconds=3600)
    for seed in range(3):
        store, sent = _run_history(settings, seed, threads=3, deltas=250)
        for ref in sent.threads():
            seen = _follow(store, ref, {}, "0-0")
            assert len(seen) > 5
            for version, state in seen:  # every version committed: the replayed state
                assert _messages(state) == dump_messages(travel(store, ref, version).messages)
            assert seen[-1][0] == store.read_state(ref).version  # type: ignore[union-attr]
            assert _messages(seen[-1][1]) == dump_messages(sent.expected(ref))
            # A follower starting from a snapshot, with its positions, gets there too.
            snap = store.snapshot(ref)
            assert snap is not None
            base = dict(zip(snap.positions, zip((i.decode() for i in snap.ids), snap.bodies,
                                                 strict=True), strict=True))
            assert _messages(base) == _messages(seen[-1][1])
            assert store.feed_after(ref, snap.version).kind == "current"
        store.client.flushall()


def test_every_commit_is_published_as_the_event_it_keeps(redis_url: str) -> None:
    # A feed long enough to keep every event of the run (a commit may be a delta's own).
    settings = make_settings(redis_url, key_prefix="feed2", batch_size=3, feed_max_events=1000)
    channel = settings.keyspace.thread("_/f0").feed
    listener = _listen(redis_url, channel)
    store, _ = _run_history(settings, 7, threads=1, deltas=120)
    published = []
    while (message := listener.get_message(timeout=0.5)) is not None:
        published.append(message["data"])
    kept = _entries(store.client, channel)
    assert [fields[b"e"] for _, fields in kept] == published
    events = [decode(blob) for blob in published]
    assert all(e is not None for e in events)
    # Ids are the versions, each event applies on the one before.
    assert [i for i, _ in kept] == [e.version for e in events if e]
    assert [e.prev for e in events if e][1:] == [e.version for e in events if e][:-1]
    assert events[0] is not None and events[0].prev == "0-0"


def test_a_trimmed_feed_is_a_gap_not_a_partial_answer(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="feed3", batch_size=1, feed_max_events=10)
    store, sent = _run_history(settings, 11, threads=1, deltas=400)
    [ref] = sent.threads()
    feed = settings.keyspace.thread(ref).feed
    assert store.client.xlen(feed) == 10  # exactly the last 10 kept
    # ... and the whole feed goes once the thread is idle for the age limit.
    assert 0 < store.client.pttl(feed) <= settings.feed_max_age_seconds * 1000
    assert store.feed_after(ref, "0-0").kind == "gap"
    # The feed still serves a follower near the end.
    last = _entries(store.client, settings.keyspace.thread(ref).feed)[-2:]
    before = store.feed_after(ref, last[0][0])
    assert before.kind == "events"
    assert [e.version for e in before.events] == [last[1][0]]


def test_no_feed_kept_still_publishes(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="feed4", feed_max_events=0)
    listener = _listen(redis_url, settings.keyspace.thread("_/f0").feed)
    store, _ = _run_history(settings, 3, threads=1, deltas=20)
    assert not store.client.exists(settings.keyspace.thread("_/f0").feed)
    assert listener.get_message(timeout=5) is not None
    assert store.feed_after("_/f0", "0-0").kind == "gap"


def test_a_rebuild_and_a_delete_break_every_chain(redis_url: str) -> None:
    """No resume from a version before either. A rebuild publishes a resync; a delete its
    notice, and the thread written again starts a chain on 0-0."""
    settings = make_settings(redis_url, key_prefix="feed5", batch_size=4)
    store, sent = _run_history(settings, 5, threads=1, deltas=60)
    [ref] = sent.threads()
    k = settings.keyspace.thread(ref)
    version = store.read_state(ref).version  # type: ignore[union-attr]
    middle = _entries(store.client, k.feed)[3][0]
    assert store.feed_after(ref, middle).kind == "events"
    listener = _listen(redis_url, k.feed)
    # A rebuild at the current version (here: to an empty state) publishes a resync, and
    # no follower at or before that version is resumed from the feed.
    fence = f"{text(store.client.hget(k.meta, 'c'))}#{text(store.client.hget(k.meta, 'i'))}"
    assert rebuild.parse(run(store.client, rebuild.call(k, fence, 1000, [])))
    assert listener.get_message(timeout=5)["data"] == b""
    assert decode(b"") is None and Follower(version).offer(None) is Step.GAP
    for after in (version, middle):
        assert store.feed_after(ref, after).kind == "gap"
    # A delete publishes its notice, not a resync: a follower at any version takes it
    # and holds the empty thread at 0-0, with no read.
    assert store.delete(ref)
    notice = listener.get_message(timeout=5)["data"]
    assert notice == removal_notice("deleted") == b"deleted:deleted"
    assert removal_of(notice) == "deleted" and heard(notice) == "deleted"
    follower = Follower(version)
    assert follower.offer(heard(notice)) is Step.DELIVER
    follower.delivered("deleted")
    assert follower.version == ORIGIN
    assert store.feed_after(ref, version).kind == "absent"
    assert store.feed_after(ref, ORIGIN).kind == "absent"  # a resume from 0-0: nothing
    assert not store.client.exists(k.feed)
    assert not store.client.zscore(k.active, ref)
    # The thread written again: its first event applies on 0-0, live and from the feed.
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue(ref.partition("/")[2], [{"role": "user", "content": "again", "id": "n"}])
    Drainer(store, settings).drain(ref)
    first = decode(listener.get_message(timeout=5)["data"])
    assert first is not None and first.prev == ORIGIN
    assert follower.offer(first) is Step.DELIVER
    state = _step({}, first)
    assert _messages(state) == dump_messages(store.read_state(ref).messages)  # type: ignore[union-attr]
    assert [e.version for e in store.feed_after(ref, ORIGIN).events] == [first.version]


def test_a_version_that_is_not_the_threads_is_a_gap(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="feed6", batch_size=4)
    store, sent = _run_history(settings, 9, threads=1, deltas=40)
    [ref] = sent.threads()
    versions = [i for i, _ in _entries(store.client, settings.keyspace.thread(ref).feed)]
    ms, seq = versions[2].split("-")
    for after in (f"{ms}-{int(seq) + 1}", "1-0", "99999999999999-0"):
        if after not in versions:
            assert store.feed_after(ref, after).kind == "gap", after
    assert store.feed_after("_/never", "0-0").kind == "absent"
    assert store.client.zscore(settings.keyspace.thread(ref).active, ref)


def test_on_a_cluster_every_node_hears_every_thread(redis_cluster: RedisCluster) -> None:
    """A script's PUBLISH on a Cluster reaches every node: a listener on any one node (the
    direct clients' and the API's one connection) hears threads of every slot; FEED
    resumes there as on one server."""
    settings = make_settings(redis_cluster.url, cluster=True, key_prefix="feedc", batch_size=3)
    refs = [f"_/f{t}" for t in range(6)]  # buckets on all three masters
    first = settings.keyspace.thread(refs[0]).feed
    listeners = [_listen(f"redis://127.0.0.1:{port}/0", first) for port in redis_cluster.ports]
    for listener in listeners:
        for ref in refs[1:]:
            listener.subscribe(settings.keyspace.thread(ref).feed)
    store, sent = _run_history(settings, 13, threads=6, deltas=120)
    for listener in listeners:
        heard: dict[str, list[str]] = {}
        while (message := listener.get_message(timeout=0.5)) is not None:
            if message["type"] == "message":
                event = decode(message["data"])
                assert event is not None
                heard.setdefault(message["channel"].decode(), []).append(event.version)
        for ref in refs:
            kept = _entries(store.client, settings.keyspace.thread(ref).feed)
            assert heard[settings.keyspace.thread(ref).feed] == [i for i, _ in kept]
    for ref in sent.threads():
        seen = _follow(store, ref, {}, "0-0")
        assert _messages(seen[-1][1]) == dump_messages(sent.expected(ref))


def test_an_event_over_the_size_limit_is_published_not_kept(redis_url: str) -> None:
    """A bulk load's event is only published: a follower that missed it resumes with a
    snapshot (the feed's chain has a hole there), and the feed holds no second copy."""
    settings = make_settings(redis_url, key_prefix="feed7", feed_max_event_bytes=2000)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    channel = settings.keyspace.thread("_/big").feed
    store.follow(["_/big"], WINDOW_MS)
    listener = _listen(redis_url, channel)
    producer.enqueue("big", [{"role": "user", "content": "small", "id": "s"}])
    Drainer(store, settings).drain("_/big")
    small = _entries(store.client, channel)
    assert len(small) == 1
    producer.enqueue("big", [{"role": "user", "content": "x" * 5000, "id": "b"}])
    Drainer(store, settings).drain("_/big")
    assert _entries(store.client, channel) == small  # not kept
    published = [listener.get_message(timeout=5) for _ in range(2)]
    big = decode(published[1]["data"])
    assert big is not None and big.prev == small[0][0]  # but published, whole
    assert store.feed_after("_/big", small[0][0]).kind == "gap"  # a snapshot, not a hole
    assert store.feed_after("_/big", big.version).kind == "current"
    producer.enqueue("big", [{"role": "user", "content": "after", "id": "a"}])
    Drainer(store, settings).drain("_/big")
    assert store.feed_after("_/big", big.version).kind == "events"
    assert store.feed_after("_/big", small[0][0]).kind == "gap"


def test_a_direct_subscription_yields_deleted_then_the_thread_written_again(
    redis_url: str,
) -> None:
    """The sync subscription (``Client.subscribe``'s loop) across a DELETE: a deleted
    event, no snapshot, then changes on 0-0; a resume from its 0-0 reads them from the
    feed, and from the version before the delete it gets a snapshot."""
    settings = make_settings(redis_url, key_prefix="feed8")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    ref, drainer = "_/gone", Drainer(store, settings)
    producer.enqueue("gone", [{"role": "user", "content": "old", "id": "o"}])
    drainer.drain(ref)
    listener = redis.Redis.from_url(redis_url)
    feed = settings.keyspace.thread(ref).feed
    events = subscription.follow(
        store, listener, subscription.Steps("gone", ref, feed, "langchain"), None, WINDOW_MS
    )
    start = next(events)
    assert isinstance(start, Snapshot) and start.exists and len(start.messages) == 1
    assert store.delete(ref)
    deleted = next(events)
    assert deleted == Deleted("gone", "0-0", "deleted") and deleted.kind == "deleted"
    producer.enqueue("gone", [{"role": "user", "content": "new", "id": "n"}])
    drainer.drain(ref)
    change = next(events)
    assert isinstance(change, Change) and change.prev == "0-0"
    read = store.read_state(ref)
    assert read is not None and change.version == read.version
    assert [u.message["content"] for u in change.upserts] == ["new"]
    events.close()  # type: ignore[attr-defined]
    # Resumed after the deleted event (its version, 0-0): the feed's chain from there.
    steps = subscription.Steps("gone", ref, feed, "langchain")
    steps.follower.version = ORIGIN
    changes, gap = steps.caught_up(store.feed_after(ref, ORIGIN))
    assert not gap and [c.version for c in changes] == [change.version]
    resumed = subscription.follow(
        store, listener, subscription.Steps("gone", ref, feed, "langchain"), start.version,
        WINDOW_MS,
    )
    snap = next(resumed)
    assert isinstance(snap, Snapshot) and snap.reason == "resume_gap"
    assert [m["content"] for m in snap.messages] == ["new"]
    resumed.close()  # type: ignore[attr-defined]
    listener.close()
