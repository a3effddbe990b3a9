"""``Producer.enqueue_stream``: bulks pipelined on one connection, one in flight."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from tests.workers.produce import random_messages
from tests.workers.test_ingest_groups import Woken
from threadfold.core import dump_messages
from threadfold.core.errors import InvalidMessage
from threadfold.core.results import Appended
from threadfold.testing import Ledger, version_key
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import sync_client, text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store


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


def _record(sent: Ledger, bulk: list[Delta], results: list[Appended]) -> None:
    for delta, result in zip(bulk, results, strict=True):
        if not result.duplicate:
            sent.add(f"_/{delta.thread_id}", result.version, list(delta.messages), result.ids)


def _setup(redis_url: str, prefix: str) -> tuple[Settings, Store, Producer, Woken]:
    # The log itself is what these tests read (order, in-flight bulks): every append
    # waits there for a worker.
    settings = make_settings(redis_url, key_prefix=prefix, **WORKERS_ONLY)
    store = store_for(settings)
    woken = Woken()
    return settings, store, Producer(store.client, settings, woken), woken


def _entry_ids(store: Store, log: str) -> list[str]:
    client: Any = store.client
    return [text(entry) for entry, _ in client.xrange(log)]


def _log_lengths(settings: Settings, store: Store, refs: set[str]) -> dict[str, int]:
    return {ref: int(store.client.xlen(settings.keyspace.thread(ref).log)) for ref in refs}


def test_a_stream_answers_every_bulk_in_order_and_folds_to_the_one_at_a_time_state(
    redis_url: str,
) -> None:
    settings, store, producer, woken = _setup(redis_url, "st1")
    bulks = _bulks(random.Random(5), 40, 12, "s")
    sent = Ledger()
    answered = 0
    keys: dict[str, list[tuple[int, int]]] = {}  # per thread, in the order answered
    for bulk, results in zip(bulks, producer.enqueue_stream(bulks), strict=True):
        assert [r.thread_id for r in results] == [d.thread_id for d in bulk]
        _record(sent, bulk, results)
        for r in results:
            if not r.duplicate:  # a duplicate is answered with the first write's version
                keys.setdefault(r.thread_id, []).append(version_key(r.version))
        answered += 1
    assert answered == len(bulks)
    # Each thread's versions ascend across bulks: one connection keeps them in order.
    for answered_keys in keys.values():
        assert answered_keys == sorted(answered_keys)
        assert len(set(answered_keys)) == len(answered_keys)
    assert set(woken.refs) == set(sent.threads())
    Drainer(store, settings).drain_many(sorted(sent.threads()))
    for ref in sent.threads():
        assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref


def test_a_bad_bulk_is_refused_after_the_bulks_before_it_are_answered(redis_url: str) -> None:
    settings, store, producer, _ = _setup(redis_url, "st2")
    good = [Delta(f"b{i % 3}", [{"role": "user", "content": str(i)}]) for i in range(9)]
    bad = [*good[:3], Delta("b1", [{"role": "user", "content": 7}])]
    bulks = [good[:4], good[4:], bad, good]
    got: list[list[Appended]] = []
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
    settings, store, producer, woken = _setup(redis_url, "st4")
    bulks = [[Delta(f"l{b}", [{"role": "user", "content": f"{b}"}])] for b in range(5)]
    stream = producer.enqueue_stream(bulks)
    first = next(stream)  # bulk 0 answered, bulk 1 sent and not read
    stream.close()
    client: Any = store.client
    pool = client.connection_pool
    assert not pool._in_use_connections  # given back
    assert _entry_ids(store, settings.keyspace.thread("_/l0").log) == [first[0].version]
    # The bulk in flight was appended, and its thread woken; the rest were never sent.
    assert len(_entry_ids(store, settings.keyspace.thread("_/l1").log)) == 1
    assert woken.refs == ["_/l0", "_/l1"]
    assert _log_lengths(settings, store, {"_/l2", "_/l3"}) == {"_/l2": 0, "_/l3": 0}
    log = settings.keyspace.thread("_/l0").log
    entries = _entry_ids(store, log)
    again = producer.enqueue_many([Delta("l0", [{"role": "user", "content": "next"}])])
    assert version_key(again[0].version) > version_key(entries[-1])


def _broken_thread(settings: Settings, store: Store, thread: str) -> None:
    """A thread whose log key holds a string: its XADD fails inside the ingest script."""
    store.client.set(settings.keyspace.thread(f"_/{thread}").log, "not a stream")


def test_a_bulk_sharing_a_thread_with_a_refused_one_is_never_sent(redis_url: str) -> None:
    settings, store, producer, _ = _setup(redis_url, "st5")
    _broken_thread(settings, store, "bad")
    bulks = [
        [Delta("x", [{"role": "user", "content": "0"}]), Delta("bad", ["0"])],
        [Delta("x", [{"role": "user", "content": "1"}])],
    ]
    with pytest.raises(Exception, match="WRONGTYPE"):
        list(producer.enqueue_stream(bulks))
    # Bulk 1 shares thread x with bulk 0: it waited for bulk 0's answer, and was never
    # sent, so x's second delta cannot have overtaken its first.
    assert _log_lengths(settings, store, {"_/x"}) == {"_/x": 1}


def test_a_refused_bulk_raises_after_the_disjoint_bulk_sent_behind_it_is_settled(
    redis_url: str,
) -> None:
    settings, store, producer, woken = _setup(redis_url, "st6")
    _broken_thread(settings, store, "bad")
    bulks = [[Delta("bad", ["0"])], [Delta("y", ["1"])], [Delta("z", ["2"])]]
    with pytest.raises(Exception, match="WRONGTYPE") as caught:
        list(producer.enqueue_stream(bulks))
    assert "the bulk sent after it was appended (1 deltas)" in (caught.value.__notes__ or [])
    assert _log_lengths(settings, store, {"_/y", "_/z"}) == {"_/y": 1, "_/z": 0}
    assert woken.refs == ["_/y"]  # stored, so woken


def test_a_stream_idle_past_the_health_check_interval_keeps_its_replies(
    redis_url: str,
) -> None:
    """redis-py PINGs a connection idle for ``health_check_interval`` before a send: with
    a bulk in flight, that PING would read the bulk's reply as its own."""
    settings, store, _, _ = _setup(redis_url, "st7")
    client: Any = sync_client(redis_url, cluster=False, retries=0)
    client.connection_pool.connection_kwargs["health_check_interval"] = 1
    producer = Producer(client, settings, Woken())

    def slow() -> Any:
        for b in range(3):
            if b:
                time.sleep(1.2)  # bulk b-1 in flight, the connection idle past 1 s
            # Threads of their own: bulk b goes out with bulk b-1 still unanswered.
            yield [Delta(f"h{b}", [{"role": "user", "content": f"{i}"}]) for i in range(3)]

    answered = list(producer.enqueue_stream(slow()))
    for b, results in enumerate(answered):
        log = settings.keyspace.thread(f"_/h{b}").log
        assert _entry_ids(store, log) == [r.version for r in results]
    client.close()


@pytest.mark.parametrize(
    ("bulk", "error"),
    [
        (["not a delta"], r"^bulks\[1\]\.deltas\[0\]: expected a Delta, got str$"),
        (None, r"^bulks\[1\]\.deltas: expected a sequence of Delta, got NoneType$"),
    ],
)
def test_a_bulk_that_is_not_deltas_is_refused_precisely_after_the_one_before(
    redis_url: str, bulk: Any, error: str
) -> None:
    settings, store, producer, _ = _setup(redis_url, "st8")
    got = []
    with pytest.raises(InvalidMessage, match=error):
        for results in producer.enqueue_stream([[Delta("n", ["ok"])], bulk]):
            got.append(results)
    assert [len(r) for r in got] == [1]
    assert _log_lengths(settings, store, {"_/n"}) == {"_/n": 1}
