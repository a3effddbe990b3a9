"""Durable acknowledgements (``THREADFOLD_DURABILITY=replica``) across a failover.

A primary and its replica (real ``redis-server`` processes). Writers append through
the producer while the replica is stalled (SIGSTOP: a slow or partitioned replica),
then the primary is killed (SIGKILL) and the replica promoted (``REPLICAOF NO ONE``),
as Sentinel would. What the promoted replica holds is compared with what the writers
were told: with 'replica' every acknowledged delta survives; with 'primary' (the
default) the deltas acknowledged while the replica lagged are lost, which is the loss
window docs/failover.md states.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.infra.processes import wait_until
from tests.infra.redis_sentinel import QUICK_SYNC
from tests.infra.redis_server import RedisServer
from tests.workers.harness import WORKERS_ONLY, make_settings, start_api, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.core.errors import NotReplicated
from threadfold.testing import version_key
from threadfold.workers import wiring
from threadfold.workers.ingest.producer import AsyncProducer, Delta, Producer
from threadfold.workers.redisio.client import async_client, sync_client
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

THREADS = 6
WAIT_MS = 300


@dataclass
class Pair:
    primary: RedisServer
    replica: RedisServer

    def stall(self) -> None:
        os.kill(self.replica.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.replica.pid, signal.SIGCONT)

    def fail_over(self) -> None:
        """The primary dies (SIGKILL) and the replica takes its place."""
        self.primary.kill()
        self.resume()
        with self.replica.probe(timeout=5) as admin:
            admin.replicaof("NO", "ONE")


def _linked(primary: RedisServer, replica: RedisServer) -> bool:
    """The replica is in step: linked, and it acknowledges a write. A link that is up
    is not enough: until the replica's first acknowledgement after its sync the primary
    counts it at offset 0, and a replica stopped then (``stall``) is still counted so
    for up to a second after it resumes, so a write right after ``resume`` is not
    confirmed in a short timeout (seen as a test that failed two runs in three)."""
    with replica.probe() as r, primary.probe() as p:
        up = r.info("replication").get("master_link_status") == "up"
        if not (up and int(p.info("replication").get("connected_slaves", 0)) >= 1):
            return False
        p.set("threadfold-test:linked", 1)
        return int(p.wait(1, 1000)) >= 1


@pytest.fixture
def pair() -> Iterator[Pair]:
    with RedisServer(extra_args=QUICK_SYNC) as primary:
        args = ["--replicaof", "127.0.0.1", str(primary.port)]
        with RedisServer(extra_args=args) as replica:
            wait_until(lambda: _linked(primary, replica), 20, message="replica never synced")
            try:
                yield Pair(primary, replica)
            finally:
                os.kill(replica.pid, signal.SIGCONT)  # never leave it stopped


@dataclass
class Told:
    """What the writers were told: acknowledged (version, id) per thread, and the ids of
    the writes left in doubt (an error, not an answer)."""

    acked: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    doubtful: set[str] = field(default_factory=set)
    not_replicated: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _answered(told: Told) -> int:
    with told.lock:
        return sum(map(len, told.acked.values()))


def _writer(settings: Settings, told: Told, seed: int, stop: threading.Event) -> None:
    client = sync_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
    producer = Producer(client, settings, NoWake())
    step = 0
    try:
        while not stop.is_set():
            thread = f"d{(seed + step) % THREADS}"
            mid = f"w{seed}-{step}"
            delta = Delta(thread, [{"role": "user", "content": mid, "id": mid}], mid)
            try:
                [done] = producer.enqueue_many([delta])
            except NotReplicated:
                with told.lock:
                    told.doubtful.add(mid)
                    told.not_replicated += 1
            except (redis.ConnectionError, redis.TimeoutError):
                with told.lock:
                    told.doubtful.add(mid)
                return  # the primary is gone
            else:
                with told.lock:
                    told.acked.setdefault(thread, []).append((done.version, done.ids[0]))
            step += 1
            time.sleep(0.002)
    finally:
        client.close()


def _held(settings: Settings) -> dict[str, list[str]]:
    """Each thread's message ids on the promoted replica, its backlog drained first."""
    store = store_for(settings)
    drainer = Drainer(store, settings)
    held = {}
    for i in range(THREADS):
        drainer.drain(f"_/d{i}")
        page = store.read_state(f"_/d{i}")
        held[f"d{i}"] = [] if page is None else [m.id or "" for m in page.messages]
    return held


@pytest.mark.parametrize("durability", ["replica", "primary"])
def test_a_failover_keeps_every_acknowledged_delta_only_with_replica_durability(
    pair: Pair, durability: str
) -> None:
    settings = make_settings(
        pair.primary.url, durability=durability, durability_timeout_ms=WAIT_MS
    )
    told, stop = Told(), threading.Event()
    writers = [
        threading.Thread(target=_writer, args=(settings, told, n, stop)) for n in range(2)
    ]
    for w in writers:
        w.start()
    time.sleep(0.4)  # replicated as it goes
    pair.stall()  # the replica receives nothing now
    # Until writes were answered meanwhile: without the replica (primary), or refused
    # for want of it (replica). The stopped replica's socket still takes what the
    # primary sends, and it reads that back before it is promoted unless there is more
    # than one read's worth: so a thousand answered writes, however long a loaded
    # machine takes for them (a fixed 0.8 s was sometimes too few, and nothing lost).
    stalled_at = _answered(told)
    time.sleep(0.8)
    if durability == "primary":
        wait_until(lambda: _answered(told) >= stalled_at + 1000, 60)
    else:
        wait_until(lambda: told.not_replicated > 0, 30)
    pair.fail_over()
    stop.set()
    for w in writers:
        w.join(10)
    held = _held(make_settings(pair.replica.url))
    acked = {t: [m for _, m in sorted(got, key=lambda g: version_key(g[0]))]
             for t, got in told.acked.items()}
    lost = [m for t, ids in acked.items() for m in ids if m not in held[t]]
    sent = {m for ids in acked.values() for m in ids} | told.doubtful
    for thread, ids in held.items():
        assert set(ids) <= sent, f"{thread} holds what nobody wrote"
        survived = [m for m in acked.get(thread, []) if m in ids]
        assert [m for m in ids if m in survived] == survived, f"{thread} out of order"
    assert sum(map(len, told.acked.values())) > 50
    if durability == "replica":
        assert lost == [], f"{len(lost)} acknowledged deltas lost"
        assert told.not_replicated > 0  # the stalled replica was waited for, in vain
    else:
        # What was answered while the replica lagged is gone: the default's window.
        assert len(lost) > 10
        assert told.not_replicated == 0


def test_a_write_no_replica_confirms_answers_503_and_its_retry_is_safe(
    pair: Pair, tmp_path: Path
) -> None:
    settings = make_settings(pair.primary.url, durability="replica", durability_timeout_ms=200)
    api, url = start_api(settings, tmp_path)
    body = {"messages": [{"role": "user", "content": "hi", "id": "m1"}], "delta_id": "once"}
    try:
        pair.stall()
        status, answer, headers = _post(f"{url}/threads/t/deltas", body)
        assert status == 503, answer
        error = answer["error"]
        assert error["code"] == "not_replicated"
        assert (error["replicas"], error["wanted"]) == (0, 1)
        assert "retry with the same delta_id" in error["message"]
        assert headers.get("retry-after") == "1"
        pair.resume()
        status, answer, _ = _post(f"{url}/threads/t/deltas", body)
        assert status == 202, answer
        assert answer["duplicate"] is True  # the first attempt was stored on the primary
        state = httpx.get(f"{url}/threads/t/state", timeout=10).json()
        assert [m["id"] for m in state["messages"]] == ["m1"]
    finally:
        pair.resume()
        api.kill()


def test_streams_creates_deletes_and_patches_wait_too(pair: Pair) -> None:
    settings = make_settings(pair.primary.url, durability="replica", durability_timeout_ms=150)
    client = sync_client(pair.primary.url, cluster=False, retries=0)
    producer = Producer(client, settings, NoWake())
    store = wiring.store(settings, client)
    producer.enqueue("s", [{"role": "user", "content": "first"}])
    pair.stall()
    try:
        bulks = [[Delta("s", [{"role": "user", "content": f"{k}"}])] for k in range(2)]
        with pytest.raises(NotReplicated):
            list(producer.enqueue_stream(bulks))
        with pytest.raises(NotReplicated):
            producer.create(Delta("new", [{"role": "user", "content": "x"}]), [])
        with pytest.raises(NotReplicated):
            store.patch("_/s", "", "", 0, ["colour", json.dumps("red")])
        with pytest.raises(NotReplicated):
            store.delete("_/s")
    finally:
        pair.resume()
        client.close()


def _post(url: str, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
    r = httpx.post(url, json=body, timeout=10)
    return r.status_code, r.json(), dict(r.headers)


def test_replica_durability_is_refused_on_a_cluster() -> None:
    with pytest.raises(ValueError, match="needs one primary"):
        Settings(cluster=True, durability="replica")


@pytest.mark.parametrize("form", ["sync", "asyncio"])
def test_a_write_no_replica_confirmed_still_wakes_its_thread(pair: Pair, form: str) -> None:
    """Stored on the primary, it must be folded whatever becomes of the answer: its
    wake-up is sent before NotReplicated is raised (a retry is answered as a duplicate,
    which wakes nothing)."""
    settings = make_settings(pair.primary.url, durability="replica", durability_timeout_ms=150,
                             **WORKERS_ONLY)
    woken = NoWake()
    pair.stall()
    try:
        if form == "sync":
            client = sync_client(pair.primary.url, cluster=False, retries=0)
            with pytest.raises(NotReplicated):
                Producer(client, settings, woken).enqueue("w", [{"role": "user", "content": "x"}])
            client.close()
        else:
            asyncio.run(_enqueue_async(settings, woken))
    finally:
        pair.resume()
    assert woken.refs == ["_/w"]


async def _enqueue_async(settings: Settings, woken: NoWake) -> None:
    class Waking:
        async def wake(self, refs: Sequence[str]) -> None:
            woken.wake(refs)

    client = async_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
    producer = AsyncProducer(client, settings, Waking())
    with pytest.raises(NotReplicated):
        await producer.enqueue("w", [{"role": "user", "content": "x"}])
    await client.aclose()
