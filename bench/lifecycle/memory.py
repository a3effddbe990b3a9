"""Redis memory: the server's own figure (``INFO memory`` used_memory), where a thread's
bytes go (``MEMORY USAGE`` of its keys and of its bucket's sets), and what is left once
every thread is gone.

``used_memory`` is what the allocator holds for Redis's data and its own structures:
the keyspace's hash table, every key, the clients' buffers and the script cache (the
Lua interpreter's heap is not in it). It is read on a quiet server: when it has not
moved for a few reads in a row (Redis shrinks a hash table that became sparse, a step
at a time, in its cron), and with the benchmark's one connection open, as for the
baseline.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import redis

from threadfold.core.keys import DEFAULT_TENANT, Keyspace

#: The INFO memory fields kept with each reading.
FIELDS: Final = ("used_memory", "used_memory_dataset", "used_memory_overhead",
                 "mem_clients_normal", "used_memory_scripts", "used_memory_lua")
#: A thread's own keys, by their ThreadKeys name.
THREAD_KEYS: Final = ("meta", "pages", "index", "log", "metadata", "feed", "sched", "dedupe",
                      "dedupe_expiry")
#: Its bucket's sets, by their ThreadKeys name: summed over the buckets.
BUCKET_KEYS: Final = ("threads", "active", "born", "expiry", "terms", "dirty", "quarantine")


@dataclass(frozen=True)
class Reading:
    """``INFO memory``'s figures and the number of keys, at one moment."""

    fields: dict[str, int]
    keys: int

    @property
    def used(self) -> int:
        return self.fields["used_memory"]


def read(client: redis.Redis) -> Reading:
    info: dict[str, Any] = client.info("memory")
    fields = {name: int(info.get(name, 0)) for name in FIELDS}
    # The keyspace's own hash tables (slots and entries), which MEMORY USAGE of the keys
    # leaves out.
    stats: dict[str, Any] = client.memory_stats()
    db: dict[str, Any] = stats.get("db.0") or {}
    fields["keyspace_tables"] = int(db.get("overhead.hashtable.main", 0)) + int(
        db.get("overhead.hashtable.expires", 0))
    return Reading(fields, int(client.dbsize()))


def without_records(client: redis.Redis) -> None:
    """Redis's own records of the commands it ran, freed: they are no data, and they
    are there as soon as the commands have run, whatever the number of threads. Redis 7
    keeps a latency histogram per command (``latency-tracking``, on by default), made at
    a command's first call: ~25 KB each, ~800 KB for the commands a run's scripts call
    (``CONFIG RESETSTAT`` frees them, and zeroes INFO commandstats); and the slow log
    keeps the arguments of the last 128 commands over 10 ms (a bulk's script call is),
    up to ~4 KB each. The baseline and the last reading are both taken after this, so
    that they compare what the keyspace holds."""
    client.config_resetstat()
    client.slowlog_reset()


def settled(client: redis.Redis, *, steady: int = 4, interval: float = 0.5,
            timeout: float = 120.0) -> Reading:
    """used_memory once it has stayed within 1 KiB for ``steady`` reads in a row (Redis
    shrinks a hash table left sparse in its cron, a step at a time; an idle client's
    query buffer is freed after 2 s)."""
    last = read(client)
    same, deadline = 0, time.monotonic() + timeout
    while same < steady and time.monotonic() < deadline:
        time.sleep(interval)
        now = read(client)
        same = same + 1 if abs(now.used - last.used) <= 1024 else 0
        last = now
    return last


def wait_unexpired(client: redis.Redis, timeout: float = 300.0) -> float:
    """Until no key has a TTL (the loaded threads' feeds lapsed, Redis's active expiry
    removed them); the seconds it took."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        keyspace: dict[str, Any] = client.info("keyspace")
        if int(keyspace.get("db0", {}).get("expires", 0)) == 0:
            break
        time.sleep(0.5)
    return time.monotonic() - began


@dataclass(frozen=True)
class Breakdown:
    """Bytes per thread by key (``MEMORY USAGE``): a sample's own keys, averaged, and
    every bucket's sets, summed over the threads."""

    thread_keys: dict[str, float]
    bucket_keys: dict[str, float]
    sampled: int

    @property
    def total(self) -> float:
        return sum(self.thread_keys.values()) + sum(self.bucket_keys.values())

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "total": self.total}


def breakdown(client: redis.Redis, keyspace: Keyspace, refs: Sequence[str],
              threads: int) -> Breakdown:
    own: Counter[str] = Counter()
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        keys = keyspace.thread(ref)
        for name in THREAD_KEYS:
            pipe.memory_usage(getattr(keys, name), samples=0)
    answers = iter(pipe.execute())
    for _ in refs:
        for name in THREAD_KEYS:
            own[name] += next(answers) or 0
    shared: Counter[str] = Counter()
    for bucket in range(keyspace.buckets):
        keys = keyspace.bucket_of_tenant(bucket, DEFAULT_TENANT)
        for name in BUCKET_KEYS:
            pipe.memory_usage(getattr(keys, name), samples=0)
        for name, used in zip(BUCKET_KEYS, pipe.execute(), strict=True):
            shared[name] += used or 0
    return Breakdown({n: own[n] / len(refs) for n in THREAD_KEYS},
                     {n: shared[n] / threads for n in BUCKET_KEYS}, len(refs))


def _kind(key: str) -> str:
    """A key's kind: a bucket's key without its tag (``births``, ``active:_``), a
    thread's as ``<thread>:meta`` and so on; any other key whole (the metrics')."""
    tag, _, rest = key.partition("}")
    if not tag.startswith("{") or not tag.rsplit(":", 1)[-1].startswith("b"):
        return key
    rest = rest.lstrip(":")
    return f"<thread>:{rest.rsplit(':', 1)[-1]}" if "/" in rest else rest


def leftovers(client: redis.Redis) -> dict[str, dict[str, int]]:
    """Every key left, grouped by kind: how many and their ``MEMORY USAGE`` in all."""
    found: dict[str, dict[str, int]] = {}
    for raw in client.scan_iter(count=1000):
        key = raw.decode()
        group = found.setdefault(_kind(key), {"keys": 0, "bytes": 0})
        group["keys"] += 1
        group["bytes"] += int(client.memory_usage(raw, samples=0) or 0)
    return dict(sorted(found.items()))
