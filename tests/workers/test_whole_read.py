"""A whole thread read as a MULTI/EXEC transaction on one server equals READ_STATE's
script, on a real Redis, for threads of every shape (appends, updates, removals, a
removal of everything, drained in batches of every size), through the sync and the
asyncio store; a Cluster's read goes through the script and gives the same."""

from __future__ import annotations

import asyncio
import random

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, store_for
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.workers import wiring
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import read_state
from threadfold.workers.storage.store import Store


def _threads(settings: Settings, seed: int) -> tuple[Store, list[str]]:
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(seed)
    refs = [f"_/w{t}" for t in range(4)]
    for step in range(120):
        thread = rng.randrange(len(refs))
        producer.enqueue(f"w{thread}", random_messages(rng, step))
        if rng.random() < 0.2:
            Drainer(store, settings.model_copy(update={"batch_size": rng.choice([1, 7])})
                    ).drain_many(refs)
    Drainer(store, settings).drain_many(refs)
    return store, [*refs, "_/never-written"]


def _seen(raw: list[object]) -> object:
    """What a read answered, as values (StateBodies compares by identity)."""
    b = read_state.parse_bodies(raw)
    return None if b is None else (b.version, b.total, b.has_more, b.anchor_found,
                                   b.ids, b.bodies)


def _by_script(store: Store, ref: str) -> list[object]:
    raw: list[object] = run(store.client, read_state.call(store.keyspace.thread(ref)))
    return raw


def test_the_transaction_reads_what_the_script_reads(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="whole")
    store, refs = _threads(settings, 3)
    for ref in refs:
        k = store.keyspace.thread(ref)
        by_script = _by_script(store, ref)
        by_transaction = read_state.exchange(store.client, k)
        assert _seen(by_transaction) == _seen(by_script)
        assert read_state.parse_snapshot(by_transaction) == read_state.parse_snapshot(by_script)
        if by_script:
            page = store.read_state(ref)
            assert page is not None and page.version == read_state.parse(by_script).version  # type: ignore[union-attr]

    async def scenario() -> None:
        astore = wiring.astore(settings, wiring.aredis(settings))
        try:
            for ref in refs:
                got = await astore.read_state_bodies(ref)
                want = read_state.parse_bodies(_by_script(store, ref))
                assert (got is None) == (want is None)
                if got is not None and want is not None:
                    assert (got.version, got.total, got.ids, got.bodies) == \
                        (want.version, want.total, want.ids, want.bodies)
        finally:
            await astore.client.aclose()

    asyncio.run(scenario())


def test_a_cluster_reads_through_the_script_alike(redis_cluster: RedisCluster) -> None:
    settings = make_settings(redis_cluster.url, cluster=True, key_prefix="wholec")
    store, refs = _threads(settings, 5)
    for ref in refs:
        k = store.keyspace.thread(ref)
        assert _seen(read_state.exchange(store.client, k)) == _seen(_by_script(store, ref))
