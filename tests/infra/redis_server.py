"""A real `redis-server` for tests: the supervision module's `RedisServer`
(threadfold.workers.ops.processes.redis_server), which the benchmarks and ``threadfold up``
build their servers with too."""

from __future__ import annotations

from threadfold.workers.ops.processes.redis_server import AppendFsync, RedisServer

__all__ = ["AppendFsync", "RedisServer"]
