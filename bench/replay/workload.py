"""The threads a replay benchmark replays: the pipeline benchmark's mixed workload (about
70% appends, 20% updates, 10% removes of live ids, realistic messages with tool calls),
one message per delta, written with retention on (so every log is whole) and drained."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.common.store import NullWaker, in_process_settings, store_for
from bench.pipeline.workload import Mix, ref_of, schedule, thread_id
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.storage.store import Store

#: Retention long enough that no log is trimmed during a run.
RETENTION_SECONDS = 86_400.0


@dataclass(frozen=True)
class Shape:
    """``threads`` threads of ``per_thread`` deltas each."""

    threads: int
    per_thread: int

    @property
    def name(self) -> str:
        return f"{self.threads:,} threads x {self.per_thread:,} deltas"

    @property
    def deltas(self) -> int:
        return self.threads * self.per_thread


def settings_for(url: str) -> Any:
    return in_process_settings(url, retention_seconds=RETENTION_SECONDS, batch_size=1000,
                         drain_seconds=600.0, task_soft_time_limit=700.0,
                         task_time_limit=800.0, visibility_timeout=900.0)


def fill(url: str, shape: Shape, prefix: str, seed: int = 11) -> list[str]:
    """Write and drain the shape's threads; their refs."""
    settings = settings_for(url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NullWaker())
    mix = Mix(shape.threads, seed)
    run = min(shape.per_thread, 25)
    for bulk in schedule(shape.threads, shape.per_thread, 1000, run, seed):
        planned = [mix.next(t) for t in bulk]
        mix.learn(planned, producer.enqueue_many([p.delta(prefix) for p in planned]))
    refs = [ref_of(thread_id(i, prefix)) for i in range(shape.threads)]
    drainer = Drainer(store, settings)
    for at in range(0, len(refs), 200):
        drainer.drain_many(refs[at : at + 200])
    store.client.close()
    return refs


def damage(store: Store, refs: Sequence[str]) -> None:
    """Each thread's first page removed behind the workers' back: a rebuild rewrites it.
    (The first page left: removes may have emptied, and so dropped, page 0.)"""
    keys = [store.keyspace.thread(ref).pages for ref in refs]
    pipe = store.client.pipeline(transaction=False)
    for key in keys:
        pipe.hkeys(key)
    numbers = pipe.execute()
    for key, held in zip(keys, numbers, strict=True):
        if held:
            pipe.hdel(key, min(held, key=int))
    pipe.execute()
