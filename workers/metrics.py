"""Counters every process keeps and adds to fleet-wide totals in Redis, so one scrape sees them all.

Workers and API processes add to in-memory counters on their hot paths (a dict
increment) and flush them at most once a second (``metrics_flush_seconds``) with one
script call that adds them (HINCRBYFLOAT) to one fleet-wide hash. The totals are never
summed from per-process numbers, so they only grow: a process that exits or restarts
takes nothing with it but what it had not flushed yet (kill -9: at most its last
interval; a graceful exit flushes, see :meth:`Metrics.close`). Prometheus reads any
decrease of a counter as a reset, so this is what makes its ``rate()`` right.

The same call stamps the process in a ZSET of last flushes (removed when it closes):
the ``threadfold_processes`` gauge counts the ones heard from recently. It is only a
liveness signal; no total depends on it.

Both keys share the ``{<prefix>:metrics}`` hash tag, so the script runs on one node of a
cluster; a script rather than a MULTI pipeline because redis-py's asyncio cluster
client has no transactions, and a flush must add all of its fields or none (a
histogram's buckets and sum would disagree otherwise).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Final

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError

from threadfold.core.errors import RedisFull
from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import AsyncRedis, Call, Script, SyncRedis, arun, run, text

#: Upper bounds (ms) of the enqueue-to-visible lag histogram.
LAG_BUCKETS_MS: Final = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
#: Upper bounds of the entries-per-commit histogram.
BATCH_BUCKETS: Final = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
#: Upper bounds (ms) of the HTTP request duration histogram.
LATENCY_BUCKETS_MS: Final = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 5000)

# HINCRBYFLOAT for every field, counts included: HINCRBY refuses a field once it holds a
# fraction ("hash value is not an integer"), which a histogram's sum does, and Redis
# keeps 17 significant digits, so counts stay exact. A flush adds all its fields or
# none: a script runs whole (its amounts are numbers, the only way one could fail).
# ARGV: process, stamp ('' = leaving), n gauges, {gauge value}*n, {counter amount}*.
# A gauge is the process's own value (HSET under "<process>|<gauge>"), dropped when the
# process leaves; the scrape sums the live processes' (threadfold.api.metrics.gauges).
FLUSH: Final = Script(
    "metrics_flush",
    """
local n = tonumber(ARGV[3])
for i = 4, 3 + 2 * n, 2 do
  local field = ARGV[1] .. '|' .. ARGV[i]
  if ARGV[2] == '' then
    redis.call('HDEL', KEYS[3], field)
  else
    redis.call('HSET', KEYS[3], field, ARGV[i + 1])
  end
end
for i = 4 + 2 * n, #ARGV, 2 do
  redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], ARGV[i + 1])
end
if ARGV[2] == '' then
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
end
return 0
""",
)

#: Failures after which a flush's counts are kept for the next one: the script did
#: not run (Redis unreachable, or full: a script refused for memory is refused at its
#: first write, by the state Redis was in when it started), or its reply was lost (then
#: that flush is counted twice: a counter that runs ahead by one interval, never one
#: that goes down).
RETRYABLE: Final = (RedisConnectionError, RedisTimeoutError, OutOfMemoryError, RedisFull)


def process_name(role: str) -> str:
    return f"{role}:{socket.gethostname()}:{os.getpid()}"


class Metrics:
    """One process's counters; thread-safe adds, flushed to Redis in one round trip."""

    def __init__(self, keyspace: Keyspace, role: str, every: float = 1.0) -> None:
        self.keyspace = keyspace
        self.role = role
        self.every = every
        self._counts: defaultdict[str, float] = defaultdict(float)
        self._gauges: dict[str, float] = {}  # this process's values, sent with each flush
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._closed = False

    def add(self, name: str, amount: float = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def set_gauge(self, name: str, value: float) -> None:
        """This process's current value of gauge ``name`` (the scrape sums the live
        processes' values; a process that leaves or dies stops counting)."""
        with self._lock:
            self._gauges[name] = value

    def observe(self, name: str, value: float, bounds: tuple[int, ...]) -> None:
        """One observation of a histogram: its bucket and its sum (the count is the
        ``+Inf`` bucket's cumulative count, so it is not stored twice).

        ``name`` may carry labels (``name|label=value``); the suffixes go on the name.
        """
        buckets, sum_key = _histogram_keys(name, bounds)
        with self._lock:
            self._counts[buckets[bisect_left(bounds, value)]] += 1
            self._counts[sum_key] += value

    def observe_many(self, name: str, values: Iterable[float], bounds: tuple[int, ...]) -> None:
        """Many observations at once: counted locally, then added under one lock (a commit
        observes the lag of every entry it applied)."""
        self.observe_counts(name, Counter(values), bounds)

    def observe_counts(
        self, name: str, counts: Mapping[int, int] | Mapping[float, int], bounds: tuple[int, ...]
    ) -> None:
        """:meth:`observe_many` of values given with their multiplicities (``counts``:
        value -> how many times it was observed), under one lock."""
        buckets, sum_key = _histogram_keys(name, bounds)
        added = [0] * len(buckets)
        total = 0.0
        for value, count in counts.items():
            added[bisect_left(bounds, value)] += count
            total += value * count
        if not any(added):
            return
        with self._lock:
            for key, count in zip(buckets, added, strict=True):
                if count:
                    self._counts[key] += count
            self._counts[sum_key] += total

    def due(self) -> bool:
        return time.monotonic() - self._last_flush >= self.every

    def _take(self) -> dict[str, float]:
        with self._lock:
            counts, self._counts = dict(self._counts), defaultdict(float)
            self._last_flush = time.monotonic()
        return counts

    def _give_back(self, counts: dict[str, float]) -> None:
        """Counts of a flush that failed, added back for the next one."""
        with self._lock:
            for field, amount in counts.items():
                self._counts[field] += amount

    def flush(self, client: SyncRedis) -> None:
        """Add the counts since the last flush to the totals (and stamp this process
        as alive, even with nothing to add)."""
        counts = self._take()
        try:
            run(client, self._call(counts))
        except RETRYABLE:
            self._give_back(counts)
            raise

    async def aflush(self, client: AsyncRedis) -> None:
        counts = self._take()
        try:
            await arun(client, self._call(counts))
        except RETRYABLE:
            self._give_back(counts)
            raise

    def close(self, client: SyncRedis) -> None:
        """The last flush of a process that is leaving: its counts, and its name taken
        off the live processes (later flushes, if any, add counts only)."""
        self._closed = True
        self.flush(client)

    async def aclose(self, client: AsyncRedis) -> None:
        self._closed = True
        await self.aflush(client)

    def _call(self, counts: dict[str, float]) -> Call:
        stamp = "" if self._closed else str(int(time.time() * 1000))
        with self._lock:
            gauges = list(self._gauges.items())
        args: list[str | int | float] = [process_name(self.role), stamp, len(gauges)]
        for name, value in gauges:
            args += [name, value]
        for field, amount in counts.items():
            # Redis refuses inf and nan, which would fail the whole flush; a sum that
            # overflowed is dropped (its buckets still count the observations).
            if amount and math.isfinite(amount):
                args += [field, int(amount) if amount.is_integer() else amount]
        keys = (self.keyspace.metrics_totals, self.keyspace.metrics_procs,
                self.keyspace.metrics_gauges)  # fmt: skip
        return Call(FLUSH, keys, args)


def record_commit(metrics: Metrics, entries: int, lags_ms: Iterable[float]) -> None:
    """One commit of ``entries`` log entries, each visible ``lags_ms`` after it was
    appended: a worker's (the entry ids carry their enqueue time) or an ingest call's
    own (visible in the script that appended it: 0 ms)."""
    record_commits(metrics, {entries: 1}, Counter(lags_ms))


def record_commits(
    metrics: Metrics, sizes: Mapping[int, int], lags_ms: Mapping[float, int]
) -> None:
    """Many commits at once (what each commit counts is written here, once): ``sizes``
    maps a commit's entries to how many commits applied that many, ``lags_ms`` a lag to
    how many of their entries were visible that long after their append. An ingest
    call that commits hundreds of threads counts them here once: counted commit by
    commit, they took 9% of the API's CPU on a bulk spread over threads (py-spy)."""
    if not sizes:
        return
    metrics.add("commits", sum(sizes.values()))
    metrics.add("entries_applied", sum(size * n for size, n in sizes.items()))
    metrics.observe_counts("batch_entries", sizes, BATCH_BUCKETS)
    metrics.observe_counts("visible_lag_ms", lags_ms, LAG_BUCKETS_MS)


class FlushOutage:
    """The log of a periodic flush while it fails: one warning when an outage starts and
    one line when a flush works again, instead of a line (and a traceback) each period,
    so an outage of Redis is visible but does not flood the log; a failure that is not
    Redis refusing or out of reach (a bug) carries its traceback, once."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        #: Flushes failed in a row (0: flushing works).
        self.failures = 0
        self._since = 0.0

    def failed(self, exc: Exception) -> None:
        self.failures += 1
        if self.failures > 1:
            return
        self._since = time.monotonic()
        kept = isinstance(exc, RETRYABLE)
        if isinstance(exc, OutOfMemoryError | RedisFull):
            why = "Redis is full"
        else:
            why = "Redis is out of reach" if kept else "unexpected error"
        self.logger.warning(
            "could not flush metrics: %s (%s: %s); %s (said once: the next line is when a "
            "flush works again)",
            why,
            type(exc).__name__,
            str(exc.__cause__ or exc).rstrip("."),  # Redis's own words, when it said them
            "the counts are kept for the next flush" if kept else "these counts are lost",
            exc_info=not kept,
        )

    def flushed(self) -> None:
        if self.failures:
            self.logger.info(
                "metrics flushed again, after %d failed flush(es) over %.1f s",
                self.failures,
                time.monotonic() - self._since,
            )
        self.failures = 0


@lru_cache(maxsize=256)
def _histogram_keys(name: str, bounds: tuple[int, ...]) -> tuple[tuple[str, ...], str]:
    """A histogram's counter names: per bucket (index ``bisect_left(bounds, value)``)
    and its sum; ``name`` may carry labels (``name|label=value``), which go after each
    suffix. Built once: a commit observes two histograms."""
    base, bar, labels = name.partition("|")
    tail = bar + labels
    return (
        tuple(f"{base}_bucket:{b}{tail}" for b in (*(str(b) for b in bounds), "+Inf")),
        f"{base}_sum{tail}",
    )


# -- the fleet's totals, read (the API's /metrics and /pipeline) ---------------------

#: The roles a process reports under (each role's count is shown, zero or not).
ROLES: Final = ("api", "worker")


async def collect(client: AsyncRedis, keyspace: Keyspace) -> dict[str, float]:
    """The fleet-wide totals, by field."""
    fields = await client.hgetall(keyspace.metrics_totals)
    return {text(name): float(value) for name, value in fields.items()}


async def fleet(
    client: AsyncRedis, keyspace: Keyspace, liveness_seconds: float, own: Metrics
) -> tuple[dict[str, float], dict[str, float]]:
    """The fleet-wide totals and live gauges (``/metrics``, ``/pipeline``), this
    process's counts (``own``) flushed first so the answer shows them. A flush Redis
    refuses (full, out of reach) keeps them for the next one and must not fail the read:
    a full Redis is when monitoring matters most, and its totals can still be read.
    Only a Redis that cannot be read at all fails it (the reads below raise)."""
    with contextlib.suppress(*RETRYABLE):
        await own.aflush(client)
    totals = await collect(client, keyspace)
    live = await gauges(client, keyspace, liveness_seconds)
    return totals, live


async def gauges(
    client: AsyncRedis, keyspace: Keyspace, liveness_seconds: float = 60.0
) -> dict[str, float]:
    """Values read now: threads with a backlog and in quarantine (summed over the
    buckets) and processes heard from within ``liveness_seconds``, by role."""
    alive_since = int((time.time() - liveness_seconds) * 1000)
    pipe = client.pipeline(transaction=False)
    for bucket in range(keyspace.buckets):
        keys = keyspace.bucket_keys(bucket)
        pipe.zcard(keys.dirty)
        pipe.zcard(keys.quarantine)
    # Processes not heard from within the window are gone: their stamps would only
    # pile up (a process leaving gracefully removes its own).
    pipe.zremrangebyscore(keyspace.metrics_procs, "-inf", f"({alive_since}")
    pipe.zrange(keyspace.metrics_procs, 0, -1)
    pipe.hgetall(keyspace.metrics_gauges)
    *counts, _, procs, per_process = await pipe.execute()
    values = {
        "threads_with_backlog": float(sum(counts[0::2])),
        "threads_quarantined": float(sum(counts[1::2])),
    }
    roles = dict.fromkeys(ROLES, 0.0)
    for proc in procs:
        role = text(proc).partition(":")[0]
        roles[role] = roles.get(role, 0.0) + 1
    values |= {f"processes|role={role}": n for role, n in roles.items()}
    return values | await _live_gauges(client, keyspace, {text(p) for p in procs}, per_process)


async def _live_gauges(
    client: AsyncRedis, keyspace: Keyspace, live: set[str], per_process: dict[Any, Any]
) -> dict[str, float]:
    """Each gauge summed over the live processes (``sse_subscribers`` always shown); the
    values of processes no longer alive (killed, not left) are removed."""
    sums: dict[str, float] = {"sse_subscribers": 0.0}
    dead = []
    for field, value in per_process.items():
        proc, _, name = text(field).rpartition("|")
        if proc in live:
            sums[name] = sums.get(name, 0.0) + float(value)
        else:
            dead.append(field)
    if dead:
        await client.hdel(keyspace.metrics_gauges, *dead)
    return sums
