"""Running the real pipeline in tests: settings, Celery worker and beat processes, oracles."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tests.infra.ports import free_port
from tests.infra.processes import ManagedProcess, wait_until
from threadfold.core import BaseMessage, apply_deltas, dump_messages, to_messages
from threadfold.workers.redis_io import SyncClient, sync_client
from threadfold.workers.settings import Settings
from threadfold.workers.stack import settings_env
from threadfold.workers.store import Store
from threadfold.workers.wakeup import Waker

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


def make_settings(redis_url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {**FAST, "redis_url": redis_url, **overrides}
    return Settings(**values)


def start_worker(
    settings: Settings, name: str, log_dir: Path, concurrency: int = 1
) -> ManagedProcess:
    """A real ``celery worker`` (prefork pool) in its own process group."""
    return ManagedProcess(
        [
            CELERY,
            "-A",
            "threadfold.workers.worker",
            "worker",
            "--pool=prefork",
            f"--concurrency={concurrency}",
            "-Q",
            settings.queue,
            "-n",
            f"{name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
        ],
        env={**settings_env(settings), "PYTHONPATH": str(ROOT)},
        log_path=log_dir / f"{name}.log",
        cwd=ROOT,
    )


def start_beat(settings: Settings, log_dir: Path) -> ManagedProcess:
    return ManagedProcess(
        [
            CELERY,
            "-A",
            "threadfold.workers.worker",
            "beat",
            "-s",
            str(log_dir / "beat-schedule"),
            "--loglevel=WARNING",
        ],
        env={**settings_env(settings), "PYTHONPATH": str(ROOT)},
        log_path=log_dir / "beat.log",
        cwd=ROOT,
    )


OPEN_CLIENTS: list[SyncClient] = []


def store_for(settings: Settings) -> Store:
    """A store on its own client; tests/conftest.py closes every such client after each
    test, so no socket is left for the garbage collector to find in a later test."""
    client: SyncClient = sync_client(
        settings.redis_url.get_secret_value(), cluster=settings.cluster
    )
    OPEN_CLIENTS.append(client)
    return Store(client, settings.keyspace)


def close_clients() -> None:
    while OPEN_CLIENTS:
        OPEN_CLIENTS.pop().close()


def wait_drained(store: Store, refs: Iterable[str], timeout: float) -> None:
    """Until every thread has no backlog (checked through the status the API serves)."""
    pending = set(refs)

    def done() -> bool:
        for ref in list(pending):
            status = store.status(ref)
            if status is not None and status.backlog == 0:
                pending.discard(ref)
        return not pending

    wait_until(
        done, timeout, interval=0.1, message=f"threads still with a backlog: {sorted(pending)[:5]}"
    )


@dataclass
class Sent:
    """What producers were told: per thread, the accepted deltas with their stamped ids."""

    deltas: dict[str, list[tuple[str, list[Any], list[str]]]] = field(default_factory=dict)

    def add(self, ref: str, version: str, messages: list[Any], ids: Sequence[str]) -> None:
        self.deltas.setdefault(ref, []).append((version, messages, list(ids)))

    @property
    def count(self) -> int:
        """Deltas recorded, over all threads."""
        return sum(len(d) for d in self.deltas.values())

    def load_jsonl(self, path: Path) -> None:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if not row["duplicate"]:
                self.add(row["ref"], row["version"], row["messages"], row["ids"])

    def expected(self, ref: str) -> list[BaseMessage]:
        """The one-delta-at-a-time fold of the thread's accepted deltas, in version order."""
        state: list[BaseMessage] = []
        for _, messages, ids in sorted(self.deltas.get(ref, []), key=lambda d: version_key(d[0])):
            state = apply_deltas(state, [stamped(messages, ids)])
        return state


def version_key(version: str) -> tuple[int, int]:
    ms, _, seq = version.partition("-")
    return int(ms), int(seq)


def stamped(messages: list[Any], ids: Sequence[str]) -> list[BaseMessage]:
    return [
        msgspec.structs.replace(m, id=i) for m, i in zip(to_messages(messages), ids, strict=True)
    ]


def state_dump(store: Store, ref: str) -> list[dict[str, Any]]:
    page = store.read_state(ref)
    return [] if page is None else dump_messages(page.messages)


def start_api(settings: Settings, log_dir: Path, **env: str) -> tuple[ManagedProcess, str]:
    """A real API process (``python -m threadfold.api``) on a free port, answering /healthz."""
    import httpx  # noqa: PLC0415  # only the HTTP tests need it

    port = free_port()
    api = ManagedProcess(
        [sys.executable, "-m", "threadfold.api"],
        env={
            **settings_env(settings),
            "PYTHONPATH": str(ROOT),
            "THREADFOLD_PORT": str(port),
            **env,
        },
        log_path=log_dir / "api.log",
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(
            lambda: httpx.get(f"{url}/healthz").status_code == 200,
            30,
            ignore=(httpx.HTTPError,),
            message="API did not start",
        )
    except BaseException:
        api.kill()
        raise
    return api, url


class CountingWaker:
    """A waker that counts what it passes on to ``inner``: refs woken and publishes."""

    def __init__(self, inner: Waker) -> None:
        self.inner = inner
        self.sent = 0
        self.publishes = 0

    def wake(self, refs: Sequence[str]) -> None:
        self.sent += len(refs)
        self.publishes += 1
        self.inner.wake(refs)
