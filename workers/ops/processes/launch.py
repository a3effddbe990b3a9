"""The service's own processes: their command lines, environment and readiness checks.

A child learns its settings from ``THREADFOLD_*`` variables (`settings_env`), as a
deployed process does, so what runs under ``threadfold up``, a test or a benchmark is
configured the way production is.
"""

from __future__ import annotations

import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from threadfold.workers.ops.processes.child import HOST, ManagedProcess
from threadfold.workers.settings import Settings

#: The API process (``threadfold api`` replaces itself with the same command).
API_ARGV = [sys.executable, "-m", "threadfold.api"]


def settings_env(settings: Settings) -> dict[str, str]:
    """``THREADFOLD_*`` variables reproducing ``settings`` for child processes."""
    env: dict[str, str] = {}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        raw = value.get_secret_value() if hasattr(value, "get_secret_value") else value
        env[f"THREADFOLD_{name.upper()}"] = str(raw).lower() if isinstance(raw, bool) else str(raw)
    return env


def celery_argv(
    kind: str, settings: Settings, *extra: str, loglevel: str | None = None
) -> list[str]:
    """The command line of a Celery ``worker`` or ``beat`` for these settings (``loglevel``
    defaults to the settings')."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "threadfold.workers.runtime.worker",
        kind,
        f"--loglevel={loglevel or settings.log_level}",
    ]
    if kind == "worker":
        argv += ["--pool=prefork", "-Q", settings.queue, "--without-gossip", "--without-mingle"]
    return [*argv, *extra]


def named_worker_argv(
    settings: Settings, name: str, concurrency: int = 1, loglevel: str | None = None
) -> list[str]:
    """A worker answering pings as ``NAME@host`` (see `celery_answers`), without the
    heartbeats a single-machine run needs no more than gossip or mingle."""
    return celery_argv(
        "worker",
        settings,
        f"--concurrency={concurrency}",
        *("-n", f"{name}@%h", "--without-heartbeat"),
        loglevel=loglevel,
    )


def start_service(
    argv: list[str],
    settings: Settings,
    log_path: Path,
    extra: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ManagedProcess:
    """``argv`` as a child configured by ``settings`` (``extra`` variables over them)."""
    env = {**settings_env(settings), **(extra or {})}
    return ManagedProcess(argv, env=env, log_path=log_path, cwd=cwd)


def api_env(port: int, host: str = HOST) -> dict[str, str]:
    """What an API child needs beyond the settings: where to listen."""
    return {"THREADFOLD_PORT": str(port), "THREADFOLD_HOST": host}


def api_url(port: int, host: str = HOST) -> str:
    return f"http://{host}:{port}"


def http_ok(url: str) -> bool:
    """Whether ``url`` answers 200 (a readiness check: /healthz, /readyz); never raises."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310  # loopback only
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def celery_answers(app: Any, names: Iterable[str]) -> Callable[[], bool]:
    """A readiness check: True once every worker named (``-n NAME@%h``) has answered a
    ping, that is its pool is up and consuming. Answers are remembered across calls."""
    host = socket.gethostname()
    wanted = {f"{name}@{host}" for name in names}
    seen: set[str] = set()

    def answered() -> bool:
        for reply in app.control.ping(timeout=0.5) or []:
            seen.update(reply)
        return wanted <= seen

    return answered
