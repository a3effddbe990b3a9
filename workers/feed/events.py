"""What a subscription yields: a thread's snapshot, then one change per version.

A subscription starts with a :class:`Snapshot` (the whole thread, each message's
position beside it) unless it resumes, then sends one :class:`Change` per version the
thread reaches, and a :class:`Deleted` when the thread is removed (after which the
follower holds the empty thread at version 0-0, on which the first change of the
thread written again applies). Each change applies on the version before it
(``prev``): the clients check that chain, and when it breaks (a resume the server's
feed no longer reaches, a rebuild) they are sent a fresh snapshot instead, so a
follower's messages are always some version's exact state. The bodies are the SSE
endpoint's ``data:`` (see docs/feed.md), field for field: :mod:`.bodies` builds them
for every follower (the API's SSE endpoint encodes them, a direct client's subscription
yields them), and the HTTP clients decode the endpoint's ``data:`` straight back into
them. Messages are dicts, except in the API's own encoding, where its JSON cache gives
each one as its JSON pre-encoded (``msgspec.Raw``, which the encoder writes as it is).
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from threadfold.core.render import Format, Unservable
from threadfold.workers.storage.feed_record import Removal

__all__ = ["Change", "Deleted", "Event", "Reason", "Removal", "Removed", "Snapshot", "Upsert"]

#: Why a snapshot was sent: the stream's start; a resume the feed could not serve (it
#: no longer reaches back, or the version is not the thread's); a break of the chain
#: while following (a rebuild, a skipped entry, a lost message).
Reason: TypeAlias = Literal["start", "resume_gap", "resync"]


class Snapshot(msgspec.Struct, frozen=True):
    """The whole thread at ``version`` (``0-0`` and no messages while it does not
    exist: ``exists``), ``positions[i]`` being ``messages[i]``'s (repeated where the
    OpenAI form serves one stored message as several). ``reason``: the
    subscription's ``"start"``, a resume the feed could not serve (``"resume_gap"``),
    or a break of the chain while following (``"resync"``)."""

    thread_id: str
    version: str
    total: int
    format: Format
    messages: list[dict[str, Any]]
    positions: list[int]
    reason: Reason
    exists: bool
    unservable: tuple[Unservable, ...] = ()

    @property
    def kind(self) -> Literal["snapshot"]:
        return "snapshot"


class Removed(msgspec.Struct, frozen=True):
    """A message that left the thread, by its id and the position it held."""

    id: str
    position: int


class Upsert(msgspec.Struct, frozen=True, omit_defaults=True):
    """A message written at ``position``: one the thread holds there is replaced in
    place; a new position lies past all the thread holds (the message is appended).
    In the OpenAI form a message with ``tool_result`` blocks is served as several
    messages (as ``state()`` serves it): ``message`` is the first, ``messages`` all."""

    position: int
    id: str
    message: dict[str, Any]
    messages: tuple[dict[str, Any], ...] | None = None

    @property
    def served(self) -> list[dict[str, Any]]:
        """The messages this upsert puts at its position."""
        return list(self.messages) if self.messages is not None else [self.message]


class Change(msgspec.Struct, frozen=True):
    """One version's net effect, applied on ``prev``: if ``reset`` drop every message,
    then the ``removed`` positions, then write the ``upserts``. ``unservable`` names the
    upserts served as markers (``field`` ``upserts[i].message``)."""

    thread_id: str
    version: str
    prev: str
    reset: bool
    removed: tuple[Removed, ...]
    upserts: tuple[Upsert, ...]
    unservable: tuple[Unservable, ...] = ()

    @property
    def kind(self) -> Literal["change"]:
        return "change"


class Deleted(msgspec.Struct, frozen=True):
    """The thread was removed: ``reason`` ``"deleted"`` (a DELETE), ``"expired"`` (its
    TTL ran out) or ``"pruned"`` (an operator's prune). It applies on any version: the
    follower then holds the empty thread at ``version`` 0-0, and the thread's next
    change, once it is written again, applies on that (its ``prev`` is 0-0)."""

    thread_id: str
    version: str
    reason: Removal

    @property
    def kind(self) -> Literal["deleted"]:
        return "deleted"


Event: TypeAlias = Snapshot | Change | Deleted
