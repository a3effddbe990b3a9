"""Running the ASGI app: uvicorn with uvloop and httptools, one process per core.

uvicorn and granian measured within noise of each other for this app here
(docs/benchmarks.md); uvicorn is the one the rest of the stack already installs.
"""

from __future__ import annotations

import logging

import uvicorn

from api.app import create_app
from api.settings import ApiSettings


def serve(settings: ApiSettings, workers: int = 1) -> None:
    """Serve until interrupted (SIGINT/SIGTERM stop it cleanly)."""
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level=settings.log_level.lower(),
        workers=workers,
        lifespan="on",
    )
    uvicorn.Server(config).run()
