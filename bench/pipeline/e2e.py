"""End to end: a bulk producer -> Redis -> Celery worker processes -> committed state.

The rate is taken on the Redis clock: from just before the first enqueue to the last
commit (the meta field ``t`` every commit writes), so it does not depend on how often
the benchmark polls for the end. The wall time to the poll that saw every thread
applied is reported beside it.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from bench.common import cpu, services
from bench.common.checks import Check
from bench.common.services import CommandStat
from bench.common.store import store_for
from bench.pipeline.workload import Mix, Planned, ref_of, schedule, thread_id
from threadfold.core import dump_messages
from threadfold.testing import Ledger, version_key
from threadfold.testing.stored import CountingWaker, state_dump, wait_drained
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import ManagedProcess, wait_until
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker
from threadfold.workers.settings import Settings
from threadfold.workers.storage import meta
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.store import Store

if TYPE_CHECKING:  # an A/B runs bench against older trees, where results had another home
    from threadfold.core.results import Appended
    from threadfold.workers.redisio.client import SyncRedis

Progress = Callable[[str], None]


@dataclass(frozen=True)
class E2EConfig:
    """One end-to-end run: ``threads`` x ``per_thread`` deltas in bulks of ``bulk``,
    ``run`` consecutive deltas per thread in a bulk; ``workers`` x ``concurrency``."""

    threads: int
    per_thread: int
    bulk: int
    run: int
    batch_size: int
    workers: int = 2
    concurrency: int = 1
    seed: int = 1

    @property
    def deltas(self) -> int:
        return self.threads * self.per_thread


@dataclass
class E2EResult:
    """What one run measured; ``seconds`` is first enqueue to last commit (Redis clock)."""

    config: E2EConfig
    deltas: int
    ops: dict[str, int]
    seconds: float
    wall_seconds: float
    produce_seconds: float
    producer_cpu: float
    worker_cpu: float
    redis_cpu: float
    broker_cpu: float
    wakes_sent_by_producer: int
    commits: int
    commands: dict[str, CommandStat]
    broker_commands: dict[str, CommandStat]
    check: Check
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.deltas / self.seconds

    def per_delta_us(self, cpu: float) -> float:
        return cpu / self.deltas * 1e6

    @property
    def cpu_per_delta_us(self) -> float:
        """Producer, workers, state Redis and broker Redis: CPU per delta in all."""
        spent = self.producer_cpu + self.worker_cpu + self.redis_cpu + self.broker_cpu
        return self.per_delta_us(spent)

    @property
    def capacity(self) -> float:
        """Deltas/s if two idle cores ran only this (CPU-bound estimate, not a measurement)."""
        return 2e6 / self.cpu_per_delta_us

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rate"] = self.rate
        data["cpu_per_delta_us"] = self.cpu_per_delta_us
        data["capacity_2_cores_estimate"] = self.capacity
        data["commands"] = _top(self.commands)
        data["broker_commands"] = _top(self.broker_commands)
        return data


def _top(stats: Mapping[str, CommandStat], n: int = 12) -> dict[str, dict[str, float]]:
    best = sorted(stats.items(), key=lambda kv: -kv[1].usec)[:n]
    return {k: {"calls": v.calls, "usec": v.usec, "usec_per_call": round(v.usec_per_call, 2)}
            for k, v in best}


def redis_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def plan(mix: Mix, bulks: Sequence[list[int]], prefix: str) -> list[list[Planned]]:
    """Every bulk's deltas, made before the clock starts (a batch job has its deltas
    ready). Updates and removes then target client-chosen ids only: the ids the producer
    stamps on id-less appends are not known yet (``Mix.learn`` is not called)."""
    return [[mix.next(t) for t in bulk] for bulk in bulks]


def send(producer: Producer, planned: Sequence[list[Planned]], prefix: str) -> list[list[Appended]]:
    """The timed part: the bulks through ``enqueue_stream``, one in flight (the producer
    validates and encodes bulk k+1 while Redis appends bulk k), as a batch job sends."""
    return list(producer.enqueue_stream([p.delta(prefix) for p in bulk] for bulk in planned))


def record(planned: Sequence[list[Planned]], results: Sequence[list[Appended]],
           prefix: str) -> Ledger:
    """What each delta was promised, for the check."""
    sent = Ledger()
    for bulk, answers in zip(planned, results, strict=True):
        for p, r in zip(bulk, answers, strict=True):
            sent.add(ref_of(thread_id(p.thread, prefix)), r.version, [p.message], r.ids)
    return sent


def produce(producer: Producer, mix: Mix, bulks: Sequence[list[int]], prefix: str) -> Ledger:
    planned = plan(mix, bulks, prefix)
    return record(planned, send(producer, planned, prefix), prefix)


def wait_applied(client: SyncRedis, settings: Settings, counts: Mapping[str, int],
                 workers: Sequence[ManagedProcess], timeout: float = 600.0) -> None:
    """Until every thread has applied as many entries as it was sent (meta field ``k``);
    on a server or a cluster (a cluster's pipeline is one exchange a node)."""
    ks = settings.keyspace
    pending = dict(counts)

    def done() -> bool:
        if not all(w.alive for w in workers):
            raise RuntimeError("a worker died during the run")
        make: Any = client.pipeline  # (untyped for a cluster in redis-py)
        pipe = make(transaction=False)
        refs = list(pending)
        for ref in refs:
            pipe.hget(ks.thread(ref).meta, meta.APPLIED)
        for ref, applied in zip(refs, pipe.execute(), strict=True):
            if applied is not None and int(applied) >= pending[ref]:
                del pending[ref]
        return not pending

    wait_until(done, timeout, interval=0.02, message=f"{len(pending)} threads not applied")


def last_commit_ms(client: redis.Redis, settings: Settings, refs: Sequence[str]) -> int:
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.hget(settings.keyspace.thread(ref).meta, meta.COMMITTED_MS)
    return max(int(t) for t in pipe.execute())


def verify(store: Store, settings: Settings, sent: Ledger) -> Check:
    """Every thread equals the one-delta-at-a-time fold; logs trimmed, indexes exact."""
    wrong: list[str] = []
    for ref, deltas in sent.items():
        k = settings.keyspace.thread(ref)
        status = store.status(ref)
        latest = max((v for v, _, _ in deltas), key=version_key)
        if (status is None or status.backlog != 0 or status.version != latest
                or store.client.xlen(k.log) != 0
                or layout_problems(store, ref)
                or state_dump(store, ref) != dump_messages(sent.expected(ref))):
            wrong.append(ref)
    name = f"{len(sent.threads())} threads equal the one-at-a-time fold"
    return Check(name, not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}" if wrong else "")


def _warm_up(producer: Producer, store: Store, threads: int = 40, per_thread: int = 10) -> None:
    """Scripts cached on the server, worker pools imported and connected."""
    mix = Mix(threads, seed=99)
    bulks = list(schedule(threads, per_thread, 200, 5, seed=99))
    sent = produce(producer, mix, bulks, "warm")
    wait_drained(store, sent.threads(), timeout=120)


@dataclass
class Pipeline:
    """Running services: state and broker Redis, worker processes, a producer."""

    settings: Settings
    app: Any
    workers: list[ManagedProcess]
    store: Store
    client: redis.Redis
    broker: redis.Redis
    waker: CountingWaker
    producer: Producer


@contextmanager
def pipeline(batch_size: int, workers: int = 2, concurrency: int = 1) -> Iterator[Pipeline]:
    """Start Redis (state and broker) and ``workers`` Celery workers; warm them up."""
    # Production defaults (wake-up lease, drain budget, time limits), not the tests'
    # short ones: a 1.5 s lease expiring under a queue backlog re-sends wake-ups.
    with (services.log_dir() as logs,
          services.backend(logs, workers, concurrency, batch_size=batch_size) as up,
          ExitStack() as stack):
        settings, app = up.settings, up.app
        store = store_for(settings)
        stack.callback(store.client.close)
        client = sync_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
        stack.callback(client.close)
        waker = CountingWaker(CeleryWaker(app, settings.queue, settings.refs_per_task))
        line = Pipeline(settings, app, up.workers, store, up.state.client(), up.broker.client(),
                        waker, Producer(client, settings, waker))
        _warm_up(line.producer, store)
        yield line


def wait_idle(line: Pipeline, timeout: float = 300.0) -> None:
    """Until no wake-up waits in the broker queue: a run must not queue behind the last."""
    wait_until(lambda: line.broker.llen(line.settings.queue) == 0, timeout, interval=0.05,
               message="wake-ups still queued")


def run(cfg: E2EConfig, line: Pipeline, progress: Progress, prefix: str = "e2e") -> E2EResult:
    """One timed run on running services (their batch size must be ``cfg.batch_size``)."""
    client, broker, workers = line.client, line.broker, line.workers
    wait_idle(line)
    mix = Mix(cfg.threads, cfg.seed)
    bulks = list(schedule(cfg.threads, cfg.per_thread, cfg.bulk, cfg.run, cfg.seed))
    line.waker.sent = 0
    for c in (client, broker):
        services.reset_stats(c)
    cpu0 = (cpu.processes_cpu(workers), cpu.redis_cpu(client), cpu.redis_cpu(broker))
    planned = plan(mix, bulks, prefix)
    # The deltas made in advance are the harness's, not the producer's: out of the
    # collector's way (it would walk all 100,000 of them on every full collection).
    gc.collect()
    gc.freeze()
    try:
        start_ms, start, start_cpu = redis_ms(client), time.perf_counter(), time.process_time()
        results = send(line.producer, planned, prefix)
        produced, producer_cpu = time.perf_counter(), time.process_time() - start_cpu
    finally:
        gc.unfreeze()
    sent = record(planned, results, prefix)
    counts = {ref: len(d) for ref, d in sent.items()}
    wait_applied(client, line.settings, counts, workers)
    wall = time.perf_counter() - start
    end_ms = last_commit_ms(client, line.settings, list(counts))
    cpu1 = (cpu.processes_cpu(workers), cpu.redis_cpu(client), cpu.redis_cpu(broker))
    commands, broker_commands = services.commandstats(client), services.commandstats(broker)
    progress(f"e2e batch_size={cfg.batch_size} run={cfg.run}: {cfg.deltas:,} deltas in "
             f"{wall:.2f}s; verifying")
    return E2EResult(
        config=cfg, deltas=sum(counts.values()), ops=dict(Counter(mix.ops)),
        seconds=max(end_ms - start_ms, 1) / 1000, wall_seconds=wall,
        produce_seconds=produced - start, producer_cpu=producer_cpu,
        worker_cpu=cpu1[0] - cpu0[0], redis_cpu=cpu1[1] - cpu0[1], broker_cpu=cpu1[2] - cpu0[2],
        wakes_sent_by_producer=line.waker.sent,
        commits=commands["xtrim"].calls if "xtrim" in commands else 0,
        commands=commands, broker_commands=broker_commands,
        check=verify(line.store, line.settings, sent),
    )
