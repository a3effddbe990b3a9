"""What a thread operation returns: one set of types for the HTTP API and every client.

The thread service builds them; the HTTP API encodes them as its response bodies
(``POST .../deltas``, ``GET .../state``, ``GET .../status``, ``GET /threads``), field for
field; the HTTP clients decode those bodies straight back into them; the direct clients
return them as the service built them.

Like :mod:`threadfold.core.errors`, this imports nothing of Redis or Celery.
"""

from __future__ import annotations

from typing import Any

import msgspec

from threadfold.core.render import Format, Unservable

__all__ = [
    "Appended",
    "Format",
    "Skipped",
    "State",
    "Status",
    "ThreadList",
    "ThreadRow",
    "Unservable",
]


class Appended(msgspec.Struct, frozen=True):
    """One appended delta: its ``version`` (``<ms>-<seq>``, the thread's version once it
    is applied), the ``ids`` of its messages as stored (stamped on the id-less ones), and
    whether its ``delta_id`` had been seen before (``duplicate``: this is the first
    attempt's answer, and nothing was appended again)."""

    thread_id: str
    version: str
    accepted: int
    duplicate: bool
    ids: tuple[str, ...]


class State(msgspec.Struct, frozen=True, omit_defaults=True):
    """A page of a thread's merged messages (plain dicts: LangChain's ``model_dump()``
    form, or OpenAI's chat form) and the ``version`` they reflect; ``has_more`` when the
    ``limit`` cut the page short, ``total`` messages in the whole thread; ``unservable``
    names the markers served in place of messages the format cannot carry (none on
    almost every page, and then left out of the API's body)."""

    thread_id: str
    version: str
    total: int
    has_more: bool
    format: Format
    messages: list[dict[str, Any]]
    unservable: tuple[Unservable, ...] = ()


class Skipped(msgspec.Struct, frozen=True):
    """A log entry an operator skipped (``threadfold retry --skip``): why its drain
    failed, and when (ms since the epoch)."""

    entry: str
    reason: str
    at_ms: int


class Status(msgspec.Struct, frozen=True):
    """A thread's progress: ``version`` applied, ``last_enqueued``, the ``backlog`` of
    entries not yet applied, its quarantine if a poison entry stopped it, and the
    entries an operator skipped (the latest, oldest first)."""

    thread_id: str
    version: str
    last_enqueued: str
    backlog: int
    messages: int
    last_commit_ms: int | None
    attempts: int
    quarantined: bool
    quarantine_reason: str | None
    quarantined_entry: str | None
    dirty_since_ms: int | None
    skipped: tuple[Skipped, ...] = ()


class ThreadRow(msgspec.Struct, frozen=True):
    """A thread in the threads list: ``lag_ms`` is the age of its oldest unapplied delta
    (null without a backlog), ``last_activity_ms`` its last commit or append, the later."""

    thread_id: str
    version: str
    messages: int
    backlog: int
    lag_ms: int | None
    quarantined: bool
    quarantine_reason: str | None
    last_commit_ms: int | None
    last_activity_ms: int
    last_enqueued: str


class ThreadList(msgspec.Struct, frozen=True):
    """A tenant's threads, most recently active first (``GET /threads``)."""

    threads: tuple[ThreadRow, ...]
