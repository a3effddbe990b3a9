"""What one delta costs in each component, measured alone (no workers running).

* the producer's CPU per delta in ``enqueue_many`` (wake-ups off), and the part of it
  spent validating, converting and encoding (``prepare``);
* the ingest script's server time per delta, by deltas per thread in a bulk (one
  script call carries many threads);
* the Celery wake-up the producer sends per woken thread (``CeleryWaker.wake``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.common import services
from bench.common.store import NullWaker, in_process_settings
from bench.pipeline.workload import Mix, schedule
from threadfold.core.ids import uuid4_str
from threadfold.workers.ingest.producer import Producer, prepare
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery

Progress = Callable[[str], None]


@dataclass
class Components:
    deltas: int
    producer_cpu_us: float
    prepare_cpu_us: float
    ingest_us_per_delta: dict[int, float] = field(default_factory=dict)
    wake_cpu_us: float = 0.0
    wake_wall_us: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _producer(url: str, deltas: int, per_call: int) -> tuple[float, float, float]:
    """CPU us/delta of enqueue_many and of prepare, and the ingest script's us per delta,
    with bulks of 1000 deltas spread so that each thread gets ``per_call`` of them."""
    settings = in_process_settings(url)
    client = sync_client(url, cluster=False, retries=0)
    producer = Producer(client, settings, NullWaker())
    threads = 1000 // per_call
    mix = Mix(threads, seed=6)
    bulks = [[mix.next(t) for t in bulk]
             for bulk in schedule(threads, max(1, deltas // threads), 1000, per_call, seed=6)]
    producer.enqueue_many([p.delta("warm") for p in bulks[0]])
    start = time.thread_time()
    for bulk in bulks:
        for p in bulk:
            prepare(p.delta("prep"), "", uuid4_str)
    prepare_cpu = time.thread_time() - start
    services.reset_stats(client)  # type: ignore[arg-type]
    start = time.thread_time()
    for bulk in bulks:
        producer.enqueue_many([p.delta(f"k{per_call}") for p in bulk])
    cpu = time.thread_time() - start
    ingest = services.commandstats(client)["evalsha"]  # type: ignore[arg-type]
    client.close()
    n = sum(len(b) for b in bulks)
    return cpu / n * 1e6, prepare_cpu / n * 1e6, ingest.usec / n


def _wake(url: str, refs: int) -> tuple[float, float]:
    """CPU and wall us per woken thread of ``CeleryWaker.wake`` (bulks of 100)."""
    settings = in_process_settings(url)
    app = make_celery(settings)
    waker = CeleryWaker(app, settings.queue)
    waker.wake(["_/warm"])
    names = [f"_/t{i}" for i in range(refs)]
    start, start_cpu = time.perf_counter(), time.thread_time()
    for i in range(0, refs, 100):
        waker.wake(names[i : i + 100])
    wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
    app.close()
    return cpu / refs * 1e6, wall / refs * 1e6


def run(deltas: int, wakes: int, progress: Progress) -> Components:
    with services.redis_server() as server:
        ingest: dict[int, float] = {}
        producer_cpu = prepare_cpu = 0.0
        for per_call in (1, 10, 100):
            cpu, prep, usec = _producer(server.url, deltas, per_call)
            ingest[per_call] = usec
            if per_call == 10:  # the end-to-end layout
                producer_cpu, prepare_cpu = cpu, prep
        result = Components(deltas, producer_cpu, prepare_cpu, ingest)
        result.wake_cpu_us, result.wake_wall_us = _wake(server.url, wakes)
    progress(f"components: producer {result.producer_cpu_us:.0f} us/delta, "
             f"wake {result.wake_cpu_us:.0f} us/thread")
    return result
