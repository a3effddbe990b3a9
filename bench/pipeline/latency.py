"""Enqueue-to-visible latency at a paced rate, measured by a live poller in its own
process.

The producer sends small bulks every ``tick`` so that the cumulative count follows
``rate``, in the end-to-end run's shape (``run`` consecutive deltas for each randomly
chosen thread: "half the maximum rate" is half of what that shape sustains) or spread
out (``run=1``, one delta per chosen thread, every delta a wake-up of its own); after
each call returns it hands the poller ``(ref, version, t)``. The poller, another
process, reads every pending thread's cursor (meta field ``c``, the version ``status``
serves) with one script call per loop, then sleeps a millisecond; a delta is visible
once its thread's cursor has reached its version. Each latency is taken when the
answering call returns, so it is an upper bound by at most one poll loop (reported
beside the percentiles), plus the time its record took to reach the poller (also
reported; the pacing thread writes each bulk's records to a pipe itself, before its
own bookkeeping). The thread's last commit time (meta ``t``) is not used: a commit script
takes its time once, at its first thread, and a call commits up to 200 threads, so
``t`` can precede the moment a delta became visible. Both processes read this
machine's wall clock.
"""

from __future__ import annotations

import gc
import multiprocessing
import queue
import random
import time
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from statistics import mean, quantiles
from typing import Any, Literal

import redis

from bench.common import cpu, services
from bench.common.checks import Check
from bench.pipeline.e2e import Pipeline, verify, wait_idle
from bench.pipeline.workload import Mix, ref_of, thread_id
from threadfold.core.keys import Keyspace
from threadfold.testing import Ledger, version_key
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ingest.wakeup import BackgroundWaker
from threadfold.workers.redisio.client import run as run_call
from threadfold.workers.storage import cursors as storage_cursors

Progress = Callable[[str], None]
Record = tuple[str, tuple[int, int], float]


#: How the paced producer calls: one ``enqueue_many`` per tick ("bulk"), or one
#: ``enqueue`` per delta, its wake-ups published by the caller ("one") or gathered by a
#: :class:`~threadfold.workers.ingest.wakeup.BackgroundWaker` ("one+background").
Calls = Literal["bulk", "one", "one+background"]


@dataclass(frozen=True)
class LatencyConfig:
    rate: float
    seconds: float
    threads: int = 1000
    tick: float = 0.01
    seed: int = 4
    run: int = 1
    calls: Calls = "bulk"
    #: the background waker's window
    window: float = 0.005


@dataclass
class LatencyResult:
    config: LatencyConfig
    deltas: int
    achieved_rate: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    mean_poll_ms: float
    #: p99 and max of the time a bulk's records took to reach the poller (counted in
    #: its deltas' latencies)
    handoff_p99_ms: float
    handoff_max_ms: float
    poller_cpu_share: float
    p99_by_second_ms: list[float]
    unresolved: int
    wakes_sent_by_producer: int
    #: wake-up messages published (LPUSH calls on the broker)
    tasks: int
    worker_cpu_us: float
    check: Check

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _cursors(client: redis.Redis) -> Callable[..., list[Any]]:
    """Every given meta hash's cursor in one command (a standalone server: keys may span
    slots): far less client CPU than a pipeline of one HGET per thread."""
    def cursors(*keys: str) -> list[Any]:
        return list(run_call(client, storage_cursors.call(keys)))

    return cursors


class Poller:
    """Pending deltas per thread, resolved against the threads' cursors."""

    def __init__(self, client: redis.Redis, keys: Keyspace) -> None:
        self.keys = keys
        self.cursors_of = _cursors(client)
        self.meta: dict[str, str] = {}
        self.seen: dict[str, bytes] = {}
        self.pending: dict[str, deque[tuple[tuple[int, int], float]]] = {}
        self.latencies: list[tuple[float, float]] = []
        self.loops: list[float] = []
        self.handoffs: list[float] = []

    def add(self, batch: list[Record]) -> None:
        if batch:  # from the last call's return to here: the hand-over
            self.handoffs.append(time.time() - max(t for _, _, t in batch))
        for ref, version, t in batch:
            if ref not in self.meta:
                self.meta[ref] = self.keys.thread(ref).meta
            if ref not in self.pending:
                # Its cursor may already be past this version, unchanged since last seen.
                self.seen.pop(ref, None)
            self.pending.setdefault(ref, deque()).append((version, t))

    def poll(self) -> None:
        """One script call for every pending thread; only moved cursors are parsed."""
        began = time.perf_counter()
        refs = list(self.pending)
        cursors = self.cursors_of(*[self.meta[ref] for ref in refs])
        now = time.time()
        self.loops.append(time.perf_counter() - began)
        for ref, raw in zip(refs, cursors, strict=True):
            if not raw or self.seen.get(ref) == raw:
                continue
            self.seen[ref] = raw
            cursor = version_key(raw.decode())
            waiting = self.pending[ref]
            while waiting and waiting[0][0] <= cursor:
                sent_at = waiting.popleft()[1]
                self.latencies.append((sent_at, now - sent_at))
            if not waiting:
                del self.pending[ref]

    def unresolved(self) -> int:
        return sum(len(v) for v in self.pending.values())


def _poll(url: str, prefix: str, buckets: int, inbox: Any, outbox: Any) -> None:
    """The poller process: latencies, poll-loop durations and its own CPU to ``outbox``."""
    client = redis.Redis.from_url(url)
    client.ping()
    # The poller keeps every latency it measured (a tuple each); a full collection walks
    # them all and stalls the polling loop, which would add the stall to every delta
    # pending at that moment. Nothing it allocates is cyclic garbage: no collector.
    gc.disable()
    outbox.put("ready")  # the producer starts only now: no delta waits on our start-up
    poller = Poller(client, Keyspace(prefix, buckets))
    wall0, cpu0 = time.monotonic(), time.process_time()
    closing, deadline = False, float("inf")
    while not (closing and (not poller.pending or time.monotonic() > deadline)):
        while not closing and inbox.poll():
            if (batch := inbox.recv()) is None:
                closing, deadline = True, time.monotonic() + 60
            else:
                poller.add(batch)
        if poller.pending:
            poller.poll()
        time.sleep(0.001)  # leave the two cores to the pipeline between polls
    share = (time.process_time() - cpu0) / max(time.monotonic() - wall0, 1e-9)
    outbox.put((poller.latencies, poller.loops, poller.handoffs, poller.unresolved(), share))
    client.close()


def _pace(producer: Producer, cfg: LatencyConfig, mix: Mix, inbox: Any,
          prefix: str) -> tuple[Ledger, float]:
    """Send at ``cfg.rate`` for ``cfg.seconds``, a bulk per ``cfg.tick`` (what fell due
    since the last); returns what was sent and the rate kept."""
    rng = random.Random(cfg.seed)
    sent, count, ticks = Ledger(), 0, 0
    refs_of: dict[int, str] = {}
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < cfg.seconds:
        if elapsed < ticks * cfg.tick:
            time.sleep(ticks * cfg.tick - elapsed)
            continue
        # A bulk late by more than a tick (the machine is busy) is the next tick's too.
        ticks = int(elapsed / cfg.tick) + 1
        due = int(cfg.rate * elapsed) + 1 - count
        if due <= 0:
            continue
        chosen: list[int] = []
        while len(chosen) < due:
            chosen += [rng.randrange(cfg.threads)] * min(cfg.run, due - len(chosen))
        planned = [mix.next(t) for t in chosen]
        deltas = [p.delta(prefix) for p in planned]
        if cfg.calls == "bulk":
            results = producer.enqueue_many(deltas)
            returned = [time.time()] * len(results)
        else:
            results, returned = [], []
            for d in deltas:
                results.append(producer.enqueue(d.thread_id, d.messages, delta_id=d.delta_id))
                returned.append(time.time())
        refs = [refs_of.get(p.thread) or refs_of.setdefault(
                    p.thread, ref_of(thread_id(p.thread, prefix))) for p in planned]
        # The poller first (written by this thread, now: see run()), the bookkeeping after.
        inbox.send([(ref, version_key(r.version), t)
                    for ref, r, t in zip(refs, results, returned, strict=True)])
        mix.learn(planned, results)
        for ref, p, r in zip(refs, planned, results, strict=True):
            sent.add(ref, r.version, [p.message], r.ids)
        count += due
    return sent, count / (time.monotonic() - start)


def _answer(outbox: Any, poller: Any, timeout: float = 180.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return outbox.get(timeout=0.5)
        except queue.Empty:
            if not poller.is_alive():
                raise RuntimeError(f"the poller exited ({poller.exitcode})") from None
    raise TimeoutError("the poller did not answer")


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def _by_second(latencies: list[tuple[float, float]]) -> list[float]:
    """p99 (ms) of the deltas enqueued in each second of the run: flat when sustained,
    growing when the workers fall behind."""
    if not latencies:
        return []
    first = min(t for t, _ in latencies)
    seconds: dict[int, list[float]] = {}
    for t, x in latencies:
        seconds.setdefault(int(t - first), []).append(x * 1000)
    out = []
    for _, ms in sorted(seconds.items()):
        ms.sort()
        out.append(round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 1))
    return out


def run(cfg: LatencyConfig, line: Pipeline, progress: Progress,
        prefix: str = "lat") -> LatencyResult:
    """Pace the producer on running services while the poller process measures."""
    wait_idle(line)
    ctx = multiprocessing.get_context("spawn")
    # Records go over a pipe written by the pacing thread itself: a queue's feeder
    # thread needs the interpreter lock, which the pacer holds through a large
    # ``enqueue_many``, and its records reached the poller up to ~150 ms late (counted
    # in their latencies).
    inbox, sender = ctx.Pipe(duplex=False)
    outbox = ctx.Queue()
    ks = line.settings.keyspace
    poller = ctx.Process(target=_poll, daemon=True,
                         args=(line.settings.redis_url.get_secret_value(), ks.prefix, ks.buckets,
                               inbox, outbox))
    poller.start()
    try:
        if _answer(outbox, poller, timeout=60) != "ready":
            raise RuntimeError("the poller did not start")
        line.waker.sent = 0
        services.reset_stats(line.broker)
        cpu0 = cpu.processes_cpu(line.workers)
        # The pacing loop keeps everything it sent; a full collection there stalls it,
        # and the schedule then catches up with one oversized burst. A load generator
        # must not stall on its own bookkeeping: no collector while it paces, nor until
        # the poller has answered.
        gc.collect()
        gc.disable()
        try:
            with ExitStack() as stack:
                producer = line.producer
                if cfg.calls == "one+background":
                    waker = stack.enter_context(BackgroundWaker(line.waker, cfg.window))
                    producer = Producer(line.client, line.settings, waker)
                sent, achieved = _pace(producer, cfg, Mix(cfg.threads, cfg.seed), sender,
                                       prefix)
            sender.send(None)
            latencies, loops, handoffs, unresolved, poller_share = _answer(outbox, poller)
        finally:
            gc.enable()
        worker_cpu = cpu.processes_cpu(line.workers) - cpu0
        published = services.commandstats(line.broker).get("lpush")
        poller.join(timeout=10)
    finally:
        if poller.is_alive():
            poller.kill()
    progress(f"latency: {len(latencies):,} deltas at {achieved:,.0f}/s; verifying")
    ms = sorted(x * 1000 for _, x in latencies)
    cuts = quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else ms * 99
    return LatencyResult(
        config=cfg, deltas=len(ms), achieved_rate=achieved, p50_ms=cuts[49], p90_ms=cuts[89],
        p95_ms=cuts[94], p99_ms=cuts[98], max_ms=ms[-1] if ms else 0.0,
        mean_poll_ms=mean(loops) * 1000 if loops else 0.0,
        handoff_p99_ms=_p99(handoffs) * 1000, handoff_max_ms=max(handoffs, default=0.0) * 1000,
        poller_cpu_share=poller_share,
        p99_by_second_ms=_by_second(latencies), unresolved=unresolved,
        wakes_sent_by_producer=line.waker.sent,
        tasks=published.calls if published else 0,
        worker_cpu_us=worker_cpu / max(len(ms), 1) * 1e6,
        check=verify(line.store, line.settings, sent),
    )
