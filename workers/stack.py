"""The whole service on one machine: a private redis-server, workers, beat and the API.

Each part runs as its own process group, logging under the data folder; stopping the
stack (Ctrl-C) sends SIGTERM to each, waits for a clean exit, then kills what is left.
The redis-server is started only when no Redis URL is given.

While the stack runs, a part that exits is started again with the same command line
(:meth:`LocalStack.supervise`): a redis-server on the same port and data folder, which
replays its append-only file; the others reconnect to it by themselves. A part that
keeps exiting ends the stack instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from threadfold.workers.settings import Settings

HOST = "127.0.0.1"


class StackError(Exception):
    """Raised when the local stack cannot start (missing redis-server, a port, a crash)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


# A part that exits this often within the window is failing, not crashing once:
# restarting it again would hide the failure behind a loop, so the stack stops.
MAX_RESTARTS = 5
RESTART_WINDOW_SECONDS = 60.0
RESTART_READY_SECONDS = 60.0


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    #: answers True once a restarted process serves (None: started is enough)
    ready: Callable[[], bool] | None = None
    #: what a restart keeps, for the message that reports it
    keeps: str = ""
    restarts: list[float] = field(default_factory=list)


@dataclass
class LocalStack:
    """Processes of a running local stack, stopped in reverse order."""

    data_dir: Path
    env: dict[str, str]
    processes: list[Process] = field(default_factory=list)
    redis_url: str = ""
    #: the broker's own redis-server, when the stack started one (see start_broker)
    broker_url: str = ""
    api_url: str = ""

    def client_settings(self, settings: Settings) -> Settings:
        """``settings`` for a client of the stack (the demo): its Redis and broker."""
        urls = {"redis_url": SecretStr(self.redis_url)}
        if self.broker_url:
            urls["broker_url"] = SecretStr(self.broker_url)
        return settings.model_copy(update=urls)

    def spawn(
        self,
        name: str,
        argv: list[str],
        extra: Mapping[str, str] | None = None,
        *,
        ready: Callable[[], bool] | None = None,
        keeps: str = "",
    ) -> Process:
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        env = {**self.env, **(extra or {})}
        process = Process(name, _popen(argv, env, log), log, argv, env, ready, keeps)
        self.processes.append(process)
        return process

    def supervise(self, say: Callable[[str], None]) -> None:
        """Start again each process that has exited, and ``say`` so.

        Raises StackError when one has exited more than ``MAX_RESTARTS`` times within
        ``RESTART_WINDOW_SECONDS``, or a restarted one does not become ready."""
        for process in self.processes:
            code = process.popen.poll()
            if code is not None:
                self._restart(process, code, say)

    def _restart(self, process: Process, code: int, say: Callable[[str], None]) -> None:
        now = time.monotonic()
        process.restarts = [t for t in process.restarts if now - t < RESTART_WINDOW_SECONDS]
        if len(process.restarts) >= MAX_RESTARTS:
            tail = process.log.read_text(errors="replace")[-2000:]
            raise StackError(
                f"{process.name} exited ({_exit(code)}) {len(process.restarts) + 1} times "
                f"within {RESTART_WINDOW_SECONDS:g} s; log:\n{tail}"
            )
        process.restarts.append(now)
        old = process.popen.pid
        process.popen = _popen(process.argv, process.env, process.log)
        deadline = now + RESTART_READY_SECONDS
        while process.ready is not None and not process.ready():
            if process.popen.poll() is not None:
                return  # exited again: the next call counts it
            if time.monotonic() > deadline:
                raise StackError(
                    f"{process.name} did not become ready within {RESTART_READY_SECONDS:g} s "
                    f"of a restart (log: {process.log})"
                )
            time.sleep(0.1)
        say(
            f"threadfold: {process.name} (pid {old}) exited ({_exit(code)}); restarted it "
            f"as pid {process.popen.pid}{process.keeps}"
        )

    def check_alive(self) -> None:
        for process in self.processes:
            if process.popen.poll() is not None:
                tail = process.log.read_text(errors="replace")[-2000:]
                raise StackError(
                    f"{process.name} exited ({process.popen.returncode}); log:\n{tail}"
                )

    def stop(self, timeout: float = 15.0) -> None:
        for process in reversed(self.processes):
            _signal(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in reversed(self.processes):
            try:
                process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(process, signal.SIGKILL)
                process.popen.wait()


def _popen(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(  # noqa: S603  # our own interpreter and redis-server
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _exit(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"


def _signal(process: Process, sig: signal.Signals) -> None:
    if process.popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.popen.pid, sig)


def _wait(check: object, what: str, stack: LocalStack, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack.check_alive()
        if callable(check) and check():
            return
        time.sleep(0.1)
    raise StackError(
        f"{what} did not become ready within {timeout:g} s (logs: {stack.data_dir / 'logs'})"
    )


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310  # loopback only
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_redis(stack: LocalStack) -> str:
    """A private redis-server with its data under the stack's folder.

    ``appendfsync always``: a write is on disk before Redis answers it, so no delta the
    API acknowledged is lost, even to a crash of the machine (``everysec`` may lose the
    last second or two then). Measured (bench/fsync_bench.py, docs/operations.md), it
    costs this stack up to about a quarter of its write throughput, within the spread
    of runs: the price of what the docs promise."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise StackError(
            "redis-server was not found. Install it (Debian/Ubuntu: sudo apt-get install "
            "redis-server; macOS: brew install redis) or point REDIS_URL at a Redis you run."
        )
    port = free_port()
    data = stack.data_dir / "redis"
    data.mkdir(parents=True, exist_ok=True)
    stack.spawn(
        "redis",
        [
            binary,
            "--bind",
            HOST,
            "--port",
            str(port),
            "--dir",
            str(data),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
            "--protected-mode",
            "no",
        ],
        ready=lambda: _redis_answers(port),
        keeps=f" on port {port} with its data (append-only file in {data})",
    )
    _wait(lambda: _redis_answers(port), "redis-server", stack)
    return f"redis://{HOST}:{port}/0"


def start_broker(stack: LocalStack) -> str:
    """A private redis-server for the Celery broker, apart from the state's.

    On one Redis, a state that fills memory takes the broker down with it: kombu's
    bookkeeping of unacknowledged wake-ups is refused too, workers lose the wake-ups
    they were handed and reconnect in a loop (they exited, before the consumer treated
    it as a connection error), and no drain can be handed on. The broker holds a few
    small messages, so it needs no maxmemory of its own, and no persistence: the
    sweeper re-sends what a restart loses.
    """
    binary = shutil.which("redis-server") or "redis-server"  # start_redis looked first
    port = free_port()
    stack.spawn(
        "broker",
        [
            *(binary, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no"),
            *("--maxmemory-policy", "noeviction", "--protected-mode", "no"),
        ],
        ready=lambda: _redis_answers(port),
        keeps=f" on port {port}, empty (the sweeper re-sends the wake-ups it held)",
    )
    _wait(lambda: _redis_answers(port), "the broker's redis-server", stack)
    return f"redis://{HOST}:{port}/0"


def settings_env(settings: Settings) -> dict[str, str]:
    """``THREADFOLD_*`` variables reproducing ``settings`` for child processes."""
    env: dict[str, str] = {}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        raw = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        env[f"THREADFOLD_{name.upper()}"] = str(raw).lower() if isinstance(raw, bool) else str(raw)
    return env


def celery_argv(kind: str, settings: Settings, *extra: str) -> list[str]:
    """The command line of a Celery ``worker`` or ``beat`` for these settings."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "threadfold.workers.worker",
        kind,
        f"--loglevel={settings.log_level}",
    ]
    if kind == "worker":
        argv += ["--pool=prefork", "-Q", settings.queue, "--without-gossip", "--without-mingle"]
    return [*argv, *extra]


def start_stack(
    settings: Settings, *, redis_url: str | None, workers: int, port: int, data_dir: Path
) -> LocalStack:
    """Redis (unless given), ``workers`` worker processes, beat and the API, all ready."""
    stack = LocalStack(data_dir, dict(os.environ))
    try:
        url = redis_url or start_redis(stack)
        stack.redis_url = url
        if redis_url is None and settings.broker_url is None:  # the default: keep them apart
            stack.broker_url = start_broker(stack)
        settings = stack.client_settings(settings)
        stack.env.update(settings_env(settings))
        stack.spawn("worker", celery_argv("worker", settings, f"--concurrency={workers}"))
        stack.spawn("beat", celery_argv("beat", settings, "-s", str(data_dir / "beat-schedule")))
        port = port or free_port()
        api_url = f"http://{HOST}:{port}"
        stack.spawn(
            "api",
            [sys.executable, "-m", "threadfold.api"],
            {"THREADFOLD_PORT": str(port), "THREADFOLD_HOST": HOST},
            # /healthz, not /readyz: a restarted API serves (503s) while Redis is down.
            ready=lambda: _http_ok(f"{api_url}/healthz"),
            keeps=f" on {api_url}",
        )
        stack.api_url = api_url
        _wait(lambda: _http_ok(f"{stack.api_url}/readyz"), "the API", stack, timeout=60)
    except BaseException:
        stack.stop()
        raise
    return stack
