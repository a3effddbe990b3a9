"""What the thread service does around its I/O, the same in both forms: the refusals of
the engine's failures, a checked thread, the answers built from what storage returned,
and the checks every operation makes before any I/O.

Like :mod:`.query`, nothing here waits on Redis: the service's two forms
(``_async/service.py`` and the ``_sync`` one generated from it) call these between
their awaits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import redis

from threadfold.core import REMOVE_ALL_MESSAGES
from threadfold.core.errors import (
    Conflict,
    InvalidInput,
    InvalidMessage,
    RedisFull,
    Unavailable,
    never_written,
)
from threadfold.core.keys import make_ref
from threadfold.core.metadata import pairs as md_pairs
from threadfold.core.results import (
    Appended,
    Copied,
    Delta,
    Searched,
    Status,
    ThreadRow,
)
from threadfold.workers.settings import Settings
from threadfold.workers.storage.patch import Refused
from threadfold.workers.storage.read_state import StatePage
from threadfold.workers.storage.status import Stored
from threadfold.workers.threads import lifecycle, query
from threadfold.workers.threads.admission import TenantBudget
from threadfold.workers.threads.lifecycle import Copy, Search
from threadfold.workers.threads.query import Limits

UNREACHABLE: Final = "thread state is unreachable; retry (an append with the same delta_id)"


class _Refusals:
    """``with refusals:``: the engine's failures as the tree's refusals, a message
    LangChain would not accept (422, its path the field), an unreachable Redis (503), a
    full one (503). One object, entered by every operation: a class, not a
    ``contextlib.contextmanager``, whose generator and wrapper each call would build
    (the API's instructions per POST under callgrind, against the code before the
    service: x1.026-1.033 with that, x1.013 with this)."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if exc is None:
            return
        if isinstance(exc, InvalidMessage):
            raise InvalidInput(str(exc), field=exc.path or None) from exc
        if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
            raise Unavailable(UNREACHABLE) from exc
        # A script's refusal is already the tree's RedisFull (redisio.client.typed); a
        # plain command's is redis-py's own.
        if isinstance(exc, redis.exceptions.OutOfMemoryError):  # an operator's to mend
            raise RedisFull() from exc


refusals: Final = _Refusals()


@dataclass(frozen=True, slots=True)
class Target:
    """A checked thread: its id, and its ref in the tenant's keyspace."""

    thread_id: str
    ref: str


def target(tenant: str, thread_id: str) -> Target:
    name = query.thread_id(thread_id)
    return Target(name, make_ref(tenant, name))


def status_of(thread_id: str, found: Status | None) -> Status:
    if found is None:
        raise never_written(thread_id)
    return found


def patched(found: bool | Refused, thread_id: str) -> None:
    """An update's answer: done, or why not."""
    if isinstance(found, Refused):
        raise lifecycle.refused(found.limit, found.reached)
    if not found:
        raise never_written(thread_id)


def searched(s: Search, rows: Sequence[ThreadRow], after: tuple[int, str] | None) -> Searched:
    return Searched(tuple(rows), None if after is None else lifecycle.cursor_of(s, after))


#: A copy of an empty state: a thread must start with a delta, and this one leaves it
#: empty (RemoveMessage of every message, on nothing).
_EMPTY: Final = ({"type": "remove", "id": REMOVE_ALL_MESSAGES, "content": ""},)


def copy_delta(plan: Copy, page: StatePage) -> Delta:
    """The copy's first delta: the source's messages, ids and all, in order (on an empty
    thread, ``add_messages`` of them is exactly them)."""
    # Its delta_id is not the delta's: a copy's retry is known by plan.identity.
    return Delta(plan.to, list(page.messages) or list(_EMPTY))


def copied(source: str, plan: Copy, page: StatePage, made: Appended | None) -> Copied:
    """The copy's answer (a retry of one with its delta_id is answered as it was)."""
    if made is None:
        raise Conflict(f"thread {plan.to!r} exists; a copy makes a new thread", field="to")
    return Copied(plan.to, source, page.version, made.version, page.total)


def sourced(
    found: tuple[StatePage, Mapping[str, bytes]] | StatePage | None,
    thread_id: str,
    stored: Stored | None = None,
) -> tuple[StatePage, Mapping[str, bytes]]:
    """A copy's source, or 404 when it is gone: at its current version, its state and
    metadata read at once (``copy_source.lua``); at an earlier version, the state time
    travel found and the metadata read after it (404 when the source was deleted
    meanwhile: never a copy without its metadata)."""
    if found is None:
        raise never_written(thread_id)
    if isinstance(found, StatePage):
        if stored is None:
            raise never_written(thread_id)
        return found, stored.metadata
    return found


class Checks:
    """What both forms check before any I/O: the request's sizes (the HTTP API's limits;
    a direct client has none); and the tenant's share of writes (``tenant_rate``), an
    append's, a bulk's or a copy's, which the producer takes once the write is
    validated, before anything is written."""

    def __init__(self, limits: Limits, settings: Settings) -> None:
        self.limits = limits
        rate = settings.tenant_rate
        self.budget = TenantBudget(rate, settings.tenant_burst) if rate > 0 else None

    def admission(self, tenant: str, deltas: int) -> Callable[[], None] | None:
        """The tenant's admission of a write of ``deltas``, for the producer to make
        once the write is validated and before it is sent (:mod:`.admission`)."""
        return None if self.budget is None else self.budget.admission(tenant, deltas)

    def sized(self, given: Sequence[Any], field: str, top: int | None, what: str) -> None:
        if top is not None and len(given) > top:
            raise InvalidInput(f"{field}: at most {top} {what}", field=field)

    def append(self, messages: Sequence[Any], field: str) -> None:
        self.sized(messages, field, self.limits.max_messages, "messages per delta")

    def bulk(self, given: Sequence[Delta]) -> None:
        self.sized(given, "deltas", self.limits.max_deltas, "deltas per request")
        for i, item in enumerate(given):
            self.append(item.messages, f"deltas[{i}].messages")


__all__ = [
    "UNREACHABLE",
    "Checks",
    "Delta",
    "Target",
    "copied",
    "copy_delta",
    "md_pairs",
    "patched",
    "refusals",
    "searched",
    "sourced",
    "status_of",
    "target",
]
