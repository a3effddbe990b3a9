"""What only RabbitMQ does: a killed worker's wake-up is back in its queue at once.

The laws every broker keeps (kill -9 of workers at random moments, a wake-up never
sent, a wake-up the broker lost, duplicate wake-ups) run on both brokers through the
``broker_url`` fixture: tests/workers/test_faults.py and test_concurrency.py. RabbitMQ
hands an unacknowledged message back to its queue as soon as the connection of the
consumer that held it closes, where the Redis broker keeps it aside until
``visibility_timeout`` has passed; with ``task_acks_late`` a wake-up is acknowledged
after its drain, so a worker killed mid-drain leaves its wake-up to the next worker.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.workers.harness import (
    WORKERS_ONLY,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
    waiting_wake_ups,
)
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import ManagedProcess, wait_until
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

pytestmark = pytest.mark.rabbitmq

#: Enough entries that a drain of one entry a commit is still under way when it is killed.
ENTRIES = 3000
REF = "_/long"


def _backlog(settings: Settings, store: Store) -> Ledger:
    """ENTRIES deltas to one thread, its flag set and no wake-up sent."""
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(21)
    sent = Ledger()
    for step in range(ENTRIES):
        messages = random_messages(rng, step)
        result = producer.enqueue(REF[2:], messages)
        sent.add(REF, result.version, messages, result.ids)
    return sent


def _applied(store: Store) -> int:
    status = store.stored(REF)
    return 0 if status is None else status.applied


def test_a_killed_workers_wake_up_returns_to_the_queue_at_once_and_is_drained_once(
    redis_url: str, rabbitmq_url: str, tmp_path: Path
) -> None:
    # The flag's lease outlasts the test and no beat runs, so no sweeper can be what
    # recovers the thread: only the broker's redelivery. No hand-off for 10 s: the one
    # wake-up is held by the worker until its drain ends or the worker dies.
    settings = make_settings(
        redis_url, broker_url=rabbitmq_url, wake_ttl_seconds=600, batch_size=1,
        drain_seconds=10, task_soft_time_limit=12, task_time_limit=14,
        visibility_timeout=16, **WORKERS_ONLY,
    )  # fmt: skip
    store = store_for(settings)
    sent = _backlog(settings, store)
    app = make_celery(settings)
    workers: list[ManagedProcess] = []
    try:
        CeleryWaker(app, settings.queue).wake([REF])
        workers.append(start_worker(settings, "first", tmp_path))
        wait_until(lambda: _applied(store) > 0, 30, message="the first worker never drained")
        assert waiting_wake_ups(app, settings.queue) == 0  # held, unacknowledged
        workers[0].kill()  # SIGKILL to the worker and its pool, mid-drain
        wait_until(
            lambda: waiting_wake_ups(app, settings.queue) == 1,
            5,
            message="the killed worker's wake-up did not return to the queue",
        )
        assert _applied(store) < ENTRIES  # the kill came before the drain's end
        # The rest is drained in turns of 0.3 s, each handing the thread on in a wake-up
        # the pool process publishes: hand-offs through RabbitMQ too.
        quick = settings.model_copy(update={"drain_seconds": 0.3})
        workers.append(start_worker(quick, "second", tmp_path))
        wait_drained(store, [REF], timeout=60)
        assert state_dump(store, REF) == dump_messages(sent.expected(REF))
        assert _applied(store) == ENTRIES  # none applied twice, though its drain ran twice
    finally:
        for worker in workers:
            worker.kill()
        app.close()
