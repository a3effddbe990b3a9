"""What a follower is sent: a snapshot or a change, with messages in the form a state read
serves (LangChain's or OpenAI's, markers in place of what cannot be served).

One definition for the SSE endpoint (``data:`` of ``event: snapshot`` / ``event: change``)
and the direct clients' ``subscribe()``, so that a subscriber sees the same bodies
whichever door it came through.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from threadfold.core.codec import decode_stored
from threadfold.core.render import CODE, render
from threadfold.workers.feed.event import ORIGIN, FeedEvent
from threadfold.workers.storage.read_state import Snapshot

#: Why a snapshot was sent: the stream's start; a resume the feed could not serve (it
#: no longer reaches back, or the version is not the thread's); a break of the chain
#: while following (a rebuild, a delete, a skipped entry, a lost message).
Reason = Literal["start", "resume_gap", "resync"]


class Marker(msgspec.Struct, frozen=True):
    """A message served as a marker (``GET state``'s ``unservable`` item): ``field`` and
    ``pointer`` say where it stands in this body."""

    code: str
    message: str
    field: str
    pointer: str
    index: int
    id: str | None


class SnapshotBody(msgspec.Struct, frozen=True):
    """The whole thread at ``version`` (``0-0`` and no messages when it does not
    exist), each message's ``position`` beside it: the changes that follow name
    positions."""

    thread_id: str
    version: str
    total: int
    format: str
    messages: list[dict[str, Any]]
    positions: list[int]
    unservable: list[Marker]
    reason: Reason
    exists: bool


class Removed(msgspec.Struct, frozen=True):
    id: str
    position: int


class Upsert(msgspec.Struct, frozen=True):
    position: int
    id: str
    message: dict[str, Any]


class ChangeBody(msgspec.Struct, frozen=True):
    """The step from ``prev`` to ``version``: if ``reset``, drop every message; drop the
    ``removed`` positions; set each upsert's position (a held one is replaced in place,
    a new one lies past all). The messages in position order are then the thread's."""

    thread_id: str
    version: str
    prev: str
    reset: bool
    removed: list[Removed]
    upserts: list[Upsert]
    unservable: list[Marker]


_NOTHING: Final[list[Any]] = []


def snapshot_body(
    thread_id: str, snapshot: Snapshot | None, fmt: str, reason: Reason
) -> SnapshotBody:
    if snapshot is None:
        return SnapshotBody(thread_id, ORIGIN, 0, fmt, [], [], [], reason, exists=False)
    ids = [i.decode() for i in snapshot.ids]
    messages = [decode_stored(b, i) for i, b in zip(ids, snapshot.bodies, strict=True)]
    rendered = render(messages, fmt)
    markers = [
        Marker(CODE, u.message, u.field, u.pointer, u.index, u.id) for u in rendered.unservable
    ]
    return SnapshotBody(
        thread_id,
        snapshot.version,
        len(messages),
        fmt,
        rendered.messages,
        snapshot.positions,
        markers,
        reason,
        exists=True,
    )


def change_body(thread_id: str, event: FeedEvent, fmt: str) -> ChangeBody:
    messages = [decode_stored(body, i) for _, i, body in event.upserts]
    rendered = render(messages, fmt) if messages else None
    upserts = (
        [
            Upsert(position, i, served)
            for (position, i, _), served in zip(event.upserts, rendered.messages, strict=True)
        ]
        if rendered is not None
        else _NOTHING
    )
    markers = [
        Marker(
            CODE,
            f"upserts[{u.index}].message (id {u.id!r}) cannot be served with "
            f"format={u.format}: {u.reason}",
            f"upserts[{u.index}].message",
            f"/upserts/{u.index}/message",
            u.index,
            u.id,
        )
        for u in (rendered.unservable if rendered is not None else ())
    ]
    return ChangeBody(
        thread_id,
        event.version,
        event.prev,
        event.reset,
        [Removed(i, p) for i, p in event.removed],
        upserts,
        markers,
    )
