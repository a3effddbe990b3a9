"""Duplicated, concurrent and stale drains change nothing (compare-and-set on the cursor)."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import (
    WORKERS_ONLY,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from tests.workers.produce import random_messages
from threadfold.core import dump_messages
from threadfold.core.codec import decode_messages
from threadfold.core.fold import ThreadFold
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.runtime.drain import Drainer, _decode, _mentioned
from threadfold.workers.runtime.drain.batch import Batch, read_batch, read_batches
from threadfold.workers.settings import Settings
from threadfold.workers.storage.commit import CommitPlan
from threadfold.workers.storage.lookup import Found
from threadfold.workers.storage.store import Store


class NoWake:
    """A producer that dies right after appending: no wake-up is ever sent."""

    def __init__(self) -> None:
        self.refs: list[str] = []

    def wake(self, refs: Sequence[str]) -> None:
        self.refs.extend(refs)


def _produce(settings: Settings, store: Store, threads: int, deltas: int, seed: int) -> Ledger:
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(seed)
    sent = Ledger()
    for step in range(deltas):
        thread = f"c{rng.randrange(threads)}"
        messages = random_messages(rng, step)
        result = producer.enqueue(thread, messages)
        sent.add(f"_/{thread}", result.version, messages, result.ids)
    return sent


def test_the_same_drain_run_concurrently_and_repeatedly_applies_each_entry_once(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, batch_size=7)
    store = store_for(settings)
    sent = _produce(settings, store, threads=3, deltas=400, seed=7)
    refs = sorted(sent.threads())

    def drain_all() -> None:
        drainer = Drainer(store_for(settings), settings)
        for _ in range(3):
            for ref in refs:
                drainer.drain(ref)

    runners = [threading.Thread(target=drain_all) for _ in range(4)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    for ref in refs:
        assert state_dump(store, ref) == dump_messages(sent.expected(ref))
        found = store.stored(ref)
        assert found is not None and found.status.backlog == 0
        assert found.applied == len(sent.deltas(ref))  # every entry applied once, not more


def test_a_stale_worker_committing_late_is_refused_and_changes_nothing(redis_url: str) -> None:
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("s", [{"role": "user", "content": "a", "id": "1"}])
    stale = read_batch(store, "_/s", 100)  # a worker reads, then stalls...

    producer.enqueue("s", [{"role": "user", "content": "b", "id": "1"}])
    Drainer(store, settings).drain("_/s")  # ...while another drains everything
    before = state_dump(store, "_/s")

    [done] = store.commit_many([_commit_of(settings, "_/s", stale)])
    assert not done.ok
    assert (
        state_dump(store, "_/s")
        == before
        == [
            {
                "content": "b",
                "additional_kwargs": {},
                "response_metadata": {},
                "type": "human",
                "name": None,
                "id": "1",
            }
        ]
    )


def test_duplicate_wake_ups_sent_to_four_workers_leave_the_state_exact(
    redis_url: str, broker_url: str | None, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, broker_url=broker_url, batch_size=5)
    store = store_for(settings)
    sent = _produce(settings, store, threads=4, deltas=300, seed=11)
    app = make_celery(settings)
    waker = CeleryWaker(app, settings.queue)
    workers = [start_worker(settings, f"d{i}", tmp_path) for i in range(4)]
    try:
        for _ in range(25):  # 100 wake-ups for 4 threads, all at once
            for ref in sorted(sent.threads()):
                waker.wake([ref])
        wait_drained(store, sent.threads(), timeout=60)
        for ref in sent.threads():
            assert state_dump(store, ref) == dump_messages(sent.expected(ref))
    finally:
        for worker in workers:
            worker.kill()
        app.close()


def _commit_of(settings: Settings, ref: str, batch: Batch) -> CommitPlan:
    known = batch.known(_mentioned(_decode(batch))) or {}
    fold = ThreadFold(known, batch.next_position)
    for _, payload in batch.entries:
        fold.apply(decode_messages(payload))
    stored = Found(known, batch.pages, batch.per)
    effect = fold.take_effect()
    last = batch.entries[-1][0]
    count = len(batch.entries)
    return CommitPlan(
        ref,
        batch.fence,
        last,
        count,
        fold.next_position,
        effect,
        stored,
        0,
        settings.wake_ttl_ms,
        settings.feed_limits,
    )


@pytest.mark.parametrize("where", ["standalone", "cluster"])
def test_merged_commits_stand_or_fail_each_on_their_own(
    where: str, redis_url: str, redis_cluster: RedisCluster
) -> None:
    """A drain round sends all its threads' commits as one script call (per slot on a
    cluster): a refused one (its cursor moved) leaves the others applied."""
    url = redis_url if where == "standalone" else redis_cluster.url
    settings = make_settings(
        url, cluster=where == "cluster", key_prefix=f"mc{where[0]}", **WORKERS_ONLY
    )
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    refs = [f"_/m{i}" for i in range(30)]
    for i, ref in enumerate(refs):
        producer.enqueue(ref[2:], [{"role": "user", "content": f"x{i}", "id": "1"}])
    batches = read_batches(store, refs, 100)
    stale = refs[::3]  # these move on meanwhile: their commits below must be refused
    for ref in stale:
        producer.enqueue(ref[2:], [{"role": "user", "content": "later", "id": "2"}])
        Drainer(store, settings).drain(ref)
    done = store.commit_many(
        [_commit_of(settings, r, b) for r, b in zip(refs, batches, strict=True)]
    )
    for ref, answer in zip(refs, done, strict=True):
        assert answer.ok == (ref not in stale), ref
        contents = [m["content"] for m in state_dump(store, ref)]
        assert contents == (
            [f"x{refs.index(ref)}", "later"] if ref in stale else [f"x{refs.index(ref)}"]
        )
