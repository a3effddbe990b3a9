"""What a run's operations share: the running service, the history, the driver's view.

A :class:`Target` is handed over by whoever started the processes (the test through its
harness, the long run through ``threadfold up``'s stack), so this package starts none.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.history.locks import ThreadLocks
from tests.history.model import History, key
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ingest.wakeup import BackgroundWaker
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store


@dataclass(frozen=True)
class Target:
    """A running service: its settings (Redis, broker, retention), the API's URL, and
    how to run the ``threadfold`` command against it (argv prefix, environment, cwd)."""

    settings: Settings
    api_url: str
    cli: list[str]
    cli_env: dict[str, str]
    cli_cwd: Path


@dataclass
class Known:
    """The driver's view, to choose arguments (never used to judge an answer): per
    thread, the versions acknowledged in its current incarnation, some of deleted
    ones, the poison entries not skipped yet, and the newest version it ever had."""

    versions: dict[str, list[str]] = field(default_factory=dict)
    old: dict[str, list[str]] = field(default_factory=dict)
    poisons: dict[str, list[str]] = field(default_factory=dict)
    newest: dict[str, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wrote(self, ref: str, version: str, *, poison: bool = False) -> None:
        with self.lock:
            self.versions.setdefault(ref, []).append(version)
            if poison:
                self.poisons.setdefault(ref, []).append(version)
            if key(version) > key(self.newest.get(ref, "0-0")):
                self.newest[ref] = version

    def deleted(self, ref: str) -> None:
        with self.lock:
            gone = self.versions.pop(ref, [])
            self.old[ref] = (self.old.get(ref, []) + gone[-50:])[-200:]
            self.poisons.pop(ref, None)

    def skipped(self, ref: str, entry: str) -> None:
        with self.lock:
            held = self.poisons.get(ref, [])
            if entry in held:
                held.remove(entry)

    def newest_ms(self, ref: str) -> int:
        """The millisecond of the newest version ``ref`` ever had (0: none)."""
        with self.lock:
            return key(self.newest.get(ref, "0-0"))[0]

    def exists(self, ref: str) -> bool:
        with self.lock:
            return bool(self.versions.get(ref))

    def snapshot(self, ref: str) -> tuple[list[str], list[str], list[str]]:
        """Current versions, old versions and pending poison entries of ``ref``."""
        with self.lock:
            return (
                list(self.versions.get(ref, [])),
                list(self.old.get(ref, [])),
                list(self.poisons.get(ref, [])),
            )


class Session:
    """The clients a run's operations use, over one :class:`Target`."""

    def __init__(self, target: Target, refs: Sequence[str]) -> None:
        self.target = target
        self.settings = target.settings
        self.refs = list(refs)
        self.history = History()
        self.known = Known()
        self.locks = ThreadLocks(self.refs)
        url = self.settings.redis_url.get_secret_value()
        self.store = Store(sync_client(url, cluster=self.settings.cluster), self.settings.keyspace)
        self._app = make_celery(self.settings)
        self.waker = BackgroundWaker(CeleryWaker(self._app, self.settings.queue))
        self.producer = Producer(self.store.client, self.settings, self.waker)
        self._local = threading.local()
        self._clients: list[httpx.Client] = []
        self._clients_lock = threading.Lock()

    @property
    def http(self) -> httpx.Client:
        """This thread's HTTP client (a client's pool is not shared across threads)."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None:
            client = httpx.Client(base_url=self.target.api_url, timeout=60)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def redis_ms(self) -> int:
        seconds, micros = self.store.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def close(self) -> None:
        self.waker.close()
        self._app.close()
        for client in self._clients:
            client.close()
        self.store.client.close()
