"""Item 2: the spread shape end to end through the Python client, and the lag at half
its rate.

The pipeline benchmark's headline sends 10 consecutive deltas of a thread in a bulk, so
a worker's commit carries ten of a thread's deltas. Here every bulk of 500 carries one
delta of each of 500 different threads of 5,000 (``E2EConfig(run=1)``): a thread's next
delta comes a whole sweep of the threads later, so a commit carries about one delta and
every per-thread cost of the drain (its reads, its commit, its wake-up) falls on a
single delta. That is how many callers writing to many conversations look from the
service's side.

* **rate**: :func:`bench.pipeline.e2e.run` on a private stack
  (:func:`bench.pipeline.e2e.pipeline`: state Redis, broker Redis, two Celery workers of
  concurrency 1, the deployment's batch size), repeated back to back on fresh threads:
  ``Producer.enqueue_stream``, one bulk in flight, from just before the first enqueue
  to the last commit on Redis's clock; each process's CPU per delta, commits per delta
  (:func:`commits`), every thread checked against the one-delta-at-a-time fold.
* **lag**: :func:`bench.pipeline.latency.run` on the same stack, paced at half the
  repeats' median rate, one delta per chosen thread (``run=1``) over as many threads:
  enqueue-to-visible percentiles from a poller process, the states checked too.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bench.pipeline import e2e, latency
from bench.pipeline.e2e import E2EConfig, E2EResult
from bench.pipeline.latency import LatencyConfig, LatencyResult
from threadfold.workers.settings import Settings

Progress = Callable[[str], None]
#: The deployment's batch size (most log entries a worker folds per commit).
BATCH: Final[int] = Settings.model_fields["batch_size"].default
#: The paced run's share of the median spread rate.
LATENCY_SHARE: Final = 0.5
#: The processes whose CPU per delta is reported, as E2EResult names them.
PROCESSES: Final = ("producer", "worker", "redis", "broker")


@dataclass(frozen=True)
class Shape:
    """``threads`` x ``per_thread`` deltas a repeat, in bulks of ``bulk``, one delta of a
    thread a bulk; then ``latency_seconds`` paced at half the median rate."""

    threads: int
    per_thread: int
    bulk: int
    repeats: int
    latency_seconds: float

    @property
    def config(self) -> E2EConfig:
        return E2EConfig(self.threads, self.per_thread, self.bulk, run=1, batch_size=BATCH)


def measure(shape: Shape, say: Progress) -> tuple[list[E2EResult], LatencyResult]:
    """The repeats, then the paced run at half their median rate, on one stack."""
    cfg = shape.config
    with e2e.pipeline(cfg.batch_size) as line:
        say(f"client: stack up (state and broker Redis, {cfg.workers} Celery workers)")
        runs = []
        for r in range(shape.repeats):
            runs.append(e2e.run(cfg, line, say, prefix=f"spread{r}"))
            say(f"client repeat {r}: {runs[-1].rate:,.0f} deltas/s, "
                f"{runs[-1].cpu_per_delta_us:,.0f} µs CPU a delta")
        rate = statistics.median(x.rate for x in runs) * LATENCY_SHARE
        paced = LatencyConfig(rate, shape.latency_seconds, threads=shape.threads, run=1)
        lag = latency.run(paced, line, say, prefix="spreadlat")
        say(f"client lag at {lag.achieved_rate:,.0f}/s: p99 {lag.p99_ms:,.1f} ms")
    return runs, lag


def commits(run: E2EResult) -> int:
    """The run's commits: one ``PUBLISH`` each (the thread's change event), nothing else
    publishes on the state Redis in these runs. Not ``E2EResult.commits``, its ``XTRIM``
    calls: since the change feed a commit trims the feed too, two a commit."""
    published = run.commands.get("publish")
    return published.calls if published else 0


def figures(run: E2EResult) -> dict[str, Any]:
    """What the report shows of a repeat."""
    cpu = {p: run.per_delta_us(getattr(run, f"{p}_cpu")) for p in PROCESSES}
    return {"deltas": run.deltas, "rate": run.rate, "seconds": run.seconds,
            "wall_seconds": run.wall_seconds, "produce_seconds": run.produce_seconds,
            "cpu_us_per_delta": {**cpu, "total": run.cpu_per_delta_us},
            "commits_per_delta": commits(run) / run.deltas,
            "wakes_per_delta": run.wakes_sent_by_producer / run.deltas,
            "checked": run.check.ok}


def summarize(runs: Sequence[E2EResult]) -> dict[str, Any]:
    """Medians over the repeats, and the rates' range."""
    each = [figures(r) for r in runs]
    cpu = {k: statistics.median(f["cpu_us_per_delta"][k] for f in each)
           for k in each[0]["cpu_us_per_delta"]}
    rates = [f["rate"] for f in each]
    return {"rate": statistics.median(rates), "rate_min": min(rates), "rate_max": max(rates),
            "cpu_us_per_delta": cpu,
            "commits_per_delta": statistics.median(f["commits_per_delta"] for f in each),
            "repeats": each}
