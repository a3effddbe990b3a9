"""Benchmark of the CPU budget per delta: what each part of the pipeline spends on one
delta, beside the least that part could spend on it, measured in the same run.

Run ``python -m bench.budget [--quick] [--out PATH]``: prints a markdown report and
writes the results as JSON (``bench/results/budget.json``, ``budget-quick.json`` with
``--quick``). On this machine, in one run: the whole service as
:func:`bench.common.stack.running` starts it (a private state Redis and broker Redis,
two Celery workers, beat, one API process), and the spread shape
(:mod:`bench.budget.spread`: one one-message delta per thread per call, threads in
turn; 70% appends, 20% updates, 10% removes). Each round plans its deltas once and
runs three parts on them, in an order rotated from round to round (the machine is
shared and noisy; the report gives medians over the rounds and their range):

* **direct**: ``threadfold.Client(settings=...).append`` per delta, then the drain
  (:mod:`bench.budget.parts`): the producer's CPU (this process), the state Redis's,
  the broker's and the Celery worker trees', over the calls and the drain;
* **HTTP**: ``threadfold.HttpClient.append`` per delta (one ``POST
  /threads/{id}/deltas``; the benchmark's API has no keys), then the drain: the API
  process tree's CPU besides;
* **floors** (:mod:`bench.budget.floors`): msgpack encode and a bare pipelined
  ``XADD`` + ``HSET`` (client and Redis CPU), ``GET /healthz`` on the same API, and a
  decode + one ``ThreadFold`` step, each per delta of the same deltas.

Only CPU time is divided into the per-delta figures (``time.process_time``, psutil's
process times, Redis's ``INFO cpu``), never wall time; deltas/s of the runs and the
load average are reported beside them, for context. psutil counts a process's time in
clock ticks (10 ms): a part sends enough deltas that a tick is a small share of its
figure (1 µs a delta in the full run's 10,000). Every figure counts only if the
states are right (:mod:`bench.budget.verify`): a failed check is listed and the run
exits 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from typing import Any, Final

from bench.budget import floors, parts, spread, verify
from bench.budget.report import DIRECT, HTTP, render, summarize
from bench.budget.verify import Failure
from bench.common import cli, services
from bench.common.machine import code_measured, load_average, run_facts
from bench.common.stack import Api, Stack, running
from bench.common.store import store_for
from bench.pipeline.workload import Planned
from threadfold import Client, HttpClient
from threadfold.workers.storage.store import Store

Progress = Callable[[str], None]
FLOORS: Final = "floors"
PARTS: Final = (DIRECT, HTTP, FLOORS)
API: Final = "api1"


@dataclass(frozen=True)
class Sizes:
    """``threads`` x ``per_thread`` deltas a part a round; a smaller warm-up first."""

    threads: int
    per_thread: int
    rounds: int
    warm_threads: int
    idle_seconds: float


FULL = Sizes(threads=2_000, per_thread=5, rounds=3, warm_threads=200, idle_seconds=3.0)
QUICK = Sizes(threads=200, per_thread=3, rounds=3, warm_threads=50, idle_seconds=1.0)


@dataclass(frozen=True)
class Bench:
    """The running stack and what the parts send through."""

    stack: Stack
    client: Client
    http: HttpClient
    store: Store
    per_poll: float

    @property
    def api(self) -> Api:
        return self.stack.apis[API]


def _part(bench: Bench, part: str, planned: Sequence[Planned],
          prefix: str) -> tuple[dict[str, Any], list[Failure]]:
    """One part of a round: its figures, and its state checks (the drain is over)."""
    sent = spread.calls(planned, prefix)
    append = bench.client.append if part == DIRECT else bench.http.append
    spent, answers = parts.measure(bench.stack, API, append, sent, per_poll=bench.per_poll)
    promised = spread.record(sent, answers)
    failures = verify.states(bench.store, bench.stack, promised, prefix)
    failures += verify.langgraph(bench.store, promised, prefix)
    return spent.to_json(), failures


def one_round(bench: Bench, label: str, planned: Sequence[Planned], threads: int,
              order: Sequence[str]) -> tuple[dict[str, Any], list[Failure]]:
    """Every part on the same ``planned`` deltas, in ``order``; the floor fold is checked
    against the direct part's stored threads once both ran."""
    out: dict[str, Any] = {"label": label, "order": list(order)}
    failures: list[Failure] = []
    lengths: list[int] = []
    for part in order:
        prefix = f"{label}-{part}"
        if part == FLOORS:
            sent = spread.calls(planned, prefix)
            out[part], lengths = floors.measure(bench.stack, bench.api, sent, planned,
                                                threads=threads, prefix=prefix)
            failures += verify.healthz(out[part]["healthz_not_ok"], prefix)
        else:
            out[part], found = _part(bench, part, planned, prefix)
            failures += found
    failures += verify.floor_fold(bench.stack, lengths, f"{label}-{DIRECT}", f"{label}-floors")
    return out, failures


def _said(say: Progress, r: dict[str, Any]) -> None:
    d, h, f = r[DIRECT]["cpu_us_per_delta"], r[HTTP]["cpu_us_per_delta"], r[FLOORS]
    say(f"{r['label']} ({', '.join(r['order'])}): µs/delta producer {d['here']:.0f} "
        f"(floor {f['encode_us'] + f['write_client_us']:.0f}), API {h['api']:.0f} "
        f"(healthz {f['healthz_api_us']:.0f}), Redis {d['redis']:.0f} "
        f"(floor {f['write_redis_us']:.0f}), workers {d['workers']:.0f} "
        f"(floor {f['decode_fold_us']:.1f})")


def _rounds(bench: Bench, sizes: Sizes, say: Progress) -> dict[str, Any]:
    rounds, failures = [], []
    for r in range(sizes.rounds):
        planned = spread.plan(sizes.threads, sizes.per_thread, seed=r + 1)
        order = PARTS[r % len(PARTS):] + PARTS[: r % len(PARTS)]
        result, found = one_round(bench, f"r{r}", planned, sizes.threads, order)
        rounds.append(result)
        failures += found
        _said(say, result)
    ops = spread.ops(spread.plan(sizes.threads, sizes.per_thread, seed=1))
    return {"rounds": rounds, "failures": failures, "ops": ops}


def measure(sizes: Sizes, say: Progress) -> dict[str, Any]:
    with (services.log_dir() as logs, running([1], 2, logs) as line,
          ExitStack() as ctx):
        say("stack up: state and broker Redis, 2 Celery workers, beat, 1 API process")
        client = ctx.enter_context(Client(settings=line.settings))
        http = ctx.enter_context(HttpClient(line.apis[API].url))
        store = store_for(line.settings)
        ctx.callback(store.client.close)
        warm = Bench(line, client, http, store, per_poll=0.0)
        # Scripts loaded, connections opened, the workers' pools imported and warm.
        planned = spread.plan(sizes.warm_threads, 2, seed=0)
        _, failures = one_round(warm, "warm", planned, sizes.warm_threads, PARTS)
        per_poll = parts.poll_cost(line)
        idle = parts.idle(line, sizes.idle_seconds)
        say(f"warm; idle CPU ms/s {idle}; a drain poll {per_poll * 1e6:.0f} µs of Redis")
        data = _rounds(Bench(line, client, http, store, per_poll), sizes, say)
    data["failures"] = [asdict(f) for f in [*failures, *data["failures"]]]
    return {**data, "idle": idle, "poll_cost_us": per_poll * 1e6}


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.parser("budget", __doc__, "600 deltas a part, 3 rounds: about 30 s")
    args = parser.parse_args(argv)
    mode, sizes = cli.sizes(args, FULL, QUICK)
    started = time.perf_counter()
    before, code = load_average(), code_measured()
    data = measure(sizes, cli.progress(started))
    data["summary"] = summarize(data["rounds"], data["idle"])
    data["meta"] = {"mode": mode, "sizes": asdict(sizes), "pipeline": floors.PIPELINE,
                    "repeats": floors.REPEATS, **run_facts(started, before, code)}
    failed = [Failure(f["name"], f["detail"]) for f in data["failures"]]
    return cli.finish(cli.out_path("budget", args), data, render(data), failed)


if __name__ == "__main__":
    sys.exit(main())
