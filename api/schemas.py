"""Request and response bodies: msgspec Structs, decoded and encoded without a dict step.

Messages travel as LangChain message-likes on the way in (every form LangChain's
``convert_to_messages`` accepts) and as LangChain's flat ``model_dump()`` form on the
way out; the OpenAPI schema describes both.
"""

from __future__ import annotations

from typing import Any

import msgspec

from threadfold.core.results import Appended

MessageLike = Any  # dict, [role, content] pair or string: validated by core, not here


#: A metadata object: string keys, scalar values (checked by threadfold.core.metadata).
Metadata = dict[str, Any]


class DeltaIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/{thread_id}/deltas``; ``metadata`` is the thread's if this delta
    creates it (an existing thread's is changed by ``PATCH``)."""

    messages: list[MessageLike]
    delta_id: str | None = None
    metadata: Metadata | None = None


class ThreadPatchIn(msgspec.Struct, forbid_unknown_fields=True):
    """``PATCH /threads/{thread_id}``: each field given is changed, together or not at
    all. ``metadata`` merges (a null value deletes its key); ``ttl_seconds`` null falls
    back to the deployment's TTL; ``pinned`` true: the thread never expires."""

    metadata: Metadata | msgspec.UnsetType = msgspec.UNSET
    ttl_seconds: float | msgspec.UnsetType | None = msgspec.UNSET
    pinned: bool | msgspec.UnsetType = msgspec.UNSET


class SearchIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/search``: the threads holding every given metadata value (exact
    match) and in ``status`` if given, latest first by ``sort`` (``activity``: the last
    commit, or the creation; ``created``); ``cursor``: the last page's, for the next."""

    metadata: Metadata | None = None
    status: str | None = None
    sort: str = "activity"
    limit: int = 20
    cursor: str | None = None


class CountIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/count``: a search's filters."""

    metadata: Metadata | None = None
    status: str | None = None


class CopyIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/{thread_id}/copy``: a new thread ``to`` with this one's state at
    ``at_version`` (default: its current version) and its metadata, with ``metadata``'s
    changes laid over it (a null value deletes a key)."""

    to: str
    at_version: str | None = None
    metadata: Metadata | None = None
    #: As an append's: a retry of the copy with it is answered with the copy made.
    delta_id: str | None = None


class PruneIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/prune``: remove the tenant's threads whose id starts with
    ``prefix``, holding every ``metadata`` value, idle ``idle_seconds`` or more (each if
    given); never a pinned one. ``dry_run``: only count them."""

    prefix: str = ""
    metadata: Metadata | None = None
    idle_seconds: float | None = None
    dry_run: bool = False


class BulkItem(msgspec.Struct, forbid_unknown_fields=True):
    """One delta of a bulk request."""

    thread_id: str
    messages: list[MessageLike]
    delta_id: str | None = None
    metadata: Metadata | None = None  # the thread's, if this delta creates it


class BulkIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /deltas``: validated as a whole before any delta is appended."""

    deltas: list[BulkItem]


class BulkAccepted(msgspec.Struct):
    """``POST /deltas``'s answer: each delta's outcome, in the order sent."""

    results: list[Appended]


class LagHistogram(msgspec.Struct):
    """The enqueue-to-visible lag of applied deltas, all since the start: ``counts[i]``
    deltas within ``bounds[i]`` ms (cumulative), the last entry of ``counts`` all of them."""

    bounds: list[int]
    counts: list[int]
    sum_ms: float


class PipelineOut(msgspec.Struct):
    """``GET /pipeline``: fleet-wide totals at ``at_ms`` (the API's clock). Counters only
    grow: rates are the difference of two samples over their ``at_ms`` difference."""

    at_ms: int
    deltas_ingested: int
    entries_applied: int
    commits: int
    threads_with_backlog: int
    threads_quarantined: int
    processes: dict[str, int]
    visible_lag_ms: LagHistogram
