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
from starlette.applications import Starlette

from api.app import create_app
from api.settings import ApiSettings


def app_from_env() -> Starlette:
    """The app factory uvicorn's worker processes call (the process edge reads env)."""
    return create_app(ApiSettings())


def serve(settings: ApiSettings) -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    workers = settings.api_workers
    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "loop": "uvloop",
        "http": "httptools",
        "access_log": False,
        "log_level": settings.log_level.lower(),
        "lifespan": "on",
    }
    if workers > 1:
        # Workers import the factory and read the same environment.
        os.environ.setdefault("THREADFOLD_PORT", str(settings.port))
        uvicorn.run("api.server:app_from_env", factory=True, workers=workers, **common)
    else:
        uvicorn.run(create_app(settings), **common)
