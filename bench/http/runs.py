"""One measured run: load (wrk or paced), then the backlog it left, the drain, the check.

Every write run posts to thread ids of its own (a prefix per run), so after the workers
drain it can be checked exactly: no thread has a backlog or is quarantined, each
applied delta stored one message, and the deltas applied lie between what the load
generator saw accepted and that plus what was still in flight when it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common.checks import Check
from bench.common.stack import Cpu, Stack
from bench.http.paced import PacedResult, run_paced
from bench.http.wrk import WrkResult, run_wrk
from threadfold.core.keys import DEFAULT_TENANT

Progress = Callable[[str], None]
DRAIN_TIMEOUT = 300.0


@dataclass(frozen=True)
class Scenario:
    """What one wrk run sends: ``ids`` thread ids (or state threads, or bulk threads)."""

    name: str
    script: str
    connections: int
    ids: int = 0
    per_request: int = 1
    bodies: int = 0
    #: Reads go to existing threads of this prefix; writes get a fresh prefix per run.
    prefix: str = ""

    @property
    def writes(self) -> bool:
        return self.script in ("post_one", "post_bulk")

    def args(self, prefix: str, threads: int) -> list[str]:
        prefix = self.prefix or prefix
        if self.script == "post_bulk":
            return [str(self.ids), str(self.per_request), prefix, str(self.bodies),
                    str(threads)]
        if self.script in ("post_one", "get_state"):
            return [str(self.ids), prefix, str(threads)]
        return []

    def path(self) -> str:
        return "/healthz" if self.script == "healthz" else "/"


@dataclass(frozen=True)
class Variant:
    """An API (by its worker count) and whether it gets core 0 to itself."""

    name: str
    api: str
    pinned: bool = False


VARIANTS = {
    "api1": Variant("api1", "api1"),
    "api2": Variant("api2", "api2"),
    "api1-pinned": Variant("api1-pinned", "api1", pinned=True),
}


@dataclass
class Drain:
    """What the workers had left when the load stopped, and how long it took them."""

    threads: int
    deltas: int
    seconds: float
    cpu: Cpu

    def to_json(self) -> dict[str, Any]:
        return {"threads": self.threads, "deltas": self.deltas, "seconds": self.seconds,
                "worker_cpu_s": self.cpu.workers, "redis_cpu_s": self.cpu.redis + self.cpu.broker}


@dataclass
class Run:
    """One wrk run of one scenario on one variant in one round."""

    scenario: Scenario
    variant: Variant
    round: int
    wrk: WrkResult
    cpu: Cpu
    accepted: int
    drain: Drain | None
    check: Check
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.wrk.rps

    @property
    def deltas_per_s(self) -> float:
        return self.accepted / self.wrk.seconds if self.wrk.seconds else 0.0

    def per_request_us(self, seconds: float) -> float:
        return seconds / self.wrk.requests * 1e6 if self.wrk.requests else 0.0

    @property
    def api_us(self) -> float:
        return self.per_request_us(self.cpu.apis[self.variant.api])

    @property
    def api_sys_share(self) -> float:
        """The kernel's part of the API's CPU (syscalls: socket reads and writes)."""
        total = self.cpu.apis[self.variant.api]
        return self.cpu.apis_sys.get(self.variant.api, 0.0) / total if total else 0.0

    @property
    def redis_us(self) -> float:
        return self.per_request_us(self.cpu.redis + self.cpu.broker)

    @property
    def all_us(self) -> float:
        """Every side's CPU per request: API, Redis, workers (incl. drain), load generator."""
        workers = self.worker_us_per_delta * self.accepted / self.wrk.requests \
            if self.wrk.requests else 0.0
        return self.api_us + self.redis_us + workers + self.wrk_us

    @property
    def idle_estimate(self) -> float:
        """Requests/s if two idle cores ran only this (CPU-bound estimate, not measured)."""
        return 2e6 / self.all_us if self.all_us else 0.0

    @property
    def worker_us_per_delta(self) -> float:
        """Celery workers' CPU (during the run and the drain after it) per accepted delta."""
        if not self.accepted:
            return 0.0
        spent = self.cpu.workers + (self.drain.cpu.workers if self.drain else 0.0)
        return spent / self.accepted * 1e6

    @property
    def wrk_us(self) -> float:
        return self.per_request_us(self.wrk.cpu_s)

    @property
    def others_cores(self) -> float:
        """Cores' worth of CPU that other processes on the machine used during the run."""
        return self.cpu.others(self.wrk.cpu_s)

    @property
    def kept_up(self) -> bool | None:
        """The workers kept up: at the end at most one second's input was left."""
        if self.drain is None:
            return None
        return self.drain.deltas <= self.deltas_per_s

    def to_json(self) -> dict[str, Any]:
        w = self.wrk
        return {
            "scenario": self.scenario.name, "variant": self.variant.name, "round": self.round,
            "connections": w.connections, "wrk_threads": w.threads, "requests": w.requests,
            "seconds": w.seconds, "rps": self.rps, "accepted_deltas": self.accepted,
            "bytes_per_response": w.bytes / w.requests if w.requests else 0,
            "deltas_per_s": self.deltas_per_s, "non_2xx": w.non_2xx,
            "socket_errors": w.socket_errors,
            "latency_ms": {"p50": w.p50_ms, "p90": w.p90_ms, "p99": w.p99_ms,
                           "p999": w.p999_ms, "max": w.max_ms, "mean": w.mean_ms},
            "cpu_us_per_request": {"api": self.api_us, "redis_state+broker": self.redis_us,
                                   "wrk": self.wrk_us, "all_sides": self.all_us},
            "api_cpu_kernel_share": self.api_sys_share,
            "estimate_rps_two_idle_cores": self.idle_estimate,
            "worker_cpu_us_per_delta": self.worker_us_per_delta,
            "cpu_s": {"api": self.cpu.apis[self.variant.api], "workers": self.cpu.workers,
                      "api_sys": self.cpu.apis_sys.get(self.variant.api, 0.0),
                      "beat": self.cpu.beat, "redis": self.cpu.redis,
                      "broker": self.cpu.broker, "wrk": w.cpu_s, "wall": self.cpu.at},
            "wrk_core_share": w.cpu_share, "other_processes_cores": self.others_cores,
            "drain": self.drain.to_json() if self.drain else None,
            "kept_up": self.kept_up,
            "check": {"ok": self.check.ok, "name": self.check.name, "detail": self.check.detail},
            **self.extra,
        }


def refs(prefix: str, ids: int) -> list[str]:
    return [f"{DEFAULT_TENANT}/{prefix}{i}" for i in range(ids)]


def backlog_and_drain(stack: Stack, run_refs: Sequence[str]) -> Drain:
    """Right after the load: threads and deltas left; then wait for the workers."""
    ended = time.perf_counter()
    start = stack.cpu()
    threads = stack.threads_with_backlog()
    deltas = sum(s.backlog for s in stack.statuses(run_refs) if s is not None)
    stack.wait_drained(DRAIN_TIMEOUT)
    seconds = time.perf_counter() - ended
    return Drain(threads, max(deltas, 0), seconds, stack.cpu().minus(start))


def verify_writes(stack: Stack, name: str, run_refs: Sequence[str], accepted: int,
                  in_flight: int) -> Check:
    """After the drain: every thread drained and whole; applied deltas as accepted."""
    stored = [s for s in stack.stored(run_refs) if s is not None]
    applied = sum(s.applied for s in stored)
    found = [s.status for s in stored]
    messages = sum(s.messages for s in found)
    problems = []
    if any(s.backlog != 0 for s in found):
        problems.append(f"{sum(1 for s in found if s.backlog)} threads kept a backlog")
    if any(s.quarantined for s in found):
        problems.append(f"{sum(1 for s in found if s.quarantined)} threads quarantined")
    if messages != applied:
        problems.append(f"{messages} messages stored for {applied} applied deltas")
    if not accepted <= applied <= accepted + in_flight:
        problems.append(f"{applied} deltas applied, {accepted} accepted (+{in_flight} in flight)")
    label = f"{name}: {len(found)} threads, {applied} deltas applied and stored"
    return Check(label, not problems, "; ".join(problems))


def run_scenario(stack: Stack, scripts: dict[str, Path], scenario: Scenario, variant: Variant,
                 *, rnd: int, seconds: float, prefix: str | None = None) -> Run:
    """One wrk run; write runs are drained and checked afterwards."""
    api = stack.apis[variant.api]
    prefix = prefix or f"{variant.name}-{scenario.name}-r{rnd}-"
    threads = 1
    with stack.pinned(variant.api if variant.pinned else None) as cpus:
        before = stack.cpu()
        result = run_wrk(api.url + scenario.path(), script=scripts[scenario.script],
                         args=scenario.args(prefix, threads), seconds=seconds,
                         connections=scenario.connections, threads=threads, cpus=cpus)
        cpu = stack.cpu().minus(before)
    stack.check_alive()
    accepted = (result.requests - result.non_2xx) * scenario.per_request
    drain: Drain | None = None
    name = f"{variant.name} {scenario.name} r{rnd}"
    check = Check(f"{name}: all answers 2xx", result.ok,
                  "" if result.ok else f"{result.non_2xx} non-2xx, sockets {result.socket_errors}")
    if scenario.writes:
        run_refs = refs(prefix, scenario.ids)
        drain = backlog_and_drain(stack, run_refs)
        if check.ok:
            check = verify_writes(stack, name, run_refs, accepted,
                                  scenario.connections * scenario.per_request)
    return Run(scenario, variant, rnd, result, cpu, accepted if scenario.writes else 0, drain,
               check)


# -- paced ---------------------------------------------------------------------------------


@dataclass
class PacedRun:
    """One paced (open-loop) run of single-message POSTs."""

    variant: Variant
    label: str
    rate: float
    result: PacedResult
    cpu: Cpu
    drain: Drain
    check: Check

    @property
    def accepted(self) -> int:
        return self.result.ok_count(202)

    @property
    def errors(self) -> int:
        return self.result.completed - self.accepted

    @property
    def api_us(self) -> float:
        n = self.result.completed
        return self.cpu.apis[self.variant.api] / n * 1e6 if n else 0.0

    @property
    def redis_us(self) -> float:
        n = self.result.completed
        return (self.cpu.redis + self.cpu.broker) / n * 1e6 if n else 0.0

    @property
    def others_cores(self) -> float:
        return self.cpu.others(self.result.cpu_s)

    def to_json(self) -> dict[str, Any]:
        return {"variant": self.variant.name, "label": self.label, "rate": self.rate,
                "other_processes_cores": self.others_cores,
                **self.result.raw, "generator_cpu_s": self.result.cpu_s,
                "generator_core_share": self.result.cpu_share,
                "cpu_us_per_request": {"api": self.api_us, "redis_state+broker": self.redis_us},
                "worker_cpu_s": self.cpu.workers, "drain": self.drain.to_json(),
                "check": {"ok": self.check.ok, "name": self.check.name,
                          "detail": self.check.detail}}


def run_paced_post(stack: Stack, variant: Variant, *, label: str, rate: float, seconds: float,
                   ids: int, connections: int, grace: float) -> PacedRun:
    api = stack.apis[variant.api]
    prefix = f"{variant.name}-paced-{label}-"
    with stack.pinned(variant.api if variant.pinned else None) as cpus:
        before = stack.cpu()
        result = run_paced(api.port, prefix=prefix, ids=ids, rate=rate, seconds=seconds,
                           connections=connections, grace=grace, cpus=cpus)
        cpu = stack.cpu().minus(before)
    stack.check_alive()
    run_refs = refs(prefix, ids)
    drain = backlog_and_drain(stack, run_refs)
    accepted = result.ok_count(202)
    name = f"{variant.name} paced {label}"
    unanswered = result.scheduled - result.completed + result.ok_count(0)
    if accepted != result.completed:
        check = Check(name, False, f"answers: {result.statuses}")
    else:
        check = verify_writes(stack, name, run_refs, accepted, unanswered)
    return PacedRun(variant, label, rate, result, cpu, drain, check)


# -- the state threads ----------------------------------------------------------------------


def state_message(thread: int, index: int) -> dict[str, str]:
    role = "user" if index % 2 == 0 else "assistant"
    text = f"message {index} of thread {thread}: " + "lorem ipsum dolor sit amet " * 5
    return {"role": role, "content": text.strip()}


def prefill_state(stack: Stack, api: str, *, prefix: str, threads: int, messages: int,
                  per_request: int = 500) -> Check:
    """``threads`` threads of ``messages`` one-message deltas, posted in bulk through the
    API, drained, then checked: every thread holds them all, in order, no backlog."""
    deltas = [{"thread_id": f"{prefix}{t}", "messages": [state_message(t, j)]}
              for j in range(messages) for t in range(threads)]
    url = stack.apis[api].url
    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(0, len(deltas), per_request):
            response = client.post("/deltas", json={"deltas": deltas[i : i + per_request]})
            if response.status_code != 202:
                return Check("state prefill", False, f"{response.status_code}: {response.text}")
        stack.wait_drained(DRAIN_TIMEOUT)
        problems = []
        for status in stack.statuses(refs(prefix, threads)):
            if status is None or status.backlog or status.messages != messages:
                problems.append(repr(status))
        for t in sorted({0, threads - 1}):
            body = client.get(f"/threads/{prefix}{t}/state").json()
            got = [m["content"] for m in body.get("messages", [])]
            want = [state_message(t, j)["content"] for j in range(messages)]
            if body.get("total") != messages or got != want:
                problems.append(f"thread {t}: total {body.get('total')}, order differs")
    name = f"state prefill: {threads} threads x {messages} messages, drained, in order"
    return Check(name, not problems, "; ".join(problems[:3]))

