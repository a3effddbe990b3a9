"""The baseline run: the same mixed workload through :mod:`bench.pipeline.naive_app`.

Deltas go out one task each, round-robin over the threads, so consecutive deltas of a
thread are a whole round apart in the queue: with two single-process workers they are
never in flight together, and per-thread order holds (the lock alone would not keep it).
Appends carry client ids (the naive path has no way to hand stamped ids back).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis
from langchain_core.messages import messages_from_dict

from bench.common import cpu, services
from bench.common.checks import Check, first_difference, lc_dump
from bench.common.services import ROOT
from bench.pipeline import naive_app
from bench.pipeline.workload import Mix, ref_of, round_robin, thread_id
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.workers.ops.processes import ManagedProcess, wait_until

Progress = Callable[[str], None]
QUEUE = "naive"
PREFIX = "naive"


@dataclass(frozen=True)
class NaiveConfig:
    threads: int
    per_thread: int
    workers: int = 2
    seed: int = 2

    @property
    def deltas(self) -> int:
        return self.threads * self.per_thread


@dataclass
class CeleryFloor:
    """No-op tasks through the same workers: what a task costs before any work."""

    tasks: int
    seconds: float
    send_cpu_us: float
    worker_cpu_us: float

    @property
    def rate(self) -> float:
        return self.tasks / self.seconds


@dataclass
class NaiveResult:
    config: NaiveConfig
    deltas: int
    ops: dict[str, int]
    seconds: float
    send_seconds: float
    sender_cpu: float
    worker_cpu: float
    redis_cpu: float
    failed: int
    check: Check
    floor: CeleryFloor | None = None

    @property
    def rate(self) -> float:
        return self.deltas / self.seconds

    def to_json(self) -> dict[str, Any]:
        data = {**asdict(self), "rate": self.rate}
        if self.floor is not None:
            data["floor"]["rate"] = self.floor.rate
        return data


def start_worker(state_url: str, broker_url: str, name: str, logs: Path) -> ManagedProcess:
    return ManagedProcess(
        [sys.executable, "-m", "celery", "-A", "bench.pipeline.naive_app", "worker",
         "--pool=prefork", "--concurrency=1", "-Q", QUEUE, "-n", f"{name}@%h",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"],
        env={"NAIVE_STATE_URL": state_url, "NAIVE_BROKER_URL": broker_url, "NAIVE_QUEUE": QUEUE,
             "PYTHONPATH": str(ROOT)},
        log_path=logs / f"naive-{name}.log", cwd=ROOT,
    )


def _send(app: Any, mix: Mix, order: Sequence[int]) -> Ledger:
    """One task per delta; what was sent is recorded for the check."""
    sent = Ledger()
    with app.producer_or_acquire() as producer:
        for n, t in enumerate(order):
            planned = mix.next(t)
            thread = thread_id(t, PREFIX)
            app.send_task(naive_app.TASK, args=[thread, [planned.message]], queue=QUEUE,
                          producer=producer)
            sent.add(ref_of(thread), f"0-{n}",
                     [planned.message], [planned.message["id"]])
    return sent


def verify(client: redis.Redis, sent: Ledger) -> Check:
    """Each stored blob against the one-delta-at-a-time fold of what was sent."""
    wrong: list[str] = []
    detail = ""
    for ref in sent.threads():
        raw = client.get(naive_app.state_key(ref.partition("/")[2]))
        stored = lc_dump(messages_from_dict(json.loads(raw))) if raw else []
        difference = first_difference(stored, dump_messages(sent.expected(ref)))
        if difference:
            wrong.append(ref)
            detail = detail or f"{ref}: {difference}"
    name = f"naive: {len(sent.threads())} threads equal the one-at-a-time fold"
    return Check(name, not wrong, f"{len(wrong)} differ; {detail}" if wrong else "")


def celery_floor(app: Any, client: redis.Redis, workers: Sequence[ManagedProcess],
                 tasks: int) -> CeleryFloor:
    """``tasks`` no-op tasks: the per-task cost of Celery on the Redis broker."""
    cpu0 = cpu.processes_cpu(workers)
    start, start_cpu = time.perf_counter(), time.thread_time()
    with app.producer_or_acquire() as producer:
        for _ in range(tasks):
            app.send_task(naive_app.NOOP, queue=QUEUE, producer=producer)
    send_cpu = time.thread_time() - start_cpu
    wait_until(lambda: int(client.get(naive_app.NOOPS) or 0) >= tasks, 600, interval=0.02,
               message="no-op tasks not done")
    seconds = time.perf_counter() - start
    worker_cpu = cpu.processes_cpu(workers) - cpu0
    return CeleryFloor(tasks, seconds, send_cpu / tasks * 1e6, worker_cpu / tasks * 1e6)


def run(cfg: NaiveConfig, progress: Progress, floor_tasks: int = 0) -> NaiveResult:
    with (services.redis_server() as state, services.redis_server() as broker,
          services.log_dir() as logs):
        names = [f"n{i}" for i in range(cfg.workers)]
        workers = [start_worker(state.url, broker.url, n, logs) for n in names]
        with services.killing(workers):
            app = naive_app.make_app(broker.url, QUEUE)
            try:
                services.wait_ready(app, names, workers)
                client = state.client()
                result = _timed(cfg, app, client, workers, progress)
                if floor_tasks:
                    result.floor = celery_floor(app, client, workers, floor_tasks)
                    progress(f"celery floor: {result.floor.rate:,.0f} no-op tasks/s")
                return result
            finally:
                app.close()


def _wait_done(client: redis.Redis, total: int, workers: Sequence[ManagedProcess]) -> None:
    def done() -> bool:
        if not all(w.alive for w in workers):
            raise RuntimeError("a naive worker died")
        return int(client.get(naive_app.DONE) or 0) >= total

    wait_until(done, 1800, interval=0.05, message="naive tasks not done")


def _timed(cfg: NaiveConfig, app: Any, client: redis.Redis,
           workers: Sequence[ManagedProcess], progress: Progress) -> NaiveResult:
    warm = Mix(4, seed=98, client_ids=1.0)
    _send(app, warm, list(round_robin(4, 5)))
    _wait_done(client, 20, workers)
    client.flushall()
    progress("naive: workers ready and warm")
    mix = Mix(cfg.threads, cfg.seed, client_ids=1.0)
    order = list(round_robin(cfg.threads, cfg.per_thread))
    cpu0 = cpu.processes_cpu(workers), cpu.redis_cpu(client)
    start, start_cpu = time.time(), time.thread_time()
    sent = _send(app, mix, order)
    send_seconds, sender_cpu = time.time() - start, time.thread_time() - start_cpu
    _wait_done(client, len(order), workers)
    end = float(client.get(naive_app.LAST) or time.time())
    cpu1 = cpu.processes_cpu(workers), cpu.redis_cpu(client)
    progress(f"naive: {len(order):,} deltas in {end - start:.1f}s; verifying")
    return NaiveResult(
        config=cfg, deltas=len(order), ops=dict(mix.ops), seconds=end - start,
        send_seconds=send_seconds, sender_cpu=sender_cpu, worker_cpu=cpu1[0] - cpu0[0],
        redis_cpu=cpu1[1] - cpu0[1], failed=int(client.get(naive_app.FAILED) or 0),
        check=verify(client, sent),
    )
