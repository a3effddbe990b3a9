"""The composition root (threadfold.workers.wiring): what it builds works against a real
password-protected Redis and broker, and nothing else in the product builds a client,
store, producer or waker its own way (but the feed's listener connection, which the
thread service makes for itself: threadfold.workers.feed.connect)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path

from tests.sources import python_files
from tests.workers.harness import WORKERS_ONLY
from threadfold.workers import wiring
from threadfold.workers.ingest.wakeup import Waker
from threadfold.workers.ops.processes import RedisServer
from threadfold.workers.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ["api", "workers", "loadtests"]
BUILDS = re.compile(
    r"\b(sync_client|async_client|make_celery|CeleryWaker|AsyncProducer|Producer|AsyncStore|Store)\("
)
# Where the things are defined, the one module that builds them, and the feed's
# listener connection (built below the thread service, which makes it).
OWNERS = {
    "workers/wiring.py",
    "workers/feed/connect.py",
    "workers/redisio/client.py",
    "workers/runtime/app.py",
}


class Recorded:
    def __init__(self) -> None:
        self.woken: list[str] = []

    def wake(self, refs: Sequence[str]) -> None:
        self.woken += refs


def _sources() -> list[Path]:
    return [p for package in [*PRODUCT, "threadfold"] for p in python_files(package)]


def test_nothing_but_the_composition_root_builds_a_client_store_producer_or_waker() -> None:
    offenders = []
    for path in _sources():
        name = path.relative_to(ROOT).as_posix()
        if name in OWNERS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if BUILDS.search(code) and not re.match(r"\s*(def|class) ", code):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def test_a_store_and_producer_from_settings_append_and_read_with_a_password() -> None:
    password = "wiring-secret-pw"  # noqa: S105  # a throwaway
    with RedisServer(password=password) as server:
        settings = Settings(redis_url=server.url, **WORKERS_ONLY)
        client = wiring.redis(settings, retries=0)
        try:
            woken = Recorded()
            wakes: Waker = woken
            producer = wiring.producer(settings, client, wakes)
            result = producer.enqueue("t1", [{"role": "user", "content": "hi", "id": "m1"}])
            status = wiring.store(settings, client).status("_/t1")
            assert status is not None and status.last_enqueued == result.version
            assert woken.woken == ["_/t1"]
        finally:
            client.close()


def test_the_asyncio_store_reads_what_was_appended() -> None:
    with RedisServer() as server:
        settings = Settings(redis_url=server.url, **WORKERS_ONLY)
        sync = wiring.redis(settings)
        wiring.producer(settings, sync, Recorded()).enqueue("t1", ["hello"])
        sync.close()

        async def backlog() -> int | None:
            client = wiring.aredis(settings, retries=0)
            try:
                store = wiring.astore(settings, client)
                status = await store.status("_/t1")
                return None if status is None else status.backlog
            finally:
                await client.aclose()

        assert asyncio.run(backlog()) == 1
