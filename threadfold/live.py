"""What ``subscribe()`` yields, and :class:`Transcript`, which keeps a thread's messages
up to date from it.

A subscription starts with a :class:`Snapshot` (the whole thread, each message's
position beside it) unless it resumes, then sends one :class:`Change` per version the
thread reaches. Each change applies on the version before it (``prev``): the clients
check that chain, and when it breaks (a resume the server's feed no longer reaches, a
rebuild, a delete) they are sent a fresh snapshot instead, so a follower's messages are
always some version's exact state. The bodies are the SSE endpoint's ``data:`` (see
docs/live.md), field for field.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from threadfold.types import Format, Unservable


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
    reason: Literal["start", "resume_gap", "resync"]
    exists: bool
    unservable: tuple[Unservable, ...] = ()

    @property
    def kind(self) -> Literal["snapshot"]:
        return "snapshot"


class Removed(msgspec.Struct, frozen=True):
    """A message that left the thread, by its id and the position it held."""

    id: str
    position: int


class Upsert(msgspec.Struct, frozen=True):
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


Event: TypeAlias = Snapshot | Change


class Transcript:
    """A thread's messages kept current from a subscription's events.

    >>> transcript = Transcript()
    >>> for event in client.subscribe("t1"):  # doctest: +SKIP
    ...     transcript.apply(event)
    ...     print(transcript.version, len(transcript.messages))
    """

    def __init__(self) -> None:
        self.version: str | None = None
        self._by_position: dict[int, list[dict[str, Any]]] = {}

    def apply(self, event: Event) -> None:
        """Take ``event``: a snapshot replaces everything; a change must apply on this
        transcript's version (the clients only send those), else ValueError."""
        if isinstance(event, Snapshot):
            self._by_position = {}
            for position, message in zip(event.positions, event.messages, strict=True):
                self._by_position.setdefault(position, []).append(message)
        else:
            if event.prev != self.version:
                raise ValueError(
                    f"change to {event.version} applies on {event.prev}, not {self.version}"
                )
            if event.reset:
                self._by_position.clear()
            for gone in event.removed:
                self._by_position.pop(gone.position, None)
            for upsert in event.upserts:
                self._by_position[upsert.position] = upsert.served
        self.version = event.version

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The thread's messages at :attr:`version`, in order (as ``state()`` reads them)."""
        return [m for p in sorted(self._by_position) for m in self._by_position[p]]

    @property
    def ids(self) -> list[str | None]:
        """Each message's id, as its form shows it (the OpenAI form has none)."""
        return [_id_of(m) for m in self.messages]


def _id_of(message: dict[str, Any]) -> str | None:
    found = message.get("id")
    return found if isinstance(found, str) else None
