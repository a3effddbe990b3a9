"""A real Redis Cluster: N masters, no replicas, joined by `redis-cli --cluster create`."""

from __future__ import annotations

import subprocess
import weakref
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import redis
import redis.cluster

from tests.infra.errors import ServiceStartError
from tests.infra.ports import HOST
from tests.infra.processes import find_executable, wait_until
from tests.infra.redis_server import RedisServer

SLOTS = 16384
_MIN_MASTERS = 3
_PROBE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def _close_all(clients: list[redis.cluster.RedisCluster]) -> None:
    for client in clients:
        client.close()
    clients.clear()


class RedisCluster:
    """`masters` cluster-enabled `RedisServer`s, every slot assigned, ready when it returns.

    `close` (or leaving the `with` block) closes the clients it handed out and closes every
    node; each node also cleans up after itself if the cluster is dropped unclosed.
    """

    def __init__(
        self,
        masters: int = 3,
        *,
        node_timeout_ms: int = 2000,
        extra_args: Sequence[str] = (),
        redis_cli: str = "redis-cli",
        startup_timeout: float = 20.0,
    ) -> None:
        if masters < _MIN_MASTERS:
            raise ValueError(f"redis-cli --cluster create needs >= 3 masters, got {masters}")
        cli = find_executable(redis_cli)
        cluster_args = [
            *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            *("--cluster-node-timeout", str(node_timeout_ms)),
            *extra_args,
        ]
        self.nodes: list[RedisServer] = []
        self._clients: list[redis.cluster.RedisCluster] = []
        self._finalizer = weakref.finalize(self, _close_all, self._clients)
        try:
            for _ in range(masters):
                self.nodes.append(RedisServer(cluster_bus=True, extra_args=cluster_args))
            self._create(cli, startup_timeout)
            wait_until(
                self._every_node_sees_a_full_cluster,
                startup_timeout,
                interval=0.05,
                message=f"cluster on ports {self.ports} did not reach cluster_state:ok",
                ignore=_PROBE_ERRORS,
            )
        except BaseException:
            self.close()
            raise

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @property
    def startup_nodes(self) -> list[redis.cluster.ClusterNode]:
        # ClusterNode's constructor is unannotated in redis-py.
        return [
            redis.cluster.ClusterNode(HOST, port)  # type: ignore[no-untyped-call]
            for port in self.ports
        ]

    @property
    def url(self) -> str:
        """The first node's address; a cluster client discovers the rest from it."""
        return f"redis://{HOST}:{self.nodes[0].port}"

    def client(
        self, *, decode_responses: bool = False, **options: Any
    ) -> redis.cluster.RedisCluster:
        """A cluster client; closed with the cluster if the caller has not closed it."""
        client = redis.cluster.RedisCluster(
            startup_nodes=self.startup_nodes, decode_responses=decode_responses, **options
        )
        self._clients.append(client)
        return client

    def kill(self) -> None:
        """SIGKILL every node."""
        for node in self.nodes:
            node.kill()

    def stop(self) -> None:
        """SHUTDOWN NOSAVE every node (the directories stay, so nodes can restart)."""
        for node in self.nodes:
            node.stop()

    def close(self) -> None:
        """Close the clients handed out, then stop every node and remove its directory."""
        self._finalizer()
        for node in self.nodes:
            node.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RedisCluster ports={self.ports}>"

    def _create(self, cli: str, timeout: float) -> None:
        addresses = [f"{HOST}:{port}" for port in self.ports]
        argv = [cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
        result = subprocess.run(
            argv,
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise ServiceStartError(
                f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
            )

    def _every_node_sees_a_full_cluster(self) -> bool:
        return all(self._sees_full_cluster(node) for node in self.nodes)

    def _sees_full_cluster(self, node: RedisServer) -> bool:
        with node.probe() as probe:
            info: dict[str, object] = probe.cluster("INFO")
        return (
            info.get("cluster_state") == "ok"
            and str(info.get("cluster_slots_ok")) == str(SLOTS)
            and str(info.get("cluster_known_nodes")) == str(len(self.nodes))
        )
