"""Redis memory per stored message against the message's own msgpack size.

N messages go through the real path (producer -> log -> Drainer commit) into a fresh
server; ``used_memory`` after minus before, over N, is set against the mean
``len(encode_message(m))``. Each variant is stored in threads of each length (a
thread's fixed keys weigh more on short threads); ``MEMORY USAGE`` of one thread's keys
shows where the bytes go, and drains of appends and of edits at that length what a
commit costs. The threads' change feeds are measured apart (used memory with them,
fresh, minus without them): they are a bounded window of recent events that an idle
thread drops, not part of its state. The server runs with its default options: pages
and index buckets are larger than any listpack setting, so none of those changes the
result.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import mean
from typing import Any

import redis

from bench.common import services
from bench.common.inputs import text, typical_ai
from bench.common.store import NullWaker, in_process_settings, store_for
from threadfold.core import to_message
from threadfold.core.codec import encode_message
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.drain import Drainer

Progress = Callable[[str], None]
AI = "ai ~200 chars, tool call, usage"
HUMAN = "human ~60 chars"
LIMITS: dict[str, Any] = {"drain_seconds": 100.0, "task_soft_time_limit": 110.0,
                          "task_time_limit": 120.0, "visibility_timeout": 300.0}
#: Server options tried (name -> redis-server arguments).
CONFIGS: dict[str, tuple[str, ...]] = {"default": ()}


@dataclass(frozen=True)
class MemoryConfig:
    messages: int
    human_messages: int
    layouts: tuple[int, ...]  # messages per thread
    configs: tuple[str, ...]
    cost_deltas: int
    seed: int = 5


@dataclass
class MemoryRow:
    variant: str
    config: str
    per_thread: int
    messages: int
    msgpack_mean: float
    used_per_message: float
    #: What the threads' change feeds held on top (each thread's last commits' events,
    #: kept for FEED_MAX_AGE_SECONDS after its last commit; an event over
    #: FEED_MAX_EVENT_BYTES is not kept): used memory with them minus without them.
    feed_per_message: float
    keys_per_message: dict[str, float]
    encodings: dict[str, str]
    append_drain_us: float
    update_drain_us: float

    @property
    def ratio(self) -> float:
        return self.used_per_message / self.msgpack_mean

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def make_message(variant: str, i: int, rng: random.Random) -> dict[str, Any]:
    """A message with its id set, as the store will hold it."""
    if variant == AI:
        return {"type": "ai", **typical_ai(i)}
    return {"type": "human", "content": text(rng, 60), "id": str(uuid.UUID(int=rng.getrandbits(128),
                                                                        version=4))}


def _used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


class _Loader:
    """Producer and drainer on one server (no Celery: drains are run by hand)."""

    def __init__(self, url: str) -> None:
        self.settings = in_process_settings(url, batch_size=1000, **LIMITS)
        self.producer = Producer(sync_client(url, cluster=False, retries=0), self.settings,
                                 NullWaker())
        self.store = store_for(self.settings)
        self.drainer = Drainer(self.store, self.settings)

    def close(self) -> None:
        self.producer.client.close()
        self.store.client.close()

    def send(self, thread: str, messages: Sequence[dict[str, Any]]) -> None:
        for i in range(0, len(messages), 1000):
            self.producer.enqueue_many([Delta(thread, [m]) for m in messages[i : i + 1000]])

    def drain(self, ref: str) -> float:
        began = time.perf_counter()
        while self.drainer.drain(ref).handed_off:
            pass
        return time.perf_counter() - began

    def store_all(self, messages: Sequence[dict[str, Any]], per_thread: int,
                  name: str) -> tuple[list[str], float]:
        """``messages`` in threads of ``per_thread``: the refs and the drain us/delta."""
        refs, spent = [], 0.0
        for start in range(0, len(messages), per_thread):
            thread = f"{name}-{start // per_thread:05d}"
            self.send(thread, messages[start : start + per_thread])
            refs.append(f"_/{thread}")
            spent += self.drain(refs[-1])
        return refs, spent / len(messages) * 1e6

    def updates(self, refs: Sequence[str], messages: Sequence[dict[str, Any]], per_thread: int,
                count: int, rng: random.Random) -> float:
        """``count`` edits of random messages of the first threads: drain us/delta."""
        threads = refs[: max(1, min(len(refs), count // 500))]
        per = max(1, count // len(threads))
        spent = 0.0
        for k, ref in enumerate(threads):
            own = messages[k * per_thread : (k + 1) * per_thread]
            edits = [{**own[rng.randrange(len(own))], "content": text(rng, 120)}
                     for _ in range(per)]
            self.send(ref.partition("/")[2], edits)
            spent += self.drain(ref)
        return spent / (per * len(threads)) * 1e6


def _key_usage(client: redis.Redis, url: str, ref: str, count: int) -> tuple[dict[str, float],
                                                                            dict[str, str]]:
    ks = in_process_settings(url, **LIMITS).keyspace.thread(ref)
    keys = {"pages": ks.pages, "index": ks.index, "meta": ks.meta, "log": ks.log,
            "feed": ks.feed}
    usage = {name: (client.memory_usage(key, samples=0) or 0) / count
             for name, key in keys.items()}
    encodings = {name: (client.object("encoding", key) or b"-").decode()
                 for name, key in keys.items() if name not in {"meta", "log", "feed"}}
    return usage, encodings


def measure(variant: str, config: str, per_thread: int, messages: Sequence[dict[str, Any]],
            *, cost_deltas: int, seed: int) -> MemoryRow:
    """Store ``messages`` on a fresh server started with ``config``'s options."""
    with services.redis_server(CONFIGS[config]) as server:
        client = server.client()
        loader = _Loader(server.url)
        try:
            loader.store_all(messages[:per_thread], per_thread, "warm")  # scripts cached
            client.flushall()
            before = _used(client)
            refs, append_us = loader.store_all(messages, per_thread, "mem")
            with_feeds = _used(client) - before
            usage, encodings = _key_usage(client, server.url, refs[0], per_thread)
            _drop_feeds(client)  # the state alone: what an idle thread keeps
            used = _used(client) - before
            update_us = loader.updates(refs, messages, per_thread, cost_deltas, random.Random(seed))
        finally:
            loader.close()
    sizes = [len(encode_message(to_message(m))) for m in messages]
    return MemoryRow(variant, config, per_thread, len(messages), mean(sizes), used / len(messages),
                     (with_feeds - used) / len(messages), usage, encodings, append_us, update_us)


def _drop_feeds(client: redis.Redis) -> None:
    """Delete every thread's change feed (as its age limit does once the thread idles)."""
    feeds = list(client.scan_iter(match="*:feed", count=1000))
    for i in range(0, len(feeds), 500):
        client.delete(*feeds[i : i + 500])


def run(cfg: MemoryConfig, progress: Progress) -> list[MemoryRow]:
    rows = []
    for variant, count in ((AI, cfg.messages), (HUMAN, cfg.human_messages)):
        rng = random.Random(cfg.seed)
        messages = [make_message(variant, cfg.seed * 1_000_000 + i, rng) for i in range(count)]
        for per_thread in cfg.layouts:
            for config in cfg.configs:
                rows.append(measure(variant, config, per_thread, messages,
                                    cost_deltas=cfg.cost_deltas, seed=cfg.seed))
                progress(f"memory: {variant}, {per_thread} per thread, {config}: "
                         f"x{rows[-1].ratio:.2f}")
    return rows
