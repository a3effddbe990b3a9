"""The process edge for ``celery -A threadfold.workers.worker worker`` and ``... beat``.

The environment is read here, once; everything below gets the settings passed in.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable

from celery.signals import beat_init, worker_init, worker_process_init
from pydantic import ValidationError

from threadfold.workers import logs
from threadfold.workers.app import make_celery
from threadfold.workers.redact import settings_error
from threadfold.workers.settings import Settings
from threadfold.workers.shared_broker import warn_if_shared
from threadfold.workers.tasks import register

log = logging.getLogger("threadfold.worker")

try:
    settings = Settings()
except ValidationError as exc:
    # pydantic's own message quotes the values given: a URL with its password.
    raise SystemExit(f"threadfold: bad THREADFOLD_* setting: {settings_error(exc)}") from None
logs.configure(settings.log_level, settings.secrets)
app = make_celery(settings)
runtime = register(app, settings)


def _settle_collector(**_: object) -> None:
    """In each pool process: what is loaded by now lives as long as the process, so keep
    the collector off it, and collect young objects less often. A full collection
    otherwise walks Celery's and kombu's objects in the middle of a drain."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


worker_process_init.connect(_settle_collector, weak=False)


def _say_if_the_broker_shares_state(who: str) -> Callable[..., None]:
    """At a worker's or beat's start (their main process, once; not in ``celery
    inspect``, which imports this module too)."""

    def say(**_: object) -> None:
        warn_if_shared(settings, f"threadfold {who}", log)

    return say


worker_init.connect(_say_if_the_broker_shares_state("worker"), weak=False)
beat_init.connect(_say_if_the_broker_shares_state("beat"), weak=False)
