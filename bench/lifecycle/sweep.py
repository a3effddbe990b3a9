"""The TTL sweep, run back to back until nothing is left to remove.

Each pass is ``Store.expire`` over every bucket (one ``expire.lua`` call per bucket,
pipelined), each call removing at most ``limit`` threads: the share of a bucket in one
of the deployment's sweeps (``EXPIRE_PER_SWEEP`` over ``EXPIRE_BUCKETS_PER_SWEEP``), so
that one script call blocks Redis no longer than in production. The deployment's
sweeper makes one such sweep of 64 buckets per beat (``SWEEP_SECONDS``); run back to
back here, the passes show what Redis spends per removed thread and how fast it can go.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import redis

from bench.common import cpu
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store


@dataclass(frozen=True)
class Swept:
    """What the passes removed, how long they took and what they cost Redis."""

    removed: int
    passes: int
    limit: int
    seconds: float
    redis_cpu: float
    script_calls: int
    #: Redis's time inside the scripts (``INFO commandstats``), all calls.
    script_usec: int
    #: What a pass after the last found still due (must be nothing).
    left_due: int

    def to_json(self) -> dict[str, Any]:
        per = 1e6 / self.removed if self.removed else 0.0
        return {**asdict(self),
                "removed_per_second": self.removed / self.seconds if self.seconds else 0.0,
                "redis_cpu_us_per_removed": self.redis_cpu * per,
                "script_us_per_removed": self.script_usec / self.removed if self.removed else 0.0,
                "script_us_per_call": self.script_usec / self.script_calls
                if self.script_calls else 0.0}


def _evalsha(client: redis.Redis) -> tuple[int, int]:
    stats: dict[str, Any] = client.info("commandstats")
    row = stats.get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    return int(row["calls"]), int(row["usec"])


def share(settings: Settings) -> int:
    """A bucket's most removals in one of the deployment's sweeps."""
    width = min(settings.expire_buckets_per_sweep, settings.keyspace.buckets)
    return max(1, settings.expire_per_sweep // width)


def sweep(store: Store, admin: redis.Redis, settings: Settings) -> Swept:
    buckets = range(store.keyspace.buckets)
    limit = share(settings)
    removed = passes = 0
    calls_before, usec_before = _evalsha(admin)
    redis_before = cpu.redis_cpu(admin)
    began = time.perf_counter()
    while True:
        parts = store.expire(buckets, limit, settings.thread_ttl_ms)
        passes += 1
        removed += sum(len(p.removed) for p in parts)
        if not any(p.more for p in parts):
            break
    seconds = time.perf_counter() - began
    redis_cpu = cpu.redis_cpu(admin) - redis_before
    calls_after, usec_after = _evalsha(admin)
    left = sum(len(p.removed) for p in store.expire(buckets, limit, settings.thread_ttl_ms))
    return Swept(removed, passes, limit, seconds, redis_cpu, calls_after - calls_before,
                 usec_after - usec_before, left)
