"""The whole running service, as the HTTP, live and other stack benchmarks drive it,
and what it costs.

The pipeline's backend (:func:`bench.common.services.backend`: a private state Redis
and broker Redis, Celery workers), beat (the sweeper), and one API process group per
``THREADFOLD_API_WORKERS`` value, all on free loopback ports (child processes killed
with their owner, from threadfold.workers.ops.processes). The APIs run side by side on
one Redis so their runs can be interleaved; an idle API costs nothing but a metrics
flush a second.

CPU is read through :mod:`bench.common.cpu`, for process trees (the uvicorn supervisor
and its workers, a Celery worker and its pool) and for Redis. Pinning moves one API's
threads to core 0 and everything else of ours (Redis, workers, beat, this process, the
load generator) to core 1, with ``sched_setaffinity`` on every thread.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import httpx
import redis

from bench.common import services
from bench.common.cpu import machine_busy, redis_cpu, set_affinity, tree_times
from bench.common.services import ROOT
from threadfold.workers.ops.processes import (
    API_ARGV,
    ManagedProcess,
    api_url,
    free_port,
    start_service,
    wait_until,
)
from threadfold.workers.redisio.client import run_many
from threadfold.workers.settings import Settings
from threadfold.workers.storage import status as status_script

if TYPE_CHECKING:  # an A/B runs bench against older trees, where results had another home
    from threadfold.core.results import Status
    from threadfold.workers.storage.status import Stored

_CHUNK = 2000


@dataclass(frozen=True)
class Cpu:
    """CPU seconds so far: per API, all Celery workers, beat, each Redis, the machine."""

    at: float
    apis: dict[str, float]
    workers: float
    beat: float
    redis: float
    broker: float
    machine: float = 0.0
    apis_sys: dict[str, float] = field(default_factory=dict)

    def minus(self, before: Cpu) -> Cpu:
        return Cpu(self.at - before.at,
                   {k: v - before.apis.get(k, 0.0) for k, v in self.apis.items()},
                   self.workers - before.workers, self.beat - before.beat,
                   self.redis - before.redis, self.broker - before.broker,
                   self.machine - before.machine,
                   {k: v - before.apis_sys.get(k, 0.0) for k, v in self.apis_sys.items()})

    def others(self, load_generator: float) -> float:
        """Cores' worth of CPU used by processes not ours over this interval (a delta)."""
        ours = (sum(self.apis.values()) + self.workers + self.beat + self.redis + self.broker
                + load_generator)
        return max(self.machine - ours, 0.0) / self.at if self.at > 0 else 0.0


@dataclass
class Api:
    """One API process group (``workers`` uvicorn worker processes)."""

    name: str
    workers: int
    port: int
    process: ManagedProcess

    @property
    def url(self) -> str:
        return api_url(self.port)


@dataclass
class Stack:
    """The running services."""

    settings: Settings
    apis: dict[str, Api]
    workers: list[ManagedProcess]
    beat: ManagedProcess
    state_pid: int
    broker_pid: int
    client: redis.Redis
    broker: redis.Redis
    logs: Path
    all_cpus: set[int] = field(default_factory=lambda: set(os.sched_getaffinity(0)))

    def cpu(self) -> Cpu:
        apis = {n: tree_times(a.process.pid) for n, a in self.apis.items()}
        return Cpu(time.perf_counter(), {n: t[0] for n, t in apis.items()},
                   sum(tree_times(w.pid)[0] for w in self.workers), tree_times(self.beat.pid)[0],
                   redis_cpu(self.client), redis_cpu(self.broker),
                   machine_busy(), {n: t[1] for n, t in apis.items()})

    def check_alive(self) -> None:
        dead = [p for p in [*self.workers, self.beat] if not p.alive]
        dead += [a.process for a in self.apis.values() if not a.process.alive]
        if dead:
            raise RuntimeError(f"a service died: {dead[0]!r}; log: {dead[0].read_log()[-2000:]}")

    # -- backlog -----------------------------------------------------------------------

    def threads_with_backlog(self) -> int:
        pipe = self.client.pipeline(transaction=False)
        for bucket in range(self.settings.buckets):
            pipe.zcard(self.settings.keyspace.bucket_keys(bucket).dirty)
        return sum(int(n) for n in pipe.execute())

    def wait_drained(self, timeout: float) -> float:
        """Seconds until no thread has a backlog (polled every 20 ms)."""
        started = time.perf_counter()

        def drained() -> bool:
            self.check_alive()
            return self.threads_with_backlog() == 0

        wait_until(drained, timeout, interval=0.02, message="the workers did not drain")
        return time.perf_counter() - started

    def statuses(self, refs: Sequence[str]) -> list[Status | None]:
        """Every thread's status (pipelined in chunks); None for threads never written."""
        return [None if found is None else found.status for found in self.stored(refs)]

    def stored(self, refs: Sequence[str]) -> list[Stored | None]:
        """:meth:`statuses`, each with the count of entries applied."""
        out: list[Stored | None] = []
        ks = self.settings.keyspace
        for i in range(0, len(refs), _CHUNK):
            chunk = refs[i : i + _CHUNK]
            calls = [status_script.call(ks.thread(ref)) for ref in chunk]
            answers = run_many(self.client, calls)
            out += [_parsed(raw, ref) for ref, raw in zip(chunk, answers, strict=True)]
        return out

    # -- pinning -----------------------------------------------------------------------

    @contextmanager
    def pinned(self, api: str | None) -> Iterator[str | None]:
        """With ``api`` set: its processes on core 0, the rest of ours on core 1; yields
        the cpu list for the load generator (None when not pinned)."""
        if api is None or len(self.all_cpus) < 2:
            yield None
            return
        first, second = sorted(self.all_cpus)[:2]
        ours = [self.state_pid, self.broker_pid, os.getpid(), self.beat.pid,
                *(w.pid for w in self.workers),
                *(a.process.pid for n, a in self.apis.items() if n != api)]
        try:
            set_affinity([self.apis[api].process.pid], {first})
            set_affinity(ours, {second})
            yield str(second)
        finally:
            set_affinity([self.state_pid, self.broker_pid, os.getpid(), self.beat.pid,
                           *(w.pid for w in self.workers),
                           *(a.process.pid for a in self.apis.values())], self.all_cpus)


def start_api(settings: Settings, name: str, workers: int, logs: Path) -> Api:
    port = free_port()
    env = {"THREADFOLD_PORT": str(port), "THREADFOLD_API_WORKERS": str(workers),
           "THREADFOLD_LOG_LEVEL": "WARNING"}
    process = start_service(API_ARGV, settings, logs / f"api-{name}.log", env, ROOT)
    return Api(name, workers, port, process)


def _wait_api(api: Api, timeout: float = 60.0) -> None:
    with httpx.Client(base_url=api.url, timeout=5) as client:

        def up() -> bool:
            if not api.process.alive:
                raise RuntimeError(f"API {api.name} exited: {api.process.read_log()[-2000:]}")
            return client.get("/readyz").status_code == 200

        wait_until(up, timeout, interval=0.1, ignore=(httpx.HTTPError,),
                   message=f"API {api.name} did not start")


@contextmanager
def running(api_workers: Sequence[int], celery_workers: int, logs: Path,
            **overrides: Any) -> Iterator[Stack]:
    """Start everything; APIs are named ``api<N>`` by their worker count."""
    with (services.backend(logs, celery_workers, log_level="WARNING", **overrides) as line,
          ExitStack() as stack):
        settings = line.settings
        beat = services.start_beat(settings, logs)
        stack.callback(beat.kill)
        apis = {f"api{n}": start_api(settings, f"api{n}", n, logs) for n in api_workers}
        for api in apis.values():
            stack.callback(api.process.kill)
        for api in apis.values():
            _wait_api(api)
        client, broker = line.state.client(), line.broker.client()
        yield Stack(settings, apis, line.workers, beat, line.state.pid, line.broker.pid, client,
                    broker, logs)


_PARSE_TAKES_REF = len(inspect.signature(status_script.parse).parameters) > 1


def _parsed(raw: Any, ref: str) -> Stored | None:
    """STATUS's answer as this tree's parser reads it. An A/B (:mod:`bench.ab`) drives
    trees from before the parser built the service's Status with this bench: there it
    takes the reply alone and gives one record, which has what the benchmarks read of a
    status (version, backlog, messages, quarantined, applied) under the same names."""
    if _PARSE_TAKES_REF:
        return status_script.parse(raw, ref)
    old: Any = status_script.parse(raw)  # type: ignore[call-arg]
    return None if old is None else cast("Stored", _OldStored(old, old.applied, old.metadata))


@dataclass(frozen=True)
class _OldStored:
    status: Any
    applied: int
    metadata: dict[str, bytes]
