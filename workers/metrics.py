"""Counters every process keeps and flushes to Redis, so one scrape sees them all.

Workers and API processes add to in-memory counters on their hot paths (a dict
increment) and flush them with one pipelined round trip at most once a second. Each
process has its own hash, expiring a minute after its last flush, so a dead process's
numbers fade out instead of freezing.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Final, Protocol

from core.keys import Keyspace
from workers.redis_io import AsyncClient, SyncClient

#: Upper bounds (ms) of the enqueue-to-visible lag histogram.
LAG_BUCKETS_MS: Final = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
#: Upper bounds of the entries-per-commit histogram.
BATCH_BUCKETS: Final = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
#: Upper bounds (ms) of the HTTP request duration histogram.
LATENCY_BUCKETS_MS: Final = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000)
TTL_SECONDS: Final = 60


def process_name(role: str) -> str:
    return f"{role}:{socket.gethostname()}:{os.getpid()}"


class _Pipeline(Protocol):
    """The pipeline commands a flush uses (sync, asyncio and cluster pipelines alike)."""

    def hincrby(self, name: str, key: str, amount: int) -> Any: ...
    def hincrbyfloat(self, name: str, key: str, amount: float) -> Any: ...
    def expire(self, name: str, time: int) -> Any: ...
    def zadd(self, name: str, mapping: dict[str, int]) -> Any: ...


class Metrics:
    """One process's counters; thread-safe adds, flushed to Redis in one round trip."""

    def __init__(self, keyspace: Keyspace, role: str, every: float = 1.0) -> None:
        self.keyspace = keyspace
        self.role = role
        self.every = every
        self._counts: defaultdict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()

    def add(self, name: str, amount: float = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def observe(self, name: str, value: float, bounds: tuple[int, ...]) -> None:
        """One observation of a histogram: its bucket, its sum and its count.

        ``name`` may carry labels (``name|label=value``); the suffixes go on the name.
        """
        buckets, sum_key, count_key = _histogram_keys(name, bounds)
        with self._lock:
            self._counts[buckets[bisect_left(bounds, value)]] += 1
            self._counts[sum_key] += value
            self._counts[count_key] += 1

    def observe_many(self, name: str, values: Iterable[float], bounds: tuple[int, ...]) -> None:
        """Many observations at once: counted locally, then added under one lock (a commit
        observes the lag of every entry it applied)."""
        buckets, sum_key, count_key = _histogram_keys(name, bounds)
        counts = [0] * len(buckets)
        total = 0.0
        for value in values:
            counts[bisect_left(bounds, value)] += 1
            total += value
        n = sum(counts)
        if not n:
            return
        with self._lock:
            for key, count in zip(buckets, counts, strict=True):
                if count:
                    self._counts[key] += count
            self._counts[sum_key] += total
            self._counts[count_key] += n

    def due(self) -> bool:
        return time.monotonic() - self._last_flush >= self.every

    def _take(self) -> dict[str, float]:
        with self._lock:
            counts, self._counts = dict(self._counts), defaultdict(float)
            self._last_flush = time.monotonic()
        return counts

    def flush(self, client: SyncClient) -> None:
        counts = self._take()
        if counts:
            pipe = client.pipeline(transaction=False)
            self._queue(pipe, counts)
            pipe.execute()

    async def aflush(self, client: AsyncClient) -> None:
        counts = self._take()
        if counts:
            pipe = client.pipeline(transaction=False)
            self._queue(pipe, counts)
            await pipe.execute()

    def _queue(self, pipe: _Pipeline, counts: dict[str, float]) -> None:
        name = process_name(self.role)
        key = self.keyspace.metrics_of(name)
        for field, amount in counts.items():
            if float(amount).is_integer():
                pipe.hincrby(key, field, int(amount))
            else:
                pipe.hincrbyfloat(key, field, amount)
        pipe.expire(key, TTL_SECONDS)
        pipe.zadd(self.keyspace.metrics_procs, {name: int(time.time() * 1000)})


@lru_cache(maxsize=256)
def _histogram_keys(name: str, bounds: tuple[int, ...]) -> tuple[tuple[str, ...], str, str]:
    """A histogram's counter names: per bucket (index ``bisect_left(bounds, value)``),
    its sum and its count; ``name`` may carry labels (``name|label=value``), which go
    after each suffix. Built once: a commit observes two histograms."""
    base, bar, labels = name.partition("|")
    tail = bar + labels
    return (
        tuple(f"{base}_bucket:{b}{tail}" for b in (*(str(b) for b in bounds), "+Inf")),
        f"{base}_sum{tail}",
        f"{base}_count{tail}",
    )
