"""Commit cost per delta against thread length: the Drainer in-process, no Celery.

A thread pre-grown (untimed) to a short and to a long length takes the same number of
update or append deltas (enqueued untimed); then draining them is timed: read a batch,
fold it sparsely, compare-and-set commit, until no backlog is left. Reported per delta:
wall time (the drainer waits on Redis, so its CPU time alone would hide the server's
share), the drainer's CPU and the server's CPU. Short and long alternate within a round,
and the best round counts, so a burst of load elsewhere hits them alike.

Updates come in two kinds. Uniform ones pick any message of the thread: in the short
thread a batch of 200 then holds ~87 distinct messages on its ~34 pages, in the long
one 200 messages on ~200 pages, so that row measures the working set a batch touches
as much as the thread's length. Recent ones pick among the last 100 messages in both
threads: the same working set, so only the length differs.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

import redis

from bench.common import cpu, services
from bench.common.inputs import new_id
from bench.common.store import NullWaker, in_process_settings, store_for
from bench.pipeline.workload import ref_of, templates
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

Progress = Callable[[str], None]
UPDATES = "updates"
RECENT = "updates, last 100"
APPENDS = "appends"
WORKLOADS = (UPDATES, RECENT, APPENDS)
#: The recent updates pick among the thread's last this-many messages: the whole of the
#: short thread, so both lengths see the same working set (the same coalescing of a
#: batch's updates into messages and pages), and only the thread's length differs.
RECENT_WINDOW = 100
_LONG_LIMITS: dict[str, Any] = {
    "drain_seconds": 100.0, "task_soft_time_limit": 110.0, "task_time_limit": 120.0,
    "visibility_timeout": 300.0,
}


@dataclass(frozen=True)
class CostConfig:
    lengths: tuple[int, ...]
    deltas: int
    batch_sizes: tuple[int, ...]
    rounds: int
    seed: int = 3


@dataclass
class CostRow:
    """One (workload, batch size, length): each round's timings, per delta."""

    workload: str
    batch_size: int
    length: int
    deltas: int
    wall_us: list[float] = field(default_factory=list)
    drainer_cpu_us: list[float] = field(default_factory=list)
    redis_cpu_us: list[float] = field(default_factory=list)
    scripts_us: dict[str, float] = field(default_factory=dict)
    commits: int = 0

    @property
    def best_wall_us(self) -> float:
        return min(self.wall_us)

    @property
    def median_wall_us(self) -> float:
        return median(self.wall_us)

    @property
    def cpu_us(self) -> list[float]:
        """Drainer plus server CPU per delta, per round (what the machine spent)."""
        return [d + r for d, r in zip(self.drainer_cpu_us, self.redis_cpu_us, strict=True)]

    @property
    def best_cpu_us(self) -> float:
        return min(self.cpu_us)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "best_wall_us": self.best_wall_us,
                "median_wall_us": self.median_wall_us, "best_cpu_us": self.best_cpu_us}


@dataclass
class _Thread:
    ref: str
    ids: list[str]


class _Bench:
    """One server, one producer, a drainer per batch size; threads by length."""

    def __init__(self, cfg: CostConfig, url: str) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.templates = templates(cfg.seed)
        base = in_process_settings(url, **_LONG_LIMITS)
        self.store = store_for(base)
        self.client: redis.Redis = self.store.client  # type: ignore[assignment]
        self.producer = Producer(sync_client(url, cluster=False, retries=0), base, NullWaker())
        self.drainers = {b: Drainer(self.store, self._settings(url, b)) for b in cfg.batch_sizes}
        self.made = 0

    def close(self) -> None:
        self.store.client.close()
        self.producer.client.close()

    @staticmethod
    def _settings(url: str, batch: int) -> Settings:
        return in_process_settings(url, batch_size=batch, **_LONG_LIMITS)

    def message(self, ident: str) -> dict[str, Any]:
        return {**self.templates[self.rng.randrange(len(self.templates))], "id": ident}

    def enqueue(self, thread: _Thread, messages: Sequence[dict[str, Any]], per_call: int) -> None:
        name = thread.ref.partition("/")[2]
        for i in range(0, len(messages), per_call):
            self.producer.enqueue_many([Delta(name, [m]) for m in messages[i : i + per_call]])

    def grow(self, length: int) -> _Thread:
        """A new thread of ``length`` messages, committed (untimed)."""
        self.made += 1
        thread = _Thread(ref_of(f"cost-{self.made:03d}-{length}"), [])
        messages = []
        for _ in range(length):
            thread.ids.append(f"run-{new_id(self.rng)}")
            messages.append(self.message(thread.ids[-1]))
        self.enqueue(thread, messages, per_call=1000)
        self.drain(thread, max(self.cfg.batch_sizes))
        return thread

    def drain(self, thread: _Thread, batch: int) -> int:
        """Drain to no backlog; the number of commits."""
        commits = 0
        while True:
            report = self.drainers[batch].drain(thread.ref)
            commits += report.batches
            status = self.store.status(thread.ref)
            if status is not None and status.backlog == 0:
                return commits

    def load(self, thread: _Thread, workload: str) -> None:
        """The timed run's deltas, enqueued untimed."""
        if workload in (UPDATES, RECENT):
            pool = thread.ids if workload == UPDATES else thread.ids[-RECENT_WINDOW:]
            messages = [self.message(self.rng.choice(pool)) for _ in range(self.cfg.deltas)]
        else:
            fresh = [f"run-{new_id(self.rng)}" for _ in range(self.cfg.deltas)]
            thread.ids.extend(fresh)
            messages = [self.message(ident) for ident in fresh]
        self.enqueue(thread, messages, per_call=1000)

    def timed(self, thread: _Thread, batch: int, row: CostRow) -> None:
        # The harness's own objects (every id of a 100,000-message thread, the loaded
        # deltas) out of the collector's way, as in the end-to-end run: a full collection
        # walking them inside one timed drain cost tens of milliseconds at random.
        gc.collect()
        gc.freeze()
        cpu0, redis0 = time.thread_time(), cpu.redis_cpu(self.client)
        try:
            with services.script_log(self.client) as scripts:
                start = time.perf_counter()
                row.commits = self.drain(thread, batch)
                wall = time.perf_counter() - start
        finally:
            gc.unfreeze()
        n = self.cfg.deltas
        row.wall_us.append(wall / n * 1e6)
        row.drainer_cpu_us.append((time.thread_time() - cpu0) / n * 1e6)
        row.redis_cpu_us.append((cpu.redis_cpu(self.client) - redis0) / n * 1e6)
        row.scripts_us = {name: round(median(us), 1) for name, us in scripts.items()}


def _rows(cfg: CostConfig) -> dict[tuple[str, int, int], CostRow]:
    return {(w, b, n): CostRow(w, b, n, cfg.deltas)
            for w in WORKLOADS for b in cfg.batch_sizes for n in cfg.lengths}


def run(cfg: CostConfig, progress: Progress) -> list[CostRow]:
    """Per-delta drain cost rows: each workload, batch size and length."""
    with services.redis_server() as server:
        bench = _Bench(cfg, server.url)
        threads = {n: bench.grow(n) for n in cfg.lengths}
        progress(f"commit cost: threads grown to {', '.join(f'{n:,}' for n in cfg.lengths)}")
        rows = _rows(cfg)
        for r in range(cfg.rounds):
            for workload in WORKLOADS:
                for batch in cfg.batch_sizes:
                    lengths = cfg.lengths if r % 2 == 0 else tuple(reversed(cfg.lengths))
                    for n in lengths:
                        thread = threads[n]
                        if workload == APPENDS and n == min(cfg.lengths):
                            # Appends into a fresh short thread: they must not grow the
                            # one the next rounds' updates go to.
                            thread = bench.grow(n)
                        bench.load(thread, workload)
                        bench.timed(thread, batch, rows[workload, batch, n])
            progress(f"commit cost: round {r + 1}/{cfg.rounds} done")
        bench.close()
        return list(rows.values())
