"""Benchmark live threads (issue 17 item 8): SSE subscribers.

Run ``python -m bench.live [--quick] [--out PATH]``: prints a markdown report and writes
the results as JSON. All processes run on this machine.

(The feed's cost A/B against the code before the feed, 24fc5c9, was a one-off of issue
17: its figures stay in docs/benchmarks.md, its driver in git history before the
service-layer redesign; ``python -m bench.ab live --base REV`` is the A/B of any two
commits.)

**Subscribers**: 1,000 SSE subscribers (10 per thread, 100 threads) on a real stack
   while a paced producer writes 5,000 deltas/s to those threads: commit-to-event latency
   (commit time from a raw Pub/Sub listener on the feed channels), every subscriber's
   final state against ``GET state``, the API's memory, CPU per event and Redis
   connections (:mod:`bench.live.subscribers`).

The machine may be shared: compare within one run, and read the CPU columns beside the
rates. A wrong state fails the run (exit status 1).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench.common import cli
from bench.common.machine import load_average, redis_version
from bench.common.tables import report
from bench.common.target import Target
from bench.live import report as md
from bench.live import subscribers, targets
from bench.live.figures import LiveResult
from bench.live.subscribers import LiveConfig


@dataclass(frozen=True)
class Sizes:
    """The subscribers run's configuration, and the producer rates it runs at."""

    live: LiveConfig
    #: the subscribers run at each of these producer rates, on a fresh stack each; the
    #: first is the target's (5,000 deltas/s), the others show how latency follows load
    rates: tuple[float, ...]


FULL = Sizes(live=LiveConfig(seconds=60.0),
             rates=(5000.0, 2500.0, 1000.0))
QUICK = Sizes(live=LiveConfig(seconds=5.0),
              rates=(5000.0,))


def _overridden(sizes: Sizes, args: Any) -> Sizes:
    given = {"seconds": args.seconds, "api_workers": args.api_workers,
             "client_processes": args.client_processes, "tick": args.tick}
    rates = tuple(float(r) for r in args.rates.split(",")) if args.rates else sizes.rates
    return replace(sizes, rates=rates, live=replace(
        sizes.live, **{k: v for k, v in given.items() if v is not None}))


def machine() -> str:
    return (f"{os.cpu_count()} cores, shared; load average (1, 5, 15 min) now {load_average()}; "
            f"all processes on this machine, Redis {redis_version()}")


def _meta(mode: str, sizes: Sizes, seconds: float) -> dict[str, Any]:
    return {"mode": mode, "seconds": round(seconds, 1), "python": sys.version.split()[0],
            "platform": platform.platform(), "sizes": asdict(sizes), "machine": machine()}


def _live(sizes: Sizes, say: Callable[[str], None]) -> tuple[list[LiveResult], list[Target]]:
    runs = []
    for rate in sizes.rates:
        with tempfile.TemporaryDirectory(prefix="threadfold-live-") as logs:
            runs.append(subscribers.measure(replace(sizes.live, rate=rate), Path(logs), say))
    first = runs[0]
    judged = [targets.latency(first), targets.states(first), targets.memory(first),
              targets.hub(first)]
    judged += [targets.states(r) for r in runs[1:]]
    return runs, judged


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("live", __doc__, "small sizes, about a minute")
    parser.add_argument("--seconds", type=float, default=None,
                        help="subscribers: how long the producer writes (60; --quick 5)")
    parser.add_argument("--api-workers", type=int, default=None,
                        help="subscribers: API processes (uvicorn workers, one hub each; 1)")
    parser.add_argument("--client-processes", type=int, default=None,
                        help="subscribers: processes sharing the subscriptions (2)")
    parser.add_argument("--tick", type=float, default=None,
                        help="subscribers: seconds between the producer's bulks (0.01)")
    parser.add_argument("--rates", type=str, default=None,
                        help="subscribers: producer rates, comma-separated (5000,2500,1000; "
                             "the first is judged)")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    sizes = _overridden(sizes, args)
    out = cli.out_path("live", args)
    started = time.perf_counter()
    say = cli.progress(started)
    sections: list[list[str]] = []
    judged: list[Target] = []
    problems: list[str] = []
    runs, found = _live(sizes, say)
    judged += found[:4]
    problems += [f"{t.name}: {t.detail}" for t in found if t.name == targets.STATES
                 and not t.passed]
    cli.write(out, {"meta": _meta(mode, sizes, time.perf_counter() - started),
                    "targets": [asdict(t) for t in found],
                    "runs": [r.to_json() for r in runs]})
    sections.append(md.live_section(runs[0]))
    if len(runs) > 1:
        sections.append(md.rates_section(runs))
    sections.insert(0, md.targets_section(judged))
    sections.append(md.machine_section(machine()))
    print(report(sections))
    for problem in problems:
        print(f"CHECK FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0
