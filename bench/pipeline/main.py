"""Benchmark the whole pipeline: bulk producer -> Redis -> Celery workers -> committed state.

Run ``python -m bench.pipeline [--quick] [--out PATH]``: prints a markdown report
and writes the results as JSON. All processes run on this machine, in one run:

1. end to end, 2 Celery workers (``concurrency=1`` each), states verified afterwards;
2. a naive baseline (one Celery task per delta, a lock, a JSON blob, ``add_messages``),
   and Celery's own floor (no-op tasks through the same workers);
3. commit cost per delta on a short and a long thread (the Drainer alone);
4. enqueue-to-visible latency at half the end-to-end rate;
5. Redis memory per stored message against its msgpack size, with server options.

Every run's states are checked against the one-delta-at-a-time fold: a wrong state makes
the exit status 1.

The machine may be shared: compare within one run, and read the CPU columns (what
each process spent per delta) beside the rates (which also count waiting for a core).
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.common import cli
from bench.common.checks import Check
from bench.common.machine import load_average, redis_version
from bench.common.target import Target
from bench.pipeline import commit_cost, e2e, latency, memory, naive, report, targets
from bench.pipeline.commit_cost import CostConfig, CostRow
from bench.pipeline.e2e import E2EConfig, E2EResult
from bench.pipeline.latency import LatencyConfig, LatencyResult
from bench.pipeline.memory import MemoryConfig, MemoryRow
from bench.pipeline.naive import NaiveConfig, NaiveResult

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Sizes:
    """Every part's sizes. ``e2e[0]`` is the headline configuration (the best of its
    repeats is judged); runs of one batch size share one set of workers, and the latency
    runs follow on the first set at ``latency_shares`` of the headline rate (the first
    share is the one judged)."""

    e2e: tuple[E2EConfig, ...]
    naive: NaiveConfig
    floor_tasks: int
    cost: CostConfig
    latency_seconds: float
    latency_shares: tuple[float, ...]
    #: deltas per thread per bulk in the paced runs: the headline's shape first (judged
    #: at the first share), then spread out (one delta per thread, reported)
    latency_runs: tuple[int, ...]
    #: shares of the headline rate paced as one ``enqueue`` per delta, one delta per
    #: chosen thread, with the plain waker and with the background waker (reported)
    latency_per_call: tuple[float, ...]
    memory: MemoryConfig


def _e2e(threads: int, per_thread: int, runs: Sequence[tuple[int, int]],
         bulk: int) -> tuple[E2EConfig, ...]:
    return tuple(E2EConfig(threads, per_thread, bulk, run, batch) for run, batch in runs)


FULL = Sizes(
    e2e=_e2e(1000, 100, [(10, 1000), (100, 1000), (10, 1000), (10, 200)], bulk=1000),
    naive=NaiveConfig(threads=50, per_thread=100), floor_tasks=2000,
    cost=CostConfig(lengths=(100, 100_000), deltas=20_000, batch_sizes=(200, 1000), rounds=3),
    latency_seconds=10.0, latency_shares=(0.5, 0.25, 0.1, 0.03), latency_runs=(10, 1),
    latency_per_call=(0.05, 0.025),
    memory=MemoryConfig(messages=100_000, human_messages=50_000, layouts=(100, 1000),
                        configs=tuple(memory.CONFIGS), cost_deltas=5_000),
)
QUICK = Sizes(
    e2e=_e2e(200, 50, [(10, 1000)], bulk=500),
    naive=NaiveConfig(threads=10, per_thread=30), floor_tasks=300,
    cost=CostConfig(lengths=(100, 10_000), deltas=2_000, batch_sizes=(200, 1000), rounds=1),
    latency_seconds=3.0, latency_shares=(0.5, 0.1), latency_runs=(10, 1),
    latency_per_call=(0.05,),
    memory=MemoryConfig(messages=5_000, human_messages=5_000, layouts=(100,),
                        configs=("default",), cost_deltas=1_000),
)


@dataclass(frozen=True)
class Results:
    """Everything one run measured and checked."""

    e2e: list[E2EResult]
    naive: NaiveResult
    costs: list[CostRow]
    latency: list[LatencyResult]
    memory: list[MemoryRow]
    targets: list[Target]
    machine: str

    @property
    def headline(self) -> E2EResult:
        return headline(self.e2e)

    @property
    def checks(self) -> list[Check]:
        return [*(r.check for r in self.e2e), *(r.check for r in self.latency), self.naive.check]

    @property
    def failed_checks(self) -> list[Check]:
        """Wrong threadfold states fail the run; the naive baseline's are only reported."""
        return [c for c in self.checks[:-1] if not c.ok]


def headline(runs: Sequence[E2EResult]) -> E2EResult:
    """The best run of the first run's configuration."""
    return max((r for r in runs if r.config == runs[0].config), key=lambda r: r.rate)


def _pipelines(sizes: Sizes, progress: Progress) -> tuple[list[E2EResult], list[LatencyResult]]:
    """The end-to-end runs, grouped by batch size (one set of workers each)."""
    results: dict[int, E2EResult] = {}
    lat: list[LatencyResult] = []
    for batch in dict.fromkeys(c.batch_size for c in sizes.e2e):
        with e2e.pipeline(batch) as line:
            for i, cfg in enumerate(sizes.e2e):
                if cfg.batch_size == batch:
                    results[i] = e2e.run(cfg, line, progress, prefix=f"e2e{i}")
                    progress(f"e2e {i}: {results[i].rate:,.0f} deltas/s")
            best = headline([results[i] for i in sorted(results)])
            shapes: list[tuple[int, float, latency.Calls]] = [
                (run, share, "bulk") for run in sizes.latency_runs
                for share in sizes.latency_shares]
            shapes += [(1, share, calls) for share in sizes.latency_per_call
                       for calls in ("one", "one+background")]
            for k, (run, share, calls) in enumerate(shapes if not lat else ()):
                paced = LatencyConfig(best.rate * share, sizes.latency_seconds, seed=k, run=run,
                                      calls=calls)
                lat.append(latency.run(paced, line, progress, prefix=f"lat{k}"))
    return [results[i] for i in range(len(sizes.e2e))], lat


def measure(sizes: Sizes, progress: Progress) -> Results:
    """Run every part of ``sizes``."""
    load_before = load_average()
    runs, lat = _pipelines(sizes, progress)
    base = naive.run(sizes.naive, progress, floor_tasks=sizes.floor_tasks)
    costs = commit_cost.run(sizes.cost, progress)
    mem = memory.run(sizes.memory, progress)
    machine = (f"{os.cpu_count()} cores; load average (1, 5, 15 min) before {load_before}, "
               f"after {load_average()}; all processes on this machine, Redis {redis_version()}")
    judged = targets.judge(headline(runs), base, costs, lat[0], mem)
    return Results(runs, base, costs, lat, mem, judged, machine)


def to_json(results: Results, mode: str, sizes: Sizes, seconds: float) -> dict[str, Any]:
    meta = {"mode": mode, "seconds": round(seconds, 1), "python": sys.version.split()[0],
            "platform": platform.platform(), "machine": results.machine, "sizes": asdict(sizes),
            "workers": "2 celery workers, --pool=prefork --concurrency=1 each",
            "rate": "deltas / (first enqueue .. last commit), on the Redis clock"}
    return {
        "meta": meta,
        "targets": [asdict(t) for t in results.targets],
        "e2e": [r.to_json() for r in results.e2e],
        "naive": results.naive.to_json(),
        "commit_cost": [r.to_json() for r in results.costs],
        "latency": [r.to_json() for r in results.latency],
        "memory": [r.to_json() for r in results.memory],
        "failed_checks": [asdict(c) for c in results.failed_checks],
    }


def render(results: Results) -> str:
    return report.markdown(results.targets, results.e2e, results.headline, results.naive,
                           costs=results.costs,
                           lat=results.latency, memory=results.memory,
                           machine=results.machine)


def main(argv: Sequence[str] | None = None) -> int:
    args = cli.parser("pipeline", __doc__, "small sizes, about a minute").parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    results = measure(sizes, cli.progress(started))
    data = to_json(results, mode, sizes, time.perf_counter() - started)
    return cli.finish(cli.out_path("pipeline", args), data, render(results),
                      results.failed_checks)
