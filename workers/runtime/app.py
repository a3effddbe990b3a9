"""The Celery application: configuration for at-least-once wake-ups.

Why each setting (see docs/operations.md for the failure modes):

* ``task_acks_late`` + ``task_reject_on_worker_lost``: a wake-up is acknowledged only
  after its drain, and a drain whose process died is redelivered. A wake-up may then run
  twice; the commit's compare-and-set makes that harmless.
* ``worker_prefetch_multiplier = 1``: a worker holds one unacknowledged wake-up at a
  time, so a busy worker does not sit on wake-ups another could run now.
* ``visibility_timeout`` (Redis broker) above ``task_time_limit`` above
  ``task_soft_time_limit`` above ``drain_seconds``: a live drain is never redelivered
  to a second worker merely for being slow.
* No ETA/countdown anywhere: on the Redis broker they sit in the unacked set until the
  visibility timeout. Backoff comes from the wake-up flag's lease and the sweeper.
* Results are ignored: the state in Redis is the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import Celery

from threadfold.workers.redisio.sentinel import kombu_broker
from threadfold.workers.settings import Settings

DRAIN_TASK = "threadfold.drain"
SWEEP_TASK = "threadfold.sweep"


def celery_config(settings: Settings) -> dict[str, Any]:
    # A Sentinel URL becomes kombu's sentinel:// list and its master_name option.
    broker, options = kombu_broker(settings.broker)
    return {
        "broker_url": broker,
        "broker_connection_retry_on_startup": True,
        "broker_channel_error_retry": True,
        "broker_transport_options": {"visibility_timeout": settings.visibility_timeout, **options},
        "task_default_queue": settings.queue,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_ignore_result": True,
        "task_store_errors_even_if_ignored": False,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_soft_time_limit": settings.task_soft_time_limit,
        "task_time_limit": settings.task_time_limit,
        "worker_prefetch_multiplier": 1,
        "worker_soft_shutdown_timeout": settings.drain_seconds + 1.0,
        "worker_enable_soft_shutdown_on_idle": True,
        "worker_hijack_root_logger": False,
        "worker_send_task_events": False,
        "beat_schedule": {
            "threadfold-sweep": {
                "task": SWEEP_TASK,
                "schedule": settings.sweep_seconds,
                "options": {"queue": settings.queue},
            },
        },
    }


def make_celery(settings: Settings) -> Celery:
    """A Celery app for ``settings`` (tasks are registered by
    :mod:`threadfold.workers.runtime.tasks`)."""
    app = Celery("threadfold", set_as_current=False)
    app.conf.update(celery_config(settings))
    return app


class CeleryWaker:
    """Sends drain tasks by name (no task import needed), several threads per task.

    Building and publishing one Celery message costs a few hundred microseconds of CPU,
    far more than appending a delta; under load many threads need waking at once, so
    they share messages of up to ``refs_per_task`` refs, published in one batch.
    """

    def __init__(self, app: Celery, queue: str, refs_per_task: int = 256) -> None:
        self.app = app
        self.queue = queue
        self.refs_per_task = refs_per_task

    def wake(self, refs: Sequence[str]) -> None:
        refs = list(dict.fromkeys(refs))
        step = self.refs_per_task
        with self.app.producer_or_acquire() as producer, producer.batch(max_size=256):
            for i in range(0, len(refs), step):
                part = refs[i : i + step]
                # Celery would otherwise build the message's 'argsrepr' (what its logs
                # show of the arguments) with saferepr over every ref: a third of the
                # CPU of a send.
                self.app.send_task(
                    DRAIN_TASK, args=[part], queue=self.queue, producer=producer,
                    argsrepr=_argsrepr(part), kwargsrepr="{}",
                )


def _argsrepr(refs: Sequence[str]) -> str:
    return f"[[{refs[0]!r}, ... {len(refs)} threads]]" if len(refs) > 1 else f"[{refs!r}]"
