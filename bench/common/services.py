"""Real services for the benchmarks and the accounting of what they cost.

Redis servers and Celery workers come from the supervision module,
threadfold.workers.ops.processes (child processes on free loopback ports, killed with their
owner). :func:`backend` is what every suite that runs the pipeline starts first (a state
Redis, a broker Redis, named Celery workers answering): the pipeline's end-to-end runs on
it alone, :mod:`bench.common.stack` adds beat and the APIs. Their CPU is read through
:mod:`bench.common.cpu`, Redis's commands from its ``INFO commandstats`` and
``SLOWLOG``, so each side's cost per delta can be reported next to the throughput it
bought.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from threadfold.workers.ops.processes import (
    ManagedProcess,
    RedisServer,
    celery_answers,
    celery_argv,
    named_worker_argv,
    start_service,
    wait_until,
)
from threadfold.workers.runtime.app import make_celery
from threadfold.workers.settings import Settings

#: The checkout: the benchmark's children run from it (the naive workers import bench).
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Backend:
    """A state Redis and a broker Redis, and Celery workers on them, every one answering."""

    settings: Settings
    state: RedisServer
    broker: RedisServer
    #: The Celery app on the broker (wake-ups are sent through it).
    app: Any
    workers: list[ManagedProcess]


@contextmanager
def redis_server(extra_args: Sequence[str] = ()) -> Iterator[RedisServer]:
    """A private ``redis-server`` without persistence."""
    with RedisServer(appendonly=False, extra_args=extra_args) as server:
        yield server


@contextmanager
def log_dir(keep: bool = False) -> Iterator[Path]:
    """A directory for worker logs (removed afterwards unless ``keep``)."""
    if keep:
        yield Path(tempfile.mkdtemp(prefix="threadfold-bench-"))
        return
    with tempfile.TemporaryDirectory(prefix="threadfold-bench-") as path:
        yield Path(path)


@dataclass(frozen=True)
class CommandStat:
    """One line of ``INFO commandstats``."""

    calls: int
    usec: int

    @property
    def usec_per_call(self) -> float:
        return self.usec / self.calls if self.calls else 0.0


def commandstats(client: redis.Redis) -> dict[str, CommandStat]:
    """Calls and total microseconds per command (script-issued commands count too)."""
    raw: dict[str, Any] = client.info("commandstats")
    out = {}
    for key, value in raw.items():
        name = key.removeprefix("cmdstat_")
        out[name] = CommandStat(int(value["calls"]), int(value["usec"]))
    return out


def reset_stats(client: redis.Redis) -> None:
    client.config_resetstat()


def start_worker(settings: Settings, name: str, logs: Path,
                 concurrency: int = 1) -> ManagedProcess:
    """A Celery worker (prefork pool) answering pings as ``NAME@host``."""
    argv = named_worker_argv(settings, name, concurrency, loglevel="WARNING")
    return start_service(argv, settings, logs / f"{name}.log", cwd=ROOT)


def start_beat(settings: Settings, logs: Path) -> ManagedProcess:
    argv = celery_argv("beat", settings, "-s", str(logs / "beat-schedule"), loglevel="WARNING")
    return start_service(argv, settings, logs / "beat.log", cwd=ROOT)


def wait_ready(app: Any, names: Sequence[str], workers: Sequence[ManagedProcess],
               timeout: float = 60.0) -> None:
    """Until every named Celery worker answers a ping (its pool is up and consuming)."""
    pinged = celery_answers(app, names)

    def answered() -> bool:
        dead = [w for w in workers if not w.alive]
        if dead:
            raise RuntimeError(f"worker exited while starting; log: {dead[0].read_log()[-2000:]}")
        return pinged()

    wait_until(answered, timeout, interval=0.1, message=f"workers {list(names)} not ready")


@contextmanager
def backend(logs: Path, workers: int, concurrency: int = 1,
            **values: Any) -> Iterator[Backend]:
    """``workers`` Celery workers (``w0``, ``w1``, ...) on a state Redis and a broker
    Redis of their own, with ``Settings(**values)`` over those URLs; yielded once every
    worker answers a ping, everything killed and closed on the way out."""
    with redis_server() as state, redis_server() as broker, ExitStack() as stack:
        settings = Settings(redis_url=state.url, broker_url=broker.url, **values)
        names = [f"w{i}" for i in range(workers)]
        procs = [start_worker(settings, n, logs, concurrency) for n in names]
        stack.enter_context(killing(procs))
        app = make_celery(settings)
        stack.callback(app.close)
        wait_ready(app, names, procs)
        yield Backend(settings, state, broker, app, procs)


@contextmanager
def killing(processes: Sequence[ManagedProcess]) -> Iterator[Sequence[ManagedProcess]]:
    """Kill every process (and its group) on the way out."""
    with ExitStack() as stack:
        for process in processes:
            stack.callback(process.kill)
        yield processes


@contextmanager
def script_log(client: redis.Redis, max_len: int = 100_000) -> Iterator[dict[str, list[int]]]:
    """Microseconds of every script call meanwhile, by script name (Redis' SLOWLOG at 0 us).

    The slowlog times the command inside the server, as ``commandstats`` does, but per
    call, and the first argument of an EVALSHA names its script.
    """
    from threadfold.workers.storage.scripts import ALL  # noqa: PLC0415  # only the benchmark needs the table

    names = {s.sha: s.name for s in ALL}
    found: dict[str, list[int]] = {}
    old: dict[str, str] = client.config_get("slowlog-*")  # type: ignore[assignment]
    client.config_set("slowlog-max-len", max_len)
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    try:
        yield found
        entries = client.slowlog_get(max_len)
    finally:
        for key, value in old.items():
            client.config_set(key, value)
    for entry in entries:
        args = entry["command"].split()
        if args and args[0].lower() == b"evalsha" and len(args) > 1:
            name = names.get(args[1].decode(), "other")
            found.setdefault(name, []).append(int(entry["duration"]))
