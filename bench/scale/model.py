"""The capacity model (issue 25, item 2): how many API processes, workers and Redis
primaries a load needs, from measured costs; checked against ``bench.scale``'s points,
then projected.

Run ``python -m bench.scale.model [--results bench/results/scale.json]`` after
``python -m bench.scale``. docs/scaling.md explains it; in short, a process is a
single-threaded server of CPU:

* each delta costs the producer ``p``, the workers ``w`` and Redis ``r`` µs of CPU
  (the broker ``b``), measured at one primary and one worker (the ``1x1`` point); a
  commit carries ``κ`` deltas' worth of the workers' and Redis's per-commit work,
  which is what batching saves: ``w`` and ``r`` scale with commits per delta,
  ``w = w₁·(κ/κ₁)^e``, the exponent ``e`` fitted on the 1x2 point alone;
* each primary more costs ``x`` µs a delta (fitted on the 3x1 point): a bulk is split
  into one exchange a primary, so each carries fewer deltas, and each primary pays its
  calls' fixed costs (the plan below assumes bulks that give each primary as many
  deltas an exchange as the 3x1 point's, about 170);
* each process costs CPU whatever its load: ``i_n`` a second a primary (server cron,
  cluster gossip), ``i_w`` a worker (Celery's heartbeats and broker polling),
  measured idle;
* so on ``C`` cores a configuration of M primaries and W workers runs at
  ``R = (C·u - M·i_n - W·i_w) / (p + w + r + b)`` (``u``: the cores' share this
  machine gave the run, the median of the fitted points'), unless one single-threaded
  process saturates first: the producer (``1/p``), a primary (``M/r``), the workers
  (``W/w``).

The simulation predicts each measured point's rate and CPU per delta from the 1x1,
1x2 and 3x1 points, the idle costs and the point's own commits per delta (how much
the load batched: 0.4 a delta with one worker behind, 1 with four keeping up); the
model holds when every other point is predicted within 25% (the issue's bar).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common.tables import table

CORES = 2
TOLERANCE = 0.25
#: The utilisation a deployment plans for: headroom for bursts and for a failover.
PLAN_UTILISATION = 0.6
#: Measured elsewhere (docs/benchmarks.md): the API's CPU a delta in HTTP bulks of 500
#: (issue 24, bench.spread's outside part) and a one-message POST (bench.http); Redis
#: bytes per idle thread and per byte of a stored message (bench.lifecycle, bench.core).
API_US_PER_BULK_DELTA = 27.0
API_US_PER_POST = 108.0
BYTES_PER_THREAD = 1_628
BYTES_PER_MESSAGE_BYTE = 1.3


@dataclass(frozen=True)
class Costs:
    """µs of CPU a delta at the 1x1 point, its commits per delta, idle CPU a second."""

    producer: float
    workers: float
    redis: float
    broker: float
    commits: float
    exponent: float
    per_primary: float
    idle_node: float
    idle_worker: float
    utilisation: float

    def per_delta(self, kappa: float) -> tuple[float, float]:
        """The workers' and Redis's µs a delta at ``kappa`` commits a delta."""
        scale = (kappa / self.commits) ** self.exponent
        return self.workers * scale, self.redis * scale

    def predict(self, primaries: int, workers: int, kappa: float) -> tuple[float, float]:
        """(deltas/s, µs of CPU a delta in all) of a configuration on this machine."""
        w, r = self.per_delta(kappa)
        busy = self.producer + w + r + self.broker + self.per_primary * (primaries - 1)
        spare = CORES * self.utilisation - primaries * self.idle_node - workers * self.idle_worker
        rate = spare * 1e6 / busy
        rate = min(rate, 1e6 / self.producer, primaries * 1e6 / r, workers * 1e6 / w)
        idle = (primaries * self.idle_node + workers * self.idle_worker) * 1e6 / rate
        return rate, busy + idle


def _cells(results: dict[str, Any]) -> dict[tuple[int, int], dict[str, float]]:
    cells: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in results["grid"]:
        cells.setdefault((r["primaries"], r["workers"]), []).append(r)
    keys = ("rate", "producer_us", "workers_us", "redis_us", "broker_us", "total_us",
            "commits_per_delta", "node_cpu_per_s", "worker_cpu_per_s", "seconds")
    return {k: {key: statistics.median(r[key] for r in v) for key in keys}
            for k, v in cells.items()}


def fit(results: dict[str, Any]) -> Costs:
    """The model's parameters: the 1x1 point, the idle costs, the 1x2 point's exponent,
    the 3x1 point's cost of a primary more."""
    cells = _cells(results)
    one = cells[(1, 1)]
    idle_node = statistics.median(c["node_cpu_per_s"] for c in cells.values())
    idle_worker = statistics.median(c["worker_cpu_per_s"] for c in cells.values())
    # The share of the cores the machine gave the runs: what the fitted points used.
    used = statistics.median(
        (cells[k]["rate"] * cells[k]["total_us"] / 1e6) for k in FITTED if k in cells
    )
    exponent = 1.0
    two = cells.get((1, 2))
    if two and two["commits_per_delta"] != one["commits_per_delta"]:
        ratio = (two["workers_us"] + two["redis_us"]) / (one["workers_us"] + one["redis_us"])
        exponent = math.log(ratio) / math.log(two["commits_per_delta"] / one["commits_per_delta"])
    three = cells.get((3, 1))
    per_primary = (three["total_us"] - one["total_us"]) / 2 if three else 0.0
    return Costs(one["producer_us"], one["workers_us"], one["redis_us"], one["broker_us"],
                 one["commits_per_delta"], exponent, per_primary, idle_node, idle_worker,
                 used / CORES)


#: The points the parameters come from; the others test the model.
FITTED = ((1, 1), (1, 2), (3, 1))


def check(results: dict[str, Any], costs: Costs) -> list[dict[str, Any]]:
    """Each measured point beside its prediction."""
    out = []
    for (m, w), cell in sorted(_cells(results).items()):
        rate, total = costs.predict(m, w, cell["commits_per_delta"])
        out.append({"primaries": m, "workers": w, "rate": cell["rate"], "predicted_rate": rate,
                    "total_us": cell["total_us"], "predicted_total_us": total,
                    "fitted_on": (m, w) in FITTED})
    return out


@dataclass(frozen=True)
class Load:
    deltas_per_s: float
    threads: float
    messages_per_thread: float
    message_bytes: float
    http: str  # "bulk" | "post" | "none"


def plan(costs: Costs, load: Load) -> dict[str, Any]:
    """Processes and memory for ``load``, each process at PLAN_UTILISATION of a core.
    Workers that keep up commit every delta of the spread shape on its own (one commit
    a delta, measured at 4 workers): the plan takes that cost, the dearest."""
    w, r = costs.per_delta(1.0)
    usable = PLAN_UTILISATION * 1e6
    api_us = {"bulk": API_US_PER_BULK_DELTA, "post": API_US_PER_POST, "none": 0.0}[load.http]
    memory = load.threads * (BYTES_PER_THREAD + load.messages_per_thread
                             * load.message_bytes * BYTES_PER_MESSAGE_BYTE)
    return {
        "api_processes": math.ceil(load.deltas_per_s * api_us / usable) if api_us else 0,
        "workers": math.ceil(load.deltas_per_s * (w + costs.idle_worker) / usable),
        "primaries_cpu": math.ceil(load.deltas_per_s * r / usable),
        "memory_gb": memory / 1e9,
        "cores": load.deltas_per_s * (api_us + w + r + costs.broker) / 1e6 / PLAN_UTILISATION,
    }


#: A pod of workers runs two processes (deploy/k8s/worker-deployment.yaml); the backlog a
#: pod may hold is what it drains in this long at the planned utilisation.
WORKER_PROCESSES_PER_POD = 2
BACKLOG_SECONDS = 0.25


def worker_threshold(costs: Costs) -> int:
    """KEDA's threshold: threads with a backlog per worker pod. By Little's law the
    threads waiting are the rate threads get deltas times how long they wait; a pod
    drains ``WORKER_PROCESSES_PER_POD`` x PLAN_UTILISATION x 1e6 / w threads a second
    (a commit a thread, the workers' whole CPU a commit: tasks, reads, folds), so
    holding the gauge at the threshold keeps a thread's wait near BACKLOG_SECONDS."""
    w, _ = costs.per_delta(1.0)
    per_second = WORKER_PROCESSES_PER_POD * PLAN_UTILISATION * 1e6 / w
    return int(round(per_second * BACKLOG_SECONDS, -2))


LOADS = (
    Load(1e3, 1e4, 100, 300, "post"),
    Load(1e4, 1e5, 100, 300, "bulk"),
    Load(1e5, 1e6, 100, 300, "bulk"),
    Load(1e6, 1e7, 100, 300, "bulk"),
    Load(1e6, 1e7, 100, 300, "post"),
)


def render(results: dict[str, Any]) -> str:
    costs = fit(results)
    rows = []
    for c in check(results, costs):
        err_r = c["predicted_rate"] / c["rate"] - 1
        err_t = c["predicted_total_us"] / c["total_us"] - 1
        rows.append([f"{c['primaries']}x{c['workers']}" + (" (fit)" if c["fitted_on"] else ""),
                     f"{c['rate']:,.0f}", f"{c['predicted_rate']:,.0f}", f"{err_r:+.0%}",
                     f"{c['total_us']:.1f}", f"{c['predicted_total_us']:.1f}", f"{err_t:+.0%}"])
    projected = []
    for load in LOADS:
        p = plan(costs, load)
        primaries = max(p["primaries_cpu"], math.ceil(p["memory_gb"] / 25))
        projected.append([f"{load.deltas_per_s:,.0f}", f"{load.threads:,.0f}", load.http,
                          str(p["api_processes"]), str(p["workers"]), str(primaries),
                          f"{p['memory_gb']:,.1f}", f"{p['cores']:,.0f}"])
    return "\n".join([
        f"Autoscaling: the API's HPA at {PLAN_UTILISATION:.0%} CPU; the workers' KEDA "
        f"threshold {worker_threshold(costs):,} threads with a backlog a pod.", "",
        f"Parameters (1x1 point): producer {costs.producer:.1f}, workers {costs.workers:.1f}, "
        f"Redis {costs.redis:.1f}, broker {costs.broker:.1f} µs a delta at "
        f"{costs.commits:.3f} commits a delta; exponent {costs.exponent:.2f}; "
        f"{costs.per_primary:.1f} µs a delta a primary more; idle "
        f"{costs.idle_node * 1e3:.1f} ms/s a primary, {costs.idle_worker * 1e3:.1f} ms/s a "
        f"worker; the run had {costs.utilisation:.0%} of the {CORES} cores.", "",
        *table(["point", "deltas/s", "predicted", "error", "µs/delta", "predicted",
                "error"], rows), "",
        *table(["deltas/s", "threads", "HTTP", "API processes", "workers",
                "primaries", "Redis GB", "cores"], projected),
    ])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale.model", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("bench/results/scale.json"))
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    print(render(results))
    costs = fit(results)
    worst = max(max(abs(c["predicted_rate"] / c["rate"] - 1),
                    abs(c["predicted_total_us"] / c["total_us"] - 1))
                for c in check(results, costs) if not c["fitted_on"])
    print(f"\nworst error on the points not fitted: {worst:.0%} (bar {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
