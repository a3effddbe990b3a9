"""Timed replays: audit or rebuild of every thread, split over 1 or more processes.

A recomputation runs as Celery tasks, a slice of threads each, on the workers: here the
threads are split over ``processes`` forked processes (each its own Redis connection),
started together; the wall time runs from their start to the last one's end. Each
process reports the deltas it replayed (the entries of the audits) and its CPU time;
Redis's CPU comes from ``INFO cpu``.

The code under test is whatever ``threadfold.workers.replay.replay`` is: with ``audit_many`` and
``rebuild_many`` (slices of threads, a few round trips per slice) or, in the releases
before them, the per-thread ``audit`` and ``rebuild`` (so ``python -m bench.ab replay``
measures a commit before them too).
"""

from __future__ import annotations

import gc
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal

from bench.common import cpu
from bench.common.store import store_for
from bench.replay.workload import settings_for
from threadfold.workers.replay import replay
from threadfold.workers.storage.store import Store

Op = Literal["audit", "rebuild"]


@dataclass(frozen=True)
class Outcome:
    """What one process's share came to."""

    threads: int
    deltas: int
    differing: int
    rebuilt: int
    errors: list[str]
    cpu: float


def _run(store: Store, refs: Sequence[str], op: Op) -> list[Any]:
    many = getattr(replay, f"{op}_many", None)
    if many is not None:
        return list(many(store, refs))
    one = replay.audit if op == "audit" else replay.rebuild
    out: list[Any] = []
    for ref in refs:
        try:
            out.append(one(store, ref))
        except replay.NotReplayable as exc:
            out.append(exc)
    return out


def _outcome(results: Sequence[Any], cpu: float) -> Outcome:
    errors = [str(r) for r in results if isinstance(r, Exception)]
    done = [r for r in results if not isinstance(r, Exception)]
    return Outcome(
        len(results),
        sum(r.entries for r in done),
        sum(1 for r in done if r.differences),
        sum(1 for r in done if getattr(r, "rebuilt", False)),
        errors[:5],
        cpu,
    )


def _child(url: str, refs: list[str], op: Op, start: Any, out: Connection) -> None:
    # What the fork inherited (the benchmark's own records: every thread's state) is
    # kept out of the collector's scans, which would also copy its pages.
    gc.freeze()
    store = store_for(settings_for(url))
    store.client.ping()
    start.wait()
    began = time.process_time()
    results = _run(store, refs, op)
    out.send(_outcome(results, time.process_time() - began))
    out.close()
    store.client.close()


@dataclass(frozen=True)
class Run:
    """One timed replay of every thread of a shape."""

    op: str
    shape: str
    processes: int
    threads: int
    deltas: int
    seconds: float
    client_cpu: float
    redis_cpu: float
    differing: int
    rebuilt: int
    errors: list[str]

    @property
    def rate(self) -> float:
        return self.deltas / self.seconds if self.seconds else 0.0

    def us_per_delta(self, cpu: float) -> float:
        return cpu / self.deltas * 1e6 if self.deltas else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rate": self.rate,
                "client_cpu_us_per_delta": self.us_per_delta(self.client_cpu),
                "redis_cpu_us_per_delta": self.us_per_delta(self.redis_cpu)}


def timed(url: str, refs: Sequence[str], op: Op, processes: int, label: str) -> Run:
    """Audit or rebuild ``refs``, split over ``processes`` processes started together."""
    fork = multiprocessing.get_context("fork")
    start = fork.Event()
    shares = [list(refs[n::processes]) for n in range(processes)]
    pipes, children = [], []
    for share in shares:
        receive, send = fork.Pipe(duplex=False)
        child = fork.Process(target=_child, args=(url, share, op, start, send))
        child.start()
        send.close()
        pipes.append(receive)
        children.append(child)
    admin = store_for(settings_for(url)).client
    redis_before = cpu.redis_cpu(admin)  # type: ignore[arg-type]
    began = time.perf_counter()
    start.set()
    outcomes: list[Outcome] = [pipe.recv() for pipe in pipes]
    seconds = time.perf_counter() - began
    redis_after = cpu.redis_cpu(admin)  # type: ignore[arg-type]
    for child in children:
        child.join()
    admin.close()
    return Run(
        op=label,
        shape="",
        processes=processes,
        threads=sum(o.threads for o in outcomes),
        deltas=sum(o.deltas for o in outcomes),
        seconds=seconds,
        client_cpu=sum(o.cpu for o in outcomes),
        redis_cpu=redis_after - redis_before,
        differing=sum(o.differing for o in outcomes),
        rebuilt=sum(o.rebuilt for o in outcomes),
        errors=[e for o in outcomes for e in o.errors][:5],
    )
