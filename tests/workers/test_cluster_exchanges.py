"""A cluster's exchanges (workers/redisio/client.py): a small batch spanning primaries
sent to all of them at once, a large one in bounded exchanges a primary; the same
answers, in the same order, as calls one by one, and pooled connections a primary
dropped are made again before anything is sent."""

from __future__ import annotations

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings
from tests.workers.test_concurrency import NoWake
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio import client as redisio
from threadfold.workers.redisio.client import run, run_many, sync_client
from threadfold.workers.storage import read_state

THREADS = 60  # over the primaries; FAIR_CALLS and PARALLEL_CALLS both crossed


def _written(cluster: RedisCluster, prefix: str) -> list[str]:
    settings = make_settings(cluster.url, cluster=True, key_prefix=prefix)
    client = sync_client(cluster.url, cluster=True, retries=0)
    producer = Producer(client, settings, NoWake())
    refs = []
    for i in range(THREADS):
        producer.enqueue_many([Delta(f"t{i}", [{"role": "user", "content": f"m{i}"}])])
        refs.append(f"_/t{i}")
    client.close()
    return refs


@pytest.mark.parametrize("size", [3, redisio.PARALLEL_CALLS, redisio.FAIR_CALLS * 3 + 1])
def test_a_batch_answers_as_its_calls_one_by_one(redis_cluster: RedisCluster, size: int) -> None:
    refs = _written(redis_cluster, f"x{size}")
    keyspace = make_settings(redis_cluster.url, cluster=True, key_prefix=f"x{size}").keyspace
    client = sync_client(redis_cluster.url, cluster=True, retries=0)
    calls = [read_state.call(keyspace.thread(ref)) for ref in refs[:size]]
    nodes = {client.get_node_from_key(c.keys[0]).name for c in calls}  # type: ignore[union-attr]
    assert len(nodes) > 1
    assert run_many(client, calls) == [run(client, c) for c in calls]
    client.close()


def _kill_clients(cluster: RedisCluster) -> None:
    for node in cluster.nodes:
        with node.probe() as admin:
            admin.client_kill_filter(_type="normal", skipme=True)


@pytest.mark.parametrize("retries", [0, 20])
def test_connections_a_primary_dropped_while_idle_are_made_again_before_sending(
    redis_cluster: RedisCluster, retries: int
) -> None:
    """Checked out of the pool, a connection the server closed is reconnected before
    anything is written on it: nothing is in doubt, a producer's batch (no retries)
    included, and the answers are the same."""
    refs = _written(redis_cluster, f"k{retries}")
    keyspace = make_settings(redis_cluster.url, cluster=True, key_prefix=f"k{retries}").keyspace
    client = sync_client(redis_cluster.url, cluster=True, retries=retries)
    calls = [read_state.call(keyspace.thread(ref)) for ref in refs[:4]]
    expected = run_many(client, calls)  # the connections made and pooled
    _kill_clients(redis_cluster)
    assert run_many(client, calls) == expected
    client.close()
