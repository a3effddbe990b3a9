"""Request and response bodies: msgspec Structs, decoded and encoded without a dict step.

Messages travel as LangChain message-likes on the way in (every form LangChain's
``convert_to_messages`` accepts) and as LangChain's flat ``model_dump()`` form on the
way out; the OpenAPI schema describes both.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

MessageLike = Any  # dict, [role, content] pair or string: validated by core, not here


class DeltaIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /threads/{thread_id}/deltas``."""

    messages: list[MessageLike]
    delta_id: str | None = None


class BulkItem(msgspec.Struct, forbid_unknown_fields=True):
    """One delta of a bulk request."""

    thread_id: str
    messages: list[MessageLike]
    delta_id: str | None = None


class BulkIn(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /deltas``: validated as a whole before any delta is appended."""

    deltas: list[BulkItem]


class Accepted(msgspec.Struct):
    """A delta's outcome: its version (``<ms>-<seq>``) and the ids of its messages."""

    thread_id: str
    version: str
    accepted: int
    duplicate: bool
    ids: list[str]


class BulkAccepted(msgspec.Struct):
    results: list[Accepted]


class UnservableOut(msgspec.Struct):
    """A stored message the page serves as a marker in its place, because it cannot be
    served in the format asked (stored before ingestion refused such messages, or
    written by hand): ``field`` / ``pointer`` / ``index`` locate the marker in
    ``messages``, ``id`` is the message's (replace or remove it by id), ``message``
    says why."""

    code: Literal["unservable"]
    message: str
    field: str
    pointer: str
    index: int
    id: str | None


class StateOut(msgspec.Struct, omit_defaults=True):
    """A thread's merged messages and the version they reflect; ``unservable`` (only
    when there are any) names the markers served in place of messages."""

    thread_id: str
    version: str
    total: int
    has_more: bool
    format: Literal["langchain", "openai"]
    messages: list[Any]  # dicts, or their JSON pre-encoded (msgspec.Raw)
    unservable: list[UnservableOut] = []


class StatusOut(msgspec.Struct):
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
    #: Log entries an operator skipped (``threadfold retry --skip``), oldest first.
    skipped: list[SkippedOut] = []


class ThreadOut(msgspec.Struct):
    """A thread in ``GET /threads``: ``lag_ms`` is the age of its oldest unapplied delta
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


class ThreadsOut(msgspec.Struct):
    """``GET /threads``: the tenant's threads, most recently active first."""

    threads: list[ThreadOut]


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


class SkippedOut(msgspec.Struct):
    entry: str
    reason: str
    at_ms: int


class ErrorDetail(msgspec.Struct):
    status: int
    code: str
    message: str
    field: str | None = None
    pointer: str | None = None
    version: str | None = None
    #: 410 gone: the oldest version time travel serves (the live state's).
    oldest_version: str | None = None
    #: 404 for an at_version before it: the first version of the thread as it is now.
    first_version: str | None = None
    #: 409 poison_entry: the log entry that cannot be decoded or folded.
    entry: str | None = None


class ErrorOut(msgspec.Struct):
    error: ErrorDetail
