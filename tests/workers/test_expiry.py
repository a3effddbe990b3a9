"""Threads expire (issue 22): a real worker and beat over a real Redis (standalone and
Cluster), thousands of threads going idle while others are written. An idle thread is
removed whole, every key and every index entry of it; a thread written meanwhile keeps
every delta acknowledged; a write after an expiry starts a new thread; a pinned thread
stays; nothing is left behind but the bucket counters."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import pytest

from tests.infra.processes import wait_until
from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, start_beat, start_worker, store_for
from threadfold import Client, Deleted, Event, NotFound, Snapshot
from threadfold.workers.redisio.client import text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

IDLE = 1200  # threads left to expire
KEPT = 40  # threads written every few hundred ms meanwhile


def _keys(store: Store, prefix: str) -> set[str]:
    client: Any = store.client
    if hasattr(client, "get_primaries"):  # a cluster: every primary's keys
        found: set[str] = set()
        for node in client.get_primaries():
            found |= {text(k) for k in client.scan_iter(f"*{prefix}*", target_nodes=node)}
        return found
    return {text(k) for k in client.scan_iter(f"*{prefix}*")}


def _run(settings: Settings, tmp_path: Path, idle: int, kept: int) -> None:
    store = store_for(settings)
    worker = start_worker(settings, "expiry", tmp_path)
    beat = start_beat(settings, tmp_path)
    try:
        with Client(settings=settings) as client:
            _expire_while_writing(client, store, settings, idle, kept)
    finally:
        worker.kill()
        beat.kill()


def _expire_while_writing(
    client: Client, store: Store, settings: Settings, idle: int, kept: int
) -> None:
    msg = [{"role": "user", "content": "hello"}]
    deltas = [(f"idle-{i}", msg) for i in range(idle)]
    for start in range(0, len(deltas), 500):
        client.append_many(deltas[start : start + 500])
    client.append("pinned", msg, metadata={"keep": True})
    client.update("pinned", pinned=True)
    client.append("reborn", msg, metadata={"gen": 1})
    sent: dict[str, int] = {f"kept-{i}": 0 for i in range(kept)}
    # When each kept thread was last written, and its longest pause between two writes.
    written: dict[str, float] = dict.fromkeys(sent, time.monotonic())
    pauses: dict[str, float] = dict.fromkeys(sent, 0.0)
    stop = threading.Event()

    def write() -> None:  # each kept thread written every ~0.25 s, well below its TTL
        while not stop.is_set():
            for ref, n in sent.items():
                client.append(ref, [{"role": "user", "content": str(n)}])
                now = time.monotonic()
                pauses[ref] = max(pauses[ref], now - written[ref])
                written[ref] = now
                sent[ref] = n + 1
            time.sleep(0.25)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        wait_until(
            lambda: client.count(metadata={"gen": 1}) == 0
            and not any(_keys(store, f"idle-{i}:") for i in (0, idle // 2, idle - 1)),
            60,
            message="idle threads did not expire",
        )
        wait_until(
            lambda: client.count() == kept + 1, 60, message="not only kept and pinned left"
        )
    finally:
        stop.set()
        writer.join()
    # The last writes at once, in one call (checking each thread before writing the next
    # would leave the later ones idle past their TTL), the pause before them counted.
    lasts = client.append_many([(ref, [{"role": "user", "content": "last"}]) for ref in sent])
    for ref in sent:
        pauses[ref] = max(pauses[ref], time.monotonic() - written[ref])
    # A write after the expiry starts a new thread: no metadata, born again.
    again = client.append("reborn", msg)
    status = client.status("reborn")
    assert status.metadata == {} and status.created_ms == int(again.version.split("-")[0])
    # A kept thread never paused as long as its TTL holds every delta written to it.
    # One the machine's load paused longer may have expired meanwhile: then it holds
    # the deltas of its new incarnation, every one of them since its rebirth.
    ttl = settings.thread_ttl_seconds
    whole = 0
    for (ref, n), last in zip(sent.items(), lasts, strict=True):
        state = client.state(ref, min_version=last.version, wait=20)
        contents = [m["content"] for m in state.messages]
        if pauses[ref] < ttl - 0.5:
            assert contents == [*map(str, range(n)), "last"], (ref, pauses[ref])
            whole += 1
        else:
            assert contents == [*map(str, range(n - len(contents) + 1, n)), "last"], ref
    assert whole > 0, f"every kept thread paused for its TTL: {sorted(pauses.values())[:3]}"
    assert client.status("pinned").pinned
    assert [r.thread_id for r in client.search(metadata={"keep": True}).threads] == ["pinned"]
    # Nothing of an expired thread is left: no key, no index entry.
    left = _keys(store, "idle-")
    assert left == set(), sorted(left)[:5]
    members: set[str] = set()
    for bucket in range(settings.buckets):
        k = settings.keyspace.bucket_of_tenant(bucket, "_")
        for key in (k.active, k.born, k.expiry, k.dirty, k.quarantine):
            members |= {text(m) for m in store.client.zrange(key, 0, -1)}
        members |= {text(m) for m in store.client.smembers(k.threads)}
        members |= {text(m) for m in store.client.zrange(k.terms, 0, -1)}
    assert {m for m in members if "idle-" in m} == set()
    # The workers counted them (flushed to the fleet's totals within a second).
    wait_until(
        lambda: float(store.client.hget(settings.keyspace.metrics_totals, "threads_expired") or 0)
        >= idle + 1,  # and "reborn"
        10,
        message="threads_expired was not counted",
    )


def test_idle_threads_expire_whole_while_others_are_written(tmp_path: Path, redis_url: str) -> None:
    settings = make_settings(
        redis_url,
        key_prefix="ex",
        buckets=64,
        thread_ttl_seconds=2,
        expire_buckets_per_sweep=16,
        expire_per_sweep=4000,
    )
    _run(settings, tmp_path, IDLE, KEPT)
    # What is left beside the live threads: the buckets' birth counters, the sweep's
    # cursor and the metrics. The live threads' own keys carry their names.
    store = store_for(settings)
    rest = {
        k
        for k in _keys(store, "{ex")
        if not any(name in k for name in ("kept-", "pinned", "reborn"))
    }
    assert all("{ex:sweep}" in k or "{ex:metrics}" in k
               or ":active:" in k or ":born:" in k or ":mdx:" in k or ":expiry" in k
               or ":threads" in k or ":dirty" in k for k in rest), sorted(rest)[:10]


@pytest.mark.slow
def test_threads_expire_on_a_cluster(
    tmp_path: Path, redis_cluster: RedisCluster, redis_url: str
) -> None:
    settings = make_settings(
        redis_cluster.url,
        cluster=True,
        broker_url=redis_url,
        key_prefix="cx",
        buckets=48,
        thread_ttl_seconds=2,
        expire_buckets_per_sweep=16,
    )
    _run(settings, tmp_path, 400, 12)


class _NoWake:
    def wake(self, refs: Any) -> None:
        pass


def _sweep(store: Store, settings: Settings) -> list[str]:
    swept = store.expire(range(settings.buckets), 1000, settings.thread_ttl_ms)
    return [ref for bucket in swept for ref in bucket.removed]


@pytest.mark.parametrize("refresh", [True, False])
def test_reads_restart_the_ttl_only_when_set_to(redis_url: str, refresh: bool) -> None:
    settings = make_settings(
        redis_url, key_prefix=f"rr{int(refresh)}", buckets=4, thread_ttl_seconds=2,
        ttl_refresh_on_read=refresh,
    )
    store = store_for(settings)
    with Client(settings=settings, waker=_NoWake()) as client:
        client.append("read", [{"role": "user", "content": "x"}])
        Drainer(store, settings).drain("_/read")
        removed: list[str] = []
        deadline = time.monotonic() + 5  # 2.5 TTLs of reads, a sweep after each
        while time.monotonic() < deadline and not removed:
            try:
                client.state("read")
            except NotFound:
                break
            time.sleep(0.2)
            removed += _sweep(store, settings)
        assert (removed == []) is refresh
        if refresh:  # once the reads stop, the thread expires a TTL later
            wait_until(lambda: _sweep(store, settings) == ["_/read"], 5)


def test_a_follower_is_told_its_thread_expired(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="fe", buckets=4, thread_ttl_seconds=1)
    store = store_for(settings)
    with Client(settings=settings, waker=_NoWake()) as client:
        client.append("gone", [{"role": "user", "content": "x", "id": "m"}])
        Drainer(store, settings).drain("_/gone")
        events = cast("Generator[Event, None, None]", client.subscribe("gone"))
        first = next(events)
        assert isinstance(first, Snapshot) and first.total == 1
        wait_until(lambda: _sweep(store, settings) == ["_/gone"], 5)
        assert next(events) == Deleted("gone", "0-0", "expired")
        events.close()


def test_once_every_thread_expired_no_key_is_left(redis_url: str) -> None:
    # Nothing per bucket outlives its threads (an incarnation is the birth call's random
    # token, not a counter kept per bucket): the keyspace is empty again.
    settings = make_settings(redis_url, key_prefix="none", buckets=32, thread_ttl_seconds=1)
    store = store_for(settings)
    with Client(settings=settings, waker=_NoWake()) as client:
        client.append_many([(f"t{i}", [["user", "x"]]) for i in range(300)])
        for i in range(0, 300, 2):
            client.update(f"t{i}", metadata={"user": f"u{i % 7}"})
        Drainer(store, settings).drain_many([f"_/t{i}" for i in range(300)], time.monotonic() + 60)
        assert client.count() == 300
        wait_until(lambda: not _sweep(store, settings) and client.count() == 0, 10)
    assert _keys(store, "{none") == set()
