"""One contender's run: writer processes apply the workload, this process times it.

Each writer (spawned: it builds its own threads from the seed) prefills its threads,
says so, and waits; all start together. A writer applies its threads' deltas in the
spread order, one call each, and records each call's duration. For threadfold it hands
every ``sample``-th delta's ``(ref, version, start)`` to this process, which polls the
threads' cursors (:class:`bench.pipeline.latency.Poller`, one script call a loop) and
takes the delta's time to visible from the call's start to the poll that saw its
version. When the writers are done, this process waits until every thread's cursor
reached its last version: the run ends there (for LangGraph, when the last call
returned). CPU is each writer's own (``time.process_time`` over its calls), plus the
services' over the run: the stack's (API, workers, beat, both Redis) or PostgreSQL's
(every ``postgres`` process). This process polls every 5 ms, a little Redis time counted in.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

import psutil
import redis

from bench.peer.sides import BULK, Kind, Where, open_side
from bench.peer.workload import Shape, mine, spread
from bench.pipeline.latency import Poller
from threadfold.core.keys import Keyspace

#: Records a writer gathers before it sends them (a send per delta would cost it more).
_FLUSH = 64
#: Seconds between two polls of the pending threads' cursors: each is a script call
#: whose Redis time is counted to threadfold (at 1 ms it was ~100 µs a delta), and the
#: times to visible are upper bounds by at most this.
_POLL = 0.005


@dataclass
class Outcome:
    """What one contender's run measured."""

    kind: Kind
    deltas: int
    seconds: float
    writer_cpu: float
    service_cpu: float
    calls_ms: list[float] = field(default_factory=list)
    visible_ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.deltas / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_us(self) -> float:
        return 1e6 * (self.writer_cpu + self.service_cpu) / max(self.deltas, 1)


def thread_name(prefix: str, i: int) -> str:
    return f"{prefix}-{i:05d}"


@dataclass(frozen=True)
class Job:
    """One contender's run, as each of its writer processes is given it."""

    kind: Kind
    where: Where
    shape: Shape
    writers: int
    prefix: str
    #: Every ``sample``-th delta's time to visible is measured.
    sample: int

    @property
    def count(self) -> int:
        """Its threads: LangGraph's are the first of ours."""
        peer = self.kind.startswith("langgraph")
        return self.shape.peer_threads if peer else self.shape.threads


def _writer(job: Job, writer: int, conn: Connection, go: Any, close: Any) -> None:
    side, prefix, sample = open_side(job.kind, job.where), job.prefix, job.sample
    workloads = {i: job.shape.thread(i) for i in mine(job.count, writer, job.writers)}
    for i, w in workloads.items():
        side.prefill(thread_name(prefix, i), w.initial)
    conn.send(("ready", None))
    go.wait()
    bulk = BULK if job.kind == "client-bulk" else 1
    items = [(thread_name(prefix, i), delta) for i, delta in spread(workloads)]
    cpu0, calls, records, last = time.process_time(), [], [], {}
    for at in range(0, len(items), bulk):
        began = time.time()
        if bulk == 1:
            seen = side.apply(*items[at])
            got = [] if seen is None else [seen]
        else:
            got = side.apply_many(items[at : at + bulk])
        calls.append(time.time() - began)
        for n, (ref, version) in enumerate(got, at):
            last[ref] = version
            if n % sample == 0:
                records.append((ref, version, began))
        if len(records) >= _FLUSH:
            conn.send(("records", records))
            records = []
    cpu = time.process_time() - cpu0
    if records:
        conn.send(("records", records))
    conn.send(("done", (cpu, calls, time.time(), last)))
    # Open until the services' CPU is read: a PostgreSQL backend's CPU is counted only
    # while it lives (its connection's).
    close.wait()
    side.close()


def postgres_cpu() -> float:
    """CPU seconds of every PostgreSQL process (the server's and the backends')."""
    total = 0.0
    for p in psutil.process_iter(["name"]):
        if p.info["name"] in ("postgres", "postmaster"):
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                continue
    return total


def _start(job: Job) -> tuple[list[Any], list[Connection], Any, Any]:
    ctx = multiprocessing.get_context("spawn")
    go, close = ctx.Event(), ctx.Event()
    procs, conns = [], []
    for w in range(job.writers):
        ours, theirs = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer, daemon=True, args=(job, w, theirs, go, close))
        proc.start()
        theirs.close()
        procs.append(proc)
        conns.append(ours)
    for conn in conns:  # every writer prefilled
        tag, _ = conn.recv()
        assert tag == "ready", tag
    return procs, conns, go, close


def run(job: Job, keys: Keyspace, service_cpu: Callable[[], float],
        settle: Callable[[], None]) -> Outcome:
    """One contender's run. ``settle``: wait until the prefill is applied (threadfold)."""
    procs, conns, go, close = _start(job)
    settle()
    client = redis.Redis.from_url(job.where.redis_url)
    poller = Poller(client, keys)
    services0, started = service_cpu(), time.time()
    go.set()
    done = _collect(conns, poller)
    while poller.pending:
        poller.poll()
        time.sleep(_POLL)
    last: dict[str, tuple[int, int]] = {}
    for *_, final in done:
        last.update(final)
    ended = max(d[2] for d in done)
    if last:
        ended = max(ended, _all_visible(client, keys, last))
    outcome = Outcome(job.kind, job.count * job.shape.per_thread, ended - started,
                      sum(d[0] for d in done), service_cpu() - services0,
                      [1e3 * x for d in done for x in d[1]],
                      [1e3 * x for _, x in poller.latencies])
    close.set()
    for proc in procs:
        proc.join(timeout=30)
    client.close()
    return outcome


def _collect(conns: Sequence[Connection], poller: Poller) -> list[Any]:
    """Records into the poller until every writer is done; the writers' reports."""
    done: list[Any] = []
    open_conns, polled = list(conns), 0.0
    while open_conns:
        for conn in wait(open_conns, timeout=_POLL):
            assert isinstance(conn, Connection)
            tag, body = conn.recv()
            if tag == "records":
                poller.add(body)
            else:
                done.append(body)
                open_conns.remove(conn)
        if poller.pending and time.monotonic() >= polled + _POLL:
            poller.poll()
            polled = time.monotonic()
    return done


def _all_visible(client: redis.Redis, keys: Keyspace, last: dict[str, tuple[int, int]]) -> float:
    """When every thread's cursor had reached its last version (polled every 5 ms)."""
    waiting = Poller(client, keys)
    waiting.add([(ref, version, 0.0) for ref, version in last.items()])
    deadline = time.time() + 600
    while waiting.pending:
        if time.time() > deadline:
            raise TimeoutError(f"{waiting.unresolved()} threads never became visible")
        waiting.poll()
        if waiting.pending:
            time.sleep(0.005)
    return time.time()
