"""A Redis Cluster of M primaries with W Celery workers on it: the scale runs' stack.

The cluster is made here without ``redis-cli --cluster create`` (which wants three
primaries at least): each node takes an equal range of the 16,384 slots
(``CLUSTER ADDSLOTSRANGE``) and meets the first, so one primary is a cluster too and
every size runs the same client code (the cluster client, one pipeline per node).
The broker is a standalone Redis of its own (kombu has no cluster transport).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster

from bench.common import services
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import ManagedProcess, RedisServer, wait_until
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

SLOTS = 16384
CLUSTER_ARGS = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000")


@contextmanager
def cluster(primaries: int) -> Iterator[list[RedisServer]]:
    """``primaries`` cluster nodes, every slot assigned, the cluster ``ok`` on each."""
    with ExitStack() as stack:
        nodes = [stack.enter_context(RedisServer(cluster_bus=True, extra_args=CLUSTER_ARGS))
                 for _ in range(primaries)]
        share = SLOTS // primaries
        for i, node in enumerate(nodes):
            last = SLOTS - 1 if i == primaries - 1 else (i + 1) * share - 1
            with node.probe() as admin:
                _command(admin, "CLUSTER", "ADDSLOTSRANGE", i * share, last)
        with nodes[0].probe() as admin:
            for node in nodes[1:]:
                _command(admin, "CLUSTER", "MEET", "127.0.0.1", node.port)
        wait_until(lambda: all(_ok(n, primaries) for n in nodes), 60,
                   message="the cluster never came up")
        yield nodes


def _command(client: redis.Redis, *args: str | int) -> Any:
    command: Any = client.execute_command  # (untyped in redis-py)
    return command(*args)


def _ok(node: RedisServer, primaries: int) -> bool:
    with node.probe() as admin:
        info = _command(admin, "CLUSTER", "INFO")
    text = info.decode() if isinstance(info, bytes) else str(info)
    fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
    return fields.get("cluster_state") == "ok" and int(fields["cluster_known_nodes"]) == primaries


@dataclass
class Stack:
    settings: Settings
    nodes: list[RedisServer]
    broker: RedisServer
    app: Any
    workers: list[ManagedProcess]
    client: RedisCluster
    producer: Producer
    store: Store

    def node_clients(self) -> list[redis.Redis]:
        return [node.client() for node in self.nodes]

    def node_of(self, key: str) -> int:
        """Which of ``nodes`` holds ``key``."""
        port = self.client.get_node_from_key(key).port  # type: ignore[no-untyped-call]
        return next(i for i, n in enumerate(self.nodes) if n.port == port)


@contextmanager
def running(primaries: int, workers: int, logs: Path, **values: Any) -> Iterator[Stack]:
    """The cluster, a broker and ``workers`` Celery workers (concurrency 1), ready."""
    with cluster(primaries) as nodes, services.redis_server() as broker, ExitStack() as stack:
        settings = Settings(redis_url=nodes[0].url, cluster=True, broker_url=broker.url,
                            **values)
        names = [f"w{i}" for i in range(workers)]
        procs = [services.start_worker(settings, n, logs) for n in names]
        stack.enter_context(services.killing(procs))
        app = make_celery(settings)
        stack.callback(app.close)
        services.wait_ready(app, names, procs)
        client = sync_client(settings.redis_url.get_secret_value(), cluster=True, retries=0)
        assert isinstance(client, RedisCluster)
        stack.callback(client.close)
        waker = CeleryWaker(app, settings.queue, settings.refs_per_task)
        yield Stack(settings, nodes, broker, app, procs, client,
                    Producer(client, settings, waker), Store(client, settings.keyspace))
