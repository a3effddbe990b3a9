"""redis-server as a child: its command line, its password file, its readiness, and
`RedisServer`, one on a free loopback port with a private data directory.

Every redis-server this project starts (``threadfold up``'s, the tests', the
benchmarks') is built by `redis_argv`: loopback only, no RDB snapshots, ``noeviction``
(the state must never lose a key to eviction, docs/operations.md), and the persistence
asked for. A password goes into a 0600 config file in the server's directory, never on
its command line, where ``ps`` would show it.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from threadfold.core.errors import ThreadfoldError
from threadfold.workers.ops.processes.child import (
    HOST,
    ManagedProcess,
    find_executable,
    free_port,
    wait_until,
)
from threadfold.workers.ops.processes.errors import ServiceStartError

AppendFsync = Literal["always", "everysec", "no"]

_PORT_ATTEMPTS = 5
_LOG_TAIL_LINES = 20
_PROBE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_CONFIG = "redis.conf"

#: What to tell someone without redis-server.
INSTALL_HINT = (
    "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install "
    "redis) or point REDIS_URL at a Redis you run."
)


def persistence(*, appendonly: bool, appendfsync: AppendFsync = "everysec") -> list[str]:
    """The append-only file's options (RDB snapshots are always off: see `redis_argv`)."""
    return ["--appendonly", "yes" if appendonly else "no", "--appendfsync", appendfsync]


#: The local stack's state Redis. ``appendfsync always``: a write is on disk before Redis
#: answers it, so no delta the API acknowledged is lost, even to a crash of the machine
#: (``everysec`` may lose the last second or two then). Measured once (docs/deploy.md;
#: the driver, bench/fsync_bench.py, is in git history), it costs the stack up to about
#: a quarter of its write throughput, within the spread of runs: the price of what the
#: docs promise.
DURABLE = persistence(appendonly=True, appendfsync="always")


def redis_argv(
    executable: str,
    port: int,
    data_dir: Path,
    options: Sequence[str] = (),
    *,
    logfile: Path | None = None,
) -> list[str]:
    """The command line of a loopback redis-server on ``port`` keeping its files in
    ``data_dir``, with ``options`` (`persistence`, others) last so they win.

    A password file written by `write_password_file` in ``data_dir`` is read first:
    redis-server reads its config file before the options."""
    config = data_dir / _CONFIG
    return [
        executable,
        *([str(config)] if config.exists() else []),
        *("--bind", HOST, "--port", str(port), "--dir", str(data_dir)),
        *("--save", "", "--daemonize", "no", "--protected-mode", "no"),
        *(("--logfile", str(logfile)) if logfile is not None else ()),
        *("--maxmemory-policy", "noeviction"),
        *options,
    ]


def write_password_file(data_dir: Path, password: str) -> None:
    """``requirepass`` in a config file only its owner reads, for `redis_argv`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / _CONFIG
    config.touch(mode=0o600)
    config.chmod(0o600)  # before the secret is in it
    config.write_text(f"requirepass {password}\n")


def redis_answers(port: int, password: str | None = None) -> bool:
    """Whether the server on ``port`` answers PING with its dataset loaded; never raises
    (a readiness check for a supervised server)."""
    try:
        return _loaded(port, password)
    except _PROBE_ERRORS:
        return False


def _loaded(port: int, password: str | None) -> bool:
    with _probe_client(port, timeout=1.0, password=password) as client:
        client.ping()
        return int(client.info("persistence")["loading"]) == 0


class _PortTakenError(ThreadfoldError):
    """The chosen port was taken between `free_port` and the server's bind."""


@dataclass
class _Runtime:
    """What must be torn down with the server; the finalizer holds it, not the server."""

    dir: Path
    owns_dir: bool
    process: ManagedProcess | None = None
    clients: list[redis.Redis] = field(default_factory=list)

    def teardown(self) -> None:
        for client in self.clients:
            client.close()
        self.clients.clear()
        if self.process is not None:
            self.process.kill()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class RedisServer:
    """`redis-server` as a child process; starts on construction and is ready when it returns.

    Persistence is off unless `appendonly`; `kill` then `restart` reuses the port and the
    directory, so an append-only file is replayed. `close` (or leaving the `with` block)
    stops the server, closes the clients it handed out and removes the directory it made.

    With a `password` the server runs `requirepass`, read from a config file in its
    directory (never on its command line, where `ps` would show it); `url`, `client` and
    `probe` carry it.
    """

    def __init__(  # noqa: PLR0913  # redis-server's options, keyword-only, one per setting
        self,
        *,
        port: int | None = None,
        appendonly: bool = False,
        appendfsync: AppendFsync = "everysec",
        extra_args: Sequence[str] = (),
        data_dir: Path | None = None,
        password: str | None = None,
        cluster_bus: bool = False,
        executable: str = "redis-server",
        startup_timeout: float = 10.0,
    ) -> None:
        self._executable = find_executable(executable, INSTALL_HINT)
        self.password = password
        self._options = [*persistence(appendonly=appendonly, appendfsync=appendfsync), *extra_args]
        self.startup_timeout = startup_timeout
        self._runtime = _Runtime(
            dir=data_dir or Path(tempfile.mkdtemp(prefix="threadfold-redis-")),
            owns_dir=data_dir is None,
        )
        self._finalizer = weakref.finalize(self, self._runtime.teardown)
        try:
            if password is not None:
                write_password_file(self.dir, password)
            self.port = self._start_on_free_port(port, cluster_bus)
        except BaseException:
            self._finalizer()
            raise

    @property
    def url(self) -> str:
        auth = "" if self.password is None else f":{quote(self.password, safe='')}@"
        return f"redis://{auth}{HOST}:{self.port}/0"

    @property
    def dir(self) -> Path:
        return self._runtime.dir

    @property
    def log_path(self) -> Path:
        return self.dir / "redis.log"

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._runtime.process is not None and self._runtime.process.alive

    def client(self, *, decode_responses: bool = False, **options: Any) -> redis.Redis:
        """A client for db 0; closed with the server if the caller has not closed it."""
        client = redis.Redis(
            host=HOST,
            port=self.port,
            db=0,
            password=self.password,
            decode_responses=decode_responses,
            **options,
        )
        self._runtime.clients.append(client)
        return client

    @contextlib.contextmanager
    def probe(self, timeout: float = 1.0) -> Iterator[redis.Redis]:
        """A short-lived client that never retries, for health checks and admin commands."""
        with _probe_client(self.port, timeout, self.password) as client:
            yield client

    def kill(self) -> None:
        """SIGKILL: no shutdown, no final fsync, as in a crash."""
        self._process.kill()

    def stop(self, timeout: float = 10.0) -> None:
        """SHUTDOWN NOSAVE and wait for the exit; falls back to SIGTERM, then SIGKILL."""
        process = self._process
        if not process.alive:
            process.kill()
            return
        with contextlib.suppress(redis.exceptions.RedisError), self.probe(timeout) as admin:
            admin.shutdown(nosave=True)
        try:
            process.wait(timeout)
        except TimeoutError:
            process.terminate(timeout)

    def restart(self) -> None:
        """Stop if running, then start on the same port and directory; ready when it returns."""
        self.stop()
        self._launch(self.port)

    def close(self) -> None:
        """Stop the server, close its clients and remove the directory it created."""
        if self._finalizer.alive and self.alive:
            self.stop()
        self._finalizer()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RedisServer {self.url} {'alive' if self.alive else 'stopped'}>"

    @property
    def _process(self) -> ManagedProcess:
        if self._runtime.process is None:
            raise RuntimeError("the server has not been started")
        return self._runtime.process

    def _start_on_free_port(self, port: int | None, cluster_bus: bool) -> int:
        if port is not None:
            self._launch(port)
            return port
        for _ in range(_PORT_ATTEMPTS):
            candidate = free_port(cluster_bus=cluster_bus)
            try:
                self._launch(candidate)
            except _PortTakenError:
                continue
            return candidate
        raise ServiceStartError(f"redis-server lost the race for a free port {_PORT_ATTEMPTS}x")

    def _launch(self, port: int) -> None:
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        process = ManagedProcess(self._argv(port), log_path=self.dir / "process.log")
        self._runtime.process = process
        try:
            wait_until(
                lambda: _ready(process, port, self.password),
                self.startup_timeout,
                message=f"redis-server on port {port} did not become ready",
                ignore=_PROBE_ERRORS,
            )
        except (TimeoutError, _ExitedError) as error:
            process.kill()
            log = self._log_since(log_start) + process.read_log()
            if "Address already in use" in log:
                raise _PortTakenError(port) from error
            raise ServiceStartError(f"{error}; log tail:\n{_tail(log)}") from error

    def _argv(self, port: int) -> list[str]:
        return redis_argv(self._executable, port, self.dir, self._options, logfile=self.log_path)

    def _log_since(self, offset: int) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""


class _ExitedError(ThreadfoldError):
    """The server process exited while we waited for it to become ready."""


def _ready(process: ManagedProcess, port: int, password: str | None) -> bool:
    """PING answers and the dataset (RDB or AOF) is fully loaded."""
    if not process.alive:
        raise _ExitedError(f"redis-server on port {port} exited while starting")
    return _loaded(port, password)


@contextlib.contextmanager
def _probe_client(port: int, timeout: float, password: str | None) -> Iterator[redis.Redis]:
    client = redis.Redis(
        host=HOST,
        port=port,
        password=password,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        yield client
    finally:
        client.close()


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-_LOG_TAIL_LINES:])
