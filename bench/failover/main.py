"""What a Redis failover costs in acknowledged deltas, and what ``WAIT`` costs a write
(issue 25, item 3): ``THREADFOLD_DURABILITY`` 'primary' (the default) against
'replica'.

Run ``python -m bench.failover [--quick] [--out PATH]``. Each round starts a primary
``redis-server`` and a replica of it (no persistence: what survives is what reached
the replica) and alternates the two modes:

1. **cost**: writer threads (one sync ``Producer`` each, one one-message delta per
   call, threads in turn, every delta committed by its ingest call) write for a fixed
   time; the writers' and the primary's CPU per delta and each call's latency.
2. **failover**: the same writers, the primary killed (SIGKILL) at a random moment,
   the replica promoted (``REPLICAOF NO ONE``, as Sentinel would); every delta the
   writers were answered for is looked for on the promoted replica. Lost ones are the
   default mode's window: what was answered but not yet replicated when the primary
   died. With 'replica' none may be lost (checked: the run exits 1 otherwise).
3. **failover, replica behind**: as 2, but the replica is stopped (SIGSTOP) for 0.2 s
   just before the kill: a replica that falls behind (a slow disk, a partition, a
   full output buffer), where the default mode's window is the lag times the rate.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from bench.common import cli
from bench.common.checks import Check
from bench.common.tables import table
from threadfold.core.errors import NotReplicated
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import RedisServer, wait_until
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.settings import Settings

MODES = ("primary", "replica")
#: (name, whether the primary is killed, seconds the replica lags before)
PARTS = (("cost", False, 0.0), ("failover", True, 0.0),
         ("failover, replica 0.2 s behind", True, 0.2))
FAILOVERS = tuple(part for part, fail, _ in PARTS if fail)
THREADS = 200
#: A primary waits 5 s by default for more replicas before a full sync: one here.
QUICK_SYNC = ("--repl-diskless-sync-delay", "0")


@dataclass(frozen=True)
class Sizes:
    rounds: int
    writers: int
    seconds: float


class Dropped:
    """No workers run: every delta here is committed by its ingest call."""

    def wake(self, refs: Sequence[str]) -> None:
        return None


@dataclass
class Told:
    acked: list[tuple[str, str]] = field(default_factory=list)  # (thread, message id)
    latencies: list[float] = field(default_factory=list)
    doubtful: int = 0
    cpu: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _writer(settings: Settings, told: Told, seed: int, stop: threading.Event) -> None:
    client = sync_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
    producer = Producer(client, settings, Dropped())
    step, cpu = 0, time.thread_time()
    try:
        while not stop.is_set():
            thread, mid = f"f{(seed * 7919 + step) % THREADS}", f"w{seed}-{step}"
            began = time.perf_counter()
            try:
                producer.enqueue(thread, [{"role": "user", "content": mid, "id": mid}],
                                 delta_id=mid)
            except NotReplicated:
                told.doubtful += 1
            except (redis.ConnectionError, redis.TimeoutError):
                told.doubtful += 1
                return  # the primary is gone
            else:
                took = time.perf_counter() - began
                with told.lock:
                    told.acked.append((thread, mid))
                    told.latencies.append(took)
            step += 1
    finally:
        with told.lock:
            told.cpu += time.thread_time() - cpu
        client.close()


def _redis_cpu(server: RedisServer) -> float:
    with server.probe() as admin:
        info = admin.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _linked(primary: RedisServer, replica: RedisServer) -> bool:
    """The replica is in step: linked, and it acknowledges a write (until its first
    acknowledgement after the sync the primary counts it at offset 0, and a replica
    stopped then stays so counted for up to a second: no write of a short round would
    be confirmed)."""
    with replica.probe() as r:
        if r.info("replication").get("master_link_status") != "up":
            return False
    with primary.probe() as p:
        p.set("threadfold-bench:linked", 1)
        return int(p.wait(1, 1000)) >= 1


def one(mode: str, sizes: Sizes, fail: bool, rng: random.Random, lag: float = 0.0
        ) -> dict[str, Any]:
    """One mode's writers on a fresh primary and replica, with or without a failover
    (``lag``: seconds the replica is stopped, SIGSTOP, before the primary is killed)."""
    with RedisServer(extra_args=QUICK_SYNC) as primary, RedisServer(
        extra_args=["--replicaof", "127.0.0.1", str(primary.port), *QUICK_SYNC]
    ) as replica:
        wait_until(lambda: _linked(primary, replica), 20, message="replica never synced")
        settings = Settings(redis_url=primary.url, durability=mode)
        told, stop = Told(), threading.Event()
        writers = [threading.Thread(target=_writer, args=(settings, told, n, stop))
                   for n in range(sizes.writers)]
        redis_before, began = _redis_cpu(primary), time.perf_counter()
        for w in writers:
            w.start()
        time.sleep(sizes.seconds * (rng.uniform(0.5, 1.0) if fail else 1.0))
        if lag:
            os.kill(replica.pid, signal.SIGSTOP)  # a replica that falls behind
            time.sleep(lag)
        if fail:
            primary.kill()
            os.kill(replica.pid, signal.SIGCONT)  # (harmless when it was not stopped)
            with replica.probe(timeout=5) as admin:
                admin.replicaof("NO", "ONE")
        else:
            redis_cpu = _redis_cpu(primary) - redis_before
            stop.set()
        for w in writers:
            w.join(30)
        elapsed = time.perf_counter() - began
        n = len(told.acked)
        out: dict[str, Any] = {"mode": mode, "acked": n, "doubtful": told.doubtful}
        if fail:
            out["lost"] = _lost(replica, settings, told.acked)
            return out
        lat = sorted(told.latencies)
        return {**out, "deltas_per_s": n / elapsed, "writer_us": told.cpu / n * 1e6,
                "redis_us": redis_cpu / n * 1e6, "p50_ms": lat[len(lat) // 2] * 1e3,
                "p99_ms": lat[int(len(lat) * 0.99)] * 1e3}


def _lost(replica: RedisServer, settings: Settings, acked: list[tuple[str, str]]) -> int:
    """Acknowledged deltas the promoted replica does not hold."""
    from threadfold.workers.storage.store import Store  # noqa: PLC0415  # the read alone

    held: dict[str, set[str]] = {}
    with replica.probe(timeout=5) as client:
        store = Store(client, settings.keyspace)
        for thread in {t for t, _ in acked}:
            page = store.read_state(f"_/{thread}")
            held[thread] = set() if page is None else {m.id or "" for m in page.messages}
    return sum(1 for thread, mid in acked if mid not in held[thread])


def measure(sizes: Sizes, say: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(25)
    runs: dict[str, list[dict[str, Any]]] = {part: [] for part, _, _ in PARTS}
    for n in range(sizes.rounds):
        for mode in MODES if n % 2 == 0 else MODES[::-1]:
            for part, fail, lag in PARTS:
                got = one(mode, sizes, fail, rng, lag)
                runs[part].append(got)
                say(f"round {n} {part} {mode}: " + ", ".join(
                    f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in got.items() if k != "mode"))
    return runs


def render(runs: dict[str, list[dict[str, Any]]]) -> str:
    def med(part: str, mode: str, key: str) -> float:
        return float(statistics.median(r[key] for r in runs[part] if r["mode"] == mode))

    cost = [[mode, f"{med('cost', mode, 'deltas_per_s'):,.0f}",
             f"{med('cost', mode, 'writer_us'):.1f}", f"{med('cost', mode, 'redis_us'):.1f}",
             f"{med('cost', mode, 'p50_ms'):.2f}", f"{med('cost', mode, 'p99_ms'):.2f}"]
            for mode in MODES]
    fail = []
    for part in FAILOVERS:
        for mode in MODES:
            seen = [r for r in runs[part] if r["mode"] == mode]
            fail.append([part, mode, f"{sum(r['acked'] for r in seen):,}",
                         str(sum(r["lost"] for r in seen)),
                         ", ".join(str(r["lost"]) for r in seen),
                         str(sum(r["doubtful"] for r in seen))])
    return "\n".join([
        "Cost of a write (medians of the rounds):", "",
        *table(["durability", "deltas/s", "writers' CPU µs/delta", "primary's CPU µs/delta",
                "p50 ms", "p99 ms"], cost),
        "", "Failover (primary killed at a random moment, replica promoted):", "",
        *table(["failover", "durability", "acknowledged", "lost", "lost per round",
                "in doubt"], fail),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    begun = cli.begin("failover", __doc__, "2 rounds of 1.5 s", argv,
                      full=Sizes(rounds=6, writers=4, seconds=4.0),
                      quick=Sizes(rounds=2, writers=2, seconds=1.5))
    say = cli.progress(begun.started)
    runs = measure(begun.sizes, say)
    lost = sum(r["lost"] for part in FAILOVERS for r in runs[part] if r["mode"] == "replica")
    failed = [Check("durability 'replica' loses nothing", False, f"{lost} acknowledged lost")]
    return cli.finish(cli.out_path("failover", begun.args), {"meta": begun.facts(), **runs},
                      render(runs), failed if lost else [])
