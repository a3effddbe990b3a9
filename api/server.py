"""Running the ASGI app: uvicorn with uvloop and httptools.

Starlette on uvicorn measured fastest for this app's write path here (docs/benchmarks.md).
Several worker processes are started by uvicorn from :func:`app_from_env`, so each one
reads the same ``THREADFOLD_*`` settings.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette

from threadfold.api.app import create_app
from threadfold.api.guard import HttpLimits, protocol
from threadfold.api.settings import ApiSettings
from threadfold.workers import logs, wiring
from threadfold.workers.redact import settings_error


def settings_from_env() -> ApiSettings:
    """The settings of this process; bad ones end it with a message naming the variable."""
    try:
        return ApiSettings()
    except ValidationError as exc:
        # pydantic's own message quotes the values given: the API keys, a URL's password.
        message = f"threadfold api: bad THREADFOLD_* setting: {settings_error(exc)}"
        raise SystemExit(message) from None


def app_from_env() -> Starlette:
    """The app factory uvicorn's worker processes call (the process edge reads env)."""
    return create_app(settings_from_env())


def serve(settings: ApiSettings) -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    logs.configure(settings.log_level, settings.secrets)
    # Here, once, not in the app's startup: that runs in each of uvicorn's processes.
    wiring.warn_shared_broker(settings, "api", logging.getLogger("threadfold.api"))
    workers = settings.api_workers
    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop",
        # httptools, with limits on head size, header count and read time (threadfold.api.guard).
        "http": protocol(HttpLimits.of(settings)),
        # uvicorn's 5 s equals httpx's keep-alive expiry: a pooled connection reused just
        # as the server closed it failed "without a response" (a test's POST, seen in CI).
        "timeout_keep_alive": settings.keep_alive_seconds,
        "access_log": False,
        "log_level": settings.log_level.lower(),
        # uvicorn's lines go through the redacting root handler, in each process it
        # spawns too (it applies log_config in every worker process).
        "log_config": logs.config(settings.log_level, settings.secrets),
        "lifespan": "on",
    }
    if workers > 1:
        # Workers import the factory and read the same environment.
        os.environ.setdefault("THREADFOLD_PORT", str(settings.port))
        uvicorn.run("threadfold.api.server:app_from_env", factory=True, workers=workers, **common)
    else:
        uvicorn.run(create_app(settings), **common)
