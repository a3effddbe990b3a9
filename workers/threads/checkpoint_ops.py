"""The operations of a LangGraph checkpointer (``threadfold.langgraph.ThreadfoldSaver``),
in the table of thread operations (:mod:`.operations`) like every other: each one's
arguments, result and route, once; the service, the API, the OpenAPI document and the
clients derive theirs.

A checkpoint lives with its thread (the thread id is LangGraph's ``thread_id``): a
thread's delete, prune or TTL removes its checkpoints with it. The values are
LangGraph's serializer's, stored and served as given (:mod:`threadfold.core.checkpoints`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal, TypeVar

import msgspec

from threadfold.core.checkpoints import (
    MAX_CHECKPOINT_BYTES,
    Blob,
    CheckpointPut,
    Checkpoints,
    Removed,
    Seed,
    Typed,
    Write,
)
from threadfold.core.errors import InvalidInput
from threadfold.workers.threads import lifecycle, query
from threadfold.workers.threads.op import VERSION_PATTERN, Op, Route

R = TypeVar("R")
MessageLike = Any  # validated by core when appended, not here

_NS = msgspec.Meta(description="LangGraph's checkpoint_ns ('' for the root graph).")
_SEPARATORS: Final = "\n\x1e\x1f\x00"
#: The longest a checkpoint's messages are waited for (the thread's fold), seconds.
MAX_WAIT: Final = 60.0
#: Most checkpoints a list answers when no limit is given.
LIST_LIMIT: Final = 1_000


class CheckpointOp(Op[R], frozen=True, kw_only=True, omit_defaults=True):
    """An operation of a LangGraph checkpointer: a client runs it with ``checkpoint(op)``
    (one method for them all: the saver builds them, people do not)."""


def _name(value: str, what: str) -> str:
    """A namespace, channel, id or version as the records can hold it."""
    if any(c in value for c in _SEPARATORS):
        raise InvalidInput(f"{what} must not hold a newline or a control separator",
                           field=what)
    return value


def _sized(parts: Sequence[Typed | None], what: str) -> None:
    if sum(len(p.data) for p in parts if p is not None) > MAX_CHECKPOINT_BYTES:
        raise InvalidInput(
            f"{what}: over {MAX_CHECKPOINT_BYTES} bytes of serialized values", field=what
        )


class PutCheckpoint(CheckpointOp[CheckpointPut], frozen=True, kw_only=True, omit_defaults=True):
    """Store a checkpoint, with the channel values it adds (``blobs``) and the names of
    all it holds (``versions``); and, when its messages channel changed, make the
    thread's messages the checkpoint's: ``messages`` whole, or (``whole`` False) as the
    change since the parent checkpoint, appended only onto the parent's messages."""

    name = "put_checkpoint"
    result = CheckpointPut
    route = Route(
        "PUT",
        "/threads/{thread_id}/checkpoints/{checkpoint_id}",
        200,
        "Store a LangGraph checkpoint (ThreadfoldSaver.put); the thread's messages become "
        "the checkpoint's",
        body="CheckpointIn",
    )

    thread_id: str
    checkpoint_id: str
    checkpoint: Typed
    metadata: Typed
    checkpoint_ns: Annotated[str, _NS] = ""
    parent_id: str | None = None
    #: The metadata's JSON-able keys: what a list's filter matches.
    filterable: Mapping[str, Any] | None = None
    run_id: str | None = None
    versions: Mapping[str, str] | None = None
    blobs: Sequence[Blob] = ()
    messages: Sequence[MessageLike] | None = None
    whole: bool = True

    def checked(self) -> None:
        _name(self.checkpoint_ns, "checkpoint_ns")
        _name(self.checkpoint_id, "checkpoint_id")
        for ch, v in (self.versions or {}).items():
            _name(ch, "versions")
            _name(v, "versions")
        for b in self.blobs:
            _name(b.channel, "blobs")
            _name(b.version, "blobs")
        _sized([self.checkpoint, self.metadata, *(b.value for b in self.blobs)], "checkpoint")


class PutWrites(CheckpointOp[None], frozen=True, kw_only=True, omit_defaults=True):
    """A task's pending writes on a checkpoint (ThreadfoldSaver.put_writes)."""

    name = "put_writes"
    result = None
    route = Route(
        "POST",
        "/threads/{thread_id}/checkpoints/{checkpoint_id}/writes",
        204,
        "Store a task's pending writes on a LangGraph checkpoint",
        body="WritesIn",
        answer=None,
    )

    thread_id: str
    checkpoint_id: str
    writes: Sequence[Write]
    checkpoint_ns: Annotated[str, _NS] = ""

    def checked(self) -> None:
        _name(self.checkpoint_ns, "checkpoint_ns")
        _name(self.checkpoint_id, "checkpoint_id")
        for w in self.writes:
            _name(w.task_id, "writes")
        _sized([w.value for w in self.writes], "writes")


class GetCheckpoint(CheckpointOp[Checkpoints], frozen=True, kw_only=True, omit_defaults=True):
    """A checkpoint whole (ThreadfoldSaver.get_tuple): the one named, else the latest of
    the namespace; none found is an empty answer."""

    name = "get_checkpoint"
    result = Checkpoints
    route = Route(
        "GET",
        "/threads/{thread_id}/checkpoint",
        200,
        "A LangGraph checkpoint with its values and pending writes (the latest of the "
        "namespace unless checkpoint_id names one)",
    )

    thread_id: str
    checkpoint_ns: Annotated[str, _NS] = ""
    checkpoint_id: str | None = None

    def checked(self) -> None:
        _name(self.checkpoint_ns, "checkpoint_ns")
        if self.checkpoint_id is not None:
            _name(self.checkpoint_id, "checkpoint_id")


class ListCheckpoints(CheckpointOp[Checkpoints], frozen=True, kw_only=True, omit_defaults=True):
    """A thread's checkpoints newest first (ThreadfoldSaver.list): of one namespace or
    all, before a checkpoint id, those whose metadata holds every ``filter`` value."""

    name = "list_checkpoints"
    result = Checkpoints
    route = Route(
        "POST",
        "/threads/{thread_id}/checkpoints/search",
        200,
        "A thread's LangGraph checkpoints, newest first: by namespace, before an id, "
        "metadata filter (exact match), limit",
        body="CheckpointSearchIn",
    )

    thread_id: str
    checkpoint_ns: str | None = None
    before: str | None = None
    filter: Mapping[str, Any] | None = None
    limit: Annotated[int, msgspec.Meta(ge=0)] = LIST_LIMIT


class CheckpointMessages(CheckpointOp[Seed], frozen=True, kw_only=True, omit_defaults=True):
    """A checkpoint's messages read from the thread (its recorded version): the seed of
    a DeltaChannel's history, whatever the thread's length."""

    name = "checkpoint_messages"
    result = Seed
    route = Route(
        "GET",
        "/threads/{thread_id}/checkpoints/{checkpoint_id}/messages",
        200,
        "A LangGraph checkpoint's messages, read from the thread at the version it holds",
    )

    thread_id: str
    checkpoint_id: str
    checkpoint_ns: Annotated[str, _NS] = ""
    wait: Annotated[float, msgspec.Meta(ge=0, le=MAX_WAIT)] = 5.0
    #: The thread's version the checkpoint recorded, when the caller read it with the
    #: checkpoint (``get_checkpoint``'s answer): spares reading it again.
    version: Annotated[str | None, msgspec.Meta(pattern=VERSION_PATTERN)] = None

    def checked(self) -> tuple[str | None, float]:
        """The version given and the wait, checked (a query string's values are parsed
        by their types only: the operation judges them)."""
        _name(self.checkpoint_ns, "checkpoint_ns")
        _name(self.checkpoint_id, "checkpoint_id")
        version = None if self.version is None else query.version(self.version)
        return version, query.timeout(self.wait, "wait", MAX_WAIT)


class CopyCheckpoints(CheckpointOp[Removed], frozen=True, kw_only=True, omit_defaults=True):
    """Every checkpoint of the thread copied to ``to`` (ThreadfoldSaver.copy_thread),
    ids and order kept, and the thread's messages with them; ``count`` counts them."""

    name = "copy_checkpoints"
    result = Removed
    route = Route(
        "POST",
        "/threads/{thread_id}/checkpoints/copy",
        200,
        "Copy a thread's LangGraph checkpoints (and its messages) to another thread",
        body="CheckpointCopyIn",
    )

    thread_id: str
    to: str

    def checked(self) -> str:
        return lifecycle.copy_target(self.thread_id, self.to)


class PruneCheckpoints(CheckpointOp[Removed], frozen=True, kw_only=True, omit_defaults=True):
    """The threads' checkpoints pruned (ThreadfoldSaver.prune): all but each namespace's
    latest, or all of them; ``count`` counts the checkpoints removed."""

    name = "prune_checkpoints"
    result = Removed
    route = Route(
        "POST",
        "/checkpoints/prune",
        200,
        "Prune threads' LangGraph checkpoints: keep_latest (each namespace's latest) or "
        "delete (all)",
        body="CheckpointPruneIn",
    )

    thread_ids: Sequence[str]
    strategy: Literal["keep_latest", "delete"] = "keep_latest"


class DeleteRuns(CheckpointOp[Removed], frozen=True, kw_only=True, omit_defaults=True):
    """Every checkpoint of the tenant whose metadata's ``run_id`` is one of ``run_ids``
    (ThreadfoldSaver.delete_for_runs), with its writes."""

    name = "delete_runs"
    result = Removed
    route = Route(
        "POST",
        "/checkpoints/delete-runs",
        200,
        "Remove the LangGraph checkpoints of some runs, in every thread of the tenant",
        body="RunsIn",
    )

    run_ids: Sequence[str]

    def checked(self) -> Sequence[str]:
        for run in self.run_ids:
            _name(run, "run_ids")
        return self.run_ids


CHECKPOINT_OPERATIONS: Final = (
    PutCheckpoint,
    PutWrites,
    GetCheckpoint,
    ListCheckpoints,
    CheckpointMessages,
    CopyCheckpoints,
    PruneCheckpoints,
    DeleteRuns,
)
