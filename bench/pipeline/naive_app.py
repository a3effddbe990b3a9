"""The naive baseline as a Celery app: one task per delta, a lock, a JSON blob, add_messages.

    celery -A bench.pipeline.naive_app worker -Q QUEUE

This is what one writes first: every delta is its own task; the task takes a Redis lock
on the thread, loads the whole thread (LangChain's ``messages_to_dict`` form, as JSON),
applies LangGraph's ``add_messages``, saves the whole thread back and releases the lock.
Settings come from ``NAIVE_STATE_URL``, ``NAIVE_BROKER_URL`` and ``NAIVE_QUEUE``. Each
task counts itself done (and failed, when ``add_messages`` raised) and stamps the time,
so the driver knows when the last one ended.
"""

from __future__ import annotations

import json
import os
import time
from functools import cache
from typing import Any

import redis
from celery import Celery
from langchain_core.messages import messages_from_dict, messages_to_dict
from langgraph.graph.message import add_messages

TASK = "naive.apply"
NOOP = "naive.noop"
NOOPS = "naive:noops"
DONE = "naive:done"
FAILED = "naive:failed"
LAST = "naive:last"


def state_key(thread: str) -> str:
    return f"naive:{thread}:state"


def lock_key(thread: str) -> str:
    return f"naive:{thread}:lock"


def make_app(broker: str, queue: str) -> Celery:
    app = Celery("naive", set_as_current=False)
    app.conf.update(
        broker_url=broker, broker_connection_retry_on_startup=True, task_default_queue=queue,
        task_acks_late=True, task_reject_on_worker_lost=True, task_ignore_result=True,
        task_serializer="json", accept_content=["json"], worker_prefetch_multiplier=1,
        worker_hijack_root_logger=False, worker_send_task_events=False,
    )
    return app


@cache
def _client() -> redis.Redis:
    """One client per process, made after the prefork pool forked."""
    return redis.Redis.from_url(os.environ["NAIVE_STATE_URL"])


def apply_delta(client: redis.Redis, thread: str, messages: list[dict[str, Any]]) -> bool:
    """Lock, load, ``add_messages``, save, unlock; False when ``add_messages`` raised."""
    ok = True
    with client.lock(lock_key(thread), timeout=60, blocking_timeout=120):
        raw = client.get(state_key(thread))
        state: list[Any] = messages_from_dict(json.loads(raw)) if raw else []
        try:
            merged: Any = add_messages(state, list[Any](messages))
        except ValueError:  # e.g. a remove of an id it does not hold (a reordered delta)
            ok = False
        else:
            client.set(state_key(thread), json.dumps(messages_to_dict(merged)))
    pipe = client.pipeline(transaction=False)
    pipe.incr(DONE)
    if not ok:
        pipe.incr(FAILED)
    pipe.set(LAST, repr(time.time()))
    pipe.execute()
    return ok


def _apply(thread: str, messages: list[dict[str, Any]]) -> None:
    apply_delta(_client(), thread, messages)


def _noop() -> None:
    """Celery's own floor: a task that only counts itself."""
    _client().incr(NOOPS)


app = make_app(os.environ.get("NAIVE_BROKER_URL", "redis://127.0.0.1:1/0"),
               os.environ.get("NAIVE_QUEUE", "naive"))
app.task(name=TASK, acks_late=True, ignore_result=True)(_apply)
app.task(name=NOOP, acks_late=True, ignore_result=True)(_noop)
