"""Benchmark of the spread shape (issue 24, items 2 and 3): one-message deltas spread
over 5,000 threads, one delta of a thread a bulk, through the Python client and from
outside over HTTP, on the code as it stands.

Run ``python -m bench.spread [--quick] [--out PATH]`` (or ``threadfold bench spread``):
prints a markdown report and writes the results as JSON (``bench/results/spread.json``,
``spread-quick.json`` with ``--quick``). In one run, on this machine:

1. **through the Python client** (:mod:`bench.spread.client`): bulks of 500 through
   ``Producer.enqueue_stream`` into a private stack (state Redis, broker Redis, two
   Celery workers), repeated; deltas/s on Redis's clock, each process's CPU per delta,
   commits per delta. Then enqueue-to-visible p50/p95/p99 paced at half the repeats'
   median rate, spread the same way. Targets: >= 40,000 deltas/s; p99 < 50 ms.
2. **from outside** (:mod:`bench.spread.outside`): the whole service as
   :func:`bench.common.stack.running` starts it (state and broker Redis, two Celery
   workers, beat, one API process on its defaults); two client processes post bulks
   of 500 to ``POST /deltas`` until every thread is visible at its last version; in
   the same rounds, alternated, the same payloads bare: pipelined ``XADD`` of redis-py
   to the same Redis. Target: all visible / bare >= 0.15.

Why these: the headline end-to-end figure sends ten deltas of a thread together, so a
commit is shared by ten; spread, every per-thread cost of the drain is paid by one
delta, and that shape (many conversations, a message each) is the one callers make.
The outside ratio is what the service keeps of what the same clients get from bare
Redis on the same machine in the same minutes: a ratio within one run, where the
machine's speed and load move absolute rates by half.

Every state is checked against the one-delta-at-a-time fold: a failed check is listed
and the run exits 1 (a fast wrong answer is a failure, not a result). Targets are
reported as measured, pass or fail. The machine is shared: the load average before
and after and the other processes' share of the cores are in the report.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any

from bench.common import cli, services
from bench.common.checks import Check
from bench.common.stack import running
from bench.common.store import store_for
from bench.spread import client, outside, targets
from bench.spread.client import Shape as ClientShape
from bench.spread.outside import Shape as OutsideShape
from bench.spread.report import render

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Sizes:
    """Both parts' shapes; ``warm`` is the outside part's untimed first round."""

    client: ClientShape
    outside: OutsideShape
    rounds: int
    warm: OutsideShape


FULL = Sizes(client=ClientShape(threads=5_000, per_thread=10, bulk=500, repeats=3,
                                latency_seconds=10.0),
             outside=OutsideShape(threads=5_000, per_thread=10, bulk=500, senders=2),
             rounds=3, warm=OutsideShape(threads=1_000, per_thread=1, bulk=500, senders=2))
QUICK = Sizes(client=ClientShape(threads=2_000, per_thread=2, bulk=500, repeats=2,
                                 latency_seconds=2.0),
              outside=OutsideShape(threads=2_000, per_thread=2, bulk=500, senders=2),
              rounds=2, warm=OutsideShape(threads=1_000, per_thread=1, bulk=500, senders=2))


def _outside(sizes: Sizes, say: Progress) -> tuple[dict[str, Any], list[Check]]:
    with (services.log_dir() as logs, running([1], 2, logs) as stack, ExitStack() as ctx):
        say("outside: stack up (state and broker Redis, 2 Celery workers, beat, 1 API)")
        store = store_for(stack.settings)
        ctx.callback(store.client.close)
        # Scripts loaded, connections open, the workers' and the API's code warm.
        _, checks = outside.one_round(stack, store, sizes.warm, 0, "warm")
        data, found = outside.rounds(stack, store, sizes.outside, sizes.rounds, say)
    return data, checks + found


def measure(sizes: Sizes, say: Progress) -> dict[str, Any]:
    """Both parts, the client's first; their figures, targets and checks."""
    runs, lag = client.measure(sizes.client, say)
    repeats = [Check(f"client repeat {i}: {r.check.name}", r.check.ok, r.check.detail)
               for i, r in enumerate(runs)]
    lagged = [Check(f"client lag: {lag.check.name}", lag.check.ok, lag.check.detail),
              Check("client lag: every delta seen visible", lag.unresolved == 0,
                    f"{lag.unresolved:,} never seen")]
    far, far_checks = _outside(sizes, say)
    summary = client.summarize(runs)
    judged = [targets.spread_rate(summary, sizes.client.threads, all(c.ok for c in repeats)),
              targets.lag(lag),
              targets.outside(far["median"], all(c.ok for c in far_checks))]
    checks = [*repeats, *lagged, *far_checks]
    return {"targets": [asdict(t) for t in judged],
            "client": {**summary, "lag": lag.to_json(), "runs": [r.to_json() for r in runs]},
            "outside": far,
            "checks": [asdict(c) for c in checks],
            "failed_checks": [asdict(c) for c in checks if not c.ok]}


def main(argv: Sequence[str] | None = None) -> int:
    run = cli.begin("spread", __doc__, "small sizes, two stacks: about 30 s", argv,
                    full=FULL, quick=QUICK)
    data = measure(run.sizes, cli.progress(run.started))
    data["meta"] = {**run.facts(), "sizes": asdict(run.sizes)}
    failed = [Check(c["name"], c["ok"], c["detail"]) for c in data["failed_checks"]]
    return cli.finish(cli.out_path("spread", run.args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())
