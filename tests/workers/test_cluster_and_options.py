"""Redis Cluster for state (broker standalone), poison threads, retention, chunk merging."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer
from tests.workers.harness import (
    ROOT,
    WORKERS_ONLY,
    load_jsonl,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from tests.workers.test_concurrency import NoWake
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.redisio.client import text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store


def test_a_three_master_cluster_holds_state_with_the_broker_outside_it(
    redis_cluster: RedisCluster, redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = make_settings(
        redis_cluster.url, cluster=True, broker_url=redis_server.url, key_prefix="cl"
    )
    workers = [start_worker(settings, f"c{i}", tmp_path) for i in range(4)]
    try:
        seeds = [21, 22]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.workers.produce",
                    str(seed),
                    "120",
                    "500",
                    str(tmp_path / f"p{seed}.jsonl"),
                    "cl",
                ],
                env={**settings_env(settings), "PYTHONPATH": str(ROOT)},
                cwd=ROOT,
            )
            for seed in seeds
        ]
        for proc in procs:
            assert proc.wait(timeout=300) == 0
        sent = Ledger()
        for seed in seeds:
            load_jsonl(sent, tmp_path / f"p{seed}.jsonl")
        store = store_for(settings)
        wait_drained(store, sent.threads(), timeout=120)
        for ref in sent.threads():
            assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
        nodes = {
            store.client.keyslot(  # type: ignore[union-attr]  # a cluster client
                settings.keyspace.thread(ref).log
            )
            for ref in sent.threads()
        }
        assert len(nodes) > 20  # threads really are spread over slots
    finally:
        for worker in workers:
            worker.kill()


def _bad_between(
    settings: Settings, store: Store, thread: str, fields: dict[str, bytes]
) -> tuple[Producer, str]:
    """A good delta, an entry written by hand with ``fields``, a good delta; the
    producer and the bad entry's id."""
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue(thread, [{"role": "user", "content": "before", "id": "1"}])
    log = settings.keyspace.thread(f"_/{thread}").log
    bad = text(store.client.xadd(log, fields))  # type: ignore[arg-type]
    producer.enqueue(thread, [{"role": "user", "content": "after", "id": "2"}])
    return producer, bad


def test_a_poison_entry_quarantines_its_thread_only_and_an_operator_can_skip_it(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, failure_limit=3)
    store = store_for(settings)
    producer, bad = _bad_between(settings, store, "sick", {"d": b"\xc1not msgpack"})
    producer.enqueue("well", [{"role": "user", "content": "fine", "id": "1"}])
    drainer = Drainer(store, settings)
    reports = [drainer.drain("_/sick") for _ in range(3)]
    assert [r.quarantined for r in reports] == [False, False, True]
    assert [m["content"] for m in state_dump(store, "_/sick")] == ["before"]
    status = store.status("_/sick")
    assert status is not None and status.quarantine_reason is not None
    assert status.quarantine_reason.startswith("cannot decode")
    assert status.quarantined_entry == bad
    assert status.backlog == 2  # the poison entry and the one after it
    assert store.quarantined(range(settings.buckets)) == ["_/sick"]
    drainer.drain("_/well")
    assert [m["content"] for m in state_dump(store, "_/well")] == ["fine"]

    producer.enqueue("sick", [{"role": "user", "content": "later", "id": "3"}])  # accepted, kept
    retried = store.retry("_/sick", settings.wake_ttl_ms, skip=True)
    assert retried is not None and (retried.woke, retried.skipped) == (True, bad)
    drainer.drain("_/sick")
    assert [m["content"] for m in state_dump(store, "_/sick")] == ["before", "after", "later"]
    assert store.quarantined(range(settings.buckets)) == []


def test_an_entry_without_its_payload_field_is_named_as_such_and_loses_nothing(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, failure_limit=1)
    store = store_for(settings)
    _bad_between(settings, store, "bare", {"x": b"by hand"})
    assert Drainer(store, settings).drain("_/bare").quarantined
    status = store.status("_/bare")
    assert status is not None
    assert status.quarantine_reason == "cannot decode: no payload (stream field 'd')"
    assert status.backlog == 2  # the bare entry and the one after it, kept
    assert [m["content"] for m in state_dump(store, "_/bare")] == ["before"]


def test_retention_keeps_applied_entries_for_replay(redis_url: str) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    for i in range(5):
        producer.enqueue("kept", [{"role": "user", "content": str(i), "id": str(i % 2)}])
    Drainer(store, settings).drain("_/kept")
    assert store.client.xlen(settings.keyspace.thread("_/kept").log) == 5
    status = store.status("_/kept")
    assert status is not None and status.backlog == 0
    assert [m["content"] for m in state_dump(store, "_/kept")] == ["4", "3"]


@pytest.mark.parametrize("merge", [False, True])
def test_streamed_chunks_replace_by_default_and_merge_when_asked(
    redis_url: str, merge: bool
) -> None:
    settings = make_settings(redis_url, merge_chunks=merge, batch_size=2)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    for part in ["Hel", "lo, ", "world"]:
        producer.enqueue("s", [{"type": "AIMessageChunk", "content": part, "id": "run-1"}])
    Drainer(store, settings).drain("_/s")
    [message] = state_dump(store, "_/s")
    assert message["type"] == "AIMessageChunk"
    assert message["content"] == ("Hello, world" if merge else "world")


def test_the_sweeper_ignores_a_thread_whose_wake_up_is_live(redis_url: str) -> None:
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    Producer(store.client, settings, NoWake()).enqueue("live", ["x"])
    assert store.dirty(range(settings.buckets)) == ["_/live"]
    assert store.wake_if_stalled(["_/live"], settings.wake_ttl_ms) == []
    store.client.delete(settings.keyspace.thread("_/live").sched)  # the lease lapsed
    assert store.wake_if_stalled(["_/live"], settings.wake_ttl_ms) == ["_/live"]
    assert store.wake_if_stalled(["_/live"], settings.wake_ttl_ms) == []  # it holds the flag now
