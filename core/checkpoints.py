"""A LangGraph checkpointer's values, as threadfold stores and serves them.

``threadfold.langgraph.ThreadfoldSaver`` serializes with LangGraph's own serializer
(the checkpoint, its metadata, each channel value and each pending write as a
``(type, bytes)`` pair, :class:`Typed`) and hands these values to the thread service,
which keeps them with the thread in Redis and returns them as they were given: the
service never reads a channel value, so whatever LangGraph serializes round-trips.
What the service reads is beside them: the ids (parent, run), the channel versions the
checkpoint names, and its metadata as JSON (a ``list`` filter's exact match).

Like :mod:`threadfold.core.results`, this imports nothing of Redis or LangGraph.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "Blob", "CheckpointPut", "Checkpoints", "Removed", "Seed", "Stored", "Typed", "Write",
]

#: Most bytes one checkpoint put may carry (its record, channel values and writes):
#: a value past it is refused whole (422), nothing written.
MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024


class Typed(msgspec.Struct, frozen=True, array_like=True):
    """A serialized value: LangGraph's serializer's type tag and bytes."""

    type: str
    data: bytes


class Blob(msgspec.Struct, frozen=True, array_like=True):
    """A channel's value at a version (``value`` None: the channel is empty there)."""

    channel: str
    version: str
    value: Typed | None = None


class Write(msgspec.Struct, frozen=True, array_like=True):
    """A pending write of a task on a checkpoint; ``idx`` negative for LangGraph's
    special writes (error, interrupt, resume, scheduled), which replace, where a
    task's others are kept once."""

    task_id: str
    idx: int
    channel: str
    value: Typed
    task_path: str = ""


class Stored(msgspec.Struct, frozen=True, omit_defaults=True):
    """A checkpoint read back whole: what ``get_tuple`` and ``list`` answer from."""

    checkpoint_ns: str
    checkpoint_id: str
    checkpoint: Typed
    metadata: Typed
    parent_id: str | None = None
    blobs: list[Blob] = msgspec.field(default_factory=list)
    writes: list[Write] = msgspec.field(default_factory=list)
    #: The thread's version at which its messages are this checkpoint's (None: none is
    #: known, e.g. a subgraph's checkpoint, or one copied from another thread).
    version: str | None = None


class Checkpoints(msgspec.Struct, frozen=True):
    """Checkpoints found: ``get``'s one or none, ``list``'s newest first."""

    checkpoints: list[Stored]


class CheckpointPut(msgspec.Struct, frozen=True, omit_defaults=True):
    """A put's answer: the thread's version that holds the checkpoint's messages. With
    ``whole`` True nothing was written: the put's messages were a change since its
    parent, which the thread no longer holds; the saver sends them whole."""

    version: str | None = None
    whole: bool = False


class Seed(msgspec.Struct, frozen=True, omit_defaults=True):
    """The messages of a checkpoint read from its thread: LangChain's dump form, and
    the thread's version they are; ``messages`` None when the thread cannot give them
    (no version recorded, or retention trimmed it), and the saver walks the parents."""

    version: str | None = None
    messages: list[dict[str, Any]] | None = None


class Removed(msgspec.Struct, frozen=True):
    """How many checkpoints a removal removed (or a copy copied)."""

    count: int
