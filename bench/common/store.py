"""Settings, stores and a waker for benchmarks that drive the pipeline in-process.

The benchmarks that drain by hand (commit cost, memory, replay) build their
producer, store and drainer here rather than from the tests' harness, which is no part
of the benchmarks (they import nothing of ``tests``). Only what every release
since the namespace has is imported here: an A/B (``python -m bench.ab``) runs this
module in older trees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadfold.workers.redisio.client import sync_client
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

#: The settings the in-process benchmarks were measured with (the tests' short leases
#: and a drain budget of 0.5 s, batches of 200), each benchmark overriding what it
#: needs. Kept as they were so the results files keep their meaning.
IN_PROCESS: dict[str, Any] = {
    "drain_seconds": 0.5,
    "task_soft_time_limit": 20.0,
    "task_time_limit": 30.0,
    "visibility_timeout": 40.0,
    "wake_ttl_seconds": 1.5,
    "sweep_seconds": 0.5,
    "batch_size": 200,
}


def in_process_settings(redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {**IN_PROCESS, "redis_url": redis_url, **overrides}
    return Settings(**values)


def store_for(settings: Settings) -> Store:
    """A store on a client of its own (the caller closes ``store.client``)."""
    client = sync_client(settings.redis_url.get_secret_value(), cluster=settings.cluster)
    return Store(client, settings.keyspace)


class NullWaker:
    """No Celery here: the benchmark drains by hand, wake-ups go nowhere."""

    def wake(self, refs: Sequence[str]) -> None:
        del refs

