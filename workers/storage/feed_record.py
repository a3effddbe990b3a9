"""What a thread's feed channel carries: a change event (a committed batch's net effect
on the thread's messages), a resync, or a removal notice.

The drainer knows the effect exactly (it is what COMMIT writes), so the event is built
from it, not diffed from two states. Messages are carried as the state stores them
(:func:`threadfold.core.codec.encode_stored`, bytes beside their id) so that an event
costs COMMIT no re-encoding and a reader renders it with the same code as a state read.

The three payloads cannot be mistaken for one another: an event is a msgpack array (its
first byte 0x90-0x9f, 0xdc or 0xdd), a resync is empty, a removal notice starts with
ASCII ``deleted:``.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple, TypeAlias

import msgspec

#: What REBUILD publishes on a thread's channel: the state changed in a way no event
#: describes; every follower reads a fresh snapshot.
RESYNC: Final = b""

#: What a removal of the thread (DELETE, its TTL running out, an operator's prune)
#: publishes on its channel: this prefix, then the :data:`Removal` in ASCII
#: (``b"deleted:expired"``). A follower then holds the empty thread at :data:`ORIGIN`
#: with no read: the next incarnation's first event applies on ORIGIN (COMMIT's prev of
#: a thread with no cursor), so it chains on that.
DELETED_PREFIX: Final = b"deleted:"

#: Why a thread was removed: a DELETE, its TTL ran out, an operator pruned it.
Removal: TypeAlias = Literal["deleted", "expired", "pruned"]
REMOVALS: Final[tuple[Removal, ...]] = ("deleted", "expired", "pruned")

_NOTICES: Final[dict[bytes, Removal]] = {DELETED_PREFIX + r.encode(): r for r in REMOVALS}

#: The version of a thread before its first commit (the scripts' ``cursor_of``).
ORIGIN: Final = "0-0"


class FeedEvent(msgspec.Struct, array_like=True, frozen=True):
    """The step from the state at ``prev`` to the state at ``version``.

    ``reset``: a ``__remove_all__`` emptied the thread first. ``removed``: (id, position)
    of stored messages that go, including one an upsert moves to the end (it is listed
    at its old position). ``upserts``: (position, id, stored body), ascending; a
    position the state holds is replaced in place, a new one lies past every stored
    position. Positions, not ids, carry the rule: a rendered message need not show its
    id (the OpenAI form does not).
    """

    version: str
    prev: str
    reset: bool = False
    removed: list[tuple[str, int]] = msgspec.field(default_factory=list)
    upserts: list[tuple[int, str, bytes]] = msgspec.field(default_factory=list)


class FeedLimits(NamedTuple):
    """How much of a thread's change feed is kept: events (0: none kept, only
    published), their age in ms (0: no age limit), and the largest event kept (a
    larger one, a bulk load's say, is only published: a follower that missed it reads
    a snapshot, which costs no more, instead of the feed holding a second copy)."""

    max_events: int = 100
    max_age_ms: int = 300_000
    max_event_bytes: int = 32_768


_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(FeedEvent)


def encode(event: FeedEvent) -> bytes:
    return _ENCODER.encode(event)


def decode(blob: bytes) -> FeedEvent | None:
    """The event ``blob`` holds; None for :data:`RESYNC` and for a removal notice (a
    reader that does not look for those with :func:`removal_of` resyncs on them, and so
    does every reader on a notice of a reason it does not know)."""
    if not blob or blob.startswith(DELETED_PREFIX):
        return None
    return _DECODER.decode(blob)


def removal_notice(reason: Removal) -> bytes:
    """What a removal for ``reason`` publishes (``b"deleted:" + reason``)."""
    return DELETED_PREFIX + reason.encode()


def removal_of(payload: bytes) -> Removal | None:
    """The reason of the removal notice ``payload`` is; None for anything else (an
    event, a resync, a notice of an unknown reason: a follower resyncs on that)."""
    return _NOTICES.get(payload)


def version_key(version: str) -> tuple[int, int]:
    """A version (a stream entry id, ``<ms>-<seq>``) as a value that orders like it."""
    ms, _, seq = version.partition("-")
    return int(ms), int(seq or 0)
