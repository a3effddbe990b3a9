"""Redis out of memory (``maxmemory``, ``noeviction``) under the real pipeline.

Writes are refused as a retryable error (the API's 503 ``redis_full``, the producer's
``RedisFull``), ``/readyz`` says why, Celery workers and beat stay up (a broker on the
full Redis used to make both workers exit for good), and once memory is freed the
backlog drains by itself: every acknowledged delta ends in the state, as the
one-at-a-time fold has it.
"""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra.processes import ManagedProcess, wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import (
    WORKERS_ONLY,
    make_settings,
    start_api,
    start_beat,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.core import dump_messages
from threadfold.core.errors import RedisFull
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.runtime.tasks import Runtime, sweep_once
from threadfold.workers.storage.store import Store

PAD = "x" * 1500  # a big message per delta fills Redis in a few dozen bulks
THREADS = 20


def limit_to(server: RedisServer, headroom: int) -> None:
    """``maxmemory`` at what Redis uses now plus ``headroom`` bytes."""
    with server.probe() as admin:
        admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) + headroom)


def free(server: RedisServer) -> None:
    with server.probe() as admin:
        admin.config_set("maxmemory", 0)


def bulk(rng: random.Random, k: int) -> list[dict[str, Any]]:
    """One delta for each thread: random appends, updates and removals, and a big append."""
    return [
        {
            "thread_id": f"f{t}",
            "messages": [*random_messages(rng, k), {"role": "user", "content": f"{k} {PAD}"}],
            "delta_id": f"{k}-{t}",
        }
        for t in range(THREADS)
    ]


def check_every_acknowledged_delta_is_applied(store: Store, sent: Ledger) -> None:
    for ref in sent.threads():
        assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
        found = store.stored(ref)
        assert found is not None and not found.status.quarantined, (ref, found)
        assert found.applied == len(sent.deltas(ref)), ref


def met_a_full_redis(worker: ManagedProcess) -> bool:
    """Redis's OOM answer in the worker's log: its consumer (broker on the full Redis)
    or a drain of its met it."""
    return "maxmemory" in worker.read_log()


def test_a_full_redis_answers_503_keeps_workers_and_beat_up_and_drains_once_freed(
    tmp_path: Path,
) -> None:
    # One Redis for state and broker, as the issue found it: kombu's bookkeeping of the
    # wake-ups it hands out is refused too, which made both workers exit for good.
    with RedisServer() as server:
        settings = make_settings(server.url, failure_limit=1)
        store = store_for(settings)
        limit_to(server, 1_500_000)
        beat = start_beat(settings, tmp_path)
        api, url = start_api(settings, tmp_path)
        workers: list[ManagedProcess] = []
        rng, sent = random.Random(13), Ledger()
        try:
            with httpx.Client(base_url=url, timeout=30) as http:
                # No worker yet: what is accepted waits in the logs, and fills Redis.
                for k in itertools.count():
                    deltas = bulk(rng, k)
                    response = http.post("/deltas", json={"deltas": deltas})
                    if response.status_code != 202:
                        break
                    for delta, done in zip(deltas, response.json()["results"], strict=True):
                        sent.add(f"_/{delta['thread_id']}", done["version"],
                                 delta["messages"], done["ids"])
                assert response.status_code == 503, response.text
                assert response.headers["retry-after"] == "5"
                assert response.json()["error"]["code"] == "redis_full"
                assert sent.count >= 5 * THREADS  # it filled, not refused from the start
                ready = http.get("/readyz")
                assert ready.status_code == 503
                assert ready.json()["error"]["reasons"] == ["redis_full"]

                workers = [start_worker(settings, f"oom{i}", tmp_path) for i in range(2)]
                wait_until(
                    lambda: all(met_a_full_redis(w) for w in workers),
                    60,
                    message="the workers did not meet the full Redis",
                )
                free(server)
                # The refused bulk, retried with its delta_ids, is accepted now.
                retried = http.post("/deltas", json={"deltas": deltas})
                assert retried.status_code == 202, retried.text
                for delta, done in zip(deltas, retried.json()["results"], strict=True):
                    sent.add(f"_/{delta['thread_id']}", done["version"],
                             delta["messages"], done["ids"])
                wait_drained(store, sent.threads(), timeout=60)
                check_every_acknowledged_delta_is_applied(store, sent)
                assert [w.alive for w in workers] == [True, True], [
                    w.read_log()[-2000:] for w in workers
                ]
                assert beat.alive and api.alive
                assert http.get("/readyz").status_code == 200
        finally:
            for process in [*workers, beat, api]:
                process.kill()


def test_a_drain_that_meets_a_full_redis_waits_for_memory_instead_of_failing(
    tmp_path: Path,
) -> None:
    """The broker apart (as ``threadfold up`` keeps it): wake-ups reach the workers, and
    their drains meet the full Redis. A drain waits for memory and hands on, so the
    backlog drains within moments of memory being freed, not after the wake-up flag's
    lease (a minute here: a failed drain leaves its thread to the lease and the
    sweeper); no drain counts toward quarantine (failure_limit=1)."""
    with RedisServer() as state, RedisServer() as broker:
        settings = make_settings(
            state.url, broker_url=broker.url, failure_limit=1, wake_ttl_seconds=60.0
        )
        store = store_for(settings)
        app = make_celery(settings)
        producer = Producer(store.client, settings, CeleryWaker(app, settings.queue))
        limit_to(state, 1_000_000)
        rng, sent = random.Random(17), Ledger()
        workers: list[ManagedProcess] = []
        beat = start_beat(settings, tmp_path)
        try:
            with pytest.raises(RedisFull, match="Redis is full") as refused:
                for k in itertools.count():
                    deltas = [Delta(d["thread_id"], d["messages"], d["delta_id"])
                              for d in bulk(rng, k)]
                    for delta, done in zip(deltas, producer.enqueue_many(deltas), strict=True):
                        sent.add(f"_/{delta.thread_id}", done.version, list(delta.messages),
                                 done.ids)
            assert isinstance(refused.value, RedisFull) and sent.count >= 5 * THREADS
            workers = [start_worker(settings, f"wait{i}", tmp_path) for i in range(2)]
            wait_until(
                lambda: any("wait for memory" in w.read_log() for w in workers),
                60,
                message="no drain met the full Redis",
            )
            free(state)
            wait_drained(store, sent.threads(), timeout=30)
            check_every_acknowledged_delta_is_applied(store, sent)
            assert [w.alive for w in workers] == [True, True] and beat.alive
        finally:
            for process in [*workers, beat]:
                process.kill()
            app.close()


def test_the_sweeper_goes_on_past_a_full_redis_and_wakes_the_thread_once_freed(
    redis_server: RedisServer,
) -> None:
    settings = make_settings(redis_server.url, wake_ttl_seconds=0.2, **WORKERS_ONLY)
    store = store_for(settings)
    Producer(store.client, settings, NoWake()).enqueue("stalled", ["x"])  # wake-up lost
    flag = settings.keyspace.thread("_/stalled").sched

    def stalled() -> bool:  # what the sweeper looks for: dirty for longer than the lease
        older_than = int(time.time() * 1000) - settings.wake_ttl_ms
        dirty = store.dirty(range(settings.buckets), older_than_ms=older_than)
        return dirty == ["_/stalled"] and not store.client.exists(flag)

    wait_until(stalled, 10, message="the thread did not stall")
    app = make_celery(settings)
    runtime = Runtime(app, settings)
    try:
        with redis_server.probe() as admin:
            admin.config_set("maxmemory", 1)  # far under what it uses: full
        assert sweep_once(runtime) == []  # setting the flag is refused: try again later
        free(redis_server)
        assert sweep_once(runtime) == ["_/stalled"]
        assert store.client.exists(flag)
    finally:
        runtime.store.client.close()
        app.close()
