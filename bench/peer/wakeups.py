"""What spacing the wakers' publishes saves where every call wakes a thread of its own.

Run ``python -m bench.peer.wakeups [--rounds N]``: on a private state Redis, broker
Redis and two Celery workers, one writer (this process, ``threadfold.Client`` with its
default background waker) makes 5,000 one-delta calls over 1,000 threads prefilled with
10 messages (deltas spread: every thread's first before any thread's second), with
:data:`threadfold.workers.ingest.wakeup.SPACING` set to 0 (a publish per window, as
before issue 24) and to its value, alternated. Per delta: this process's CPU (its
calls and its waker's thread), the workers' CPU, the state Redis's CPU; and the drain
tasks published (the broker's ``LPUSH`` count). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence

from bench.common import services
from bench.common.cpu import redis_cpu, tree_times
from bench.common.inputs import mix
from bench.common.tables import table
from threadfold import Client
from threadfold.workers.ingest import wakeup
from threadfold.workers.ops.processes import wait_until

THREADS, PER_THREAD = 1_000, 5


def _idle(backend: services.Backend) -> None:
    """Until every thread is drained and no wake-up waits: a turn must not pay for the last."""
    settings, state, broker = backend.settings, backend.state.client(), backend.broker.client()
    dirty = [settings.keyspace.bucket_keys(b).dirty for b in range(settings.buckets)]

    def idle() -> bool:
        pipe = state.pipeline(transaction=False)
        for key in dirty:
            pipe.zcard(key)
        return sum(pipe.execute()) == 0 and broker.llen(settings.queue) == 0

    wait_until(idle, 300, interval=0.05, message="the workers did not drain")


def _turn(backend: services.Backend, spacing: float, prefix: str) -> dict[str, float]:
    settings = backend.settings
    wakeup.SPACING = spacing
    client = Client(settings.redis_url.get_secret_value(),
                    settings.broker_url.get_secret_value() if settings.broker_url else None)
    state, broker = backend.state.client(), backend.broker.client()
    work = [mix(10, PER_THREAD, i) for i in range(THREADS)]
    for i, w in enumerate(work):
        client.append(f"{prefix}-{i}", w.initial)
    _idle(backend)
    calls = [(f"{prefix}-{i}", w.deltas[j]) for j in range(PER_THREAD) for i, w in enumerate(work)]
    broker.config_resetstat()
    workers0 = sum(tree_times(p.pid)[0] for p in backend.workers)
    cpu0, redis0 = time.process_time(), redis_cpu(state)
    for thread, delta in calls:
        client.append(thread, [delta])
    client.close()  # publishes what its waker holds
    writer = time.process_time() - cpu0
    _idle(backend)
    n = len(calls)
    tasks = broker.info("commandstats").get("cmdstat_lpush", {}).get("calls", 0)
    return {"writer_us": 1e6 * writer / n,
            "workers_us": 1e6 * (sum(tree_times(p.pid)[0] for p in backend.workers)
                                 - workers0) / n,
            "redis_us": 1e6 * (redis_cpu(state) - redis0) / n, "tasks": float(tasks)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peer.wakeups", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    spaced = wakeup.SPACING
    turns: dict[float, list[dict[str, float]]] = {0.0: [], spaced: []}
    with services.log_dir() as logs, services.backend(logs, 2, log_level="WARNING") as backend:
        for r in range(args.rounds):
            for spacing in (0.0, spaced) if r % 2 == 0 else (spaced, 0.0):
                turns[spacing].append(_turn(backend, spacing, f"w{r}-{spacing:g}"))
                print(f"round {r + 1}, spacing {spacing:g}: {turns[spacing][-1]}",
                      file=sys.stderr)
    wakeup.SPACING = spaced
    figures = ("tasks", "writer_us", "workers_us", "redis_us")
    rows = [[f"{spacing * 1000:g} ms", *(f"{statistics.median(t[f] for t in ts):,.0f}"
                                          for f in figures)]
            for spacing, ts in turns.items()]
    head = ["spacing", f"tasks for {THREADS * PER_THREAD:,} calls", "writer CPU µs/delta",
            "workers CPU µs/delta", "Redis CPU µs/delta"]
    print("\n".join(table(head, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
