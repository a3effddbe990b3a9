"""The table of thread operations: each one declared once, as a value.

An operation is a msgspec Struct: its fields are the operation's arguments (their types
and defaults; a field's ``Meta`` gives its description and, for a query parameter, the
schema the OpenAPI document shows), its class names what it returns, and its
:class:`Route` says how it travels over HTTP. From this table:

- the thread service runs an operation by its ``name`` (:meth:`AsyncThreads.run`), after
  the operation's own ``checked`` turns its raw arguments into the checked values the
  service reads (:mod:`.query`, :mod:`.lifecycle`), with the refusal naming the argument;
- the HTTP API builds one route per operation (``threadfold.api.routes``): the path's
  parameters, then either the query string (each parameter parsed by its field's type,
  every undeclared one refused) or the JSON body (decoded by a Struct of the body's
  fields, unknown fields refused), and the answer's status;
- the OpenAPI document (``threadfold.api.openapi``) lists those paths, parameters,
  bodies and answers;
- the HTTP clients (``threadfold.wire``) send the same request from the same value.

A new thread operation is a class here, a method of the thread service that runs it
(``workers/threads/_async/service.py``, its sync form generated), and a method of the
client front (``threadfold/_async/front.py``) that builds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Final,
    TypeVar,
)

import msgspec

from threadfold.core.context import MAX_TOKENS, MESSAGE_TYPES, Counter, Strategy
from threadfold.core.render import Format
from threadfold.core.results import (
    Appended,
    Context,
    Copied,
    Delta,
    Pruned,
    Searched,
    State,
    Status,
    ThreadCount,
    ThreadList,
)
from threadfold.workers.threads import checkpoint_ops, lifecycle, query
from threadfold.workers.threads.op import VERSION_PATTERN, Op, Route

R = TypeVar("R")

#: What an ``update`` argument left out is: unchanged (``None`` means "the default").
UNSET: Final = msgspec.UNSET
#: The threads list's length by default.
THREADS_LIMIT: Final = query.THREADS_LIMIT
Unset = msgspec.UnsetType

#: A metadata object: string keys, scalar values (checked by threadfold.core.metadata).
Metadata = Mapping[str, Any]
MessageLike = Any  # dict, [role, content] pair or string: validated by core, not here

_TYPES: Final = "(" + "|".join(MESSAGE_TYPES) + ")"
TYPES_PATTERN: Final = f"^{_TYPES}(,{_TYPES})*$"


# -- appends -----------------------------------------------------------------------------


class Append(Op[Appended], frozen=True, kw_only=True, omit_defaults=True):
    """Append one delta to a thread; ``metadata`` is the thread's if this creates it (an
    existing thread's is changed by ``update``)."""

    name = "append"
    result = Appended
    route = Route(
        "POST",
        "/threads/{thread_id}/deltas",
        202,
        "Append one delta (a list of message-likes) to a thread",
        body="DeltaIn",
    )

    thread_id: str
    messages: Sequence[MessageLike]
    delta_id: str | None = None
    metadata: Metadata | None = None


class BulkAccepted(msgspec.Struct, frozen=True):
    """``POST /deltas``'s answer: each delta's outcome, in the order sent."""

    results: list[Appended]


class AppendMany(Op[list[Appended]], frozen=True, kw_only=True, omit_defaults=True):
    """Append many deltas, of many threads, in one round trip; all are checked before
    any is appended."""

    name = "append_many"
    result = BulkAccepted
    route = Route(
        "POST",
        "/deltas",
        202,
        "Append many deltas to many threads: all validated, then all appended",
        body="BulkIn",
        answer="BulkAccepted",
    )

    deltas: Sequence[Delta]


# -- reads -------------------------------------------------------------------------------

_FORMAT = msgspec.Meta(
    description="langchain (flat model_dump form, default) or openai (what "
    "convert_to_openai_messages gives)."
)
_MIN_VERSION = msgspec.Meta(
    pattern=VERSION_PATTERN,
    description="Wait until the thread's version reaches this one (read-your-writes).",
)
_AT_VERSION = msgspec.Meta(
    pattern=VERSION_PATTERN,
    description="Time travel: the exact state as of this version (the version answered is "
    "the last entry at or before it). 410 before the live version once retention trimmed "
    "the log; 404 before the thread's first version.",
)
_WAIT = msgspec.Meta(ge=0, description="Longest wait for min_version, seconds.")

_TRAVEL_REFUSALS: Final = {
    409: "min_version not reached in time (version_not_reached), or at_version reaches a "
    "log entry that cannot be decoded or folded (poison_entry, naming it in entry)",
    410: "at_version precedes the live version and retention trimmed the log (gone; "
    "oldest_version is the oldest served)",
}


class ReadState(Op[State], frozen=True, kw_only=True, omit_defaults=True):
    """A page of the thread's merged messages and the version they reflect."""

    name = "state"
    result = State
    route = Route(
        "GET",
        "/threads/{thread_id}/state",
        200,
        "The merged messages of a thread and their version",
        refusals=_TRAVEL_REFUSALS,
    )

    thread_id: str
    format: Annotated[Format, _FORMAT] = "langchain"
    min_version: Annotated[str | None, _MIN_VERSION] = None
    at_version: Annotated[str | None, _AT_VERSION] = None
    wait: Annotated[float | None, _WAIT] = None
    limit: Annotated[
        int | None, msgspec.Meta(ge=0, description="Page size (default: all messages).")
    ] = None
    before: Annotated[
        str | None, msgspec.Meta(min_length=1, description="Only messages before this message id.")
    ] = None
    after: Annotated[
        str | None, msgspec.Meta(min_length=1, description="Only messages after this message id.")
    ] = None

    def checked(self, limits: query.Limits) -> query.Query:
        return query.query(
            format=self.format,
            min_version=self.min_version,
            at_version=self.at_version,
            wait=self.wait,
            limit=self.limit,
            before=self.before,
            after=self.after,
            limits=limits,
        )


_TYPES_META = msgspec.Meta(pattern=TYPES_PATTERN)


class ReadContext(Op[Context], frozen=True, kw_only=True, omit_defaults=True):
    """The thread's context window: its messages trimmed to ``max_tokens`` as LangChain's
    ``trim_messages`` trims, tool calls and their answers kept together."""

    name = "context"
    result = Context
    route = Route(
        "GET",
        "/threads/{thread_id}/context",
        200,
        "The thread's messages a model can take: trimmed to max_tokens as LangChain's "
        "trim_messages trims, tool calls and their answers kept together",
        refusals={
            409: "as on GET state (version_not_reached, poison_entry)",
            410: "as on GET state (gone)",
        },
    )

    thread_id: str
    max_tokens: Annotated[
        int,
        msgspec.Meta(
            ge=1, le=MAX_TOKENS, description="The window's budget, in tokens of the counter."
        ),
    ]
    strategy: Annotated[
        Strategy,
        msgspec.Meta(
            description="last (default: the newest messages that fit) or first (the oldest), "
            "as trim_messages' strategy."
        ),
    ] = "last"
    include_system: Annotated[
        bool,
        msgspec.Meta(
            description="Keep the thread's first message when it is a system message "
            "(strategy last only; kept even when it alone is past the budget, as LangChain "
            "keeps it)."
        ),
    ] = False
    start_on: Annotated[
        str | Sequence[str] | None,
        msgspec.Meta(
            description="Message types (comma-separated) the window's first message other "
            "than the system one must be of (strategy last only)."
        ),
    ] = None
    end_on: Annotated[
        str | Sequence[str] | None,
        msgspec.Meta(description="Message types (comma-separated) the window's last message "
                     "must be of."),
    ] = None
    counter: Annotated[
        Counter,
        msgspec.Meta(
            description="The token counter: approximate (default) is LangChain's "
            "count_tokens_approximately."
        ),
    ] = "approximate"
    format: Annotated[Format, _FORMAT] = "langchain"
    min_version: Annotated[str | None, _MIN_VERSION] = None
    wait: Annotated[float | None, _WAIT] = None
    at_version: Annotated[str | None, _AT_VERSION] = None

    def checked(self, limits: query.Limits) -> query.ContextQuery:
        return query.context(
            max_tokens=self.max_tokens,
            strategy=self.strategy,
            include_system=self.include_system,
            start_on=_listed(self.start_on),
            end_on=_listed(self.end_on),
            counter=self.counter,
            format=self.format,
            min_version=self.min_version,
            at_version=self.at_version,
            wait=self.wait,
            limits=limits,
        )


def _listed(types: object) -> object:
    """Message types as the check takes them (a single one, or a list)."""
    if isinstance(types, tuple):
        return list(types)
    return types


class ReadStatus(Op[Status], frozen=True, kw_only=True, omit_defaults=True):
    """The thread's progress, metadata and lifetime."""

    name = "status"
    result = Status
    route = Route(
        "GET",
        "/threads/{thread_id}/status",
        200,
        "Version, backlog, times, quarantine, metadata, TTL and expiry",
    )

    thread_id: str


class WaitFor(Op[str], frozen=True, kw_only=True, omit_defaults=True):
    """The thread's version once it reached ``version``, within ``timeout`` seconds
    (VersionNotReached after). Over HTTP, a state read of no messages."""

    name = "wait_for"
    result = None
    route = None

    thread_id: str
    version: str
    timeout: float

    def checked(self) -> tuple[str, float]:
        return query.version(self.version), query.timeout(self.timeout)


class Threads(Op[ThreadList], frozen=True, kw_only=True, omit_defaults=True):
    """The tenant's most recently active threads, latest first."""

    name = "threads"
    result = ThreadList
    route = Route(
        "GET",
        "/threads",
        200,
        "The tenant's threads, most recently active first, with their version, messages, "
        "backlog, lag and quarantine",
    )

    limit: Annotated[
        int,
        msgspec.Meta(
            ge=0,
            le=query.THREADS_MAX,
            description=f"Most threads listed (default {query.THREADS_LIMIT}).",
        ),
    ] = query.THREADS_LIMIT

    def checked(self) -> int:
        return query.threads_limit(self.limit)


# -- lifecycle ---------------------------------------------------------------------------


class Delete(Op[None], frozen=True, kw_only=True, omit_defaults=True):
    """Delete the thread and its log; NotFound when there is none."""

    name = "delete"
    result = None
    route = Route(
        "DELETE",
        "/threads/{thread_id}",
        204,
        "Remove a thread: every key of it and its place in every index",
        answer=None,
    )

    thread_id: str


class Update(Op[Status], frozen=True, kw_only=True, omit_defaults=True):
    """Change the thread's metadata (merged; a null value deletes its key), its own TTL
    (null: the deployment's) and its pin, together or not at all; its status after."""

    name = "update"
    result = Status
    route = Route(
        "PATCH",
        "/threads/{thread_id}",
        200,
        "Change a thread's metadata (merged; null deletes a key), its own TTL (null: the "
        "deployment's) and its pin, together or not at all",
        body="ThreadPatchIn",
    )

    thread_id: str
    metadata: Metadata | Unset = UNSET
    ttl_seconds: float | Unset | None = UNSET
    pinned: bool | Unset = UNSET

    def checked(self) -> lifecycle.Update:
        return lifecycle.update(self.metadata, self.ttl_seconds, self.pinned)


class Search(Op[Searched], frozen=True, kw_only=True, omit_defaults=True):
    """A page of the tenant's threads holding every given metadata value (exact match)
    and in ``status`` if given, latest first by ``sort`` (``activity``: the last commit,
    or the creation; ``created``); ``cursor``: the last page's, for the next."""

    name = "search"
    result = Searched
    route = Route(
        "POST",
        "/threads/search",
        200,
        "The tenant's threads holding every given metadata value (and in status), latest "
        "first by sort; a page of limit with a cursor for the next",
        body="SearchIn",
    )

    metadata: Metadata | None = None
    status: str | None = None
    sort: str = "activity"
    limit: int = lifecycle.SEARCH_LIMIT
    cursor: str | None = None

    def checked(self) -> lifecycle.Search:
        return lifecycle.searched(
            metadata=self.metadata,
            status=self.status,
            sort=self.sort,
            limit=self.limit,
            cursor=self.cursor,
        )


class Count(Op[ThreadCount], frozen=True, kw_only=True, omit_defaults=True):
    """How many threads a search would find."""

    name = "count"
    result = ThreadCount
    route = Route(
        "POST", "/threads/count", 200, "How many threads a search would find", body="CountIn"
    )

    metadata: Metadata | None = None
    status: str | None = None

    def checked(self) -> lifecycle.Search:
        return lifecycle.searched(metadata=self.metadata, status=self.status)


class Copy(Op[Copied], frozen=True, kw_only=True, omit_defaults=True):
    """A new thread ``to`` with this one's state at ``at_version`` (default: its current
    version) and its metadata, with ``metadata``'s changes laid over it (a null value
    deletes a key); Conflict on ``to`` when it exists. ``delta_id``, as an append's: a
    retry of the copy with it is answered with the copy made."""

    name = "copy"
    result = Copied
    route = Route(
        "POST",
        "/threads/{thread_id}/copy",
        201,
        "A new thread whose state is exactly this one's at at_version (default: now), with "
        "its metadata (changes laid over it); 409 when `to` exists, 410/409 as time travel",
        body="CopyIn",
        refusals={
            409: "`to` exists (conflict), or at_version reaches an entry that cannot be "
            "folded (poison_entry)",
            410: "at_version precedes what retention kept (gone)",
        },
    )

    thread_id: str
    to: str
    at_version: str | None = None
    metadata: Metadata | None = None
    delta_id: str | None = None

    def checked(self, tenant: str, source: str) -> lifecycle.Copy:
        return lifecycle.copy_of(
            tenant,
            source,
            self.to,
            at_version=self.at_version,
            metadata=self.metadata,
            delta_id=self.delta_id,
        )


class Prune(Op[Pruned], frozen=True, kw_only=True, omit_defaults=True):
    """Remove the tenant's threads whose id starts with ``prefix``, holding every
    ``metadata`` value, idle ``idle_seconds`` or more (each if given); never a pinned
    one. ``dry_run``: only count them."""

    name = "prune"
    result = Pruned
    route = Route(
        "POST",
        "/threads/prune",
        200,
        "Remove the tenant's threads by id prefix, metadata and idle age (never a pinned "
        "one); dry_run counts them",
        body="PruneIn",
    )

    prefix: str = ""
    metadata: Metadata | None = None
    idle_seconds: float | None = None
    dry_run: bool = False

    def checked(self, tenant: str | None) -> lifecycle.Prune:
        return lifecycle.pruned(
            tenant=tenant,
            prefix=self.prefix,
            metadata=self.metadata,
            idle_seconds=self.idle_seconds,
            dry_run=self.dry_run,
        )


#: Every operation, in the order the OpenAPI document lists their routes.
OPERATIONS: Final[tuple[type[Op[Any]], ...]] = (
    Append,
    AppendMany,
    ReadState,
    ReadContext,
    ReadStatus,
    WaitFor,
    Threads,
    Delete,
    Update,
    Search,
    Count,
    Copy,
    Prune,
    *checkpoint_ops.CHECKPOINT_OPERATIONS,
)
BY_NAME: Final = {op.name: op for op in OPERATIONS}


__all__ = [
    "BY_NAME",
    "VERSION_PATTERN",
    "OPERATIONS",
    "THREADS_LIMIT",
    "UNSET",
    "Append",
    "AppendMany",
    "BulkAccepted",
    "Copy",
    "Count",
    "Delete",
    "Delta",
    "Op",
    "Prune",
    "ReadContext",
    "ReadState",
    "ReadStatus",
    "Route",
    "Search",
    "Threads",
    "Unset",
    "Update",
    "WaitFor",
]
