"""``Producer.enqueue_stream``: bulks pipelined on one connection, one in flight."""

from __future__ import annotations

import random
from typing import Any

import pytest

from core import dump_messages
from core.errors import InvalidMessage
from tests.workers.harness import Sent, make_settings, state_dump, store_for, version_key
from tests.workers.produce import random_messages
from tests.workers.test_ingest_groups import Woken
from workers import ops
from workers.drain import Drainer
from workers.producer import Delta, Enqueued, Producer
from workers.settings import Settings
from workers.store import Store


def _bulks(rng: random.Random, count: int, threads: int, prefix: str) -> list[list[Delta]]:
    bulks = []
    for b in range(count):
        bulk = []
        for i in range(rng.randint(1, 60)):
            delta_id = f"{prefix}-{b}-{i}" if rng.random() < 0.2 else None
            messages = random_messages(rng, b * 100 + i)
            bulk.append(Delta(f"{prefix}{rng.randrange(threads)}", messages, delta_id))
            if delta_id and rng.random() < 0.5:
                bulk.append(Delta(bulk[-1].thread_id, messages, delta_id))  # retried
        bulks.append(bulk)
    return bulks


def _record(sent: Sent, bulk: list[Delta], results: list[Enqueued]) -> None:
    for delta, result in zip(bulk, results, strict=True):
        if not result.duplicate:
            sent.add(f"_/{delta.thread_id}", result.version, list(delta.messages), result.ids)


def _setup(redis_url: str, prefix: str) -> tuple[Settings, Store, Producer, Woken]:
    settings = make_settings(redis_url, key_prefix=prefix)
    store = store_for(settings)
    woken = Woken()
    return settings, store, Producer(store.client, settings, woken), woken


def _entry_ids(store: Store, log: str) -> list[str]:
    client: Any = store.client
    return [ops.text(entry) for entry, _ in client.xrange(log)]


def _log_lengths(settings: Settings, store: Store, refs: set[str]) -> dict[str, int]:
    return {ref: int(store.client.xlen(settings.keyspace.thread(ref).log)) for ref in refs}


def test_a_stream_answers_every_bulk_in_order_and_folds_to_the_one_at_a_time_state(
    redis_url: str,
) -> None:
    settings, store, producer, woken = _setup(redis_url, "st1")
    bulks = _bulks(random.Random(5), 40, 12, "s")
    sent = Sent()
    answered = 0
    for bulk, results in zip(bulks, producer.enqueue_stream(bulks), strict=True):
        assert [r.thread_id for r in results] == [d.thread_id for d in bulk]
        _record(sent, bulk, results)
        answered += 1
    assert answered == len(bulks)
    # Each thread's versions ascend across bulks: one connection keeps them in order.
    for deltas in sent.deltas.values():
        keys = [version_key(v) for v, _, _ in deltas]
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert set(woken.refs) == set(sent.deltas)
    Drainer(store, settings).drain_many(sorted(sent.deltas))
    for ref in sent.deltas:
        assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref


def test_a_bad_bulk_is_refused_after_the_bulks_before_it_are_answered(redis_url: str) -> None:
    settings, store, producer, _ = _setup(redis_url, "st2")
    good = [Delta(f"b{i % 3}", [{"role": "user", "content": str(i)}]) for i in range(9)]
    bad = [*good[:3], Delta("b1", [{"role": "user", "content": 7}])]
    bulks = [good[:4], good[4:], bad, good]
    got: list[list[Enqueued]] = []
    with pytest.raises(InvalidMessage) as caught:
        for results in producer.enqueue_stream(bulks):
            got.append(results)
    assert caught.value.path == "bulks[2].deltas[3].messages[0].content"
    assert [len(r) for r in got] == [4, 5]  # both bulks before it, answered
    # Nothing of the bad bulk, nor of the one after it, was appended.
    assert _log_lengths(settings, store, {"_/b0", "_/b1", "_/b2"}) == {
        "_/b0": 3,
        "_/b1": 3,
        "_/b2": 3,
    }


def test_a_stream_reloads_scripts_a_flushed_cache_lost_keeping_each_threads_order(
    redis_url: str,
) -> None:
    settings, store, producer, _ = _setup(redis_url, "st3")
    store.client.script_flush()
    bulks = [
        [Delta("f", [{"role": "user", "content": f"{b}.{i}"}]) for i in range(5)] for b in range(4)
    ]
    versions = [r.version for results in producer.enqueue_stream(bulks) for r in results]
    assert [version_key(v) for v in versions] == sorted(version_key(v) for v in versions)
    assert _entry_ids(store, settings.keyspace.thread("_/f").log) == versions


def test_leaving_a_stream_with_a_bulk_in_flight_drops_its_connection_and_loses_no_delta(
    redis_url: str,
) -> None:
    settings, store, producer, _ = _setup(redis_url, "st4")
    bulks = [[Delta("l", [{"role": "user", "content": f"{b}"}])] for b in range(5)]
    stream = producer.enqueue_stream(bulks)
    first = next(stream)  # bulk 0 answered, bulk 1 sent and not read
    stream.close()
    client: Any = store.client
    pool = client.connection_pool
    assert not pool._in_use_connections  # given back (dropped: its reply was unread)
    log = settings.keyspace.thread("_/l").log
    entries = _entry_ids(store, log)
    assert entries[0] == first[0].version
    assert len(entries) == 2  # the bulk in flight was appended; the rest never sent
    again = producer.enqueue_many([Delta("l", [{"role": "user", "content": "next"}])])
    assert version_key(again[0].version) > version_key(entries[-1])
