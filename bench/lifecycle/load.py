"""Loading many small threads fast, folded: each in its bucket sets, with its pages,
index and (with a TTL) its place in the expiry set, as a worker's commit leaves it.

The threads are split in bulks of :data:`BULK` over ``processes`` forked processes,
each with a producer and a drainer of its own (no Celery: a drain here is what a
worker's task runs, without the task). A process appends its bulks through
``enqueue_stream`` (one bulk in flight while the one before is drained) and drains each
bulk as soon as it is in, so no more than a bulk or two of logs are ever waiting. On
the two cores, two processes keep Redis busy: Redis spends about as much CPU on a
thread as the Python side does.
"""

from __future__ import annotations

import gc
import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from typing import Any, Final

from bench.common import cpu
from bench.common.store import NullWaker, in_process_settings, store_for
from bench.lifecycle.threads import Shape
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

#: Deltas (here: threads) per bulk, as the pipeline benchmark's producer sends them.
BULK: Final = 1000
#: The TTL every thread is loaded with (the deployment's default, so each commit lists
#: its thread in the expiry set): the shortest allowed, so that the sweep can follow
#: the measurement at once.
TTL_SECONDS: Final = 1.0
#: How long a loaded thread's change feed is kept. A feed holds the thread's last
#: commits for subscribers that resume; an idle thread has none (FEED_MAX_AGE_SECONDS,
#: 300 s by default, after its last commit), and a stream's first entry costs a 4 KB
#: listpack (Redis 7 preallocates it), so 10^6 fresh feeds would hold ~5 GB during the
#: load. Kept for 1 s instead, the commits write them exactly as by default and they
#: lapse before the idle figure is read.
FEED_SECONDS: Final = 1.0


def settings_for(url: str) -> Settings:
    """The settings of the loaders, the sweep and the searching client alike."""
    return in_process_settings(url, thread_ttl_seconds=TTL_SECONDS,
                               feed_max_age_seconds=FEED_SECONDS, batch_size=BULK,
                               drain_seconds=600.0, task_soft_time_limit=700.0,
                               task_time_limit=800.0, visibility_timeout=900.0)


@dataclass(frozen=True)
class Loaded:
    """A load: its wall time from the processes' start to the last one's end, and the
    CPU spent on each side."""

    threads: int
    processes: int
    seconds: float
    loaders_cpu: float
    redis_cpu: float
    #: Threads whose drain did not end with every delta applied (must be 0).
    not_drained: int
    ended_ms: int

    @property
    def rate(self) -> float:
        return self.threads / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        per = 1e6 / self.threads if self.threads else 0.0
        return {**asdict(self), "threads_per_second": self.rate,
                "loaders_cpu_us_per_thread": self.loaders_cpu * per,
                "redis_cpu_us_per_thread": self.redis_cpu * per}


def _bulks(shape: Shape, blocks: list[int]) -> Iterator[list[Delta]]:
    for lo in blocks:
        yield [shape.delta(k) for k in range(lo, min(shape.threads, lo + BULK))]


def _child(url: str, shape: Shape, blocks: list[int], start: Any, out: Connection) -> None:
    settings = settings_for(url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NullWaker())
    # Its own drainer's connection: a drain's round trips do not wait behind the bulk
    # in flight on the producer's.
    drainer_store = store_for(settings)
    drainer = Drainer(drainer_store, settings)
    store.client.ping()
    drainer_store.client.ping()
    start.wait()
    began = time.process_time()
    not_drained = 0
    for lo, done in zip(blocks, producer.enqueue_stream(_bulks(shape, blocks)), strict=True):
        refs = [shape.ref(k) for k in range(lo, lo + len(done))]
        for report in drainer.drain_many(refs):
            if report.handed_off or report.failed or report.quarantined or report.entries != 1:
                not_drained += 1
    drainer.flush_metrics()
    out.send((time.process_time() - began, not_drained))
    out.close()
    store.client.close()
    drainer_store.client.close()


def load(url: str, shape: Shape, processes: int) -> Loaded:
    """Append and drain every thread of ``shape``, split over ``processes`` processes."""
    fork = multiprocessing.get_context("fork")
    start = fork.Event()
    blocks = list(range(0, shape.threads, BULK))
    gc.collect()
    pipes, children = [], []
    for n in range(processes):
        receive, send = fork.Pipe(duplex=False)
        child = fork.Process(target=_child, args=(url, shape, blocks[n::processes], start, send))
        child.start()
        send.close()
        pipes.append(receive)
        children.append(child)
    admin = store_for(settings_for(url)).client
    redis_before = cpu.redis_cpu(admin)  # type: ignore[arg-type]
    began = time.perf_counter()
    start.set()
    outcomes: list[tuple[float, int]] = [pipe.recv() for pipe in pipes]
    seconds = time.perf_counter() - began
    redis_after = cpu.redis_cpu(admin)  # type: ignore[arg-type]
    ended_ms = int(time.time() * 1000)
    for child in children:
        child.join()
    admin.close()
    return Loaded(shape.threads, processes, seconds, sum(o[0] for o in outcomes),
                  redis_after - redis_before, sum(o[1] for o in outcomes), ended_ms)
