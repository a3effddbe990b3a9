"""What the two direct clients (sync and asyncio) share: their settings, the mapping of
the pipeline's errors to the API's, and the results built from the store's answers.

A direct client talks to Redis and the broker itself, with no HTTP API between: it
must answer each call as the API would (same results, same exceptions), or code could
not move from one kind of client to the other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery
from pydantic import SecretStr

from threadfold import args
from threadfold.core.errors import InvalidMessage
from threadfold.core.keys import InvalidName, check_name
from threadfold.core.render import CODE
from threadfold.errors import (
    Gone,
    InvalidInput,
    NotFound,
    PoisonEntry,
    RequestError,
    Unavailable,
    VersionNotReached,
)
from threadfold.types import Appended, Skipped, State, Status, Unservable
from threadfold.workers import entry
from threadfold.workers.ingest.producer import Enqueued
from threadfold.workers.ingest.wakeup import Waker
from threadfold.workers.settings import Settings
from threadfold.workers.storage.status import ThreadStatus
from threadfold.workers.threads import reads

#: What ``CLIENT LIST`` shows of a direct client's Redis connections.
CONNECTION_NAME = "threadfold-client"

UNREACHABLE = "thread state is unreachable; retry with the same delta_id"
FULL = (
    "Redis is full (over maxmemory) and refuses writes until memory is freed or maxmemory "
    "is raised; retry later with the same delta_id"
)


def settings_for(
    settings: Settings | None, redis_url: str | None, broker_url: str | None
) -> Settings:
    """``settings`` as given, or read from ``THREADFOLD_*``, with the explicit URLs
    taking precedence over both."""
    explicit: dict[str, Any] = {}
    if redis_url is not None:
        explicit["redis_url"] = SecretStr(redis_url)
    if broker_url is not None:
        explicit["broker_url"] = SecretStr(broker_url)
    if settings is None:
        return Settings(**explicit)
    # model_copy does not validate: the values are given as the fields hold them.
    return settings.model_copy(update=explicit) if explicit else settings


@dataclass(frozen=True)
class Wiring:
    """What a direct client is built from, sync or asyncio alike: its settings and tenant,
    the window its wake-ups are gathered over, and the waker that publishes them (with
    the Celery app it made, if it made one, for ``close`` to release)."""

    settings: Settings
    tenant: str
    window: float
    waker: Waker
    celery: Celery | None


def wiring(
    redis_url: str | None,
    broker_url: str | None,
    *,
    settings: Settings | None,
    tenant: str,
    waker: Waker | None,
    wake_window: float,
) -> Wiring:
    """The constructor arguments of ``Client`` and ``AsyncClient``, checked and resolved."""
    resolved = settings_for(settings, redis_url, broker_url)
    checked_tenant = tenant_of(tenant)
    window = args.timeout(wake_window, "wake_window")
    celery = None
    if waker is None:
        celery = entry.celery(resolved)
        waker = entry.waker(resolved, celery)
    return Wiring(resolved, checked_tenant, window, waker, celery)


def tenant_of(tenant: str) -> str:
    try:
        return check_name(tenant, "tenant")
    except InvalidName as exc:
        raise InvalidInput(str(exc), field="tenant") from exc


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The pipeline's errors as the exceptions the HTTP API's answers become."""
    try:
        yield
    except (InvalidMessage, reads.ReadError) as exc:
        raise _refusal(exc) from exc
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise Unavailable(UNREACHABLE, retry_after=1.0) from exc
    except redis.exceptions.OutOfMemoryError as exc:  # over maxmemory: an operator's to mend
        raise Unavailable(FULL, code="redis_full", retry_after=5.0) from exc


def _refusal(exc: InvalidMessage | reads.ReadError) -> RequestError:
    """What the API answers for each refusal of the pipeline's (see api/service.py)."""
    match exc:
        case InvalidMessage():
            return InvalidInput(str(exc), status=422, code="invalid", field=exc.path or None)
        case reads.BadQuery():
            return InvalidInput(exc.message, status=400, code="bad_request", field=exc.field)
        case reads.UnknownAnchor():
            return InvalidInput(exc.message, status=422, code="invalid", field=exc.field)
        case reads.BeforeBirth():
            return NotFound(
                exc.message, field=exc.field, details={"first_version": exc.first_version}
            )
        case reads.ThreadNotFound():
            return NotFound(exc.message, field=exc.field)
        case reads.NotReached():
            return VersionNotReached(exc.message, retry_after=1.0, details={"version": exc.version})
        case reads.HistoryGone():
            return Gone(
                exc.message, field=exc.field, details={"oldest_version": exc.oldest_version}
            )
        case reads.PoisonEntry():
            return PoisonEntry(exc.message, field=exc.field, details={"entry": exc.entry})
        case _:  # reads.Moving: every read met a concurrent trim or delete
            return Unavailable(exc.message, retry_after=1.0)


def not_found(thread_id: str) -> NotFound:
    return NotFound(f"thread {thread_id!r} has never been written", field="thread_id")


def appended(result: Enqueued) -> Appended:
    return Appended(result.thread_id, result.version, result.accepted, result.duplicate, result.ids)


def state(thread_id: str, answer: reads.Answer) -> State:
    return State(
        thread_id,
        answer.version,
        answer.total,
        answer.has_more,
        answer.format,
        answer.messages,
        tuple(
            Unservable(CODE, f.message, f.field, f.pointer, f.index, f.id)
            for f in answer.unservable
        ),
    )


def status(thread_id: str, found: ThreadStatus | None) -> Status:
    if found is None:
        raise not_found(thread_id)
    return Status(
        thread_id,
        found.version,
        found.last_enqueued,
        found.backlog,
        found.messages,
        found.last_commit_ms,
        found.attempts,
        bool(found.quarantined),
        found.quarantined or None,
        found.quarantined_entry or None,
        found.dirty_since_ms,
        tuple(Skipped(s.entry, s.reason, s.at_ms) for s in found.skipped),
    )
