"""The whole service on one machine: a private redis-server, workers, beat and the API.

Each part is a member of a :class:`~threadfold.workers.ops.processes.ProcessGroup`, logging
under the data folder; stopping the stack (Ctrl-C) sends SIGTERM to each, waits for a
clean exit, then kills what is left. The redis-server is started only when no Redis URL
is given.

While the stack runs, a part that exits is started again with the same command line
(:meth:`ProcessGroup.supervise`): a redis-server on the same port and data folder, which
replays its append-only file; the others reconnect to it by themselves. A part that
keeps exiting ends the stack instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from threadfold.workers.ops.processes import (
    API_ARGV,
    DURABLE,
    INSTALL_HINT,
    MAX_RESTARTS,
    ProcessError,
    ProcessGroup,
    api_env,
    api_url,
    celery_argv,
    find_executable,
    free_port,
    http_ok,
    persistence,
    redis_answers,
    redis_argv,
    settings_env,
)
from threadfold.workers.settings import Settings

__all__ = ["MAX_RESTARTS", "LocalStack", "StackError", "start_stack"]

#: Any failure to start or keep the stack running (a missing redis-server, a crash loop).
StackError = ProcessError


@dataclass
class LocalStack(ProcessGroup):
    """The running stack's processes (stopped in reverse order) and its addresses."""

    data_dir: Path = Path()
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


def start_redis(stack: LocalStack) -> str:
    """A private redis-server with its data under the stack's folder, durable
    (``appendfsync always``: see threadfold.workers.ops.processes.DURABLE)."""
    binary = find_executable("redis-server", INSTALL_HINT)
    port = free_port()
    data = stack.data_dir / "redis"
    data.mkdir(parents=True, exist_ok=True)
    stack.spawn(
        "redis",
        redis_argv(binary, port, data, DURABLE),
        ready=lambda: redis_answers(port),
        keeps=f" on port {port} with its data (append-only file in {data})",
    )
    stack.wait_ready(lambda: redis_answers(port), "redis-server")
    return f"redis://127.0.0.1:{port}/0"


def start_broker(stack: LocalStack) -> str:
    """A private redis-server for the Celery broker, apart from the state's.

    On one Redis, a state that fills memory takes the broker down with it: kombu's
    bookkeeping of unacknowledged wake-ups is refused too, workers lose the wake-ups
    they were handed and reconnect in a loop (they exited, before the consumer treated
    it as a connection error), and no drain can be handed on. The broker holds a few
    small messages, so it needs no maxmemory of its own, and no persistence: the
    sweeper re-sends what a restart loses.
    """
    binary = find_executable("redis-server", INSTALL_HINT)
    port = free_port()
    data = stack.data_dir / "broker"
    data.mkdir(parents=True, exist_ok=True)  # nothing is written there: no persistence
    stack.spawn(
        "broker",
        redis_argv(binary, port, data, persistence(appendonly=False)),
        ready=lambda: redis_answers(port),
        keeps=f" on port {port}, empty (the sweeper re-sends the wake-ups it held)",
    )
    stack.wait_ready(lambda: redis_answers(port), "the broker's redis-server")
    return f"redis://127.0.0.1:{port}/0"


def start_stack(
    settings: Settings, *, redis_url: str | None, workers: int, port: int, data_dir: Path
) -> LocalStack:
    """Redis (unless given), a Celery worker of ``workers`` pool processes, beat and the
    API, all ready."""
    stack = LocalStack(data_dir / "logs", dict(os.environ), data_dir=data_dir)
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
        url = api_url(port)
        stack.spawn(
            "api",
            API_ARGV,
            api_env(port),
            # /healthz, not /readyz: a restarted API serves (503s) while Redis is down.
            ready=lambda: http_ok(f"{url}/healthz"),
            keeps=f" on {url}",
        )
        stack.api_url = url
        stack.wait_ready(lambda: http_ok(f"{url}/readyz"), "the API", timeout=60)
    except BaseException:
        stack.stop()
        raise
    return stack
