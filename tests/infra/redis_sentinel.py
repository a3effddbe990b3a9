"""A real Sentinel-managed Redis: one primary, one replica, three sentinels on loopback.

The sentinels are ``redis-server --sentinel`` (what Debian's ``redis-sentinel`` runs),
each with a config file of its own in a directory of its own (a sentinel rewrites its
file as it learns the group). Quick to decide: a primary is down after
``down_after_ms`` (`DOWN_AFTER_MS`) without an answer, and two sentinels must agree.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import redis

from tests.infra.ports import HOST
from tests.infra.processes import find_executable, wait_until
from tests.infra.redis_server import RedisServer
from threadfold.workers.ops.processes import ManagedProcess, free_port

SERVICE = "tf"
#: A primary waits this long (5 s by default) for more replicas before a full sync; one
#: replica here, and a failover's re-sync should not wait.
QUICK_SYNC = ("--repl-diskless-sync-delay", "0")
#: Sentinel's ``down-after-milliseconds``, well above the second (its ping period) a
#: sentinel may wait before it reconnects to a primary it has just switched to: the
#: clock of that primary's first answer starts at the switch, and the reconnection waits
#: out the period begun by the last attempt on the dead primary. With 1000 a sentinel
#: could call the promoted replica down before it had even reconnected; the other
#: sentinels' "down" answers about the old primary, kept up to 5 s, made that a quorum
#: at once, and a second failover promoted the old primary, back and empty, over it.
DOWN_AFTER_MS = 3000


class SentinelGroup:
    """``primary``, ``replica`` and three sentinels watching them as ``SERVICE``."""

    def __init__(
        self, *, down_after_ms: int = DOWN_AFTER_MS, startup_timeout: float = 20.0
    ) -> None:
        executable = find_executable("redis-server")
        self.dir = Path(tempfile.mkdtemp(prefix="threadfold-sentinel-"))
        self.sentinels: list[ManagedProcess] = []
        self.ports: list[int] = []
        self.primary = RedisServer(extra_args=QUICK_SYNC)
        self.servers = [self.primary]
        try:
            replica_of = ["--replicaof", HOST, str(self.primary.port), *QUICK_SYNC]
            self.servers.append(RedisServer(extra_args=replica_of))
            for n in range(3):
                self._start_sentinel(executable, n, down_after_ms)
            wait_until(self._ready, startup_timeout, message="sentinels never saw the group")
        except BaseException:
            self.close()
            raise

    def _start_sentinel(self, executable: str, n: int, down_after_ms: int) -> None:
        port = free_port()
        home = self.dir / f"s{n}"
        home.mkdir()
        (home / "sentinel.conf").write_text(
            f"port {port}\nbind {HOST}\ndir {home}\n"
            f"sentinel monitor {SERVICE} {HOST} {self.primary.port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} 10000\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        argv = [executable, str(home / "sentinel.conf"), "--sentinel"]
        self.sentinels.append(ManagedProcess(argv, log_path=home / "sentinel.log"))
        self.ports.append(port)

    def _ask(self, port: int) -> redis.Redis:
        return redis.Redis(host=HOST, port=port, socket_timeout=1)

    def _ready(self) -> bool:
        """The replica is in sync and acknowledges a write (a link that is up is not
        enough: before its first acknowledgement the primary counts it at offset 0, and
        a durable write then waits out its timeout), and every sentinel knows it and the
        other two."""
        try:
            with self.servers[1].probe() as replica:
                if replica.info("replication").get("master_link_status") != "up":
                    return False
            with self.primary.probe() as primary:
                primary.set("threadfold-test:linked", 1)
                if int(primary.wait(1, 1000)) < 1:
                    return False
            for port in self.ports:
                with contextlib.closing(self._ask(port)) as s:
                    master: Any = s.sentinel_master(SERVICE)
                    if int(master["num-slaves"]) < 1 or int(master["num-other-sentinels"]) < 2:
                        return False
        except redis.RedisError:
            return False
        return True

    def url(self, db: int = 0) -> str:
        """The group's ``redis+sentinel://`` URL, for the state (db 0) or a broker."""
        hosts = ",".join(f"{HOST}:{port}" for port in self.ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def current_primary_port(self) -> int:
        """The port the sentinels name as the primary now."""
        for port in self.ports:
            with contextlib.suppress(redis.RedisError), contextlib.closing(self._ask(port)) as s:
                found: Any = s.sentinel_get_master_addr_by_name(SERVICE)
                return int(found[1])
        raise AssertionError("no sentinel answered")

    def server_on(self, port: int) -> RedisServer:
        return next(s for s in self.servers if s.port == port)

    def close(self) -> None:
        for sentinel in self.sentinels:
            sentinel.kill()
        for server in self.servers:
            server.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
