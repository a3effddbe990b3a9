"""One side of the A/B, run inside its tree (working directory and ``PYTHONPATH`` = the
tree): ``python -m bench.ab.side SIZES_JSON``.

It starts two sets of services and keeps them up for the whole A/B:

* the HTTP benchmark's stack (:func:`bench.common.stack.running`: state and broker Redis,
  Celery workers and beat, one API process group), the state threads filled through the
  API and checked (:func:`bench.http.runs.prefill_state`), and every path warmed up;
* the pipeline's end-to-end services (:func:`bench.pipeline.e2e.pipeline`: state and
  broker Redis, Celery workers, an in-process producer), warmed up.

Then it prints one JSON line: the proof of which code it and every service process run
(:mod:`bench.ab.proof`) and the prefill's check. For each command line on stdin it
prints one JSON line:

* ``http <prefix>``: a closed-loop run of POSTs to fresh threads, drained and verified
  (:func:`bench.http.runs.backlog_and_drain`, :func:`~bench.http.runs.verify_writes`),
  then one of state reads; each as the HTTP benchmark's run record (CPU per request of
  the API, Redis, the load generator; the workers' CPU per delta, drain included);
* ``e2e <prefix>``: one end-to-end run (:func:`bench.pipeline.e2e.run`, states verified
  against the one-delta-at-a-time fold): CPU per delta of producer, workers and Redis;
* ``quit`` (or end of input) stops it.

Progress goes to stderr; stdout carries only the JSON lines.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from bench.ab import load, proof
from bench.ab.sizes import Sizes
from bench.common import cli, services, stack
from bench.common.checks import Check
from bench.http.runs import (
    Run,
    Scenario,
    Variant,
    backlog_and_drain,
    prefill_state,
    refs,
    verify_writes,
)
from bench.pipeline import e2e

STATE_PREFIX = "state-"


@dataclass
class Services:
    """Both sets of services of one side."""

    sizes: Sizes
    http: stack.Stack
    variant: Variant
    pipeline: e2e.Pipeline

    @property
    def post(self) -> Scenario:
        return Scenario("post", "post_one", self.sizes.connections, ids=self.sizes.post_ids)

    @property
    def get(self) -> Scenario:
        return Scenario("get", "get_state", self.sizes.connections,
                        ids=self.sizes.state_threads, prefix=STATE_PREFIX)


def http_run(line: stack.Stack, scenario: Scenario, variant: Variant, *, requests: int,
             prefix: str) -> Run:
    """One closed-loop run (as :func:`bench.http.runs.run_scenario` does with wrk);
    write runs are drained and checked afterwards."""
    api = line.apis[variant.api]
    prefix = scenario.prefix or prefix
    kind = "post" if scenario.writes else "get"
    before = line.cpu()
    result = load.run(api.port, kind=kind, prefix=prefix, ids=scenario.ids,
                      requests=requests, connections=scenario.connections)
    cpu = line.cpu().minus(before)
    line.check_alive()
    name = f"{variant.name} {scenario.name} {prefix}"
    complete = result.ok and result.requests == requests
    check = Check(f"{name}: {requests} requests, all answered 2xx", complete,
                  "" if complete else f"{result.requests} answered, {result.non_2xx} non-2xx, "
                                      f"sockets {result.socket_errors}")
    accepted = result.requests - result.non_2xx
    drain = None
    if scenario.writes:
        run_refs = refs(prefix, scenario.ids)
        drain = backlog_and_drain(line, run_refs)
        if check.ok:
            check = verify_writes(line, name, run_refs, accepted, 0)
    return Run(scenario, variant, 0, result, cpu, accepted if scenario.writes else 0, drain,
               check)


def _http(svc: Services, prefix: str) -> dict[str, Any]:
    post = http_run(svc.http, svc.post, svc.variant, requests=svc.sizes.post_requests,
                    prefix=f"{prefix}-")
    get = http_run(svc.http, svc.get, svc.variant, requests=svc.sizes.get_requests,
                   prefix=prefix)
    return {"post": post.to_json(), "get": get.to_json()}


def _e2e(svc: Services, prefix: str) -> dict[str, Any]:
    result = e2e.run(svc.sizes.e2e, svc.pipeline, cli.progress(time.perf_counter()),
                     prefix=prefix)
    return {
        "rate": result.rate, "deltas": result.deltas, "seconds": result.seconds,
        "wall_seconds": result.wall_seconds, "cpu_per_delta_us": result.cpu_per_delta_us,
        "producer_us": result.per_delta_us(result.producer_cpu),
        "worker_us": result.per_delta_us(result.worker_cpu),
        "redis_us": result.per_delta_us(result.redis_cpu),
        "broker_us": result.per_delta_us(result.broker_cpu),
        "commits": result.commits,
        "check": {"ok": result.check.ok, "name": result.check.name,
                  "detail": result.check.detail},
    }


def _warm_up(svc: Services) -> None:
    """Scripts cached, connections open, code paths hot: a short POST and GET load."""
    n = svc.sizes.warmup_requests
    http_run(svc.http, svc.post, svc.variant, requests=n, prefix="warm-")
    http_run(svc.http, svc.get, svc.variant, requests=n, prefix="warm-")


@contextmanager
def running(sizes: Sizes) -> Iterator[tuple[Services, Check]]:
    """Both sets of services up, the state threads filled, everything warmed up."""
    with ExitStack() as stack_:
        logs = stack_.enter_context(services.log_dir())
        api = f"api{sizes.api_workers}"
        http = stack_.enter_context(
            stack.running((sizes.api_workers,), sizes.http_celery_workers, logs))
        prefill = prefill_state(http, api, prefix=STATE_PREFIX, threads=sizes.state_threads,
                                messages=sizes.state_messages)
        pipeline = stack_.enter_context(e2e.pipeline(sizes.e2e.batch_size, sizes.e2e.workers,
                                                     sizes.e2e.concurrency))
        svc = Services(sizes, http, Variant(api, api), pipeline)
        _warm_up(svc)
        yield svc, prefill


def _proof(svc: Services) -> dict[str, Any]:
    http = svc.http
    return {"driver": proof.driver(), "services": {
        "api": [proof.service(a.process.pid) for a in http.apis.values()],
        "http_worker": [proof.service(w.pid) for w in http.workers],
        "beat": [proof.service(http.beat.pid)],
        "e2e_worker": [proof.service(w.pid) for w in svc.pipeline.workers],
    }}


def main(argv: list[str]) -> int:
    sizes = Sizes.from_json(argv[0])
    commands = {"http": _http, "e2e": _e2e}
    with running(sizes) as (svc, prefill):
        print(json.dumps({"ready": True, "proof": _proof(svc),
                          "prefill": {"ok": prefill.ok, "name": prefill.name,
                                      "detail": prefill.detail}}), flush=True)
        for command in sys.stdin:
            words = command.split()
            if not words or words[0] == "quit":
                break
            print(json.dumps(commands[words[0]](svc, words[1])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
