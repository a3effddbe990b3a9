"""Running the real pipeline in tests: settings, Celery worker and beat processes, and
the store-level instruments the tests check it with (the oracle itself, the fold of
what was acknowledged, is :mod:`threadfold.testing`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from celery import Celery

from threadfold.testing import Ledger

# Re-exported: the engine's tests import these from the harness.
from threadfold.testing.stored import CountingWaker as CountingWaker  # noqa: PLC0414
from threadfold.testing.stored import state_dump as state_dump  # noqa: PLC0414
from threadfold.testing.stored import wait_drained as wait_drained  # noqa: PLC0414
from threadfold.workers import wiring
from threadfold.workers.ops.processes import (
    API_ARGV,
    ManagedProcess,
    api_url,
    celery_argv,
    free_port,
    http_ok,
    named_worker_argv,
    start_service,
    wait_until,
)
from threadfold.workers.redisio.client import SyncRedis
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

ROOT = Path(__file__).resolve().parents[2]
CELERY = str(Path(sys.executable).with_name("celery"))

# Short leases and periods so recoveries happen within a test's patience.
FAST = {
    "drain_seconds": 0.5,
    "task_soft_time_limit": 20.0,
    "task_time_limit": 30.0,
    "visibility_timeout": 40.0,
    "wake_ttl_seconds": 1.5,
    "sweep_seconds": 0.5,
    "batch_size": 200,
}


#: For a test of the workers' path (wake-ups, drains, the sweeper, backlogs and what
#: reports them): every append waits for a worker, as an update or a removal does. An
#: append the ingest call commits itself is tests/workers/test_ingest_commits.py's.
WORKERS_ONLY: dict[str, Any] = {"ingest_commits": False}


def make_settings(redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {**FAST, "redis_url": redis_url, **overrides}
    return Settings(**values)


def start_worker(
    settings: Settings, name: str, log_dir: Path, concurrency: int = 1
) -> ManagedProcess:
    """A real ``celery worker`` (prefork pool) in its own process group."""
    argv = named_worker_argv(settings, name, concurrency, loglevel="WARNING")
    return _child(argv, settings, log_dir / f"{name}.log")


def start_beat(settings: Settings, log_dir: Path) -> ManagedProcess:
    argv = celery_argv("beat", settings, "-s", str(log_dir / "beat-schedule"), loglevel="WARNING")
    return _child(argv, settings, log_dir / "beat.log")


def _child(
    argv: list[str], settings: Settings, log: Path, extra: dict[str, str] | None = None
) -> ManagedProcess:
    # PYTHONPATH and cwd: a child can import the tests' own modules (tests/workers/produce.py).
    return start_service(argv, settings, log, {"PYTHONPATH": str(ROOT), **(extra or {})}, ROOT)


OPEN_CLIENTS: list[SyncRedis] = []


def store_for(settings: Settings) -> Store:
    """A store on its own client; tests/conftest.py closes every such client after each
    test, so no socket is left for the garbage collector to find in a later test."""
    client = wiring.redis(settings)
    OPEN_CLIENTS.append(client)
    return wiring.store(settings, client)


def close_clients() -> None:
    while OPEN_CLIENTS:
        OPEN_CLIENTS.pop().close()


def start_api(
    settings: Settings, log_dir: Path, *, port: int | None = None, **env: str
) -> tuple[ManagedProcess, str]:
    """A real API process (``python -m threadfold.api``) on ``port`` (by default a free
    one), answering /healthz."""
    port = free_port() if port is None else port
    api = _child(API_ARGV, settings, log_dir / "api.log", {"THREADFOLD_PORT": str(port), **env})
    url = api_url(port)
    try:
        wait_until(lambda: http_ok(f"{url}/healthz"), 30, message="API did not start")
    except BaseException:
        api.kill()
        raise
    return api, url


def waiting_wake_ups(app: Celery, queue: str) -> int:
    """How many wake-ups wait in ``queue``, on either broker: ready ones, not those a
    worker holds unacknowledged."""
    with app.connection_for_write() as conn:
        return int(conn.default_channel.queue_declare(queue, passive=True).message_count)


def lose_waiting_wake_ups(app: Celery, queue: str, expected: int) -> None:
    """The broker loses the ``expected`` wake-ups waiting in ``queue``: the Redis list is
    deleted, the RabbitMQ queue purged. On RabbitMQ a message published on one connection
    reaches its queue after the publish returns; first it is waited for."""
    wait_until(
        lambda: waiting_wake_ups(app, queue) == expected,
        10,
        message=f"the queue never held {expected} wake-up(s)",
    )
    with app.connection_for_write() as conn:
        assert conn.default_channel.queue_purge(queue) == expected


def load_jsonl(ledger: Ledger, path: Path) -> None:
    """Record the answers a producer process wrote (tests/workers/produce.py), one JSON
    object a line; a duplicate's answer is the first write's, already recorded."""
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if not row["duplicate"]:
            ledger.add(row["ref"], row["version"], row["messages"], row["ids"])
