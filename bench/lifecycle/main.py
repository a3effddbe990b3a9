"""Benchmark of the thread lifecycle: memory per idle thread, what expiry returns, and
what a search costs as the threads grow.

Run ``python -m bench.lifecycle [--threads N ...] [--quick] [--out PATH]``: prints a
markdown report and writes the results as JSON (``bench/results/lifecycle.json``). For
each thread count (the full run: 10^5 and 10^6) and each variant (no metadata; metadata
``{"user": "u<k mod 1000>"}``, 10 threads also ``{"tag": "rare"}``), on a private
redis-server of its own (no ``maxmemory``, no persistence):

1. the empty server's ``used_memory``, every script loaded (the baseline);
2. the threads loaded and folded (:mod:`bench.lifecycle.load`): small threads of one or
   two short messages, each with the deployment TTL of 1 s, so its commit lists it in
   its bucket's expiry set; once their change feeds have lapsed (an idle thread keeps
   none), ``used_memory`` over the baseline, per thread, and where it goes;
3. with metadata, the cost of search pages and counts of several shapes
   (:mod:`bench.lifecycle.search`);
4. the TTL sweep run until nothing is due (:mod:`bench.lifecycle.sweep`): threads
   removed per second and Redis's CPU per removed thread; then ``used_memory`` against
   the baseline (the target: within 5%) and every key left, by kind.

Each run is checked: every thread drained, a sample of states equal to the
one-delta-at-a-time oracle, every search page and count right, every thread removed by
the sweep and no key of any thread left. A wrong run fails the benchmark.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import redis

from bench.common import cli, services
from bench.common.machine import code_measured, load_average, redis_version
from bench.common.store import NullWaker, store_for
from bench.lifecycle import load, memory, search, sweep
from bench.lifecycle.report import render
from bench.lifecycle.targets import judge
from bench.lifecycle.threads import Shape
from threadfold import Client
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.testing.stored import state_dump
from threadfold.workers.settings import Settings
from threadfold.workers.storage.scripts import ALL
from threadfold.workers.storage.store import Store

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Failure:
    """A check that failed, as cli.finish lists it."""

    name: str
    detail: str


@dataclass(frozen=True)
class Sizes:
    threads: tuple[int, ...]
    metadata: tuple[bool, ...]
    processes: int
    #: Threads whose state is checked and whose keys are measured, spread over the range.
    sample: int
    budget: search.Budget


FULL = Sizes((100_000, 1_000_000), (False, True), 2, 200, search.Budget(5, 30, 15.0))
QUICK = Sizes((5_000,), (False, True), 2, 50, search.Budget(3, 5, 2.0))


def _sample(shape: Shape, count: int) -> list[int]:
    step = max(1, shape.threads // count)
    return list(range(0, shape.threads, step))[:count]


def _warm(admin: redis.Redis) -> None:
    """Every script in Redis's cache before the baseline, so that the cache (which is in
    used_memory) does not grow between the baseline and the last reading."""
    for script in ALL:
        admin.script_load(script.source)


def _states_problem(store: Store, shape: Shape, ks: Sequence[int]) -> str:
    sent = Ledger()
    for k in ks:
        messages = shape.messages(k)
        sent.add(shape.ref(k), "0-1", messages, [m["id"] for m in messages])
    for k in ks:
        ref = shape.ref(k)
        if state_dump(store, ref) != dump_messages(sent.expected(ref)):
            return f"thread {k} ({ref}): its state is not the oracle's"
    return ""


def _check(checks: list[dict[str, str]], name: str, problem: str) -> None:
    checks.append({"name": name, "detail": problem or "ok"})


def _until(ms: int) -> None:
    time.sleep(max(0.0, ms / 1000 - time.time()))


def run_one(shape: Shape, sizes: Sizes, progress: Progress) -> dict[str, Any]:
    """One variant at one size, on a server of its own."""
    checks: list[dict[str, str]] = []
    with services.redis_server() as server:
        admin = server.client()
        settings: Settings = load.settings_for(server.url)
        _warm(admin)
        memory.without_records(admin)
        baseline = memory.settled(admin)
        store = store_for(settings)
        progress(f"{shape.name}: baseline {baseline.used:,} B; loading")
        loaded = load.load(server.url, shape, sizes.processes)
        _check(checks, "every thread drained",
               f"{loaded.not_drained} not drained" if loaded.not_drained else "")
        progress(f"{shape.name}: loaded in {loaded.seconds:.0f} s "
                 f"({loaded.rate:,.0f} threads/s); waiting for the feeds to lapse")
        lapsed = memory.wait_unexpired(admin)
        idle = memory.settled(admin)
        per_thread = (idle.used - baseline.used) / shape.threads
        sample = _sample(shape, sizes.sample)
        parts = memory.breakdown(admin, settings.keyspace, [shape.ref(k) for k in sample],
                                 shape.threads)
        progress(f"{shape.name}: {per_thread:,.0f} B per idle thread "
                 f"(MEMORY USAGE of its keys: {parts.total:,.0f})")
        _check(checks, "sampled states equal the oracle's", _states_problem(store, shape, sample))
        costs: list[search.Cost] = []
        with Client(settings=settings, waker=NullWaker()) as client:
            counted = client.count()
            _check(checks, "count() is every thread",
                   "" if counted == shape.threads else f"{counted} counted")
            if shape.metadata:
                costs = search.measure_all(client, admin, shape,
                                           buckets=settings.keyspace.buckets,
                                           budget=sizes.budget, progress=progress)
        for cost in costs:
            _check(checks, f"{cost.op}: {cost.name}", cost.wrong)
        # Every thread due: its last commit (the load's end at the latest) plus its TTL.
        _until(loaded.ended_ms + int(load.TTL_SECONDS * 1000) + 500)
        swept = sweep.sweep(store, admin, settings)
        _check(checks, "the sweep removed every thread",
               "" if swept.removed == shape.threads and not swept.left_due
               else f"{swept.removed} removed, {swept.left_due} due after")
        progress(f"{shape.name}: swept {swept.removed:,} in {swept.seconds:.1f} s")
        store.client.close()
        with Client(settings=settings, waker=NullWaker()) as client:
            counted = client.count()
        _check(checks, "count() is 0 after the sweep", f"{counted} counted" if counted else "")
        left = memory.leftovers(admin)
        stray = {kind: n for kind, n in left.items() if kind.startswith("<thread>")}
        _check(checks, "no key of a thread left", f"left: {stray}" if stray else "")
        with_records = memory.settled(admin)
        memory.without_records(admin)
        after = memory.settled(admin)
        residue = after.used - baseline.used
        progress(f"{shape.name}: after the sweep {residue:+,} B over the baseline "
                 f"({residue / baseline.used:+.2%})")
    return {
        "threads": shape.threads, "metadata": shape.metadata,
        "baseline": baseline.fields, "baseline_keys": baseline.keys,
        "load": loaded.to_json(), "feeds_lapsed_seconds": round(lapsed, 1),
        "idle": idle.fields, "idle_keys": idle.keys, "bytes_per_thread": per_thread,
        "breakdown": parts.to_json(),
        "search": [c.to_json() for c in costs],
        "sweep": swept.to_json(),
        "after": after.fields, "after_keys": after.keys, "residue_bytes": residue,
        # What Redis's records of the run's commands held (freed for "after").
        "records_bytes": with_records.used - after.used,
        "residue_share": residue / baseline.used, "leftovers": left,
        "checks": checks,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("lifecycle", __doc__, "5,000 threads, about a minute")
    parser.add_argument("--threads", type=int, nargs="+", default=None,
                        help="thread counts (default 100000 1000000)")
    parser.add_argument("--variants", nargs="+", choices=("plain", "metadata"),
                        default=None, help="without metadata, with it (default both)")
    parser.add_argument("--processes", type=int, default=None,
                        help="loader processes (default 2, for the 2 cores)")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    if args.threads:
        sizes = Sizes(tuple(args.threads), sizes.metadata, sizes.processes, sizes.sample,
                      sizes.budget)
    if args.variants:
        sizes = Sizes(sizes.threads, tuple(v == "metadata" for v in args.variants),
                      sizes.processes, sizes.sample, sizes.budget)
    if args.processes:
        sizes = Sizes(sizes.threads, sizes.metadata, args.processes, sizes.sample,
                      sizes.budget)
    started = time.perf_counter()
    say = cli.progress(started)
    before = load_average()
    code = code_measured()  # now: a shared tree's HEAD may move during a long run
    runs = [run_one(Shape(n, with_metadata), sizes, say)
            for n in sizes.threads for with_metadata in sizes.metadata]
    machine = (f"{os.cpu_count()} cores, shared; load average before {before}, after "
               f"{load_average()}; Redis {redis_version()}, the loaders and the client on "
               "this machine")
    verdict = judge(runs)
    meta = {"mode": mode, "seconds": round(time.perf_counter() - started, 1),
            "python": sys.version.split()[0], "platform": platform.platform(),
            "machine": machine, "code": code, "sizes": asdict(sizes),
            "ttl_seconds": load.TTL_SECONDS, "feed_seconds": load.FEED_SECONDS,
            "bulk": load.BULK, "search_limit": search.LIMIT}
    data = {"meta": meta, "target": verdict, "runs": runs}
    failed = [Failure(f"{r['threads']:,} {'metadata' if r['metadata'] else 'plain'}: "
                        f"{c['name']}", c["detail"])
              for r in runs for c in r["checks"] if c["detail"] != "ok"]
    return cli.finish(cli.out_path("lifecycle", args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())
