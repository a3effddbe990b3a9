"""Where a spread delta's Redis and worker time goes, step by step, on each path.

Run ``python -m bench.budget.phases [--threads N] [--rounds N]``: on a private
``redis-server``, this process is both the producer and one drainer (no Celery, no
broker: the steps alone). ``--threads`` threads are prefilled with 20 messages each and
drained; then, each round, every thread gets one one-message append (one
``enqueue_many`` of all of them) and is drained in tasks of 40 threads, as a worker
drains the refs of one wake-up. Around each step the state Redis's CPU (``INFO cpu``,
from a second connection; the cost of that ``INFO`` pair is measured and subtracted)
and this process's CPU are read:

* **ingest**: the ingest script, per delta (the bulk groups every thread into few calls);
* **head + xread**: a drain round's first round trip (HEAD's meta, one plain XREAD);
* **candidates**: the second (the attempt counted, the candidate positions and pages);
* **commit**: the third (COMMIT: compare-and-set, pages, index, meta, trim, the feed);

and the whole round on the worker's side. Each round runs both paths, alternated:
**drained by a worker** (``THREADFOLD_INGEST_COMMITS`` off: every step above) and
**committed by the ingest call** (on, the default: the append is new messages to a
thread with nothing waiting, so the ingest script commits it and the drain finds
nothing). This is the shape where a thread has one delta a commit, so every figure is
a per-thread cost: the distance between the spread shape and the bulk shape of one
thread with many deltas.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis

from bench.common import services
from bench.common.tables import table
from threadfold.workers import wiring
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.runtime.drain import batch as batch_module
from threadfold.workers.settings import Settings
from threadfold.workers.storage import store as store_module

STEPS = ("head + xread", "candidates", "commit")
TASK = 40  # threads a wake-up task carries at a few thousand deltas/s (bench.peer.wakeups)
PREFILL = 20


class Woken:
    """The wake-ups the producer asks for, kept: the drain runs them here, in tasks of
    TASK threads, as workers would (no Celery: the steps alone)."""

    def __init__(self) -> None:
        self.refs: list[str] = []

    def wake(self, refs: Sequence[str]) -> None:
        self.refs += refs


class Meter:
    """The state Redis's CPU seconds, read from a connection of its own."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.spent: dict[str, float] = {}
        self.overhead = 0.0
        before = self.cpu()
        for _ in range(100):
            self.cpu()
        self.overhead = (self.cpu() - before) / 101

    def cpu(self) -> float:
        info = self.client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"]) - self.overhead

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        before = self.cpu()
        yield
        self.spent[name] = self.spent.get(name, 0.0) + self.cpu() - before


@contextmanager
def metered(meter: Meter) -> Iterator[None]:
    """The drain's three round trips, each charged to its step (the modules call these
    names; the wrappers are removed afterwards)."""
    # (module, the name it calls the round trip by, the step charged)
    sites = ((batch_module, "run_many", STEPS[0]), (batch_module, "run_merged", STEPS[1]),
             (store_module, "run_merged", STEPS[2]))
    saved = [getattr(module, name) for module, name, _ in sites]

    def wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with meter.step(name):
                return fn(*args, **kwargs)
        return run

    for (module, name, step), fn in zip(sites, saved, strict=True):
        setattr(module, name, wrap(fn, step))
    try:
        yield
    finally:
        for (module, name, _), fn in zip(sites, saved, strict=True):
            setattr(module, name, fn)


def one_round(settings: Settings, meter: Meter, threads: int, label: str) -> dict[str, float]:
    """One append per thread, then their drain; µs per delta per step."""
    client = wiring.redis(settings, retries=0)
    woken = Woken()
    producer = Producer(client, settings, woken)
    drainer = Drainer(wiring.store(settings), settings)
    refs = [f"_/{label}{i}" for i in range(threads)]
    for at in range(0, threads, 500):  # prefilled, drained: threads of PREFILL messages
        producer.enqueue_many([Delta(f"{label}{i}", [("user", f"m{j} of {i}") for j in
                                                     range(PREFILL)])
                               for i in range(at, min(at + 500, threads))])
    for at in range(0, threads, 256):
        drainer.drain_many(refs[at:at + 256])
    deltas = [Delta(f"{label}{i}", [{"role": "user", "content": f"new {i}"}])
              for i in range(threads)]
    meter.spent.clear()
    woken.refs.clear()
    with meter.step("ingest"):
        producer.enqueue_many(deltas)
    worker, todo = time.process_time(), list(woken.refs)
    with metered(meter):
        for at in range(0, len(todo), TASK):
            drainer.drain_many(todo[at:at + TASK])
    worker = time.process_time() - worker
    client.close()
    out = {name: seconds / threads * 1e6 for name, seconds in meter.spent.items()}
    out["worker (the round, this process)"] = worker / threads * 1e6
    out["threads woken"] = len(todo)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args(argv)
    paths = {"drained by a worker": False, "committed by the ingest call": True}
    runs: dict[str, list[dict[str, float]]] = {path: [] for path in paths}
    with services.redis_server() as server:
        url = server.url
        meter = Meter(server.client())
        for n in range(opts.rounds):
            for k, path in enumerate(paths if n % 2 == 0 else reversed(paths)):
                settings = Settings(redis_url=url, ingest_commits=paths[path])
                runs[path].append(one_round(settings, meter, opts.threads, f"r{n}p{k}"))
    names = ["ingest", *STEPS, "worker (the round, this process)", "threads woken"]
    rows = []
    for name in names:
        cells = [f"{statistics.median(r.get(name, 0.0) for r in runs[p]):.1f}" for p in runs]
        rows.append([name, *cells])
    redis = [sum(statistics.median(r.get(name, 0.0) for r in runs[p])
                 for name in names[:4]) for p in runs]
    rows.append(["**state Redis, all steps**", *(f"**{x:.1f}**" for x in redis)])
    print(f"{opts.threads:,} threads, one one-message append each, drained {TASK} a task; "
          f"medians of {opts.rounds} rounds, µs per delta (Redis CPU, or the worker's; "
          "the worker's is its CPU in the drain loop, Celery's share of a task apart):\n")
    print("\n".join(table(["step", *runs], rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
