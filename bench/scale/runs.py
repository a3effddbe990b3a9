"""The scale runs on a :class:`~bench.scale.stack.Stack`: a timed batch (CPU per delta
of every process, per node), and a paced one whose enqueue-to-visible lag a poller
thread measures (the hot thread's neighbours, the quiet tenant).

Deltas are the pipeline benchmark's mix (70% appends, 20% updates, 10% removals; its
:class:`~bench.pipeline.workload.Mix`); states are checked against the one-delta-at-a-
time fold, a sample of threads each run (every thread would cost more than the run).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.common import cpu, services
from bench.common.checks import Check
from bench.pipeline import e2e
from bench.pipeline.workload import Mix, Planned, schedule, thread_id
from bench.scale.stack import Stack
from threadfold.core import dump_messages
from threadfold.core.errors import RateLimited
from threadfold.core.keys import DEFAULT_TENANT
from threadfold.testing import Ledger, version_key
from threadfold.testing.stored import state_dump
from threadfold.workers.ingest.producer import Delta
from threadfold.workers.settings import Settings
from threadfold.workers.storage import meta

SAMPLE = 150


@dataclass(frozen=True)
class Shape:
    """``threads`` x ``per_thread`` deltas in bulks of ``bulk`` (``run`` consecutive
    deltas of a thread in a bulk); with ``hot``, that share of every bulk goes to one
    more thread besides (index ``threads``)."""

    threads: int
    per_thread: int
    bulk: int
    run: int
    hot: float = 0.0

    def bulks(self, seed: int) -> list[list[int]]:
        cold = max(1, round(self.bulk * (1 - self.hot)))
        out = list(schedule(self.threads, self.per_thread, cold, self.run, seed))
        if self.hot:
            extra = self.hot / (1 - self.hot)
            out = [b + [self.threads] * round(len(b) * extra) for b in out]
        return out


@dataclass
class Cpu:
    """CPU seconds used so far: this process (the producer), the workers, each node,
    the broker."""

    producer: float
    workers: float
    nodes: list[float]
    broker: float

    def minus(self, before: Cpu) -> Cpu:
        return Cpu(self.producer - before.producer, self.workers - before.workers,
                   [a - b for a, b in zip(self.nodes, before.nodes, strict=True)],
                   self.broker - before.broker)


def snapshot(st: Stack, clients: Sequence[Any]) -> Cpu:
    return Cpu(time.process_time(), cpu.processes_cpu(st.workers),
               [cpu.redis_cpu(c) for c in clients[:-1]], cpu.redis_cpu(clients[-1]))


def batch(st: Stack, shape: Shape, prefix: str, seed: int = 1) -> dict[str, Any]:
    """Every delta through ``enqueue_stream`` (a batch job: the workers fold them), until
    every thread has applied all of its; CPU per delta of each process."""
    clients = [*st.node_clients(), st.broker.client()]
    mix = Mix(shape.threads + 1, seed)
    planned = e2e.plan(mix, shape.bulks(seed), prefix)
    counts: dict[str, int] = {}
    for p in (p for b in planned for p in b):
        ref = f"{DEFAULT_TENANT}/{thread_id(p.thread, prefix)}"
        counts[ref] = counts.get(ref, 0) + 1
    published = _publishes(clients[:-1])
    before, began = snapshot(st, clients), time.perf_counter()
    results = e2e.send(st.producer, planned, prefix)
    e2e.wait_applied(st.client, st.settings, counts, st.workers, timeout=900.0)
    seconds = time.perf_counter() - began
    spent = snapshot(st, clients).minus(before)
    commits = _publishes(clients[:-1]) - published
    sent = e2e.record(planned, results, prefix)
    n = sum(counts.values())
    hot_ref = f"{DEFAULT_TENANT}/{thread_id(shape.threads, prefix)}"
    out: dict[str, Any] = {
        "deltas": n, "seconds": seconds, "rate": n / seconds,
        "producer_us": spent.producer / n * 1e6, "workers_us": spent.workers / n * 1e6,
        "nodes_us": [c / n * 1e6 for c in spent.nodes], "broker_us": spent.broker / n * 1e6,
        "commits_per_delta": commits / n,
        "check": _check(st, sent, [hot_ref] if shape.hot else []).__dict__,
    }
    out["redis_us"] = sum(out["nodes_us"])
    out["total_us"] = (out["producer_us"] + out["workers_us"] + out["redis_us"]
                       + out["broker_us"])
    if shape.hot:
        out["hot_node"] = st.node_of(st.settings.keyspace.thread(hot_ref).meta)
    return out


def _pipeline(st: Stack) -> Any:
    """A cluster pipeline (one exchange a node) of plain commands."""
    make: Any = st.client.pipeline  # (untyped in redis-py)
    return make(transaction=False)


def _publishes(clients: Sequence[Any]) -> int:
    """Commits so far: each publishes its thread's change event once, and nothing else
    publishes on the state nodes here (COMMIT's and INGEST's commits alike)."""
    total = 0
    for client in clients:
        stat = services.commandstats(client).get("publish")
        total += stat.calls if stat else 0
    return total


def idle(st: Stack, seconds: float = 3.0) -> dict[str, float]:
    """CPU a second of the nodes and the workers with nothing to do (cluster gossip,
    server cron, Celery's heartbeats and polling): what a deployment pays per process
    whatever its load."""
    clients = [*st.node_clients(), st.broker.client()]
    before = snapshot(st, clients)
    time.sleep(seconds)
    spent = snapshot(st, clients).minus(before)
    return {"node_cpu_per_s": sum(spent.nodes) / len(spent.nodes) / seconds,
            "worker_cpu_per_s": spent.workers / len(st.workers) / seconds}


def _check(st: Stack, sent: Ledger, always: Sequence[str]) -> Check:
    refs = sent.threads()
    chosen = [*always, *random.Random(7).sample(refs, min(SAMPLE, len(refs)))]
    wrong = [r for r in chosen
             if state_dump(st.store, r) != dump_messages(sent.expected(r))]
    return Check(f"{len(chosen)} threads (a sample) equal the one-at-a-time fold", not wrong,
                 f"{len(wrong)} differ, e.g. {wrong[:3]}" if wrong else "")


@dataclass
class Poller:
    """Pending (version, sent-at) per thread, resolved against the threads' cursors."""

    st: Stack
    pending: dict[str, deque[tuple[tuple[int, int], float]]] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ref: str, version: str, sent_at: float) -> None:
        with self.lock:
            self.pending.setdefault(ref, deque()).append((version_key(version), sent_at))

    def poll(self) -> None:
        with self.lock:
            refs = list(self.pending)
        if not refs:
            return
        pipe = _pipeline(self.st)
        for ref in refs:
            pipe.hget(self.st.settings.keyspace.thread(ref).meta, meta.CURSOR)
        cursors, now = pipe.execute(), time.perf_counter()
        with self.lock:
            for ref, raw in zip(refs, cursors, strict=True):
                waiting = self.pending.get(ref)
                if not raw or not waiting:
                    continue
                at = version_key(raw.decode())
                while waiting and waiting[0][0] <= at:
                    self.latencies.append((now - waiting.popleft()[1]) * 1000)
                if not waiting:
                    del self.pending[ref]

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set() or self.pending:
            self.poll()
            time.sleep(0.002)


@dataclass(frozen=True)
class Pace:
    """``rate`` deltas/s for ``seconds`` over ``threads`` threads of ``tenant``, one
    ``enqueue_many`` a tick (the default path: a thread with nothing waiting is
    committed by the call); ``hot`` of them to one more thread, not measured."""

    rate: float
    seconds: float
    threads: int
    tenant: str = DEFAULT_TENANT
    hot: float = 0.0
    tick: float = 0.01


def paced(st: Stack, pace: Pace, prefix: str, seed: int = 2) -> dict[str, Any]:
    """Enqueue-to-visible of the (cold) deltas at a paced rate: p50/p99 ms."""
    poller, stop = Poller(st), threading.Event()
    polling = threading.Thread(target=poller.run, args=(stop,))
    polling.start()
    mix, rng = Mix(pace.threads + 1, seed), random.Random(seed)
    sent, began, count, calls = 0, time.perf_counter(), 0, []
    try:
        while (elapsed := time.perf_counter() - began) < pace.seconds:
            due = int(pace.rate * elapsed) + 1 - count
            if due <= 0:
                time.sleep(pace.tick / 4)
                continue
            chosen = [pace.threads if rng.random() < pace.hot else rng.randrange(pace.threads)
                      for _ in range(due)]
            planned = [mix.next(t) for t in chosen]
            deltas = [_delta(p, prefix) for p in planned]
            at = time.perf_counter()
            results = st.producer.enqueue_many(deltas, tenant=pace.tenant)
            calls.append((time.perf_counter() - at) * 1000)
            mix.learn(planned, results)
            for p, d, r in zip(planned, deltas, results, strict=True):
                if p.thread != pace.threads:
                    poller.add(f"{pace.tenant}/{d.thread_id}", r.version, at)
            count += due
            sent += due
            time.sleep(max(0.0, pace.tick - (time.perf_counter() - at)))
    finally:
        stop.set()
        polling.join(120)
    lat, calls = sorted(poller.latencies), sorted(calls)
    return {"sent": sent, "rate": sent / pace.seconds, "measured": len(lat),
            "p50_ms": statistics.median(lat) if lat else 0.0, "p99_ms": _p99(lat),
            "call_p50_ms": statistics.median(calls) if calls else 0.0,
            "call_p99_ms": _p99(calls)}


def _p99(ordered: Sequence[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def _delta(p: Planned, prefix: str) -> Delta:
    return Delta(thread_id(p.thread, prefix), [p.message])


def flood(urls: tuple[str, str], shape: Shape, rate: float, stop: Any, counted: Any, *,
          nice: int = 0) -> None:
    """A tenant appending bulks through the public client as fast as it may until
    ``stop`` (a process of its own: its CPU is not the measured tenant's); ``rate``
    is its share (``THREADFOLD_TENANT_RATE``, 0: none): refused calls wait the time the
    refusal names; ``nice``: its scheduling priority (19: only what the others leave of
    the cores, as a client on a machine of its own would take). Puts the count of its
    deltas."""
    from threadfold import Client  # noqa: PLC0415  # a child process's own

    os.nice(nice)

    redis_url, broker_url = urls
    settings = Settings(redis_url=redis_url, cluster=True, broker_url=broker_url,
                        tenant_rate=rate)
    sent, round_ = 0, 0
    with Client(settings=settings, tenant="flood") as client:
        while not stop.is_set():
            mix = Mix(shape.threads, round_)
            for b in schedule(shape.threads, shape.per_thread, shape.bulk, shape.run, round_):
                if stop.is_set():
                    break
                given = [(thread_id(t, f"flood{round_}"), [mix.next(t).message]) for t in b]
                try:
                    sent += len(client.append_many(given))
                except RateLimited as exc:
                    time.sleep(exc.retry_after or 0.01)
            round_ += 1
    counted.put(sent)
