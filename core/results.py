"""What a thread operation returns: one set of types for the HTTP API and every client.

The engine builds them (the producer an append's :class:`Appended`, the store's STATUS
parser a :class:`Status` and a threads list's :class:`ThreadRow`, the thread service the
rest); the HTTP API encodes them as its response bodies
(``POST .../deltas``, ``GET .../state``, ``GET .../status``, ``GET /threads``), field for
field; the HTTP clients decode those bodies straight back into them; the direct clients
return them as the service built them.

Like :mod:`threadfold.core.errors`, this imports nothing of Redis or Celery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from threadfold.core.context import Adjusted, Counter
from threadfold.core.render import Format, Unservable

__all__ = [
    "Delta",
    "Appended",
    "Context",
    "Copied",
    "Format",
    "Pruned",
    "Searched",
    "ThreadCount",
    "Skipped",
    "State",
    "Status",
    "ThreadList",
    "ThreadRow",
    "Unservable",
]


class Delta(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    """One delta: ``messages`` (message-likes, or LangChain messages) for ``thread_id``,
    with a ``delta_id`` that makes its retry idempotent (the first attempt's answer, and
    nothing appended twice) and the ``metadata`` of the thread if this delta creates it
    (an existing thread's is changed by ``update``). The same value from a client's
    ``append_many`` through the thread service to the producer, which appends it in the
    caller's tenant. (A Struct: built in C, one a delta; tracked by the collector, as it
    holds the caller's objects.)"""

    thread_id: str
    messages: Sequence[Any]
    delta_id: str | None = None
    metadata: Mapping[str, Any] | None = None


class Appended(msgspec.Struct, frozen=True, gc=False):  # gc: a bulk's millions hold no cycle
    """One appended delta, as the producer answers it: its ``version`` (``<ms>-<seq>``,
    the thread's version once it is applied), the ``ids`` of its messages as stored
    (stamped on the id-less ones: with a ``delta_id`` they are derived from it, so a
    retry reports the attempt's), and whether its ``delta_id`` had been seen before
    (``duplicate``: this is the first attempt's answer, and nothing was appended again)."""

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


class Context(msgspec.Struct, frozen=True):
    """A thread's context window at ``version``: its messages a model can take within
    ``max_tokens`` (counted by ``counter``, ``tokens`` in all), trimmed as LangChain's
    ``trim_messages`` trims, in the format asked. ``adjusted`` names the rule that
    changed LangChain's answer ("tool_pairs": a tool call and its answers are kept or
    dropped together), None when it is LangChain's; ``total`` is the thread's message
    count, ``unservable`` as a state read's."""

    thread_id: str
    version: str
    total: int
    format: Format
    messages: list[dict[str, Any]]
    tokens: int
    max_tokens: int
    counter: Counter
    adjusted: Adjusted | None = None
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
    #: The thread's metadata, when it was created (ms), its own TTL (null: the
    #: deployment's), whether it is pinned, and when it expires if it stays idle (ms;
    #: null: never).
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    created_ms: int | None = None
    ttl_seconds: float | None = None
    pinned: bool = False
    expires_at_ms: int | None = None


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
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    created_ms: int | None = None
    ttl_seconds: float | None = None
    pinned: bool = False
    expires_at_ms: int | None = None


class ThreadList(msgspec.Struct, frozen=True):
    """A tenant's threads, most recently active first (``GET /threads``)."""

    threads: tuple[ThreadRow, ...]


class Searched(msgspec.Struct, frozen=True):
    """A page of a search (``POST /threads/search``), in its order; ``cursor`` asks for
    the next page (null: there is none)."""

    threads: tuple[ThreadRow, ...]
    cursor: str | None


class ThreadCount(msgspec.Struct, frozen=True):
    """How many threads a search would find (``POST /threads/count``)."""

    count: int


class Copied(msgspec.Struct, frozen=True):
    """A thread made from another's state at ``from_version``: its first delta's
    ``version`` (the copy's state once it is applied) and its ``messages`` count."""

    thread_id: str
    from_thread_id: str
    from_version: str
    version: str
    messages: int


class Pruned(msgspec.Struct, frozen=True):
    """A prune: the threads it removed (or, on a ``dry_run``, would remove)."""

    removed: int
    dry_run: bool
