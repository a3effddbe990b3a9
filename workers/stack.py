"""The whole service on one machine: a private redis-server, workers, beat and the API.

Each part runs as its own process group, logging under the data folder; stopping the
stack (Ctrl-C) sends SIGTERM to each, waits for a clean exit, then kills what is left.
The redis-server is started only when no Redis URL is given.
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workers.settings import Settings

HOST = "127.0.0.1"


class StackError(Exception):
    """Raised when the local stack cannot start (missing redis-server, a port, a crash)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path


@dataclass
class LocalStack:
    """Processes of a running local stack, stopped in reverse order."""

    data_dir: Path
    env: dict[str, str]
    processes: list[Process] = field(default_factory=list)
    redis_url: str = ""
    api_url: str = ""

    def spawn(self, name: str, argv: list[str], extra: Mapping[str, str] | None = None) -> Process:
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(  # noqa: S603  # our own interpreter and redis-server
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**self.env, **(extra or {})},
                start_new_session=True,
            )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

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
    """A private redis-server with its data under the stack's folder."""
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
            "everysec",
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
            "--protected-mode",
            "no",
        ],
    )
    _wait(lambda: _redis_answers(port), "redis-server", stack)
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
        "workers.worker",
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
        settings = settings.model_copy(update={"redis_url": settings.redis_url.__class__(url)})
        stack.env.update(settings_env(settings))
        stack.redis_url = url
        stack.spawn("worker", celery_argv("worker", settings, f"--concurrency={workers}"))
        stack.spawn("beat", celery_argv("beat", settings, "-s", str(data_dir / "beat-schedule")))
        port = port or free_port()
        stack.spawn(
            "api",
            [sys.executable, "-m", "api"],
            {"THREADFOLD_PORT": str(port), "THREADFOLD_HOST": HOST},
        )
        stack.api_url = f"http://{HOST}:{port}"
        _wait(lambda: _http_ok(f"{stack.api_url}/readyz"), "the API", stack, timeout=60)
    except BaseException:
        stack.stop()
        raise
    return stack
