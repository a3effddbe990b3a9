"""The process edge for ``celery -A threadfold.workers.runtime.worker worker`` and ``... beat``.

The environment is read here, once; everything below gets the settings passed in.
"""

from __future__ import annotations

import gc

from celery.signals import beat_init, worker_init, worker_process_init
from pydantic import ValidationError

from threadfold.workers import logs, wiring
from threadfold.workers.redact import settings_error
from threadfold.workers.runtime.tasks import register
from threadfold.workers.settings import Settings

try:
    settings = Settings()
except ValidationError as exc:
    # pydantic's own message quotes the values given: a URL with its password.
    raise SystemExit(f"threadfold: bad THREADFOLD_* setting: {settings_error(exc)}") from None
logs.configure(settings.log_level, settings.secrets)
app = wiring.celery(settings)
runtime = register(app, settings)


def _settle_collector(**_: object) -> None:
    """In each pool process: what is loaded by now lives as long as the process, so keep
    the collector off it, and collect young objects less often. A full collection
    otherwise walks Celery's and kombu's objects in the middle of a drain."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


worker_process_init.connect(_settle_collector, weak=False)


# At a worker's or beat's start: refuse an evicting state Redis, say a shared broker.
worker_init.connect(wiring.at_celery_start(settings, "worker"), weak=False)
beat_init.connect(wiring.at_celery_start(settings, "beat"), weak=False)
