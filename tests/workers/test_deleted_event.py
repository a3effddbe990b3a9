"""The removal notice a thread's feed channel carries (``deleted:<reason>``) and the
``deleted`` event followers make of it, unit-level: the notice told apart from a change
event and a resync, for the reasons it names only; taken at any version by every
follower (the chain rule, the hub's follower, a Transcript, the wire, the HTTP reader),
each then at 0-0, on which the thread written again chains; and the storage's removal
for each reason, against a real redis-server, reaching a direct and a hub follower.
Across the API and the clients' processes: tests/api/test_events.py,
tests/client/test_subscribe.py.
"""

from __future__ import annotations

import asyncio
from typing import get_args

import pytest
import redis
from httpx_sse import ServerSentEvent

from tests.workers.harness import make_settings, store_for
from tests.workers.test_concurrency import NoWake
from threadfold import Change, Deleted, Snapshot, Transcript, Upsert
from threadfold.api.feed_wire import Renderer
from threadfold.feed_reader import Reader
from threadfold.workers import wiring
from threadfold.workers.feed import connect, subscription
from threadfold.workers.feed.apply import deleted
from threadfold.workers.feed.follow import Follower, Step, heard
from threadfold.workers.feed.hub import Hub
from threadfold.workers.feed.subscriber import Published, Start, Subscriber, ThreadRemoved, item_of
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.storage import delete
from threadfold.workers.storage.feed_record import (
    DELETED_PREFIX,
    ORIGIN,
    REMOVALS,
    RESYNC,
    FeedEvent,
    Removal,
    decode,
    encode,
    removal_notice,
    removal_of,
)
from threadfold.workers.storage.follow import LEAST_WINDOW_MS as WINDOW_MS


def test_each_reason_is_its_notice_and_back() -> None:
    assert get_args(Removal) == REMOVALS
    for reason in REMOVALS:
        payload = removal_notice(reason)
        assert payload == b"deleted:" + reason.encode() == DELETED_PREFIX + reason.encode()
        assert removal_of(payload) == reason
        assert decode(payload) is None  # a reader that knows no notices resyncs on it
    assert removal_of(b"deleted:expired") == "expired"


@pytest.mark.parametrize(
    "payload",
    [RESYNC, b"deleted:", b"deleted:moved", b"deleted:deleted ", b"DELETED:deleted",
     b"deleted", b"xdeleted:deleted"],
)
def test_anything_else_is_no_removal(payload: bytes) -> None:
    assert removal_of(payload) is None


def test_an_event_is_never_read_as_a_notice() -> None:
    for event in (FeedEvent("1-0", "0-0"), FeedEvent("5-1", "3-0", True, [("m", 0)])):
        blob = encode(event)
        assert not blob.startswith(DELETED_PREFIX) and removal_of(blob) is None
        assert decode(blob) == event
    assert decode(b"deleted:moved") is None  # an unknown reason: a resync, not an error


def test_a_follower_takes_a_removal_at_any_version_and_chains_on_0_0() -> None:
    for held in ("0-0", "5-1", "1764467000000-3"):
        follower = Follower(held)
        assert follower.offer(heard(b"deleted:pruned")) is Step.DELIVER
        follower.delivered("pruned")
        assert follower.version == ORIGIN
        assert follower.offer(FeedEvent("9-0", ORIGIN)) is Step.DELIVER
    assert heard(RESYNC) is None and heard(b"deleted:moved") is None  # both a resync
    assert Follower("5-1").offer(heard(b"deleted:moved")) is Step.GAP


def test_a_hub_follower_is_sent_the_removal_live_and_after_a_fill() -> None:
    gone = item_of(removal_notice("expired"))
    assert isinstance(gone, ThreadRemoved) and gone.reason == "expired" and gone.version == ORIGIN
    assert item_of(RESYNC) is None
    again = item_of(encode(FeedEvent("9-0", ORIGIN)))
    assert isinstance(again, Published)
    live = Subscriber("_/t", "c", "5-0", limit=10)
    live.filled([], None)  # resumed at its version
    assert not live.offer(gone) and not live.offer(again)  # no gap: neither needs a read
    assert [live.next_nowait(), live.next_nowait()] == [gone, again]
    assert live.follower is not None and live.follower.version == "9-0"
    # Heard while a fill reads: taken after it, on whatever the fill gave.
    filling = Subscriber("_/t", "c", None, limit=10)
    assert not filling.offer(gone) and not filling.offer(again)
    start = Start(None, "start")
    assert not filling.filled([], start)
    assert [filling.next_nowait() for _ in range(3)] == [start, gone, again]


def test_a_transcript_is_emptied_at_0_0_and_takes_the_next_incarnation() -> None:
    transcript = Transcript()
    m = {"type": "human", "content": "old", "id": "o"}
    transcript.apply(Snapshot("t", "5-0", 1, "langchain", [m], [0], "start", True))
    transcript.apply(Deleted("t", "0-0", "deleted"))
    assert (transcript.version, transcript.messages) == ("0-0", [])
    n = {"type": "human", "content": "new", "id": "n"}
    transcript.apply(Change("t", "9-0", "0-0", False, (), (Upsert(0, "n", n),)))
    assert (transcript.version, transcript.messages) == ("9-0", [n])
    state = {0: "a", 3: "b"}
    assert deleted(state) == ORIGIN and state == {}


def _sse(event: str, data: str, ident: str | None) -> ServerSentEvent:
    return ServerSentEvent(event=event, data=data, id=ident or "")


def test_the_wire_frame_and_the_http_readers_decoding() -> None:
    frame = Renderer("t", "openai", None).frame(ThreadRemoved("pruned"))
    body = b'{"thread_id":"t","version":"0-0","reason":"pruned"}'
    assert frame == b"event: deleted\nid: 0-0\ndata: " + body + b"\n\n"
    reader = Reader("t", "5-0", "langchain", "http://x")
    got = reader.event(_sse("deleted", body.decode(), "0-0"))
    assert got == Deleted("t", "0-0", "pruned") and reader.version == "0-0"
    assert reader.headers()["last-event-id"] == "0-0"  # a reconnection resumes from 0-0
    change = '{"thread_id":"t","version":"9-0","prev":"0-0","reset":false,"removed":[],' \
        '"upserts":[]}'
    assert isinstance(reader.event(_sse("change", change, "9-0")), Change)
    assert reader.version == "9-0"


@pytest.mark.parametrize("reason", REMOVALS)
def test_each_removal_reaches_a_direct_and_a_hub_follower(redis_url: str, reason: Removal) -> None:
    """The storage's one removal (``forget``, which DELETE, the TTL sweep and a prune
    share) for each reason, against a real redis-server: the sync subscription and the
    hub's follower each take it with its reason, then the thread written again on 0-0."""
    settings = make_settings(redis_url, key_prefix=f"del-{reason}")
    store = store_for(settings)
    producer, drainer = Producer(store.client, settings, NoWake()), Drainer(store, settings)
    ref = "_/r"
    k = settings.keyspace.thread(ref)
    producer.enqueue("r", [{"role": "user", "content": "old", "id": "o"}])
    drainer.drain(ref)
    listener = redis.Redis.from_url(redis_url)
    events = subscription.follow(
        store, listener, subscription.Steps("r", ref, k.feed, "openai"), None, WINDOW_MS
    )

    async def scenario() -> None:
        astore = wiring.astore(settings, wiring.aredis(settings))
        hub = Hub(connect.alistener(settings, name="test-hub"), astore, lambda r: k.feed)
        try:
            sub = hub.subscribe(ref)
            start = await asyncio.wait_for(sub.next(), 10)
            assert isinstance(start, Start) and start.exists
            assert isinstance(next(events), Snapshot)
            assert run(store.client, delete.call(k, reason)) == 1
            gone = await asyncio.wait_for(sub.next(), 10)
            assert isinstance(gone, ThreadRemoved) and gone.reason == reason
            assert next(events) == Deleted("r", "0-0", reason)
            producer.enqueue("r", [{"role": "user", "content": "new", "id": "n"}])
            drainer.drain(ref)
            change = next(events)
            assert isinstance(change, Change) and change.prev == "0-0"
            assert [u.message for u in change.upserts] == [{"role": "user", "content": "new"}]
            published = await asyncio.wait_for(sub.next(), 10)
            assert isinstance(published, Published)
            assert (published.event.prev, published.event.version) == ("0-0", change.version)
        finally:
            await hub.close()
            await astore.client.aclose()

    try:
        asyncio.run(scenario())
    finally:
        events.close()  # type: ignore[attr-defined]
        listener.close()
